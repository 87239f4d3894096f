"""Field drift of one template between two snapshots: which fields emptied or changed type, and
how strong the evidence is for samples of these sizes (:mod:`visdup.drift.evidence`).

- **emptied**: the share of sample pages that have the field fell below half of the baseline's
  (and of every earlier snapshot's), and fell further than chance against each of them: a
  field filled in 5 of 5 baseline pages and 2 of 5 now is p = 0.08, no alarm; 30 of 30 then
  2 of 30 is an error.
- **retyped**: the baseline's type held at least :data:`RETYPED_SHARE` of the values, now less
  than :data:`RETYPED_KEEP`, again beyond chance.

Every field that could show a change at all is watched, optional ones too: a field filled in a
stable 60 % of pages never alarms while that share holds within sampling noise, and alarms
when it empties. The correction for the fields watched (by permutation of the sample pages,
else by their number: :mod:`visdup.drift.evidence`) keeps a template of 90 fields from raising
one by chance in every comparison.

The fields compared are those of the same template on both sides whenever the snapshots allow
it: the current sample read with the template it started from, which is the baseline's at its
end (``fields_start`` and the layout digests of :mod:`visdup.drift.aggregate`). Otherwise (an
older store, a baseline further back) the current template's own fields are matched by name.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from visdup.drift.aggregate import field_mask
from visdup.drift.evidence import (
    ERROR_P,
    NOTE_P,
    corrected,
    fell,
    least,
    level,
    p_text,
    permuted,
    worst,
)
from visdup.drift.values import TYPES

#: Emptied: coverage below this share of the baseline's.
EMPTIED_RATIO = 0.5
#: Retyped: the baseline's type held at least this share of the values, and the current holds
#: less than :data:`RETYPED_KEEP` of them.
RETYPED_SHARE = 0.6
RETYPED_KEEP = 0.5
#: Sample pages a snapshot needs for its fields to be compared.
MIN_SAMPLE = 3

Counts = list[int]
Fields = dict[str, Counts]
Stats = dict[int, dict[str, Any]]

_EMPTY = TYPES.index("empty")
_SUFFIX = re.compile(r"_\d+$")


@dataclass
class FieldDrift:
    """The changed fields (each ``name``, ``change``, ``before``, ``after``, ``p``, ``level``)
    and how many fields were watched."""

    changes: list[dict[str, Any]] = field(default_factory=list)
    watched: int = 0

    @property
    def level(self) -> str | None:
        return worst([c["level"] for c in self.changes])

    def at_least(self, floor: str) -> list[dict[str, Any]]:
        order = ("note", "warning", "error")
        return [c for c in self.changes if order.index(c["level"]) >= order.index(floor)]


def family(name: str) -> str:
    """A field's name without the number that keeps names unique (``pre_22`` → ``pre``)."""
    return _SUFFIX.sub("", name)


def filled(counts: Counts | None, n: int) -> tuple[int, int]:
    """(pages with a value, pages measured) of one field's histogram (absent: none of ``n``)."""
    if counts is None:
        return 0, n
    total = sum(int(c) for c in counts)
    return total - int(counts[_EMPTY]), total


def _share(counts: Counts | None, n: int) -> float:
    k, total = filled(counts, n)
    return k / total if total else 0.0


def _kind(counts: Counts | None) -> tuple[str | None, int, int]:
    """(the most common type of the values, its count, values) of a histogram."""
    if counts is None:
        return None, 0, 0
    values = [(int(c), TYPES[k]) for k, c in enumerate(counts) if k != _EMPTY]
    total = sum(c for c, _ in values)
    if not total:
        return None, 0, 0
    count, kind = max(values)
    return kind, count, total


def current_fields(base: dict[str, Any], cur: dict[str, Any]) -> tuple[Fields, bool]:
    """The current sample's fields, and whether they were read with the baseline's template."""
    start = cur.get("start_layout")
    if start is not None and start == base.get("layout"):
        return dict(cur.get("fields_start", cur.get("fields")) or {}), True
    return dict(cur.get("fields") or {}), False


def watched_fields(base: dict[str, Any], n_now: int) -> list[str]:
    """The baseline's fields that a current sample of ``n_now`` pages could show emptied
    (the smallest p-value possible is below the note level)."""
    out = []
    for name, counts in (base.get("fields") or {}).items():
        k, n = filled(counts, int(base.get("n") or 0))
        if n >= MIN_SAMPLE and least(k, n, n_now) < NOTE_P:
            out.append(name)
    return out


def field_drift(
    cid: int, base: dict[str, Any], cur: dict[str, Any], history: Sequence[Stats] = ()
) -> FieldDrift:
    """The field changes of a template present in both snapshots (module docstring);
    ``history``: earlier snapshots up to and with the baseline."""
    n_base = int(base.get("n") or 0)
    n_now = int(cur.get("n") or 0)
    if n_now < MIN_SAMPLE or n_base < MIN_SAMPLE:
        return FieldDrift()
    now_fields, same = current_fields(base, cur)
    before_fields: Fields = base.get("fields") or {}
    earlier = [h[cid] for h in history if cid in h and int(h[cid].get("n") or 0) >= MIN_SAMPLE]
    watched = watched_fields(base, n_now)
    before_count = Counter(family(n) for n in before_fields)
    after_count = Counter(family(n) for n in now_fields)
    emptied: dict[str, tuple[tuple[int, int], tuple[int, int], float]] = {}
    retyped: dict[str, dict[str, Any]] = {}
    for name in watched:
        k_before, n_before = filled(before_fields[name], n_base)
        k_now, n_after = filled(now_fields.get(name), n_now)
        share = k_before / n_before
        floor = min(
            [share] + [_share((s.get("fields") or {}).get(name), int(s["n"])) for s in earlier]
        )
        if k_now / n_after < EMPTIED_RATIO * share and k_now / n_after < EMPTIED_RATIO * floor:
            emptied[name] = (
                (k_before, n_before),
                (k_now, n_after),
                fell(k_before, n_before, k_now, n_after),
            )
            continue
        if not same and before_count[family(name)] != after_count[family(name)]:
            continue  # the stem's fields are numbered otherwise: which is which is not known
        found = _retyped(name, before_fields[name], now_fields.get(name), earlier)
        if found is not None:
            (k1, n1), (k2, n2), kind = found
            p = corrected(fell(k1, n1, k2, n2), len(watched))
            if level(p) is not None:
                retyped[name] = _evidence(name, "retyped", (k1, n1), (k2, n2), p, kind)
    adjusted = _adjusted(cid, base, cur, watched, emptied, same)
    for name, (_before, (k_now, n_after), _p) in emptied.items():
        # the fall must be beyond chance against every earlier snapshot, the least filled too
        for s in earlier:
            if s is not base:
                k, n = filled((s.get("fields") or {}).get(name), int(s["n"]))
                p = corrected(fell(k, n, k_now, n_after), len(watched))
                adjusted[name] = max(adjusted[name], p)
    changes = {
        name: _evidence(name, "emptied", before, after, adjusted[name])
        for name, (before, after, _p) in emptied.items()
        if level(adjusted[name]) is not None
    }
    if not same:
        lost = set()
        for stem in {family(n) for n in changes}:
            stable = [n for n in watched if family(n) == stem]
            lost |= _unmatched(stem, stable, before_fields, n_base, now_fields, n_now)
        changes = {n: e for n, e in changes.items() if n in lost}
    order = {n: k for k, n in enumerate(watched)}
    found_all = sorted([*changes.values(), *retyped.values()], key=lambda c: order[c["name"]])
    return FieldDrift(found_all, len(watched))


def _emptied_p(k_now: int, hits: int, n_before: int, n_now: int) -> float:
    """The p-value of a field ``hits`` pooled pages have, ``k_now`` of them current ones (1.0
    where it did not empty: the share did not fall below half)."""
    k_before = hits - k_now
    if not 0 <= k_before <= n_before or k_now / n_now >= EMPTIED_RATIO * k_before / n_before:
        return 1.0
    return fell(k_before, n_before, k_now, n_now)


def _adjusted(
    cid: int,
    base: dict[str, Any],
    cur: dict[str, Any],
    watched: list[str],
    emptied: dict[str, tuple[tuple[int, int], tuple[int, int], float]],
    same: bool,
) -> dict[str, float]:
    """The emptied fields' p-values corrected for the fields watched: by permutation of the
    sample pages where both snapshots keep which page has which field (and the fields are the
    same template's), else by their number."""
    if not emptied:
        return {}
    n_base = int(base.get("n") or 0)
    n_now = int(cur.get("n") or 0)
    tests: list[tuple[int, list[float]]] = []
    for name in watched if same else []:
        before = field_mask(base, name)
        now = field_mask(cur, name, start=True)
        if before is None or now is None:
            tests = []
            break
        pooled = before | (now << n_base)
        hits = pooled.bit_count()
        tests.append((pooled, [_emptied_p(k, hits, n_base, n_now) for k in range(n_now + 1)]))
    # Bonferroni's correction bounds the permutation's from above: where it already says
    # error, no draw can say more (and a drawn p-value cannot go below 1 / draws)
    out = {n: corrected(emptied[n][2], len(watched)) for n in emptied}
    open_ = [n for n in emptied if out[n] >= ERROR_P]
    if not tests or not open_:
        return out
    observed = [emptied[n][2] for n in open_]
    seed = f"{cid}:{n_base}:{n_now}"
    for name, p in zip(open_, permuted(tests, n_base, n_now, observed, seed), strict=True):
        out[name] = min(out[name], p)
    return out


def _evidence(
    name: str,
    change: str,
    before: tuple[int, int],
    after: tuple[int, int],
    p: float,
    kind: str | None = None,
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": name,
        "change": change,
        "before": f"{before[0]}/{before[1]}",
        "after": f"{after[0]}/{after[1]}",
        "p": float(f"{p:.3g}"),
        "level": level(p),
    }
    if kind is not None:
        out["type"] = kind
    return out


def field_text(change: dict[str, Any]) -> str:
    """``price emptied (filled 30/30 → 2/30, p < 0.001)``; the bare change for older alarms."""
    text = f"{change['name']} {change['change']}"
    if "before" not in change:
        return text
    what = f"{change['type']} in" if change.get("type") else "filled"
    return f"{text} ({what} {change['before']} → {change['after']}, {p_text(change['p'])})"


def _retyped(
    name: str, before: Counts, now: Counts | None, earlier: Sequence[dict[str, Any]]
) -> tuple[tuple[int, int], tuple[int, int], str] | None:
    """(baseline's type count of its values, current's), and the type: a field whose dominant
    type gave way, that no earlier snapshot typed otherwise."""
    kind, count, values = _kind(before)
    new_kind, _c, now_values = _kind(now)
    if kind is None or new_kind is None or new_kind == kind or now is None:
        return None
    if count / values < RETYPED_SHARE or now_values < MIN_SAMPLE:
        return None
    if any(_kind((s.get("fields") or {}).get(name))[0] not in (None, kind) for s in earlier):
        return None  # its type already varied before: not a change
    kept = int(now[TYPES.index(kind)])
    if kept / now_values >= RETYPED_KEEP:
        return None
    return (count, values), (kept, now_values), kind


def _unmatched(
    stem: str, stable: list[str], before: Fields, n_before: int, now: Fields, n_now: int
) -> set[str]:
    """The stem's fields that no field of the current template takes over, when the current
    template is not the baseline's (its fields named and numbered from other pages). A field
    keeps its own name when that is still filled (at least half its share) with the same type;
    the others are matched, in page order, with an unused field of the stem still filled, the
    same type first, then the fuller."""
    free = [n for n in now if family(n) == stem]

    def kept(name: str, other: str) -> bool:
        return _share(now.get(other), n_now) >= EMPTIED_RATIO * _share(before.get(name), n_before)

    rest = []
    for name in stable:
        same_kind = _kind(now.get(name))[0] == _kind(before.get(name))[0]
        if name in free and kept(name, name) and same_kind:
            free.remove(name)
        else:
            rest.append(name)
    lost = set()
    for name in rest:
        kind = _kind(before.get(name))[0]
        ranked = sorted(
            (n for n in free if kept(name, n)),
            key=lambda n: (_kind(now.get(n))[0] != kind, -_share(now.get(n), n_now), n),
        )
        if ranked:
            free.remove(ranked[0])
        else:
            lost.add(name)
    return lost
