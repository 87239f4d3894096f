"""Subcommands of ``visdup``; each module has HELP, add_arguments(parser) and run(args)."""

from __future__ import annotations
