"""A demo site with planted duplicates, and the small HTTP server that serves it.

The site lives next to this module so that an installed package can still run the demo;
`visdup.demo.server.serve` serves it (or any directory) from a background thread.
"""

from __future__ import annotations

from pathlib import Path

SITE_ROOT = Path(__file__).resolve().parent / "site"
"""The demo site's document root; `EXPECTED.md` there lists the duplicates it plants."""

__all__ = ["SITE_ROOT"]
