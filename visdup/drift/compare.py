"""Two snapshots compared template by template: the alarms, each with where, since and why.

Per template (a cluster id, stable across snapshots) against a baseline snapshot:

- **changed**: its fit fell while its URL patterns persist; ``where`` names the required
  subtree its pages no longer have (a term path) with before/after snippets;
- **replaced**: its pages went to another template ("#3 → #9"): that one holds most of one of
  its main URL patterns now, or it is new and the template lost half its pages or more, and
  the pages fit the old layout badly ("redesign: #9's pages on #3's layout: median fit 0.62,
  5 of 5 pages below 0.9 (p = 0.004)"). The new pages' fit against the baseline's template is
  measured when the snapshot ends (:mod:`visdup.drift.snapshot`: ``moved`` for the same URLs,
  ``against`` for new ones), so a redesign is recognised though its pages form a template of
  their own and no URL is the same;
- **variant**: a new template shares one of its patterns beside it (an A/B test);
- **new** / **gone**: a template of at least :data:`MIN_PAGES` pages (and 2 % of the snapshot)
  appeared or disappeared;
- **fields**: only fields changed, **emptied** or **retyped** (:mod:`visdup.drift.fields`,
  each with its counts and p-value: "price emptied (filled 30/30 → 2/30, p < 0.001)").

Besides the alarms (warnings and errors), **notes**: what moved with too little evidence to
alarm (a field filled in 5 of 5 sample pages, then in 1 of 5), and **regrouped**: visdup put a
template's pages in another whose pages fit the old layout (a median fit of at least 0.9): its
grouping moved, not the site.

A template whose pages all came back unchanged (the same body hash in both snapshots) has no
alarm: drift needs the pages to change, and without that only visdup's grouping moved.

Severity. The fit thresholds were measured on nine news sites' redesigns (four eras each, five
pages a side): a median fit below 0.9 flagged 26 of 27 era changes with 1 false alarm in 36
quiet halves, below 0.5 flagged 25 with none. A median below :data:`ERROR_FIT` is an error
(given :data:`ERROR_SAMPLE` pages; fewer: a warning); below :data:`WARN_FIT`, a warning when
as few pages fitting (a share of at least 0.9) is beyond chance against the baseline's own
(Fisher's exact test below the warning level: 5 of 5 pages not fitting, 4 of 4), else a note.
Fields raise the severity to theirs (:mod:`visdup.drift.fields`: an error at a corrected p
below 0.001). ``replaced`` without a measured fit is an error, ``new``, ``gone`` and
``variant`` are warnings. With several snapshots before the current one, a fit must also fall
by more than the baseline's own spread, and a field's share below half of every earlier
snapshot's, beyond chance against each.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from visdup.drift.aggregate import fit_median, median
from visdup.drift.evidence import fell, level, p_text
from visdup.drift.fields import MIN_SAMPLE, FieldDrift, family, field_drift, field_text

__all__ = ["NOTE", "SEVERITIES", "Alarm", "Same", "at_level", "compare", "family", "split"]

#: Severity thresholds of the median fit (the design's measurements, module docstring).
WARN_FIT = 0.9
ERROR_FIT = 0.5
#: Sample pages a fit needs to be an error (the thresholds were measured on five).
ERROR_SAMPLE = 5
#: Pages a template needs for new/gone/replaced alarms.
MIN_PAGES = 5
#: Share of the snapshot's pages a template needs for new/gone alarms.
MIN_SHARE = 0.02
#: The least fall of the median fit that counts (when no spread is known).
MIN_FALL = 0.02
#: Replaced: the template keeps less than this share of its pattern pages (or of its pages).
HELD_BELOW = 0.5
#: A pattern holding at least this share of a template's pages is one of its main ones.
MAIN_PATTERN = 0.2
#: Variant: each of two templates holds at least this share of a pattern...
VARIANT_SHARE = 0.2
#: ...of at least this many pages.
VARIANT_PAGES = 10

#: Share of a template's pages unchanged byte for byte at which it has no alarm.
UNCHANGED = 0.95

#: Alarm levels, lowest first; a ``note`` is shown, never an alarm.
SEVERITIES = ("warning", "error")
NOTE = "note"


@dataclass
class Alarm:
    template: int
    change: str
    severity: str
    where: dict[str, Any] | None = None
    fields: list[dict[str, Any]] = field(default_factory=list)
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
        """One line for a log or a terminal, saying why."""
        head = (
            f"#{self.template} → #{self.replaced_by}" if self.replaced_by else f"#{self.template}"
        )
        text = f"{self.severity}: template {head} {self.change}"
        if self.detail:
            text += f": {self.detail}"
        if self.fields:
            text += "; fields " + ", ".join(field_text(f) for f in self.fields)
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
    """The alarms and notes of ``current`` against ``baseline``; ``history``: snapshots up to
    and with the baseline, oldest first, whose spread sets the tolerances (the baseline alone:
    none).

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
        now = int(cur.get("pages") or 0) if cur else 0
        replaced = None
        if pages >= MIN_PAGES:
            replaced = _replaced(cid, base, current, before, after)
            if replaced is None and now < HELD_BELOW * pages:
                replaced = _redesigned(cid, current, baseline)
        if replaced is not None:
            assert replaced.replaced_by is not None
            taken.add(replaced.replaced_by)
            alarms.append(replaced)
            continue
        if not now:
            if pages >= MIN_PAGES and pages >= MIN_SHARE * total_before:
                alarms.append(
                    Alarm(cid, "gone", "warning", detail=f"{pages} pages before, none now")
                )
            continue
        assert cur is not None
        held = _held(cid, base, before, after)
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
    before: dict[str, dict[int, int]],
    after: dict[str, dict[int, int]],
) -> float:
    """How much of its URL patterns' pages a template still holds (1.0: as much as before),
    each pattern weighed by the pages it had. Patterns the current snapshot has no page of do
    not count (a news site's articles, each its own pattern, are other articles each crawl)."""
    patterns = {p: w for p, w in (base.get("patterns") or {}).items() if after.get(p)}
    had = sum(w * _share(before, p, cid) for p, w in patterns.items())
    kept = sum(w * _share(after, p, cid) for p, w in patterns.items())
    return kept / had if had else 1.0


@dataclass
class FitEvidence:
    """Pages' fits against a template's layout, and what they say (:func:`_fit_evidence`)."""

    severity: str
    median: float
    below: int
    pages: int
    p: float

    def words(self) -> str:
        """``median fit 0.62, 5 of 5 pages below 0.9 (p = 0.004)``"""
        return f"median fit {self.median:.2f}, {self.reasons()}"

    def reasons(self) -> str:
        return f"{self.below} of {self.pages} pages below {WARN_FIT} ({p_text(self.p)})"


def _fit_evidence(shares: Sequence[float], before: Sequence[float] = ()) -> FitEvidence | None:
    """What pages' fits against a template's layout say, ``before``: its own pages' fits in
    the baseline (none known: as many pages, all fitting); None for too few pages.

    A page fits when its share is at least :data:`WARN_FIT`. A median below :data:`ERROR_FIT`
    is an error (given :data:`ERROR_SAMPLE` pages; fewer: a warning); a median below
    :data:`WARN_FIT` is a warning when as few pages fitting is beyond chance against the
    baseline's (:func:`visdup.drift.evidence.fell`, p below the warning level: all five of
    five pages, four of four), else a note; at or above :data:`WARN_FIT`, a note (the pages
    fit: only visdup's grouping moved)."""
    n = len(shares)
    if n < MIN_SAMPLE:
        return None
    fit = median(shares)
    assert fit is not None
    below = sum(1 for s in shares if s < WARN_FIT)
    old = list(before) or [1.0] * n
    p = fell(sum(1 for s in old if s >= WARN_FIT), len(old), n - below, n)
    if fit >= WARN_FIT:
        severity = NOTE
    elif fit < ERROR_FIT:
        severity = "error" if n >= ERROR_SAMPLE else "warning"
    else:
        severity = "warning" if level(p) in ("warning", "error") else NOTE
    return FitEvidence(severity, fit, below, n, p)


def _replaced(
    cid: int,
    base: dict[str, Any],
    current: Stats,
    before: dict[str, dict[int, int]],
    after: dict[str, dict[int, int]],
) -> Alarm | None:
    """The ``replaced`` alarm of a template another one took over (:func:`_replacement`), with
    how well the pages that moved still fit its layout, and where the first one misses; a
    ``regrouped`` note when they fit it (only visdup's grouping moved)."""
    found = _replacement(cid, base.get("patterns") or {}, before, after)
    if found is None:
        return None
    winner, pattern, share = found
    detail = f"#{winner} now holds {round(100 * share)} % of {pattern}"
    stats = current.get(winner, {})
    moved = (stats.get("moved") or {}).get(str(cid)) or (stats.get("against") or {}).get(str(cid))
    moved = moved or {}
    evidence = _fit_evidence(moved.get("shares") or [], base.get("shares") or [])
    # no page measured: the URLs moved, nothing says they kept the layout
    severity = evidence.severity if evidence is not None else "error"
    if evidence is not None:
        detail += f", its pages on #{cid}'s layout: {evidence.words()}"
    misses = moved.get("misses") or []
    return Alarm(
        cid,
        "regrouped" if severity == NOTE else "replaced",
        severity,
        where=dict(misses[0]) if misses and severity != NOTE else None,
        detail=detail,
        replaced_by=winner,
    )


def _redesigned(cid: int, current: Stats, baseline: Stats) -> Alarm | None:
    """A template that lost half its pages or more beside a new one whose pages were measured
    on its layout (``against``): ``replaced`` when they fit it badly (a redesign, though its
    pages form a template of their own), ``regrouped`` (a note) when they fit it."""
    best: tuple[tuple[int, int], int, dict[str, Any]] | None = None
    for other, stats in current.items():
        if other in baseline:
            continue
        got = (stats.get("against") or {}).get(str(cid))
        if got and len(got.get("shares") or []) >= MIN_SAMPLE:
            rank = (int(stats.get("pages") or 0), -other)
            if best is None or rank > best[0]:
                best = (rank, other, got)
    if best is None:
        return None
    _rank, other, got = best
    evidence = _fit_evidence(got["shares"], baseline[cid].get("shares") or [])
    assert evidence is not None
    misses = got.get("misses") or []
    what = "the same layout" if evidence.severity == NOTE else "redesign"
    return Alarm(
        cid,
        "regrouped" if evidence.severity == NOTE else "replaced",
        evidence.severity,
        where=dict(misses[0]) if misses and evidence.severity != NOTE else None,
        detail=f"{what}: #{other}'s pages on #{cid}'s layout: {evidence.words()}",
        replaced_by=other,
    )


def _changed(
    cid: int, base: dict[str, Any], cur: dict[str, Any], history: Sequence[Stats], held: float
) -> Alarm | None:
    """The ``changed`` alarm of a template whose fit fell while its URL patterns persist
    (``held``), else its ``fields`` alarm (or note) where only fields changed, else None."""
    fit_before = fit_median(base)
    fit_now = fit_median(cur)
    drift = field_drift(cid, base, cur, history)
    n = int(cur.get("n") or 0)
    fell = (
        fit_before is not None
        and fit_now is not None
        and n >= MIN_SAMPLE
        and fit_now < WARN_FIT
        and fit_before - fit_now > max(MIN_FALL, _fit_spread(cid, history))
    )
    if fell and held >= HELD_BELOW:
        assert fit_now is not None and fit_before is not None
        evidence = _fit_evidence(cur.get("shares") or [], base.get("shares") or [])
        detail = f"median fit {fit_before:.2f} → {fit_now:.2f}"
        # without sample shares the fit is the crawl's own (signatures): a warning
        severity = evidence.severity if evidence is not None else "warning"
        if evidence is not None:
            detail += f": {evidence.reasons()}"
        if drift.level == "error" or (drift.level == "warning" and severity == NOTE):
            severity = drift.level
        misses = cur.get("misses") or []
        return Alarm(
            cid,
            "changed",
            severity,
            where=dict(misses[0]) if misses else None,
            fields=drift.changes,
            detail=detail,
        )
    return _fields_alarm(cid, drift)


def _fields_alarm(cid: int, drift: FieldDrift) -> Alarm | None:
    level = drift.level
    if level is None:
        return None
    return Alarm(
        cid,
        "fields",
        level,
        fields=drift.changes,
        detail=f"{len(drift.changes)} of {drift.watched} watched fields",
    )


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
    """The alarms at ``level`` or above (``warning`` includes errors; notes are none)."""
    floor = SEVERITIES.index(level)
    return [a for a in alarms if a.severity in SEVERITIES and SEVERITIES.index(a.severity) >= floor]


def split(found: Sequence[Alarm]) -> tuple[list[Alarm], list[Alarm]]:
    """(alarms, notes) of what :func:`compare` found."""
    return [a for a in found if a.severity != NOTE], [a for a in found if a.severity == NOTE]
