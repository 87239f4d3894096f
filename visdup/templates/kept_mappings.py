"""STM mappings a template build found, kept for the reads of the same pages that follow.

A template is built by mapping its base onto each sample page with the template's own match
codes (the fixed texts); right after, the same process maps the template onto pages of that
sample again: the drift snapshot's measure of each sample page, an extraction's records. The
mapping is a function of the two trees' labels and shapes and of the two match-code arrays
alone (:func:`visdup.templates.stm.stm_mapping`), so a mapping found once answers the same
call again. The last :data:`KEPT` are kept, each under digests of what it is a function of;
the pairs themselves as one flat array.
"""

from __future__ import annotations

import hashlib
import threading
from array import array
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

T = TypeVar("T")

#: Mappings kept at most: a crawl's last template builds, about forty pages each (a mapping of
#: two 2,000-node pages is some 16 KB).
KEPT = 256

_kept: OrderedDict[tuple[Any, ...], array] = OrderedDict()
_lock = threading.Lock()  # template builds run side by side in threads


def key(
    labels_a: Sequence[Any],
    sizes_a: Sequence[int],
    details_a: array | None,
    labels_b: Sequence[Any],
    sizes_b: Sequence[int],
    details_b: array | None,
    max_nodes: int,
) -> tuple[Any, ...]:
    """What a mapping is a function of, as digests: each side's node count, the hashes of its
    labels and sizes, and a BLAKE2b digest of its match codes (None: no codes)."""
    return (
        max_nodes,
        _side(labels_a, sizes_a, details_a),
        _side(labels_b, sizes_b, details_b),
    )


def _side(labels: Sequence[Any], sizes: Sequence[int], details: array | None) -> tuple[Any, ...]:
    return (
        len(labels),
        _labels_digest(labels),
        hash(tuple(sizes)),
        None if details is None else hashlib.blake2b(details.tobytes(), digest_size=16).digest(),
    )


def _labels_digest(labels: Sequence[Any]) -> bytes:
    """The labels' digest, the same in every process (a string's ``hash`` is not: a mapping
    found in an analysis worker is kept by the process that asked for the build)."""
    try:
        text = "\x00".join(labels)  # tag names: no NUL in any
    except TypeError:
        text = "\x00".join(map(repr, labels))
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def holding() -> bool:
    """Whether any mapping is kept (else a read need not digest its trees)."""
    return bool(_kept)


def recall(found: tuple[Any, ...]) -> list[tuple[int, int]] | None:
    """The pairs kept under ``found`` (sorted as :func:`stm_mapping` gives them), or None."""
    with _lock:
        flat = _kept.get(found)
        if flat is None:
            return None
        _kept.move_to_end(found)
    return list(zip(flat[0::2], flat[1::2], strict=True))


def keep(found: tuple[Any, ...], pairs: list[tuple[int, int]]) -> None:
    """Keep ``pairs`` under ``found``, the oldest kept going past :data:`KEPT`."""
    flat = array("i", [x for pair in pairs for x in pair])
    with _lock:
        _kept[found] = flat
        _kept.move_to_end(found)
        while len(_kept) > KEPT:
            _kept.popitem(last=False)


def run_keeping(run: Callable[[], T]) -> tuple[T, list[tuple[tuple[Any, ...], array]]]:
    """``run()``, and the mappings it kept: what a template build run in another process (an
    analysis worker) sends back with its template, for the process that asked (:func:`keep_all`).
    A worker runs one task at a time: what was kept during the call is the call's."""
    with _lock:
        before = set(_kept)
    result = run()
    with _lock:
        added = [(found, flat) for found, flat in _kept.items() if found not in before]
    return result, added


def keep_all(kept: list[tuple[tuple[Any, ...], array]]) -> None:
    """Keep mappings :func:`run_keeping` brought from another process."""
    with _lock:
        for found, flat in kept:
            _kept[found] = flat
            _kept.move_to_end(found)
        while len(_kept) > KEPT:
            _kept.popitem(last=False)


def forget() -> None:
    """Drop every mapping kept."""
    with _lock:
        _kept.clear()
