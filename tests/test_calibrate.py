"""Threshold calibration from labelled pairs: the arithmetic, and the command on real pages."""

from __future__ import annotations

import csv
import itertools
import json
import random

import pytest

from visdup.cli import main
from visdup.dedup.calibrate import Pair, best_threshold, calibrate, precision_threshold, read_pairs
from visdup.demo import SITE_ROOT
from visdup.errors import InputError


def _pairs(labels: list[bool], site: str = "s") -> list[Pair]:
    return [Pair(f"a{i}", f"b{i}", y, site) for i, y in enumerate(labels)]


def test_best_threshold_sits_in_the_middle_of_the_valley():
    scored = [(0.99, True), (0.97, True), (0.96, True), (0.80, False), (0.70, False)]
    row, valley = best_threshold(scored)
    assert row.f1 == 1.0
    assert valley == (0.80, 0.96)
    assert row.threshold == pytest.approx(0.88)
    assert (row.tp, row.fp, row.fn, row.tn) == (3, 0, 0, 2)


def test_overlapping_classes_and_precision_target():
    scored = [(0.99, True), (0.95, False), (0.93, True), (0.90, True), (0.5, False)]
    row, _ = best_threshold(scored)
    assert row.tp == 3 and row.fp == 1  # taking all three positives beats dropping one
    at = precision_threshold(scored, 1.0)
    assert at is not None and at.tp == 1 and at.fp == 0 and 0.95 < at.threshold <= 0.99
    assert precision_threshold([(0.9, False), (0.8, True)], 1.0) is None  # a negative on top
    assert precision_threshold([(0.9, False)], 1.0) is None


def test_table_counts_add_up_and_recall_never_rises_with_the_threshold():
    rng = random.Random(3)
    labels = [rng.random() < 0.4 for _ in range(300)]
    scores = [min(1.0, max(0.0, rng.gauss(0.93 if y else 0.75, 0.06))) for y in labels]
    c = calibrate(scores, _pairs(labels), precision=0.95)
    assert all(r.tp + r.fp + r.fn + r.tn == 300 for r in c.table)
    recalls = [r.recall for r in sorted(c.table, key=lambda r: r.threshold)]
    assert recalls == sorted(recalls, reverse=True)
    assert c.f1 >= round(max(r.f1 for r in c.table), 4)  # no grid threshold beats the best cut
    assert c.target_threshold is not None and c.target_threshold >= c.threshold - 1e-9


def test_split_by_site_carries_a_threshold_to_unseen_sites():
    rng = random.Random(7)
    pairs, scores = [], []
    for site in range(12):
        for i in range(40):
            same = rng.random() < 0.5
            pairs.append(Pair(f"{site}/{i}a", f"{site}/{i}b", same, f"site{site}"))
            scores.append(min(1.0, max(0.0, rng.gauss(0.96 if same else 0.82, 0.03))))
    c = calibrate(scores, pairs)
    assert c.sites == 12
    assert c.split_threshold is not None and c.split_loss is not None
    lo, mid, hi = c.split_threshold
    assert lo <= mid <= hi and abs(mid - c.threshold) < 0.03
    assert c.split_loss[1] < 0.02  # a threshold chosen on six sites holds on the other six


def test_read_pairs_with_and_without_header(tmp_path):
    f = tmp_path / "p.csv"
    f.write_text("a,b,same\nx/1.html,x/2.html,1\nhttp://h:8/a,http://h:8/b,no\n")
    pairs = read_pairs(f)
    assert [p.same for p in pairs] == [True, False]
    assert [p.site for p in pairs] == ["x", "h:8"]
    f.write_text("1.html,2.html,yes\n3.html,4.html,0\n")
    assert read_pairs(f)[0].same is True
    f.write_text("1.html,2.html,maybe\n")
    with pytest.raises(InputError, match="same"):
        read_pairs(f)


def _demo_pairs(tmp_path):
    """Known duplicates of the demo site against pairs of different articles."""
    expected = json.loads((SITE_ROOT / "EXPECTED.json").read_text())
    positives = [
        tuple(p) for key in ("exact", "mirrors", "near") for p in expected[key] if len(p) == 2
    ]
    found = (SITE_ROOT / "articles").glob("*.html")
    articles = sorted(str(p.relative_to(SITE_ROOT)) for p in found)
    dup = {frozenset(p.lstrip("/") for p in pair) for pair in positives}
    negatives = [
        (a, b) for a, b in itertools.combinations(articles, 2) if frozenset((a, b)) not in dup
    ][:20]
    out = tmp_path / "pairs.csv"
    with out.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["a", "b", "same"])
        for a, b in positives:
            w.writerow([SITE_ROOT / a.lstrip("/"), SITE_ROOT / b.lstrip("/"), 1])
        for a, b in negatives:
            w.writerow([SITE_ROOT / a, SITE_ROOT / b, 0])
    return out, len(positives), len(negatives)


def test_calibrate_command_on_the_demo_site(tmp_path, capsys):
    path, npos, nneg = _demo_pairs(tmp_path)
    assert main(["calibrate", "--pairs", str(path), "--channel", "content", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["pairs"] == npos + nneg and out["positives"] == npos
    assert out["f1"] == 1.0  # the content channel tells the demo's copies from other articles
    low, high = out["valley"]
    assert low < out["threshold"] <= high
    assert {"threshold", "precision", "recall", "f1", "table"} <= set(out)

    assert main(["calibrate", "--pairs", str(path), "--precision", "0.99"]) == 0
    text = capsys.readouterr().out
    assert "best F1" in text and "precision >= 0.99" in text and "threshold" in text


def test_calibrate_command_rejects_bad_input(tmp_path, capsys):
    missing = tmp_path / "none.csv"
    assert main(["calibrate", "--pairs", str(missing)]) == 2
    assert "cannot read pairs" in capsys.readouterr().err
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b,same\nnope.html,nope2.html,1\n")
    assert main(["calibrate", "--pairs", str(bad)]) == 2
    assert "visdup: error:" in capsys.readouterr().err


def _listing(numbers: range) -> bytes:
    teasers = "".join(
        f"<article><h2><a href='/post-{i}.html'>Post number {i} of the blog</a></h2>"
        f"<p>Post number {i} begins with a long first sentence about riding in the rain. "
        f"It goes on with a second sentence about mudguards and chains number {i} …</p>"
        "</article>"
        for i in numbers
    )
    return f"<html><body><main>{teasers}</main></body></html>".encode()


def test_calibration_scores_a_listing_as_the_crawl_does() -> None:
    """A listing whose teasers all lie inside a larger listing: the crawl does not count
    containment for listings, so calibration must not either."""
    from visdup.content.textprint import compare
    from visdup.dedup.calibrate import content_score, page_features

    small = page_features(_listing(range(4)), "content")
    large = page_features(_listing(range(12)), "content")
    assert small.listing and large.listing
    m = compare(small, large)
    assert m.containment == 1.0
    assert content_score(small, large) == m.measure == m.score < 0.8


@pytest.mark.parametrize("label", ["1", "0"])
def test_pairs_of_one_kind_are_refused_in_one_line(tmp_path, capsys, label):
    """Every pair the same (or none): any threshold scores alike, and the one recommended
    would be an artefact; refused before a page is read."""
    articles = sorted(str(p) for p in (SITE_ROOT / "articles").glob("*.html"))[:6]
    pairs = tmp_path / "one-kind.csv"
    pairs.write_text(
        "a,b,same\n" + "".join(f"{a},{b},{label}\n" for a, b in itertools.pairwise(articles))
    )
    assert main(["calibrate", "--pairs", str(pairs)]) == 2
    captured = capsys.readouterr()
    lines = [x for x in captured.err.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("visdup: error: "), captured.err
    assert str(pairs) in lines[0] and "all 5 pairs are labelled" in lines[0]
    assert ("add pairs labelled same (1)" if label == "0" else "not the same (0)") in lines[0]
    assert captured.out == "", "no threshold recommended"
    with pytest.raises(InputError, match="all 3 pairs"):
        calibrate([0.9, 0.8, 0.7], _pairs([label == "1"] * 3))
