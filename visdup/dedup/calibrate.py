"""Thresholds calibrated from labelled page pairs, with intervals from a split by site.

A threshold chosen on one site's pages says little about the next site. Given pairs labelled
``same`` or not, this scores every pair with the channel's own measure, tabulates precision and
recall at every threshold, and finds the threshold at best F1 (in the middle of the widest gap
that gives that F1, so that it sits in the valley between the classes rather than on a
labelled pair) and at a precision target. Splitting the *sites* in two many times (choose on
one half, score on the other) shows how well a threshold carries over to unseen sites.
"""

from __future__ import annotations

import csv
import random
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urlsplit

from visdup.errors import InputError

CHANNELS = ("structure", "content")
_YES = frozenset({"1", "true", "yes", "y", "same", "dup", "duplicate"})
_NO = frozenset({"0", "false", "no", "n", "different", "distinct", ""})

#: Random half-splits of the sites behind the intervals; 200 keep the 5-95 % bounds steady
#: to about 0.005 on a few hundred pairs, and cost milliseconds once the pairs are scored.
SPLITS = 200


@dataclass(frozen=True)
class Pair:
    a: str
    b: str
    same: bool
    site: str


@dataclass(frozen=True)
class Row:
    threshold: float
    tp: int
    fp: int
    fn: int
    tn: int
    precision: float
    recall: float
    f1: float


@dataclass
class Calibration:
    channel: str
    pairs: int
    positives: int
    threshold: float
    precision: float
    recall: float
    f1: float
    #: The open interval of thresholds that all give the best F1: the valley between classes.
    valley: tuple[float, float]
    #: Pairs on the wrong side of the chosen threshold (negatives above, positives below).
    overlap: int
    target_precision: float | None = None
    target_threshold: float | None = None
    target_recall: float | None = None
    #: Over random half-splits of the sites: 5 %, 50 % and 95 % of the threshold chosen on one
    #: half, of its F1 on the other half, and of the F1 it loses there against that half's best.
    split_threshold: tuple[float, float, float] | None = None
    split_f1: tuple[float, float, float] | None = None
    split_loss: tuple[float, float, float] | None = None
    sites: int = 0
    table: list[Row] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["table"] = [asdict(r) for r in self.table]
        return out


def _label(value: str, where: str) -> bool:
    word = value.strip().lower()
    if word in _YES:
        return True
    if word in _NO:
        return False
    raise InputError(f"{where}: 'same' must be 1/0, true/false or yes/no, not {value!r}")


def site_of(name: str) -> str:
    """The site a page belongs to: a URL's host and port, else a path's first folder."""
    parts = urlsplit(name)
    if parts.scheme in {"http", "https"} and parts.netloc:
        return parts.netloc.lower()
    path = PurePosixPath(name.replace("\\", "/"))
    return path.parts[0] if len(path.parts) > 1 else ""


def read_pairs(path: str | Path) -> list[Pair]:
    """``a,b,same`` rows (a header line is optional; a ``site`` column overrides the guess)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read pairs from {path}: {exc}") from None
    rows = [r for r in csv.reader(text.splitlines()) if r and any(c.strip() for c in r)]
    if not rows:
        raise InputError(f"{path}: no pairs")
    header = [c.strip().lower() for c in rows[0]]
    if {"a", "b", "same"} <= set(header):
        ia, ib, isame = header.index("a"), header.index("b"), header.index("same")
        isite = header.index("site") if "site" in header else None
        rows = rows[1:]
    else:
        ia, ib, isame, isite = 0, 1, 2, None
    pairs = []
    for n, row in enumerate(rows, start=2 if isite is not None or header[0] == "a" else 1):
        if len(row) <= max(ia, ib, isame):
            raise InputError(f"{path}:{n}: expected a,b,same")
        a, b = row[ia].strip(), row[ib].strip()
        site = row[isite].strip() if isite is not None and len(row) > isite else site_of(a)
        pairs.append(Pair(a, b, _label(row[isame], f"{path}:{n}"), site))
    check_both_kinds(pairs, str(path))
    return pairs


def check_both_kinds(pairs: Sequence[Pair], where: str) -> None:
    """InputError unless some pairs are labelled the same and some not.

    A threshold is where the two kinds part: from one kind alone every cut scores alike, and
    the "best" threshold recommended would be an artefact of the grid, not of the pages.
    """
    same = sum(1 for p in pairs if p.same)
    if 0 < same < len(pairs):
        return
    label, other = ("same (1)", "not the same (0)") if same else ("not the same (0)", "same (1)")
    raise InputError(
        f"{where}: all {len(pairs)} pairs are labelled {label}: a threshold parts two kinds "
        f"of pairs, so add pairs labelled {other}"
    )


# ------------------------------------------------------------------------------ the arithmetic


def _row(threshold: float, scored: Sequence[tuple[float, bool]]) -> Row:
    tp = sum(1 for s, y in scored if y and s >= threshold)
    fp = sum(1 for s, y in scored if not y and s >= threshold)
    fn = sum(1 for s, y in scored if y and s < threshold)
    tn = len(scored) - tp - fp - fn
    return _metrics(threshold, tp, fp, fn, tn)


def _metrics(threshold: float, tp: int, fp: int, fn: int, tn: int) -> Row:
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return Row(round(threshold, 4), tp, fp, fn, tn, precision, recall, f1)


def _cuts(scored: Sequence[tuple[float, bool]]) -> list[tuple[float, float, Row]]:
    """Every distinct decision: (low, high, row) where any threshold in (low, high] gives row."""
    values = sorted({s for s, _ in scored}, reverse=True)
    positives = sum(1 for _, y in scored if y)
    by_value: dict[float, list[int]] = {}
    for s, y in scored:
        counts = by_value.setdefault(s, [0, 0])
        counts[0 if y else 1] += 1
    cuts = []
    tp = fp = 0
    # nothing predicted the same: threshold above the top score
    top = values[0] if values else 1.0
    none = _metrics(1.0, 0, 0, positives, len(scored) - positives)
    cuts.append((top, max(1.0, top) + 1e-9, none))
    for i, value in enumerate(values):
        tp += by_value[value][0]
        fp += by_value[value][1]
        low = values[i + 1] if i + 1 < len(values) else 0.0
        mid = (low + value) / 2 if i + 1 < len(values) else value / 2
        row = _metrics(mid, tp, fp, positives - tp, len(scored) - positives - fp)
        cuts.append((low, value, row))
    return cuts


def best_threshold(scored: Sequence[tuple[float, bool]]) -> tuple[Row, tuple[float, float]]:
    """The row at best F1 (ties: the widest valley), and that valley."""
    if not scored:
        raise InputError("no scored pairs")
    low, high, row = max(_cuts(scored), key=lambda c: (round(c[2].f1, 12), c[1] - c[0]))
    return row, (round(low, 4), round(high, 4))


def precision_threshold(scored: Sequence[tuple[float, bool]], target: float) -> Row | None:
    """The threshold with the most recall whose precision reaches ``target`` (None: none does)."""
    ok = [c for c in _cuts(scored) if c[2].precision >= target and c[2].tp > 0]
    if not ok:
        return None
    return max(ok, key=lambda c: (c[2].recall, round(c[2].f1, 12), c[1] - c[0]))[2]


def _quantiles(values: Sequence[float]) -> tuple[float, float, float]:
    ordered = sorted(values)

    def at(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(q * (len(ordered) - 1) + 0.5))], 4)

    return at(0.05), at(0.5), at(0.95)


def calibrate(
    scores: Sequence[float],
    pairs: Sequence[Pair],
    *,
    channel: str = "structure",
    precision: float | None = None,
    splits: int = SPLITS,
    seed: int = 0,
) -> Calibration:
    """Precision/recall table, best-F1 and precision-target thresholds, and split intervals."""
    check_both_kinds(pairs, "the pairs")
    scored = [(float(s), p.same) for s, p in zip(scores, pairs, strict=True)]
    best, valley = best_threshold(scored)
    overlap = sum(
        1 for s, y in scored if (y and s < best.threshold) or (not y and s >= best.threshold)
    )
    grid = sorted({round(x / 100, 2) for x in range(0, 101)} | {best.threshold})
    result = Calibration(
        channel=channel,
        pairs=len(scored),
        positives=sum(1 for _, y in scored if y),
        threshold=best.threshold,
        precision=round(best.precision, 4),
        recall=round(best.recall, 4),
        f1=round(best.f1, 4),
        valley=valley,
        overlap=overlap,
        table=[_row(t, scored) for t in grid],
    )
    if precision is not None:
        result.target_precision = precision
        at = precision_threshold(scored, precision)
        if at is not None:
            result.target_threshold, result.target_recall = at.threshold, round(at.recall, 4)
    sites = sorted({p.site for p in pairs})
    result.sites = len(sites)
    if len(sites) >= 2 and splits > 0:
        rng = random.Random(seed)
        chosen, carried, lost = [], [], []
        for _ in range(splits):
            half = set(rng.sample(sites, len(sites) // 2))
            train = [x for x, p in zip(scored, pairs, strict=True) if p.site in half]
            test = [x for x, p in zip(scored, pairs, strict=True) if p.site not in half]
            if not train or not test:
                continue
            t = best_threshold(train)[0].threshold
            on_test = _row(t, test).f1
            chosen.append(t)
            carried.append(on_test)
            lost.append(best_threshold(test)[0].f1 - on_test)
        if chosen:
            result.split_threshold = _quantiles(chosen)
            result.split_f1 = _quantiles(carried)
            result.split_loss = _quantiles(lost)
    return result


# ------------------------------------------------------------------------------ the measures


def structure_score(a: Any, b: Any) -> float:
    """cmp of two irreducible terms (§1.7), computed exactly."""
    from visdup.structure.distance import similarity

    return similarity(a, b)


def content_score(a: Any, b: Any) -> float:
    """The content channel's score: 1 for mirrors, else the larger of overlap and containment."""
    from visdup.content.textprint import compare

    return compare(a, b, threshold=0.0).measure


MEASURES: dict[str, Callable[[Any, Any], float]] = {
    "structure": structure_score,
    "content": content_score,
}


def page_features(body: bytes, channel: str, url: str | None = None) -> Any:
    """What a channel compares, from a page's bytes: its term, or its content print."""
    if channel == "structure":
        from visdup.structure.term import page_term

        return page_term(body, base_url=url)
    from visdup.content import extract
    from visdup.content.textprint import content_print

    found = extract(body)
    return content_print(found.blocks, listing=found.listing)  # as the crawl prints it


def score_pairs(pairs: Sequence[Pair], channel: str, load: Callable[[str], Any]) -> list[float]:
    """Each pair's similarity; ``load`` gives a page's features by name (cached here)."""
    if channel not in MEASURES:
        raise InputError(f"channel must be one of {', '.join(CHANNELS)}, not {channel!r}")
    measure = MEASURES[channel]
    cache: dict[str, Any] = {}

    def get(name: str) -> Any:
        if name not in cache:
            cache[name] = load(name)
        return cache[name]

    return [measure(get(p.a), get(p.b)) for p in pairs]
