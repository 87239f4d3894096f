"""Drift alarms on real pages stored as snapshots with ``visdup dups --crawl-id``: SWDE book
pages mutated (fields emptied and retyped), a layout change with its place and "since", an
unchanged manual (no alarm), and the report's drift section."""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
from pathlib import Path

import pytest

from bench.bench_drift import drop, epoch_date, field_alarms, rename, swde_pages, write
from tests.conftest import REPO, shared_data
from visdup.cli.app import main

MANUAL = REPO / "debian-docs" / "usr" / "share" / "doc" / "python3.11" / "html"


def _dups(db: str, name: str, folder: Path, capsys: pytest.CaptureFixture[str]) -> dict:
    capsys.readouterr()
    assert main(["dups", "--db", db, "--crawl-id", name, "--json", str(folder)]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.fixture(scope="module")
def books() -> list[tuple[str, str]]:
    shared_data("swde-booksamillion", "pages")
    return swde_pages(40)


def test_mutated_book_pages_alarm_on_the_right_fields(tmp_path, books, capsys):
    base_db = tmp_path / "base.sqlite3"
    _dups(f"sqlite:///{base_db}", "base", write(tmp_path / "base", books, lambda h: h), capsys)
    # other books under the same names: every page changed, the layout kept
    swapped = [(n, html) for (n, _h), (_o, html) in zip(books, swde_pages(40, 1), strict=True)]
    scenarios = [
        ("unchanged", books, lambda h: h, {}),
        ("swapped", swapped, lambda h: h, {}),
        ("renamed", books, rename("Publisher", "Imprint"), {"publisher": "emptied"}),
        ("dropped", books, drop("Page Count"), {"page_count": "emptied"}),
        ("reformatted", books, epoch_date, {"date": "retyped"}),
    ]
    expected = found = false = compared = 0
    for name, pages, mutate, want in scenarios:
        db = tmp_path / f"{name}.sqlite3"
        shutil.copy(base_db, db)
        out = _dups(f"sqlite:///{db}", name, write(tmp_path / name, pages, mutate), capsys)
        assert out["snapshot"] == name and out["baseline"] == "base"
        alarmed, stable = field_alarms(f"sqlite:///{db}", name, "base")
        expected += len(want)
        found += sum(1 for f, c in want.items() if alarmed.get(f) == c)
        false += sum(1 for f in alarmed if f not in want)
        compared += stable - len(want)
        if name == "unchanged":  # byte for byte: nothing can have drifted
            assert out["alarms"] == []
        for alarm in out["alarms"]:
            assert alarm["since"] == name
    print(f"field recall {found}/{expected}, false field alarms {false}/{compared}")
    assert found / expected >= 0.9
    assert false / compared <= 0.05


def _without_price_box(html: str) -> str:
    return re.sub(
        r'<div class="product-actions">.*?<div class="tabset">',
        '<div class="tabset">',
        html,
        flags=re.S,
    )


def test_a_layout_change_alarms_once_with_where_and_since(tmp_path, books, capsys):
    db = f"sqlite:///{tmp_path / 'series.sqlite3'}"
    eras = [("a1", False), ("a2", False), ("b1", True), ("b2", True)]
    alarms = {}
    for name, changed in eras:
        folder = write(tmp_path / name, books, _without_price_box if changed else lambda h: h)
        alarms[name] = _dups(db, name, folder, capsys)["alarms"]
    assert alarms["a1"] == alarms["a2"] == alarms["b2"] == []
    (alarm,) = alarms["b1"]
    # the price fields filled in 30 of 30 sample pages, then in none: strong evidence, an error
    assert alarm["change"] == "changed" and alarm["severity"] == "error"
    prices = {f["name"]: f for f in alarm["fields"] if f["name"].endswith("_price")}
    assert prices["retail_price"]["before"] == "30/30"
    assert prices["retail_price"]["after"] == "0/30"
    assert prices["retail_price"]["level"] == "error"
    assert alarm["since"] == "b1"
    assert "div.product-actions" in alarm["where"]["path"]
    assert "Retail Price" in alarm["where"]["before"]
    assert "Retail Price" not in alarm["where"]["after"]
    assert {f["name"] for f in alarm["fields"]} >= {"retail_price", "online_price"}

    # seen from a2, the change at b1 is still there at b2, and began at b1
    capsys.readouterr()
    assert main(["drift", "--db", db, "--baseline", "a2", "--current", "b2", "--json"]) == 0
    (later,) = json.loads(capsys.readouterr().out)["alarms"]
    assert later["since"] == "b1" and later["change"] == "changed"
    assert main(["drift", "--db", db, "--current", "b1", "--fail-on", "warning"]) == 1
    assert main(["drift", "--db", db, "--current", "b1", "--fail-on", "error"]) == 1
    assert main(["drift", "--db", db, "--current", "b2", "--fail-on", "warning"]) == 0
    assert "retail_price emptied (filled 30/30 → 0/30, p < 0.001)" in capsys.readouterr().out

    # the report's drift section: the last snapshot against the one before
    capsys.readouterr()
    assert main(["report", "--db", db, "--json"]) == 0
    section = json.loads(capsys.readouterr().out)["drift"]
    assert (section["current"], section["baseline"], section["alarms"]) == ("b2", "b1", [])
    assert main(["report", "--db", db]) == 0
    assert "drift: snapshot b2 against b1: 0 alarms" in capsys.readouterr().out
    html = tmp_path / "report.html"
    assert main(["report", "--db", db, "--html", str(html)]) == 0
    assert 'id="drift"' in html.read_text(encoding="utf-8")


def test_an_unchanged_manual_gives_no_alarm(tmp_path, capsys):
    if not MANUAL.is_dir():
        pytest.skip(f"{MANUAL} is absent")
    files = sorted(MANUAL.rglob("*.html"))[:150]
    copy = tmp_path / "manual"
    for f in files:
        target = copy / f.relative_to(MANUAL)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(f, target)
    db = f"sqlite:///{tmp_path / 'manual.sqlite3'}"
    assert _dups(db, "one", copy, capsys)["alarms"] == []
    second = _dups(db, "two", copy, capsys)
    assert second["baseline"] == "one" and second["templates"] >= 1
    assert second["alarms"] == []


def test_warc_files_are_snapshots_page_by_page(tmp_path, books, capsys):
    pytest.importorskip("warcio", reason="warcio is not installed (pip install 'visdup[warc]')")
    from tests.test_warc import _write_warc

    pages = write(tmp_path / "pages", books[:20], lambda h: h)
    files = sorted(pages.iterdir())
    db = f"sqlite:///{tmp_path / 'warc.sqlite3'}"
    for name in ("w1", "w2"):
        warc = tmp_path / f"{name}.warc.gz"
        _write_warc(warc, pages, files, noise=False)
        out = _dups(db, name, warc, capsys)
    assert out["baseline"] == "w1" and out["alarms"] == []
    with sqlite3.connect(db.removeprefix("sqlite:///")) as conn:
        stored = conn.execute("SELECT count(*) FROM visdup_pages").fetchone()[0]
        rows = conn.execute("SELECT count(*) FROM visdup_snapshot_pages").fetchone()[0]
    assert (stored, rows) == (len(files), 2 * len(files))  # one label per page, one row each
