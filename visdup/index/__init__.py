"""Candidate lookup of near-identical fingerprints; the storage is a backend choice."""

from __future__ import annotations

from visdup.index.base import BandLayout, FingerprintIndex, bands, layout_for
from visdup.index.memory import MemoryIndex

__all__ = ["BandLayout", "FingerprintIndex", "MemoryIndex", "SqlIndex", "bands", "layout_for"]


def __getattr__(name: str) -> object:
    # SQLAlchemy is imported only by those who ask for the SQL backend.
    if name == "SqlIndex":
        from visdup.index.sql import SqlIndex

        return SqlIndex
    raise AttributeError(name)
