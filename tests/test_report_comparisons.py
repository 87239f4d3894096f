"""Every measured candidate is stored (visdup_comparisons) and the report reads them.

Real crawls of the demo site and real ``visdup dups --db`` runs into SQLite files: the rows
hold rejected candidates too, the histogram counts them all, ``--threshold`` replays the
verdicts from them, and a store without the table still gets its report.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import sqlalchemy as sa
from scrapy.utils.defer import deferred_f_from_coro_f

from tests.crawling import crawl
from visdup.cli import main
from visdup.demo import SITE_ROOT
from visdup.demo.server import serve


def _rows(db: str) -> list[tuple[int, int, str, float]]:
    engine = sa.create_engine(db)
    with engine.connect() as conn:
        rows = conn.execute(
            sa.text("SELECT page_id, other_id, channel, similarity FROM visdup_comparisons")
        ).all()
    engine.dispose()
    return [tuple(r) for r in rows]  # type: ignore[misc]


def _pages(db: str) -> dict[int, dict]:
    engine = sa.create_engine(db)
    with engine.connect() as conn:
        rows = conn.execute(
            sa.text(
                "SELECT id, url, verdict, kind, duplicate_of, similarity, content_similarity, term "
                "FROM visdup_pages ORDER BY id"
            )
        ).all()
    engine.dispose()
    return {r.id: dict(r._mapping) for r in rows}


def _dups(capsys, db: str, *settings: str) -> None:
    args = ["dups", str(SITE_ROOT), "--db", db]
    for s in settings:
        args += ["-s", s]
    assert main(args) == 0
    capsys.readouterr()


def _report(capsys, db: str, *args: str) -> tuple[dict, str]:
    assert main(["report", "--db", db, "--json", *args]) == 0
    out = capsys.readouterr()
    return json.loads(out.out), out.err


@deferred_f_from_coro_f
async def test_a_crawl_stores_confirmed_and_rejected_candidates(tmp_path, capsys):
    db = f"sqlite:///{tmp_path / 'demo.sqlite3'}"
    with serve(SITE_ROOT) as server:
        await crawl(db, server.url_for("/"))
    rows, pages = _rows(db), _pages(db)
    assert {c for _p, _o, c, _s in rows} == {"structure", "content"}
    # rejected candidates are there: below the near-duplicate and the content thresholds
    assert any(c == "structure" and s < 0.95 for _p, _o, c, s in rows)
    assert any(c == "content" and s < 0.80 for _p, _o, c, s in rows)
    per_channel: dict[tuple[int, str], list[float]] = {}
    for page_id, other, channel, sim in rows:
        assert other < page_id and page_id in pages  # compared with a page stored before
        assert 0.0 <= sim <= 1.0
        per_channel.setdefault((page_id, channel), []).append(sim)
    assert max(len(v) for v in per_channel.values()) <= 16
    # a copy's measures are against its original: where the crawl compared the two, the
    # final labels carry the same numbers
    pair = {(min(p, o), max(p, o), c): sim for p, o, c, sim in rows}
    checked = 0
    for page_id, p in pages.items():
        if p["verdict"] not in {"duplicate", "moved"} or p["kind"] == "exact":
            assert p["kind"] == "exact" or p["similarity"] is None
            continue
        key = (min(page_id, p["duplicate_of"]), max(page_id, p["duplicate_of"]))
        if (*key, "structure") in pair:
            assert round(p["similarity"], 6) == pair[(*key, "structure")]
            checked += 1
        if (*key, "content") in pair:
            assert round(p["content_similarity"], 6) == pair[(*key, "content")]
            checked += 1
    assert checked
    # the report's histograms count every row, split at the thresholds the crawl recorded
    report, _err = _report(capsys, db)
    sims = report["similarities"]
    assert sims["complete"] is True
    for channel, theta in (("structure", 0.95), ("content", 0.80)):
        mine = [s for _p, _o, c, s in rows if c == channel]
        assert sims[channel]["compared"] == len(mine)
        assert sims[channel]["confirmed"] == sum(s >= theta for s in mine)
    html = tmp_path / "r.html"
    assert main(["report", "--db", db, "--html", str(html)]) == 0
    text = html.read_text(encoding="utf-8")
    for channel in ("structure", "content"):
        compared, confirmed = re.search(
            rf'data-channel="{channel}" data-compared="(\d+)" data-confirmed="(\d+)"', text
        ).groups()  # type: ignore[union-attr]
        assert int(compared) == sims[channel]["compared"]
        assert int(confirmed) == sims[channel]["confirmed"]
    assert "every candidate compared" in text


def test_dups_db_stores_them_and_threshold_replays_them(tmp_path, capsys):
    """Structure alone decides (content off): a lower --threshold makes a duplicate of every
    page whose best stored comparison reaches it, and of no other."""
    db = f"sqlite:///{tmp_path / 'files.sqlite3'}"
    _dups(capsys, db, "VISDUP_CONTENT_ENABLED=false")
    rows, pages = _rows(db), _pages(db)
    assert rows and {c for _p, _o, c, _s in rows} == {"structure"}
    assert any(s < 0.95 for _p, _o, _c, s in rows)  # rejected ones are stored too
    best: dict[int, float] = {}
    for page_id, _other, _channel, sim in rows:
        best[page_id] = max(sim, best.get(page_id, 0.0))
    theta = 0.85
    flips = [
        i for i, p in pages.items() if p["verdict"] != "duplicate" and best.get(i, 0.0) >= theta
    ]
    assert flips, "the demo site has same-template pages between 0.85 and 0.95"
    table = tmp_path / "pages.jsonl"
    report, err = _report(capsys, db, "--threshold", str(theta), "--pages", str(table))
    assert f"re-analysis of {len(rows)} stored comparisons" in err
    verdict = {
        json.loads(line)["url"]: json.loads(line)
        for line in table.read_text(encoding="utf-8").splitlines()
    }
    # a page with a stored comparison at the new threshold is in a group, as a copy or as
    # the original; a copy is measured against its group's original
    either: dict[int, float] = {}
    for page_id, other, _channel, sim in rows:
        for i in (page_id, other):
            either[i] = max(sim, either.get(i, 0.0))
    for page_id, p in pages.items():
        row = verdict[p["url"]]
        if either.get(page_id, 0.0) >= theta:
            assert row["verdict"] in {"duplicate", "original"}, (p["url"], either[page_id])
        if row["verdict"] == "duplicate" and row["kind"] != "exact":
            assert row["kind"] == "structural" and row["layout_similarity"] is not None
    assert all(verdict[pages[i]["url"]]["verdict"] in {"duplicate", "original"} for i in flips)
    # the histogram moves its split with the threshold, over the same comparisons
    assert report["similarities"]["structure"] == {
        "compared": len(rows),
        "confirmed": sum(s >= theta for _p, _o, _c, s in rows),
        "threshold": theta,
    }
    # the stored verdicts stay the crawl's
    assert _pages(db) == pages


def test_comparisons_per_page_are_capped(tmp_path, capsys):
    db = f"sqlite:///{tmp_path / 'cap.sqlite3'}"
    _dups(capsys, db, "VISDUP_COMPARISONS_MAX=1")
    rows = _rows(db)
    keys = [(p, c) for p, _o, c, _s in rows]
    assert rows and len(keys) == len(set(keys))
    full = f"sqlite:///{tmp_path / 'full.sqlite3'}"
    _dups(capsys, full)
    best = {}
    for p, _o, c, s in _rows(full):
        best[(p, c)] = max(s, best.get((p, c), 0.0))
    assert {(p, c): s for p, _o, c, s in rows} == best  # the one kept is the best


def test_a_store_without_the_table_still_has_its_report(tmp_path, capsys):
    path = tmp_path / "old.sqlite3"
    db = f"sqlite:///{path}"
    _dups(capsys, db)
    crawled, _err = _report(capsys, db)
    engine = sa.create_engine(db)
    with engine.begin() as conn:  # a store made before visdup_comparisons existed
        conn.execute(sa.text("DROP TABLE visdup_comparisons"))
    engine.dispose()
    report, _err = _report(capsys, db)
    sims = report.pop("similarities")
    assert sims["complete"] is False and "predates" in sims["source"]
    assert sims["structure"]["compared"] < crawled["similarities"]["structure"]["compared"]
    crawled.pop("similarities")
    assert report == crawled  # verdicts, groups and templates as before
    assert main(["report", "--db", db]) == 0
    assert "histogram incomplete" in capsys.readouterr().out
    html = tmp_path / "old.html"
    assert main(["report", "--db", db, "--html", str(html)]) == 0
    capsys.readouterr()
    assert "closest match" in html.read_text(encoding="utf-8")
    # a re-analysis runs the channels again over the stored terms and prints
    again, err = _report(capsys, db, "--threshold", "0.95")
    assert "re-analysis at similarity 0.95" in err
    assert again["similarities"]["complete"] is True
    assert again["pages"] == report["pages"] and again["groups"]
    assert not sa.inspect(sa.create_engine(db)).has_table("visdup_comparisons")
    # labelling more pages into it makes the table; the old pages still lack their rows
    extra = tmp_path / "more"
    extra.mkdir()
    (extra / "copy.html").write_bytes((Path(SITE_ROOT) / "index.html").read_bytes() + b" ")
    assert main(["dups", str(extra), "--db", db]) == 0
    capsys.readouterr()
    later, _err = _report(capsys, db)
    assert later["similarities"]["complete"] is False
    assert "pages stored without comparisons" in later["similarities"]["source"]
