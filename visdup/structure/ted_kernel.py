"""Which implementation computes tree edit distances: the compiled kernel, or Python.

The dynamic programme runs in the compiled ``visdup._native._ted`` when it is built (without
the GIL, so a crawl can run it in a thread); otherwise, or with ``VISDUP_PURE_PYTHON=1`` in the
environment, the pure-Python reference of :mod:`visdup.structure.ted_python` serves. The choice
is made once, at import: ``KERNEL`` says which. Both read a tree as three flat sequences, its
labels as small integers (:func:`label_ids`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Protocol

from visdup._native import kernel
from visdup.structure.ted_python import distance_python, sequence_python, work_python

logger = logging.getLogger(__name__)


class FlatTree(Protocol):
    """What the distance needs of a tree: ``Term`` satisfies it."""

    @property
    def labels(self) -> Sequence[str]: ...
    @property
    def marks(self) -> Sequence[int]: ...
    @property
    def sizes(self) -> Sequence[int]: ...


KernelFn = Callable[
    [
        Sequence[int],
        Sequence[int],
        Sequence[int],
        Sequence[int],
        Sequence[int],
        Sequence[int],
        int,
        int,
    ],
    int,
]
SequenceFn = Callable[[Sequence[int], Sequence[int], Sequence[int], Sequence[int], int], int]

#: The implementations by name ("python", and "c" where built): the distance, the work
#: factors of a tree (:func:`~visdup.structure.budget.dp_cells`), the sequence distance.
KERNELS: dict[str, KernelFn] = {"python": distance_python}
WORK: dict[str, Callable[[Sequence[int]], tuple[int, int]]] = {"python": work_python}
SEQUENCES: dict[str, SequenceFn] = {"python": sequence_python}

#: The compiled module, or None.
ted = kernel("_ted")
if ted is not None:
    KERNELS["c"] = ted.distance
    WORK["c"] = ted.work
    if hasattr(ted, "sequence_distance"):  # an older build lacks it
        SEQUENCES["c"] = ted.sequence_distance
KERNEL = "c" if ted is not None else "python"
if KERNEL == "python":
    logger.debug("tree edit distance runs in pure Python (compiled kernel off or missing)")

#: The distance that :func:`~visdup.structure.distance.tree_distance` runs.
distance_kernel: KernelFn = KERNELS[KERNEL]
#: The sequence distance behind :func:`~visdup.structure.bounds.sequence_lower_bound`.
sequence_kernel: SequenceFn = SEQUENCES.get(KERNEL, sequence_python)

# Visual classes to small ints for the kernel. Shared by all terms so that one
# conversion per term suffices; the table only grows with distinct labels.
_LABEL_IDS: dict[str, int] = {}


def label_ids(labels: Sequence[str]) -> list[int]:
    """A tree's labels as the kernels read them: one small integer per distinct label."""
    ids = _LABEL_IDS
    try:  # every label met before (all but a site's first pages): one pass in C
        return list(map(ids.__getitem__, labels))
    except KeyError:
        pass
    out = []
    for label in labels:
        code = ids.get(label)
        if code is None:
            code = ids.setdefault(label, len(ids))
        out.append(code)
    return out
