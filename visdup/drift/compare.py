"""Two snapshots compared template by template: the alarms, each with where and since.

Per template (a cluster id, stable across snapshots) against a baseline snapshot:

- **changed**: its fit fell while its URL patterns persist; ``where`` names the required
  subtree its pages no longer have (a term path) with before/after snippets;
- **replaced**: another template now holds most of its URL-pattern pages ("#3 → #9");
- **variant**: a new template shares one of its patterns beside it (an A/B test);
- **new** / **gone**: a template of at least :data:`MIN_PAGES` pages (and 2 % of the snapshot)
  appeared or disappeared;
- **fields**: only fields changed. Per field: **emptied** (coverage fell below half of a field
  that was at least 80 % filled) and **retyped** (its dominant value type changed).

A template whose pages all came back unchanged (the same body hash in both snapshots) has no
alarm: drift needs the pages to change, and without that only visdup's grouping moved.

Severity (measured on nine news sites' redesigns, four eras each): a median fit below 0.9 is a
warning (26 of 27 era changes flagged, 1 false alarm in 36 controls), below 0.5 or half the
stable fields emptied is an error (25 flagged, no false alarm). ``replaced`` is an error,
``new``, ``gone`` and ``variant`` are warnings. With several snapshots before the current one,
a fit must also fall by more than the baseline's own spread, and a field counts as stable only
when every earlier snapshot filled it (and typed it the same).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from visdup.drift.aggregate import coverage, dominant, fit_median, median
from visdup.drift.values import TYPES

#: Severity thresholds of the median fit (the design's measurements, module docstring).
WARN_FIT = 0.9
ERROR_FIT = 0.5
#: A field is stable (watched) when at least this share of the sample has it.
STABLE_COVERAGE = 0.8
#: Emptied: coverage below this share of the baseline's.
EMPTIED_RATIO = 0.5
#: Retyped: the baseline's type held at least this share of the values, and the current holds
#: less than :data:`RETYPED_KEEP` of them.
RETYPED_SHARE = 0.6
RETYPED_KEEP = 0.5
#: z of a fall in coverage that counts (one-sided, about 1 %).
FELL_Z = 2.33
#: Sample pages a template needs for its fit and fields to be compared.
MIN_SAMPLE = 3
#: Pages a template needs for new/gone/replaced alarms.
MIN_PAGES = 5
#: Share of the snapshot's pages a template needs for new/gone alarms.
MIN_SHARE = 0.02
#: The least fall of the median fit that counts (when no spread is known).
MIN_FALL = 0.02
#: Replaced: the template keeps less than this share of its pattern pages...
HELD_BELOW = 0.5
#: A pattern holding at least this share of a template's pages is one of its main ones.
MAIN_PATTERN = 0.2
#: Variant: each of two templates holds at least this share of a pattern...
VARIANT_SHARE = 0.2
#: ...of at least this many pages.
VARIANT_PAGES = 10

#: Share of a template's pages unchanged byte for byte at which it has no alarm.
UNCHANGED = 0.95

SEVERITIES = ("warning", "error")

_SUFFIX = re.compile(r"_\d+$")


@dataclass
class Alarm:
    template: int
    change: str
    severity: str
    where: dict[str, Any] | None = None
    fields: list[dict[str, str]] = field(default_factory=list)
    since: str | None = None
    detail: str = ""
    replaced_by: int | None = None

    @property
    def key(self) -> tuple[int, str]:
        return self.template, self.change

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "template": self.template,
            "change": self.change,
            "severity": self.severity,
            "where": self.where,
            "fields": self.fields,
            "since": self.since,
            "detail": self.detail,
        }
        if self.replaced_by is not None:
            out["replaced_by"] = self.replaced_by
        return out

    def line(self) -> str:
        """One line for a log or a terminal."""
        head = (
            f"#{self.template} → #{self.replaced_by}" if self.replaced_by else f"#{self.template}"
        )
        text = f"{self.severity}: template {head} {self.change}"
        if self.detail:
            text += f": {self.detail}"
        if self.fields:
            text += "; fields " + ", ".join(f"{f['name']} {f['change']}" for f in self.fields)
        if self.where and self.where.get("path"):
            text += f"; at {self.where['path']}"
        if self.since:
            text += f" (since {self.since})"
        return text


Stats = dict[int, dict[str, Any]]


def _total(snapshot: Stats) -> int:
    return sum(int(s.get("pages") or 0) for s in snapshot.values())


def _pattern_table(snapshot: Stats) -> dict[str, dict[int, int]]:
    table: dict[str, dict[int, int]] = {}
    for cid, stats in snapshot.items():
        for pattern, count in (stats.get("patterns") or {}).items():
            table.setdefault(pattern, {})[cid] = int(count)
    return table


def _share(table: dict[str, dict[int, int]], pattern: str, cid: int) -> float:
    row = table.get(pattern) or {}
    total = sum(row.values())
    return row.get(cid, 0) / total if total else 0.0


def _fit_spread(cid: int, history: Sequence[Stats]) -> float:
    medians = [m for h in history if cid in h for m in [fit_median(h[cid])] if m is not None]
    return max(medians) - min(medians) if len(medians) > 1 else 0.0


def _stable_fields(cid: int, baseline: dict[str, Any], history: Sequence[Stats]) -> list[str]:
    """Fields every measured snapshot up to the baseline filled (at least 80 %)."""
    if (baseline.get("n") or 0) < MIN_SAMPLE:
        return []
    out = []
    for name in baseline.get("fields") or {}:
        if coverage(baseline, name) < STABLE_COVERAGE:
            continue
        earlier = [h[cid] for h in history if cid in h and (h[cid].get("n") or 0) >= MIN_SAMPLE]
        if all(coverage(s, name) >= STABLE_COVERAGE for s in earlier):
            out.append(name)
    return out


def _fell(before: float, n_before: int, now: float, n_now: int) -> bool:
    """Whether a coverage fell beyond what two samples of these sizes show by chance (one-sided
    two-proportion test at about 1 %): small samples of pages with optional fields vary."""
    pooled = (before * n_before + now * n_now) / (n_before + n_now)
    spread = (pooled * (1 - pooled) * (1 / n_before + 1 / n_now)) ** 0.5
    return spread == 0 or (before - now) / spread >= FELL_Z


def family(name: str) -> str:
    """A field's name without the number that keeps names unique (``pre_22`` → ``pre``)."""
    return _SUFFIX.sub("", name)


def _field_changes(
    cid: int, base: dict[str, Any], cur: dict[str, Any], history: Sequence[Stats]
) -> tuple[list[dict[str, str]], int]:
    """(field alarms, stable field count) of a template present in both snapshots.

    Names that share a stem are numbered in page order (``pre``, ``pre_2``...), and a template
    rebuilt from other pages may number them otherwise: a field that looks emptied is first
    matched with the stem's fields of the current template (:func:`_unmatched`), and where the
    stem's count of fields differs, none is called retyped.
    """
    if (cur.get("n") or 0) < MIN_SAMPLE:
        return [], 0
    stable = _stable_fields(cid, base, history)
    before_count = Counter(family(n) for n in base.get("fields") or {})
    after_count = Counter(family(n) for n in cur.get("fields") or {})
    emptied: dict[str, list[str]] = {}
    retyped: list[str] = []
    for name in stable:
        before = coverage(base, name)
        floor = min(
            [before]
            + [coverage(h[cid], name) for h in history if cid in h and (h[cid].get("n") or 0)]
        )
        now = coverage(cur, name)
        if (
            now < EMPTIED_RATIO * before
            and now < EMPTIED_RATIO * floor
            and _fell(before, base.get("n") or 0, now, cur.get("n") or 0)
        ):
            emptied.setdefault(family(name), []).append(name)
        elif before_count[family(name)] == after_count[family(name)] and _retyped(
            cid, name, base, cur, history
        ):
            retyped.append(name)
    changes = []
    for stem, names in emptied.items():
        lost = _unmatched(stem, [n for n in stable if family(n) == stem], base, cur)
        changes += [{"name": n, "change": "emptied"} for n in names if n in lost]
    changes += [{"name": n, "change": "retyped"} for n in retyped]
    order = {n: k for k, n in enumerate(stable)}
    changes.sort(key=lambda c: order[c["name"]])
    return changes, len(stable)


def _unmatched(stem: str, stable: list[str], base: dict[str, Any], cur: dict[str, Any]) -> set[str]:
    """The stem's stable fields that no field of the current template takes over. A field keeps
    its own name when that is still filled (at least half its coverage) with the same dominant
    type; the others are matched, in page order, with an unused field of the stem still filled,
    the same type first, then the fuller."""
    free = [n for n in cur.get("fields") or {} if family(n) == stem]

    def filled(name: str, other: str) -> bool:
        return coverage(cur, other) >= EMPTIED_RATIO * coverage(base, name)

    rest = []
    for name in stable:
        same_kind = dominant(cur, name)[0] == dominant(base, name)[0]
        if name in free and filled(name, name) and same_kind:
            free.remove(name)
        else:
            rest.append(name)
    lost = set()
    for name in rest:
        kind = dominant(base, name)[0]
        ranked = sorted(
            (n for n in free if filled(name, n)),
            key=lambda n: (dominant(cur, n)[0] != kind, -coverage(cur, n), n),
        )
        if ranked:
            free.remove(ranked[0])
        else:
            lost.add(name)
    return lost


def _retyped(
    cid: int, name: str, base: dict[str, Any], cur: dict[str, Any], history: Sequence[Stats]
) -> bool:
    kind, share, _n = dominant(base, name)
    new_kind, _s, filled = dominant(cur, name)
    if kind is None or share < RETYPED_SHARE or new_kind is None or new_kind == kind:
        return False
    if filled < MIN_SAMPLE:
        return False
    if any(
        dominant(h[cid], name)[0] not in (None, kind)
        for h in history
        if cid in h and (h[cid].get("n") or 0) >= MIN_SAMPLE
    ):
        return False  # its type already varied before: not a change
    counts = cur["fields"][name]
    return counts[TYPES.index(kind)] / filled < RETYPED_KEEP


@dataclass
class Same:
    """Per template, the share of its pages (fetched in both snapshots) whose bytes did not
    change: ``before`` by the baseline's templates, ``after`` by the current ones."""

    before: dict[int, float] = field(default_factory=dict)
    after: dict[int, float] = field(default_factory=dict)


def _replacement(
    cid: int,
    patterns: dict[str, int],
    before: dict[str, dict[int, int]],
    after: dict[str, dict[int, int]],
) -> tuple[int, str, float] | None:
    """(the template that took over, the pattern, its share there) where ``cid`` kept less
    than half its share of one of its main URL patterns and one other template gained most of
    what it lost; None otherwise."""
    weight = sum(patterns.values()) or 1
    for pattern, count in sorted(patterns.items(), key=lambda kv: (-kv[1], kv[0])):
        if count < MIN_PAGES or count < MAIN_PATTERN * weight or not after.get(pattern):
            continue
        had = _share(before, pattern, cid)
        kept = _share(after, pattern, cid)
        if not had or kept >= HELD_BELOW * had:
            continue
        gains = {
            other: _share(after, pattern, other) - _share(before, pattern, other)
            for other in after[pattern]
            if other != cid
        }
        if gains:
            winner = max(sorted(gains), key=lambda k: gains[k])
            if gains[winner] >= 0.5 * (had - kept):
                return winner, pattern, _share(after, pattern, winner)
    return None


def compare(
    current: Stats, baseline: Stats, history: Sequence[Stats] = (), same: Same | None = None
) -> list[Alarm]:
    """The alarms of ``current`` against ``baseline``; ``history``: snapshots up to and with the
    baseline, oldest first, whose spread sets the tolerances (the baseline alone: none).

    With ``same``, a template whose pages all came back byte for byte (:data:`UNCHANGED`) has no
    alarm: whatever moved was visdup's grouping, not the site.
    """
    history = list(history) or [baseline]
    same = same or Same()
    alarms: list[Alarm] = []
    before = _pattern_table(baseline)
    after = _pattern_table(current)
    total_before = _total(baseline) or 1
    total_after = _total(current) or 1
    taken: set[int] = set()  # templates explained as a replacement or a variant

    for cid in sorted(baseline):
        if same.before.get(cid, 0.0) >= UNCHANGED:
            continue
        base = baseline[cid]
        pages = int(base.get("pages") or 0)
        cur = current.get(cid)
        replaced = _replaced(cid, base, current, before, after) if pages >= MIN_PAGES else None
        if replaced is not None:
            assert replaced.replaced_by is not None
            taken.add(replaced.replaced_by)
            alarms.append(replaced)
            continue
        if cur is None or not cur.get("pages"):
            if pages >= MIN_PAGES and pages >= MIN_SHARE * total_before:
                alarms.append(
                    Alarm(cid, "gone", "warning", detail=f"{pages} pages before, none now")
                )
            continue
        held = _held(cid, base, cur, before, after)
        changed = _changed(cid, base, cur, history, held)
        if changed is not None:
            alarms.append(changed)
    variants = _variants(before, after, same, taken)
    taken.update(alarm.template for alarm in variants)
    alarms += variants
    for cid in sorted(current):
        if cid in baseline or cid in taken or same.after.get(cid, 0.0) >= UNCHANGED:
            continue
        pages = int(current[cid].get("pages") or 0)
        if pages >= MIN_PAGES and pages >= MIN_SHARE * total_after:
            alarms.append(Alarm(cid, "new", "warning", detail=f"{pages} pages"))
    return alarms


def _held(
    cid: int,
    base: dict[str, Any],
    cur: dict[str, Any] | None,
    before: dict[str, dict[int, int]],
    after: dict[str, dict[int, int]],
) -> float:
    """How much of its URL patterns' pages a template still holds (1.0: as much as before),
    each pattern weighed by the pages it had."""
    patterns = base.get("patterns") or {}
    had = sum(w * _share(before, p, cid) for p, w in patterns.items())
    kept = sum(w * _share(after, p, cid) for p, w in patterns.items())
    return kept / had if had else (1.0 if cur else 0.0)


def _replaced(
    cid: int,
    base: dict[str, Any],
    current: Stats,
    before: dict[str, dict[int, int]],
    after: dict[str, dict[int, int]],
) -> Alarm | None:
    """The ``replaced`` alarm of a template another one took over (:func:`_replacement`), with
    how well the pages that moved still fit its layout, and where the first one misses."""
    found = _replacement(cid, base.get("patterns") or {}, before, after)
    if found is None:
        return None
    winner, pattern, share = found
    detail = f"#{winner} now holds {round(100 * share)} % of {pattern}"
    moved = (current.get(winner, {}).get("moved") or {}).get(str(cid)) or {}
    fit = median(moved.get("shares") or [])
    if fit is not None:
        detail += f", its pages fit #{cid}'s layout at {fit:.2f}"
    misses = moved.get("misses") or []
    return Alarm(
        cid,
        "replaced",
        "error",
        where=dict(misses[0]) if misses else None,
        detail=detail,
        replaced_by=winner,
    )


def _changed(
    cid: int, base: dict[str, Any], cur: dict[str, Any], history: Sequence[Stats], held: float
) -> Alarm | None:
    """The ``changed`` alarm of a template whose fit fell while its URL patterns persist
    (``held``), else its ``fields`` alarm where only fields changed, else None."""
    fit_before = fit_median(base)
    fit_now = fit_median(cur)
    fields, stable = _field_changes(cid, base, cur, history)
    emptied = sum(1 for f in fields if f["change"] == "emptied")
    half_emptied = stable > 0 and emptied * 2 >= stable and emptied >= 1
    fell = (
        fit_before is not None
        and fit_now is not None
        and (cur.get("n") or 0) >= MIN_SAMPLE
        and fit_now < WARN_FIT
        and fit_before - fit_now > max(MIN_FALL, _fit_spread(cid, history))
    )
    if fell and held >= HELD_BELOW:
        assert fit_now is not None and fit_before is not None
        misses = cur.get("misses") or []
        return Alarm(
            cid,
            "changed",
            "error" if fit_now < ERROR_FIT or half_emptied else "warning",
            where=dict(misses[0]) if misses else None,
            fields=fields,
            detail=f"median fit {fit_before:.2f} → {fit_now:.2f}",
        )
    if fields:
        return Alarm(
            cid,
            "fields",
            "error" if half_emptied else "warning",
            fields=fields,
            detail=f"{len(fields)} of {stable} stable fields",
        )
    return None


def _variants(
    before: dict[str, dict[int, int]],
    after: dict[str, dict[int, int]],
    same: Same,
    taken: set[int],
) -> list[Alarm]:
    """The ``variant`` alarms: a template that appeared beside another in one of its URL
    patterns (an A/B test), unless ``taken`` already explains it."""
    alarms: list[Alarm] = []
    explained = set(taken)
    for pattern, row in sorted(after.items()):
        total = sum(row.values())
        if total < VARIANT_PAGES:
            continue
        holders = sorted(c for c, n in row.items() if n / total >= VARIANT_SHARE)
        for newcomer in holders:
            if newcomer in explained or same.after.get(newcomer, 0.0) >= UNCHANGED:
                continue
            if _share(before, pattern, newcomer) >= VARIANT_SHARE / 2:
                continue
            partner = [c for c in holders if c != newcomer and _share(before, pattern, c) > 0]
            if partner:
                explained.add(newcomer)
                alarms.append(
                    Alarm(
                        newcomer,
                        "variant",
                        "warning",
                        detail=f"#{newcomer} holds {round(100 * row[newcomer] / total)} % of "
                        f"{pattern} beside #{partner[0]}",
                    )
                )
    return alarms


def at_level(alarms: Sequence[Alarm], level: str) -> list[Alarm]:
    """The alarms at ``level`` or above (``warning`` includes errors)."""
    floor = SEVERITIES.index(level)
    return [a for a in alarms if SEVERITIES.index(a.severity) >= floor]
