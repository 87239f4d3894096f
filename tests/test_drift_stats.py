"""Drift alarms with statistical meaning, on stores built from generated pages through the CLI:
weak evidence (5 of 5 pages then 2 of 5) raises no alarm, strong evidence (30 of 30 then 2 of
30) an error that says its counts; an optional field holding its share raises nothing; a
redesign whose pages form a template of their own is recognised by their fit against the
baseline's template."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.drift_sites import era_site
from visdup.cli.app import main
from visdup.drift.compare import compare
from visdup.drift.evidence import fell, permuted

COLOURS = ("red", "blue", "green", "black", "white", "grey", "yellow")
BRANDS = ("Alder", "Birch", "Cedar", "Dogwood", "Elm", "Fir", "Ginkgo", "Hazel")


def _product(i: int, *, stock: bool, sale: bool) -> str:
    """A shop's product page: a frame, a facts table (the stock row optional), a sale badge."""
    rows = [
        ("Brand", BRANDS[i % len(BRANDS)]),
        ("Model", f"M-{(i * 37) % 1000:03d}"),
        ("Weight", f"{1 + i % 9}.{i % 10} kg"),
        ("Colour", COLOURS[i % len(COLOURS)]),
        ("Warranty", f"{1 + i % 3} years"),
    ]
    if stock:
        rows.append(("Stock", f"{(i * 11) % 97 + 1} units in the warehouse"))
    facts = "".join(f"<tr><th>{k}:</th><td>{v}</td></tr>" for k, v in rows)
    badge = f"<p class='sale'>Sale: {10 + i % 30} % off this week</p>" if sale else ""
    nav = "".join(f"<li><a href='/c/{c}/'>{c.title()} chairs</a></li>" for c in COLOURS)
    foot = "".join(f"<li><a href='/{p}/'>{p.title()}</a></li>" for p in ("about", "help", "terms"))
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<title>Chair {i} - Chairs and more</title></head><body>"
        f"<header class='top'><a class='logo' href='/'>Chairs and more</a><nav><ul>{nav}</ul>"
        "</nav></header><main><article class='product'>"
        f"<h1 class='name'>{BRANDS[i % len(BRANDS)]} chair model {i * 7 + 3}</h1>{badge}"
        f"<p class='price'>${12 + i * 3}.{(i * 37) % 100:02d}</p>"
        f"<table class='facts'>{facts}</table>"
        f"<div class='blurb'><p>A sturdy seat number {i} for long evenings and early mornings, "
        f"made of wood from the {COLOURS[(i * 3) % len(COLOURS)]} forest.</p>"
        f"<p>Ships in {i % 5 + 1} days to most places.</p></div>"
        "</article></main>"
        f"<footer><ul>{foot}</ul><p>Chairs and more since 1999</p></footer></body></html>"
    )


def _write(folder: Path, pages: dict[str, str]) -> Path:
    for name, html in pages.items():
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(html, encoding="utf-8")
    return folder


def _snapshot(db: str, name: str, folder: Path, capsys: pytest.CaptureFixture[str]) -> dict:
    capsys.readouterr()
    assert main(["dups", "--db", db, "--crawl-id", name, "--json", str(folder)]) == 0
    return json.loads(capsys.readouterr().out)


def _drift(db: str, capsys: pytest.CaptureFixture[str]) -> dict:
    capsys.readouterr()
    assert main(["drift", "--db", db, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _shop(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    *,
    pages: int,
    stocked_now: int,
    sale_every: int = 0,
    sales_now: bool = True,
) -> tuple[str, dict]:
    """A baseline of ``pages`` products, every one with its stock row, then ``pages`` other
    products of which ``stocked_now`` have it; ``sale_every``: 3 puts a sale badge on two
    pages of three (an optional field, 67 %), in both unless not ``sales_now``."""
    db = f"sqlite:///{tmp_path / 'shop.sqlite3'}"

    def sale(i: int) -> bool:
        return bool(sale_every) and i % sale_every != 0

    before = {f"p/{i}.html": _product(i, stock=True, sale=sale(i)) for i in range(pages)}
    now = {
        f"p/{i}.html": _product(i, stock=i - pages < stocked_now, sale=sales_now and sale(i))
        for i in range(pages, 2 * pages)
    }
    _snapshot(db, "before", _write(tmp_path / "before", before), capsys)
    _snapshot(db, "now", _write(tmp_path / "now", now), capsys)
    return db, _drift(db, capsys)


def _fields(found: list[dict], part: str) -> list[tuple[str, dict]]:
    return [(a["severity"], f) for a in found for f in a["fields"] if part in f["name"]]


def test_exact_tails():
    # 7 of 10 pages have the field; 5 drawn at random hold 2 or fewer of them one time in 12
    assert fell(5, 5, 2, 5) == pytest.approx(21 / 252)
    assert fell(5, 5, 0, 5) == pytest.approx(1 / 252)
    assert fell(30, 30, 2, 30) < 1e-12
    # two fields empty on the same five pages are one event, not two
    table = [fell(5 - k, 5, k, 5) for k in range(6)]
    same = permuted([(0b11111, table), (0b11111, table)], 5, 5, [1 / 252], "t")
    apart = permuted([(0b11111, table), (0b1111100000, table)], 5, 5, [1 / 252], "t")
    assert same == [pytest.approx(1 / 252)] and apart == [pytest.approx(2 / 252)]


def test_weak_evidence_raises_no_alarm(tmp_path, capsys):
    """5 of 5 pages with the stock row, then 2 of 5: p = 0.08, at most a note."""
    db, found = _shop(tmp_path, capsys, pages=5, stocked_now=2)
    assert found["alarms"] == []
    for severity, change in _fields(found["notes"], "stock"):
        assert severity == "note" and (change["before"], change["after"]) == ("5/5", "2/5")
    assert main(["drift", "--db", db, "--fail-on", "warning"]) == 0


def test_strong_evidence_is_an_error_that_says_its_counts(tmp_path, capsys):
    """30 of 30 pages with the stock row, then 2 of 30."""
    db, found = _shop(tmp_path, capsys, pages=30, stocked_now=2)
    ((severity, change),) = _fields(found["alarms"], "stock")
    assert severity == "error" and change["change"] == "emptied"
    assert (change["before"], change["after"], change["level"]) == ("30/30", "2/30", "error")
    assert change["p"] < 0.001
    assert [f["name"] for a in found["alarms"] for f in a["fields"]] == [change["name"]]
    assert main(["drift", "--db", db, "--fail-on", "error"]) == 1
    capsys.readouterr()
    assert main(["drift", "--db", db]) == 0
    text = capsys.readouterr().out
    assert f"{change['name']} emptied (filled 30/30 → 2/30, p < 0.001)" in text


def test_an_optional_field_that_holds_its_share_raises_nothing(tmp_path, capsys):
    """A sale badge on two products of three, before and after: optional, watched, quiet."""
    db, found = _shop(tmp_path / "holds", capsys, pages=30, stocked_now=30, sale_every=3)
    assert found["alarms"] == [] and found["notes"] == []
    assert main(["drift", "--db", db, "--fail-on", "warning"]) == 0
    # watched all the same: the badge gone from every page is an error
    db, found = _shop(
        tmp_path / "gone", capsys, pages=30, stocked_now=30, sale_every=3, sales_now=False
    )
    ((severity, change),) = _fields(found["alarms"], "sale")
    assert severity == "error" and (change["before"], change["after"]) == ("20/30", "0/30")


def _era_pages(seed: int, era: int, half: int) -> dict[str, str]:
    site = era_site(seed, layouts=("twentytwentyone", "newsroom"), eras=2)
    return dict(site.halves(era)[half])


def test_a_redesign_into_a_new_template_alarms(tmp_path, capsys):
    """Five articles of a blog's first era, then five of the next in a new theme: the new pages
    form a template of their own (each article its own URL pattern: nothing says "replaced"
    by URL), and their fit against the baseline's template says redesign."""
    db = f"sqlite:///{tmp_path / 'eras.sqlite3'}"
    first = _snapshot(db, "old", _write(tmp_path / "old", _era_pages(1, 0, 0)), capsys)
    second = _snapshot(db, "new", _write(tmp_path / "new", _era_pages(1, 1, 0)), capsys)
    assert first["alarms"] == []
    (alarm,) = second["alarms"]
    assert (alarm["change"], alarm["severity"]) == ("replaced", "error")
    assert alarm["replaced_by"] is not None and alarm["replaced_by"] != alarm["template"]
    assert alarm["detail"].startswith("redesign: ")
    assert "median fit 0.0" in alarm["detail"] and "5 of 5 pages below 0.9" in alarm["detail"]
    assert alarm["where"]["path"]
    assert main(["drift", "--db", db, "--fail-on", "error"]) == 1


def test_the_same_era_again_raises_nothing(tmp_path, capsys):
    """The other five articles of the same era: a quiet week."""
    db = f"sqlite:///{tmp_path / 'quiet.sqlite3'}"
    _snapshot(db, "one", _write(tmp_path / "one", _era_pages(1, 0, 0)), capsys)
    second = _snapshot(db, "two", _write(tmp_path / "two", _era_pages(1, 0, 1)), capsys)
    assert second["alarms"] == []
    assert main(["drift", "--db", db, "--fail-on", "warning"]) == 0


def _template(pages: int, shares: list[float], **extra: object) -> dict:
    stats = {"pages": pages, "fit": None, "patterns": {}, "n": len(shares), "shares": shares}
    return {**stats, "fields": {}, "misses": [], **extra}


def test_a_template_regrouped_on_the_same_layout_is_a_note():
    """A baseline template gone, a new one whose pages fit its layout: visdup grouped the same
    pages anew, the site did not move."""
    baseline = {1: _template(10, [1.0] * 10)}
    fits = {"n": 8, "shares": [0.97, 1.0, 0.95, 1.0, 0.99, 1.0, 0.98, 1.0], "misses": []}
    current = {2: _template(10, [1.0] * 8, against={"1": fits})}
    (note,) = compare(current, baseline)
    assert (note.change, note.severity, note.replaced_by) == ("regrouped", "note", 2)
    assert "the same layout" in note.detail
    # the same, the pages fitting badly: a redesign
    bad = {"n": 8, "shares": [0.4] * 8, "misses": []}
    (alarm,) = compare({2: _template(10, [1.0] * 8, against={"1": bad})}, baseline)
    assert (alarm.change, alarm.severity, alarm.replaced_by) == ("replaced", "error", 2)


def test_a_resumed_snapshot_keeps_which_page_has_which_field():
    """Two runs of one snapshot: their sample pages one after the other, the masks too."""
    from visdup.drift.aggregate import field_mask, merge_sample

    def part(n: int, filled: int, mask: str | None) -> dict:
        counts = [n - filled, 0, 0, 0, 0, filled, 0]
        out = {"n": n, "shares": [1.0] * n, "fields": {"a": counts}, "misses": []}
        out["masks"] = {"a": mask} if mask else {}
        return out

    merged = merge_sample(part(3, 2, "5"), part(2, 2, None))  # pages 0 and 2, then both
    assert merged["n"] == 5 and merged["fields"]["a"][0] == 1
    assert field_mask(merged, "a") == 0b11101
    # a run written before masks were kept: the merged ones are not known
    unknown = merge_sample({**part(3, 2, None), "masks": {}}, part(2, 1, "1"))
    assert field_mask(unknown, "a") is None


def test_a_templates_url_patterns_hold_still_in_any_order():
    """Patterns as many pages share are kept and listed by their text, whichever page came
    first: past MAX_PATTERNS a tie could keep one pattern in one crawl and another in the
    next."""
    from collections import Counter

    from visdup.drift.aggregate import MAX_PATTERNS, template_stats

    urls = ["/a/*.html"] * 5 + [f"/p{i:02d}/*.html" for i in range(MAX_PATTERNS + 3)]
    seen = []
    for order in (urls, urls[::-1], urls[5:] + urls[:5]):
        stats = template_stats(pages=len(order), fits=[], patterns=Counter(order), sample={})
        seen.append(json.dumps(stats["patterns"]))
    assert seen[1] == seen[0] and seen[2] == seen[0]
    kept = json.loads(seen[0])
    assert list(kept) == ["/a/*.html"] + [f"/p{i:02d}/*.html" for i in range(MAX_PATTERNS - 1)]
