"""The text that differs in each duplicate group, side by side, as the report shows it.

One copy of a group whose bytes differ from its original's (the first the content channel
matched, else the first in URL order) is compared by its main text
(:mod:`visdup.report.textdiff`); exact copies need no comparison. Bodies are read for the
largest :data:`MAX_TEXT_DIFFS` groups only, which bounds the report's build time; a store
written without bodies (``VISDUP_STORE_BODY = False``) is said so where the text would be.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from visdup.report.markup import Safe, esc, tag
from visdup.report.summary import Group
from visdup.report.textdiff import Run, sentences, text_diff
from visdup.verdicts import CONTENT, EXACT

#: Groups (largest first) whose text difference is computed: two bodies read and parsed each.
MAX_TEXT_DIFFS = 200

#: Reads stored bodies by page id (None: the store keeps none).
Bodies = Callable[[list[int]], Mapping[int, bytes | None]]

NOT_STORED = (
    "The page bodies are not stored (VISDUP_STORE_BODY = False), so the text that differs "
    "cannot be shown; crawl with it on to see it."
)


def text_differences(groups: list[Group], bodies: Bodies | None) -> dict[int, Safe]:
    """Each group's text difference by its original's id, for the first groups given."""
    pairs: dict[int, tuple[int, int, int]] = {}
    for g in groups[:MAX_TEXT_DIFFS]:
        differing = [(n + 1, m) for n, m in enumerate(g.members) if m.kind != EXACT]
        # a copy the content channel matched first: its text is what differs, not its layout
        differing.sort(key=lambda nm: (nm[1].kind != CONTENT, nm[0]))
        if differing:
            copy, m = differing[0]
            pairs[g.original_id] = (g.original_id, m.page_id, copy)
    out: dict[int, Safe] = {}
    exact_only = [g for g in groups[:MAX_TEXT_DIFFS] if g.original_id not in pairs]
    for g in exact_only:
        out[g.original_id] = tag(
            "p", {"class": "textdiff-none"}, "text: every copy is byte for byte the original"
        )
    if not pairs:
        return out
    if bodies is None:
        return out | {k: tag("p", {"class": "textdiff-none"}, NOT_STORED) for k in pairs}
    ids = sorted({i for a, b, _ in pairs.values() for i in (a, b)})
    stored: dict[int, bytes | None] = {}
    for start in range(0, len(ids), 200):
        stored.update(bodies(ids[start : start + 200]))
    for key, (a, b, copy) in pairs.items():
        out[key] = _shown(stored.get(a), stored.get(b), copy)
    return out


def _shown(left: bytes | None, right: bytes | None, copy: int) -> Safe:
    if left is None or right is None:
        return tag("p", {"class": "textdiff-none"}, NOT_STORED)
    diff = text_diff(sentences(left), sentences(right))
    if diff.same:
        return tag(
            "p",
            {"class": "textdiff-none"},
            f"text: copy {copy} has the original's main text word for word; the pages "
            "differ outside it (navigation, markup)",
        )
    return tag(
        "div",
        {"class": "textdiff", "data-copy": copy},
        tag("div", None, _runs(diff.left)),
        tag("div", None, _runs(diff.right)),
    )


def _runs(runs: list[Run]) -> list[Safe]:
    return [tag(how, None, text) if how else esc(text) for text, how in runs]
