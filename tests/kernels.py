"""Parity tests flip the compiled kernels off inside one process.

``VISDUP_PURE_PYTHON`` is read once, at import (a process never mixes the two), so a test
that compares the two paths switches the modules' kernel handles instead.
"""

from __future__ import annotations

import pytest

from visdup.content import blocks, css, main, textprint, visibility, weights
from visdup.index import memory, small
from visdup.page import links
from visdup.structure import bounds, marked
from visdup.templates import flat_tree, inline_labels, signature, stm

#: Every module that holds a compiled kernel it checks on each call.
HOLDERS = (
    stm, blocks, visibility, css, textprint, weights, main, signature, links, inline_labels,
    flat_tree, memory, marked,
)  # fmt: skip


def python_kernels(monkeypatch: pytest.MonkeyPatch) -> None:
    """From here to the end of the test, every per-call kernel check takes the Python path."""
    for module in HOLDERS:
        monkeypatch.setattr(module, "_kernel", None)
    monkeypatch.setattr(stm, "_walks", None)  # stm's walks kernel beside its matching one
    monkeypatch.setattr(css, "_css_kernel", None)  # the sheets' scan beside the tree's walks
    monkeypatch.setattr(small, "_small_bounds", None)
    monkeypatch.setattr(bounds, "_sequence_similarities", None)
