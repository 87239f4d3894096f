"""Spiders that ship with visdup."""

from __future__ import annotations
