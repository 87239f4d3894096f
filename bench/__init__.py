"""Benchmarks: run as scripts (python bench/NAME.py); they print figures."""

from __future__ import annotations
