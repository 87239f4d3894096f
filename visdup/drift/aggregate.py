"""What a snapshot keeps per template: the few numbers a comparison needs, at most 10 KB.

Per template and snapshot (one JSON object, :data:`LIMIT` bytes at most)::

    {"pages": 120,                       # pages of the template in the snapshot
     "fit": [n, q10, q25, q50, q75, q90],  # the crawl's per-page fits (None: none known)
     "patterns": {"/book/*.html": 118},  # URL patterns of its pages, most common first
     "n": 12,                            # sample pages measured below
     "shares": [0.99, ...],              # each sample page's share of required nodes mapped
     "fields": {"price": [e, number, price, date, url, short, long], ...},
     "masks": {"price": "3fe"},          # which sample pages have it (bit i: page i), hex
     "misses": [{"path", "missing", "before", "after"}],
     "layout": "9f2c...",                # digest of the template at the end
     "start_layout": "41d0...",          # digest of the template at the start (None: new)
     "fields_start": {...},              # the fields read with that template (when they differ)
     "masks_start": {...},               # and their masks
     "against": {"7": {"n", "shares", "misses"}}}  # a new template's pages on a lost one's layout

The sample is the same URLs in every snapshot (smallest URL digests). ``shares`` measure each
sample page against the template as it stood when the snapshot began (the baseline's layout;
:func:`visdup.templates.extract.match_template`'s share, the measure the thresholds were
calibrated on); ``fields`` come from the template at the end, read the way the crawl's records
are (no values from a page that does not fit). ``fields_start`` reads the same sample with the
template at the start, wherever its field nodes map (fit or not): the baseline's template read
on the current pages, so that a comparison counts the same fields on both sides, not the fields
of a template rebuilt from other pages (whose names and numbering may differ). The masks say
which sample pages have each field (those some but not all pages fill; the others follow from
the counts): the evidence of a change is then exact however the fields go together
(:mod:`visdup.drift.fields`).
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from visdup.drift.values import TYPES, value_type
from visdup.templates.extract import DEFAULT_MIN_FIT, match_template
from visdup.templates.stm import FlatTree, stm_mapping
from visdup.templates.template import Template

#: Bytes a template's aggregates may take per snapshot.
LIMIT = 10_000
#: URL patterns kept per template.
MAX_PATTERNS = 8
#: Sample shares kept per template (a resumed snapshot adds those of each run).
MAX_SHARES = 64
#: Characters of a before/after snippet.
SNIPPET = 100
#: A sample page whose share is below this is searched for the subtree it misses.
MISS_BELOW = 0.98


def quantiles(values: Sequence[float]) -> list[float] | None:
    """``[n, q10, q25, q50, q75, q90]`` (nearest rank), None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    n = len(ordered)

    def q(p: float) -> float:
        return round(ordered[min(n - 1, int(p * n))], 4)

    return [n, q(0.1), q(0.25), q(0.5), q(0.75), q(0.9)]


def median(values: Sequence[float]) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    mid = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[mid]
    return (ordered[mid - 1] + ordered[mid]) / 2


def _hint(tree: FlatTree, i: int) -> str:
    hint = tree.hints[i] or tree.labels[i]
    return hint if len(hint) <= 40 else hint[:39] + "…"


def term_path(tree: FlatTree, node: int, parents: Sequence[int] | None = None) -> str:
    """``body > div#main > ul.list > li[3]``: the node's place in the template tree."""
    parents = parents if parents is not None else tree.parents()
    parts: list[str] = []
    i = node
    while i >= 0:
        p = parents[i]
        label = _hint(tree, i)
        if p >= 0:
            same = [k for k in tree.children(p) if tree.labels[k] == tree.labels[i]]
            if len(same) > 1:
                label += f"[{same.index(i) + 1}]"
        parts.append(label)
        i = p
    parts.reverse()
    if parts and parts[0] == "html":
        parts = parts[1:]
    text = " > ".join(parts)
    return text if len(text) <= 200 else "… > " + " > ".join(parts[-6:])


def snippet(tree: FlatTree, node: int) -> str:
    """The element's hint and the start of its text (what a reader would recognise)."""
    end = node + tree.sizes[node]
    words = " ".join(t for t in tree.texts[node:end] if t)
    text = f"<{_hint(tree, node)}> {words}".strip()
    return text if len(text) <= SNIPPET else text[: SNIPPET - 1] + "…"


def _misses(template: Template, tree: FlatTree) -> tuple[list[int], dict[int, int]]:
    """Roots of the required subtrees the page does not map, and the mapping."""
    image = dict(
        stm_mapping(
            template.tree,
            tree,
            details_a=template.details(),
            details_b=tree.text_details(),
        )
    )
    parents = template.tree.parents()
    roots = [
        i
        for i, req in enumerate(template.required)
        if req and i not in image and (parents[i] < 0 or parents[i] in image)
    ]
    return roots, image


def layout_digest(text: str | None) -> str | None:
    """A short digest of a stored template's text: two snapshots measured with the same."""
    if text is None:
        return None
    return hashlib.blake2b(text.encode("utf-8"), digest_size=8).hexdigest()


def _tally(
    into: dict[str, list[int]],
    bits: dict[str, int],
    page: int,
    names: Sequence[str],
    values: dict[str, str | None],
) -> None:
    """Count each field's value type on one page; its bit in the field's mask when filled."""
    empty = TYPES.index("empty")
    for name in names:
        counts = into.setdefault(name, [0] * len(TYPES))
        value = values.get(name, values.get(f"{name}_field"))
        kind = TYPES.index(value_type(value))
        counts[kind] += 1
        if kind != empty:
            bits[name] = bits.get(name, 0) | (1 << page)


def pack_masks(fields: dict[str, list[int]], bits: dict[str, int], n: int) -> dict[str, str]:
    """The masks (hex) of the fields some but not all pages fill: the others follow from the
    counts (:func:`field_mask`)."""
    empty = TYPES.index("empty")
    return {
        name: format(bits.get(name, 0), "x")
        for name, counts in fields.items()
        if 0 < n - counts[empty] < n
    }


def field_mask(stats: dict[str, Any], name: str, *, start: bool = False) -> int | None:
    """Which sample pages (bit i: the i-th) have the field, from the stored masks and counts;
    None where not known (a store written before masks were kept, or the masks dropped)."""
    fields = stats.get("fields_start" if start and "fields_start" in stats else "fields") or {}
    masks = stats.get("masks_start" if start and "fields_start" in stats else "masks")
    n = int(stats.get("n") or 0)
    counts = fields.get(name)
    filled = 0 if counts is None else n - int(counts[TYPES.index("empty")])
    if filled <= 0:
        return 0
    if filled >= n:
        return (1 << n) - 1
    if masks is None or name not in masks:
        return None
    return int(masks[name], 16)


def measure(
    sample: Sequence[tuple[str, FlatTree]],
    fit_template: Template | None,
    field_template: Template | None,
    *,
    min_fit: float = DEFAULT_MIN_FIT,
) -> dict[str, Any]:
    """The sample part of a template's aggregates (``n``, ``shares``, ``fields``, ``misses``,
    and ``fields_start`` when there is a ``fit_template``: the fields it reads)."""
    out: dict[str, Any] = {"n": 0, "shares": [], "fields": {}, "misses": []}
    trees = [(u, t) for u, t in sample if t.nodes]
    if not trees or (fit_template is None and field_template is None):
        return out
    out["n"] = len(trees)
    fields: dict[str, list[int]] = {}
    start_fields: dict[str, list[int]] = {}
    names = field_template.field_names if field_template is not None else []
    start_names = fit_template.field_names if fit_template is not None else []
    for name in names:
        fields[name] = [0] * len(TYPES)
    for name in start_names:
        start_fields[name] = [0] * len(TYPES)
    bits: dict[str, int] = {}
    start_bits: dict[str, int] = {}
    missed: Counter[int] = Counter()
    examples: dict[int, str] = {}
    for page, (_url, tree) in enumerate(trees):
        start = None
        if fit_template is not None:
            start = match_template(fit_template, tree, min_fit=min_fit)
            _tally(start_fields, start_bits, page, start_names, start.values)
        if field_template is not None:
            if field_template is fit_template and start is not None:
                fit = start
            else:
                fit = match_template(field_template, tree, min_fit=min_fit)
            _tally(fields, bits, page, names, fit.values if fit.fits else {})
        if fit_template is not None:
            assert start is not None
            share = start.share
            out["shares"].append(round(share, 4))
            if share < MISS_BELOW:
                roots, image = _misses(fit_template, tree)
                parents = fit_template.tree.parents()
                for i in roots:
                    missed[i] += 1
                    if i not in examples:
                        p = parents[i]
                        j = image.get(p, 0) if p >= 0 else 0
                        examples[i] = snippet(tree, j) if j < tree.nodes else ""
    out["fields"] = fields
    out["masks"] = pack_masks(fields, bits, len(trees))
    if fit_template is not None:
        out["fields_start"] = start_fields
        out["masks_start"] = pack_masks(start_fields, start_bits, len(trees))
    if fit_template is not None and missed:
        parents = fit_template.tree.parents()
        # the subtree most pages miss, the largest first among equals
        ranked = sorted(missed, key=lambda i: (-missed[i], -fit_template.tree.sizes[i], i))
        for i in ranked[:2]:
            out["misses"].append(
                {
                    "path": term_path(fit_template.tree, i, parents),
                    "missing": round(missed[i] / len(trees), 3),
                    "before": snippet(fit_template.tree, i),
                    "after": examples.get(i, ""),
                }
            )
    return out


def _merge_fields(
    old: dict[str, list[int]], old_n: int, new: dict[str, list[int]], new_n: int
) -> dict[str, list[int]]:
    fields: dict[str, list[int]] = {}
    empty = TYPES.index("empty")
    for part, n in ((old, old_n), (new, new_n)):
        for name in set(old) | set(new):
            counts = part.get(name)
            if counts is None:
                counts = [0] * len(TYPES)
                counts[empty] = n
            into = fields.setdefault(name, [0] * len(TYPES))
            for k, c in enumerate(counts):
                into[k] += int(c)
    return fields


def _merge_masks(
    old: dict[str, Any], new: dict[str, Any], fields: dict[str, list[int]], start: bool
) -> dict[str, str] | None:
    """The masks of two runs' samples, the new run's pages after the old's; None when one
    part's are not known."""
    old_n = int(old["n"])
    bits: dict[str, int] = {}
    for name in fields:
        a = field_mask(old, name, start=start)
        b = field_mask(new, name, start=start)
        if a is None or b is None:
            return None
        bits[name] = a | (b << old_n)
    return pack_masks(fields, bits, old_n + int(new["n"]))


def merge_sample(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """A resumed snapshot: the sample parts of its runs added (their pages are disjoint). The
    fields read with the starting template add up when both runs started from the same one."""
    keys = ("n", "shares", "fields", "misses", "masks", "fields_start", "masks_start")
    if not old.get("n"):
        return new
    if not new.get("n"):
        return {k: old[k] for k in (*keys, "start_layout") if k in old}
    old_n, new_n = int(old["n"]), int(new["n"])
    fields = _merge_fields(old.get("fields", {}), old_n, new.get("fields", {}), new_n)
    out: dict[str, Any] = {
        "n": old_n + new_n,
        "shares": (list(old.get("shares", [])) + list(new.get("shares", [])))[-MAX_SHARES:],
        "fields": fields,
        "misses": new.get("misses") or old.get("misses") or [],
    }
    masks = _merge_masks(old, new, fields, False)
    if masks is not None:
        out["masks"] = masks
    start = new.get("start_layout")
    if start is not None and old.get("start_layout") == start:
        old_start = old.get("fields_start", old.get("fields", {}))
        new_start = new.get("fields_start", new.get("fields", {}))
        start_fields = _merge_fields(old_start, old_n, new_start, new_n)
        out["fields_start"] = start_fields
        out["start_layout"] = start
        masks = _merge_masks(old, new, start_fields, True)
        if masks is not None:
            out["masks_start"] = masks
    return out


def template_stats(
    *,
    pages: int,
    fits: Iterable[float],
    patterns: Counter[str],
    sample: dict[str, Any],
) -> dict[str, Any]:
    """One template's aggregates, trimmed to :data:`LIMIT` bytes."""
    stats: dict[str, Any] = {
        "pages": pages,
        "fit": quantiles(list(fits)),
        # ties by the pattern, not by which page came first: which are kept, and their order
        "patterns": dict(sorted(patterns.items(), key=lambda kv: (-kv[1], kv[0]))[:MAX_PATTERNS]),
        "n": sample.get("n", 0),
        "shares": list(sample.get("shares", []))[-MAX_SHARES:],
        "fields": dict(sample.get("fields", {})),
        "misses": list(sample.get("misses", [])),
    }
    for key in ("masks", "fields_start", "masks_start", "start_layout"):
        if sample.get(key) is not None:
            stats[key] = sample[key]
    return fit_limit(stats)


def encode(stats: dict[str, Any]) -> str:
    return json.dumps(stats, separators=(",", ":"), ensure_ascii=False)


def fit_limit(stats: dict[str, Any]) -> dict[str, Any]:
    """Drop the last fields (then misses, then patterns) until the JSON fits :data:`LIMIT`."""
    if len(encode(stats).encode()) <= LIMIT:
        return stats
    # what a comparison can do without goes first: the masks (a correction of p-values by
    # counts replaces the permutations), the fields read with the starting template (the
    # current template's fields are matched by name), the fits against a lost template
    for key in ("masks_start", "masks", "fields_start", "against"):
        if len(encode(stats).encode()) <= LIMIT:
            return stats
        stats.pop(key, None)
    fields = stats["fields"]
    names = list(fields)
    # the emptiest fields go first: a comparison only watches well-filled ones
    empty = TYPES.index("empty")
    order = {n: k for k, n in enumerate(names)}
    names.sort(key=lambda n: (fields[n][empty], order[n]))
    while names and len(encode(stats).encode()) > LIMIT:
        fields.pop(names.pop())
        stats["fields_dropped"] = stats.get("fields_dropped", 0) + 1
    if len(encode(stats).encode()) > LIMIT:
        stats["misses"] = []
    while stats["patterns"] and len(encode(stats).encode()) > LIMIT:
        stats["patterns"].popitem()
    return stats


def coverage(stats: dict[str, Any], name: str) -> float:
    """Share of the sample where the field has a value (0 when the field is not there)."""
    n = stats.get("n") or 0
    counts = stats.get("fields", {}).get(name)
    if not n or counts is None:
        return 0.0
    return 1.0 - counts[TYPES.index("empty")] / n


def dominant(stats: dict[str, Any], name: str) -> tuple[str | None, float, int]:
    """(most common non-empty type, its share among non-empty values, non-empty count)."""
    counts = stats.get("fields", {}).get(name)
    if counts is None:
        return None, 0.0, 0
    filled = [(c, TYPES[k]) for k, c in enumerate(counts) if TYPES[k] != "empty"]
    total = sum(c for c, _ in filled)
    if not total:
        return None, 0.0, 0
    count, kind = max(filled)
    return kind, count / total, total


def fit_median(stats: dict[str, Any]) -> float | None:
    """The template's fit: the sample's median share, else the crawl's median fit."""
    shares = stats.get("shares") or []
    if shares:
        return median(shares)
    fit = stats.get("fit")
    return float(fit[3]) if fit else None
