"""Pictures drawn by visdup as inline SVG: verdict bars, a similarity histogram, layouts.

Shapes of one colour share one ``<path>`` and colours are CSS classes of the report, so a
picture of a 1,000-node term stays a few kilobytes. Every label goes through
:mod:`visdup.report.markup`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from visdup.report.markup import Safe, tag
from visdup.structure.term import Term

#: CSS class of each visual class in a layout picture.
LAYOUT_CLASSES = {"grp": "lg", "row": "lr", "col": "lc", "text": "lt"}


def _chart(
    width: float,
    height: float,
    label: str | None,
    parts: object,
    attrs: Mapping[str, object] | None = None,
) -> Safe:
    """A chart's outer <svg>: its size; the ``<title>`` among ``parts`` is what a screen reader
    says for it (an ``aria-label`` would repeat it)."""
    return tag(
        "svg",
        {
            "viewBox": f"0 0 {width} {height}",
            "width": width,
            "height": height,
            "role": "img",
            "class": "chart",
            **(attrs or {}),
        },
        parts,
    )


def _n(x: float) -> str:
    """Short coordinates: one decimal, no trailing zero."""
    text = f"{x:.1f}"
    return text[:-2] if text.endswith(".0") else text


def _box(x: float, y: float, w: float, h: float) -> str:
    return f"M{_n(x)} {_n(y)}h{_n(w)}v{_n(h)}h{_n(-w)}z"


def bars(counts: Mapping[str, int], *, width: int = 520, label: str = "") -> Safe:
    """Horizontal bars, one per key, with its count; classes ``bar v-<key>``."""
    row, left, right = 24, 120, 60
    items = list(counts.items())
    top = max((v for _k, v in items), default=0) or 1
    height = row * len(items) + 6
    parts: list[Safe] = [tag("title", None, label)] if label else []
    for i, (key, value) in enumerate(items):
        y = 3 + i * row
        w = max(1.0, (width - left - right) * value / top) if value else 0
        parts.append(
            tag("text", {"x": left - 8, "y": y + 16, "class": "lbl", "text-anchor": "end"}, key)
        )
        parts.append(
            tag(
                "rect",
                {
                    "x": left,
                    "y": y + 3,
                    "width": _n(w),
                    "height": row - 6,
                    "class": f"bar v-{key}",
                    "rx": 2,
                },
            )
        )
        parts.append(tag("text", {"x": _n(left + w + 6), "y": y + 16, "class": "num"}, value))
    return _chart(width, height, label, parts)


def histogram(
    accepted: Sequence[float],
    rejected: Sequence[float],
    thresholds: Mapping[str, float],
    *,
    bins: int = 50,
    width: int = 640,
    height: int = 180,
    label: str = "",
    attrs: Mapping[str, object] | None = None,
) -> Safe:
    """Counts of similarities in [0, 1], confirmed matches stacked on rejected candidates.

    The thresholds are drawn as vertical lines: a threshold in a valley separates the two
    populations; one on a slope cuts through pages that are alike for the same reason.
    """
    left, bottom, top_pad = 40, 24, 10
    plot_w, plot_h = width - left - 10, height - bottom - top_pad
    acc, rej = [0] * bins, [0] * bins
    for values, counts in ((accepted, acc), (rejected, rej)):
        for v in values:
            counts[min(bins - 1, max(0, int(v * bins)))] += 1
    peak = max((a + r for a, r in zip(acc, rej, strict=True)), default=0) or 1
    bw = plot_w / bins
    paths: dict[str, list[str]] = {"h-rej": [], "h-acc": []}
    for i in range(bins):
        x = left + i * bw + 0.5
        base = float(top_pad + plot_h)
        for cls, n in (("h-rej", rej[i]), ("h-acc", acc[i])):
            if n:
                h = plot_h * n / peak
                base -= h
                paths[cls].append(_box(x, base, bw - 1, h))
    parts: list[Safe] = [tag("title", None, label)] if label else []
    parts.append(
        tag("path", {"d": f"M{left} {top_pad}V{top_pad + plot_h}H{left + plot_w}", "class": "axis"})
    )
    for cls, d in paths.items():
        if d:
            parts.append(tag("path", {"d": "".join(d), "class": cls}))
    for tick in range(0, 11, 2):
        x = left + plot_w * tick / 10
        parts.append(
            tag(
                "text",
                {"x": _n(x), "y": height - 6, "class": "tick", "text-anchor": "middle"},
                f"{tick / 10:.1f}",
            )
        )
    parts.append(
        tag("text", {"x": left - 6, "y": top_pad + 8, "class": "tick", "text-anchor": "end"}, peak)
    )
    for i, (name, theta) in enumerate(thresholds.items()):
        x = left + plot_w * theta
        parts.append(
            tag("path", {"d": f"M{_n(x)} {top_pad - 4}V{top_pad + plot_h}", "class": f"thr thr{i}"})
        )
        parts.append(
            tag(
                "text",
                {"x": _n(x - 4), "y": top_pad + 12 + 12 * i, "class": "tick", "text-anchor": "end"},
                f"{name} {theta:.2f}",
            )
        )
    return _chart(width, height, label, parts, attrs)


def layout(
    term: Term,
    *,
    width: int = 640,
    row: int = 13,
    max_depth: int = 16,
    min_width: float = 2.0,
    max_boxes: int = 160,
    max_labels: int = 6,
    label: str = "",
    attrs: Mapping[str, object] | None = None,
) -> Safe:
    """An icicle of a term: one row of boxes per depth, width by leaves, colour by class.

    Repetition marks are printed in the widest boxes that repeat (``row ×12``); boxes
    narrower than ``min_width`` pixels, beyond the ``max_boxes`` widest, and rows below
    ``max_depth`` are left out, which bounds the picture of any term. Boxes are laid out in
    half pixels and drawn in whole ones, each one stroke of a path from where the previous
    one ended (``m dx dyh w``): about seven bytes.
    """
    n = term.nodes
    labels, marks = term.labels, term.marks
    parent, depth, leaves = _tree(term.sizes)
    unit = 2 * width / leaves[0] if n else 0.0  # half-pixel units per leaf
    widths = [leaves[i] * unit for i in range(n)]
    x = _lefts(parent, widths)
    floor, label_floor = _floors(widths, depth, marks, max_depth, min_width, max_boxes, max_labels)
    paths: dict[str, list[tuple[int, int, int]]] = {cls: [] for cls in LAYOUT_CLASSES.values()}
    words: list[Safe] = []
    deepest = 0
    for i in range(n):
        w = widths[i]
        if w < floor or depth[i] >= max_depth:
            continue
        deepest = max(deepest, depth[i])
        y = depth[i] * row + row // 2
        start = round(x[i] / 2)
        paths[LAYOUT_CLASSES.get(labels[i], "lt")].append(
            (y, start, max(1, round((x[i] + w) / 2) - start - 1))
        )
        # the colour names the class; a label says what it cannot: how often a box repeats
        text = f"{labels[i]} ×{marks[i]}"
        if marks[i] > 1 and w >= label_floor and w >= 2 * (7 * len(text) + 6):
            words.append(tag("text", {"x": start + 3, "y": y + 4}, text))
    height = (deepest + 1) * row
    parts: list[Safe] = [tag("title", None, label)] if label else []
    for cls, boxes in paths.items():
        if boxes:
            parts.append(tag("path", {"d": _strokes(boxes), "class": cls}))
    if words:
        parts.append(tag("g", {"class": "lw"}, words))
    return tag(
        "svg",
        {
            "viewBox": f"0 0 {width} {height}",  # the style sheet sizes it to its column
            "role": "img",
            "class": "layout",
            **(attrs or {}),
        },
        parts,
    )


def _tree(sizes: Sequence[int]) -> tuple[list[int], list[int], list[int]]:
    """(parent, depth, leaves) of each node of a term given by its subtree sizes: what an
    icicle's rows and box widths are made of."""
    n = len(sizes)
    parent = [-1] * n
    depth = [0] * n
    open_: list[int] = []
    for i in range(n):
        while open_ and open_[-1] + sizes[open_[-1]] <= i:
            open_.pop()
        if open_:
            parent[i] = open_[-1]
            depth[i] = len(open_)
        open_.append(i)
    leaves = [0] * n
    for i in range(n - 1, -1, -1):
        if sizes[i] == 1:
            leaves[i] = 1
        if parent[i] >= 0:
            leaves[parent[i]] += leaves[i]
    return parent, depth, leaves


def _lefts(parent: list[int], widths: list[float]) -> list[float]:
    """Each box's left edge: a parent's children side by side from its own left edge, in
    order."""
    x = [0.0] * len(parent)
    cursor = [0.0] * len(parent)
    for i, p in enumerate(parent):
        if p >= 0:
            x[i] = x[p] + cursor[p]
            cursor[p] += widths[i]
    return x


def _floors(
    widths: list[float],
    depth: list[int],
    marks: Sequence[int],
    max_depth: int,
    min_width: float,
    max_boxes: int,
    max_labels: int,
) -> tuple[float, float]:
    """The narrowest box drawn and the narrowest box labelled, in half pixels.

    Boxes are drawn from ``min_width`` pixels and labelled from 60, and only the ``max_boxes``
    widest of the rows above ``max_depth`` are drawn, the ``max_labels`` widest that repeat
    labelled: the widest boxes carry the layout; slivers add bytes.
    """
    floor = 2 * min_width
    shown = sorted((w for w, d in zip(widths, depth, strict=True) if d < max_depth), reverse=True)
    if len(shown) > max_boxes:
        floor = max(floor, shown[max_boxes - 1] + 1e-9)
    label_floor = 2 * 60.0
    repeated = sorted(
        (w for w, d, m in zip(widths, depth, marks, strict=True) if d < max_depth and m > 1),
        reverse=True,
    )
    if len(repeated) > max_labels:
        label_floor = max(label_floor, repeated[max_labels - 1])
    return floor, label_floor


def _strokes(boxes: list[tuple[int, int, int]]) -> str:
    """Path data of horizontal strokes (y, x, width), each moved to from where the last one
    ended: relative moves, or absolute where those are shorter."""
    out: list[str] = []
    cx = cy = None
    for y, x, w in sorted(boxes):
        absolute = f"M{x} {y}h{w}"
        if cx is None or cy is None:
            out.append(absolute)
        else:
            relative = f"m{x - cx} {y - cy}h{w}"
            out.append(relative if len(relative) < len(absolute) else absolute)
        cx, cy = x + w, y
    return "".join(out)


def legend(items: Iterable[tuple[str, str]]) -> Safe:
    """A row of colour keys: (css class, label)."""
    return tag(
        "span",
        {"class": "legend"},
        [tag("span", None, tag("i", {"class": cls}), " ", text) for cls, text in items],
    )
