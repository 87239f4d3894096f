"""The ``visdup`` command: each subcommand module has HELP, add_arguments(parser) and run(args)."""

from __future__ import annotations

from visdup.cli.app import main

__all__ = ["main"]
