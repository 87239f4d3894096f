"""The compiled kernels behind one switch.

``visdup._native._term`` (tag tree → visual term), ``._ted`` (tree edit distance),
``._stm`` (Simple Tree Matching), ``._dom`` (the walks over a parsed page's tree: DOM
trees, links, paragraphs, invisible nodes, text lengths, layout signatures), ``._weights``
(main content's weights), ``._text`` (the text print's hashes, long sentences and
shingle SimHash) and ``._css`` (the scan of a page's style sheets) are optional C
extensions, each with a pure-Python reference that the parity tests hold them to.
:func:`kernel` is the one place that decides which serves: the environment variable
``VISDUP_PURE_PYTHON`` (``1``, ``true``, ``yes`` or ``on``) turns every kernel to Python, and
a missing build does the same for that kernel alone. The choice is read once, at import, so
that a process never mixes the two.
"""

from __future__ import annotations

import importlib
import logging
import os
from types import ModuleType

logger = logging.getLogger(__name__)

#: Environment variable that turns every compiled kernel off.
PURE_PYTHON_ENV = "VISDUP_PURE_PYTHON"
_TRUE = frozenset({"1", "true", "yes", "on"})


def pure_python() -> bool:
    """Whether the environment asks for the pure-Python kernels."""
    return os.environ.get(PURE_PYTHON_ENV, "").strip().lower() in _TRUE


PURE_PYTHON = pure_python()


def kernel(name: str) -> ModuleType | None:
    """The compiled module ``name`` (``_term``, ``_ted``, ``_stm``, ``_dom``, ``_text``,
    ``_weights``, ``_css``), or None for Python."""
    if PURE_PYTHON:
        return None
    try:
        return importlib.import_module(f"visdup._native.{name}")
    except ImportError as exc:  # built without a compiler, or an lxml whose layout differs
        logger.debug("visdup: compiled kernel %s unavailable (%s): pure Python", name, exc)
        return None
