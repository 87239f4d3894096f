"""The visdup command: outputs, and bad input as one line on stderr with exit status 2."""

from __future__ import annotations

import gzip
import json
import sqlite3
import subprocess
import sys

import pytest

from visdup.cli import main
from visdup.structure.term import Term, equivalent


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "visdup", *args], capture_output=True, text=True, timeout=120
    )


PAGE = "<html><body><ul>{}</ul><table>{}</table></body></html>"


def page(items: int, rows: int) -> str:
    return PAGE.format(
        "".join(f"<li>item {i}</li>" for i in range(items)),
        "".join(f"<tr><td>{r}</td><td>cell</td></tr>" for r in range(rows)),
    )


def test_compress_prints_the_papers_example(capsys):
    assert main(["compress", "grp(row(text,text),row(text,text,text,text,text))"]) == 0
    assert capsys.readouterr().out.strip() == "grp([2]row([4]text))"


def test_term_on_files_and_directories(tmp_path, capsys):
    (tmp_path / "a.html").write_text(page(3, 2))
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "b.htm.gz").write_bytes(gzip.compress(page(5, 4).encode()))
    (sub / "ignored.txt").write_text("not a page")
    assert main(["term", "--json", str(tmp_path)]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [x["path"].rsplit("/", 1)[-1] for x in lines] == ["a.html", "b.htm.gz"]
    assert all(set(x) == {"path", "term", "size", "nodes"} for x in lines)
    a, b = (Term.parse(x["term"]) for x in lines)
    assert equivalent(a, b) and a != b, "list lengths change marks, not the layout"


def test_compare_pages_and_terms(tmp_path, capsys):
    a, b = tmp_path / "a.html", tmp_path / "b.html"
    a.write_text(page(3, 2))
    b.write_text(page(4, 2))
    c = tmp_path / "c.html"
    c.write_text("<html><body><div><h1>Title</h1><p>one</p><p>two</p></div></body></html>")
    assert main(["compare", str(a), str(b), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {
        "similarity",
        "distance",
        "size_a",
        "size_b",
        "repertoire_similarity",
        "frame_similarity",
        "one_frame",
    }
    assert out["one_frame"] is True and out["frame_similarity"] >= out["similarity"]
    assert 0.8 < out["similarity"] < 1.0
    assert out["repertoire_similarity"] >= out["similarity"]  # a list's length counts less
    assert main(["compare", str(a), str(c), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["similarity"] < 0.6
    assert main(["compare", "--terms", "grp(row(text))", "grp(col(text),col(text))"]) == 0
    assert "similarity" in capsys.readouterr().out


@pytest.mark.parametrize(
    "make, args",
    [
        (lambda d: None, ["term", "{d}/missing.html"]),
        (lambda d: (d / "empty.html").write_bytes(b""), ["term", "{d}/empty.html"]),
        (lambda d: (d / "bin.html").write_bytes(bytes(range(256)) * 100), ["term", "{d}/bin.html"]),
        (lambda d: (d / "bad.html.gz").write_bytes(b"not gzip"), ["term", "{d}/bad.html.gz"]),
        (lambda d: None, ["compress", "grp(row"]),
        (lambda d: None, ["compress", "[0]grp"]),
        (lambda d: None, ["compare", "--terms", "grp(", "grp"]),
        (lambda d: None, ["compare", "{d}/nope.html", "{d}/nope2.html"]),
        (lambda d: None, ["report", "--db", "sqlite:///{d}/absent.sqlite3"]),
    ],
)
def test_bad_input_is_one_line_and_status_2(tmp_path, make, args):
    make(tmp_path)
    result = run(*[a.format(d=tmp_path) for a in args])
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    lines = [x for x in result.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("visdup: error:"), result.stderr


def test_unreadable_file_among_good_ones_is_reported_and_the_rest_printed(tmp_path):
    (tmp_path / "good.html").write_text(page(2, 2))
    (tmp_path / "empty.html").write_text("")
    result = run("term", str(tmp_path))
    assert result.returncode == 2
    assert "good.html" in result.stdout
    assert result.stderr.count("visdup: error:") == 1 and "empty.html" in result.stderr


def test_dups_refuses_a_page_it_cannot_read_whole_from_its_one_parse(tmp_path):
    """``dups`` parses each page once, in its analysis, and refuses what ``term`` refuses."""
    (tmp_path / "a.html").write_text(page(3, 2))
    (tmp_path / "b.html").write_text(page(3, 2).replace("item 1", "item one"))
    (tmp_path / "deep.html").write_text(
        "<html><body>" + "<div>" * 3000 + "x" + "</div>" * 3000 + "</body></html>"
    )
    (tmp_path / "junk.html").write_bytes(bytes(range(256)) * 8)
    result = run("dups", str(tmp_path))
    assert result.returncode == 2, result.stderr
    errors = result.stderr.splitlines()
    assert len(errors) == 2, result.stderr
    assert any("deep.html: nested deeper than 2048 levels" in line for line in errors)
    assert any("junk.html: binary content" in line for line in errors)
    assert result.stdout.startswith("2 pages, "), result.stdout


def test_hundred_thousand_levels_deep(tmp_path):
    depth = 100_000
    deep_page = tmp_path / "deep.html"
    deep_page.write_text(
        "<html><body>" + "<div>" * depth + "x" + "</div>" * depth + "</body></html>"
    )
    result = run("term", "--json", str(deep_page))
    # lxml drops everything below 2048 levels: the page was not read whole, and says so
    assert result.returncode == 2 and result.stdout == "", result.stderr
    assert result.stderr.count("\n") == 1 and "nested deeper than 2048 levels" in result.stderr
    deep_term = "grp(" * depth + "text" + ")" * depth
    result = subprocess.run(
        [sys.executable, "-m", "visdup", "compress", "-"],
        input=deep_term,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0 and result.stdout.strip() == "grp(text)", result.stderr
    (tmp_path / "deep.term").write_text(deep_term)
    result = run("compare", "--terms", f"@{tmp_path / 'deep.term'}", "grp(text)", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["similarity"] == 1.0


def test_stored_bodies_are_read_as_the_crawl_read_them(tmp_path):
    """A charset the response's header gave and the body does not say: `--db` commands read
    the body as the crawl did (its stored encoding), not as the bytes alone suggest."""
    import argparse

    from visdup.page.files import as_read, open_source
    from visdup.page.parse import parse_html
    from visdup.storage.store import PageRecord, Store, pack_body

    html = (
        "<html><head><title>Заголовок</title></head><body class='запись archive'>"
        "<p>Русский текст этой страницы, довольно длинный.</p></body></html>"
    )
    body = html.encode("koi8-r")

    def text(data: bytes) -> str:
        doc = parse_html(data)
        assert doc.root is not None
        return doc.root.xpath("string()")

    assert "Русский" not in text(body)  # alone, the bytes read otherwise
    assert "Русский текст" in text(as_read(body, "koi8-r"))
    assert as_read(html.encode(), "utf-8") == html.encode()  # read the same way: untouched
    assert as_read(body, None) == body and as_read(body, "no-such-codec") == body

    db = f"sqlite:///{tmp_path / 'enc.sqlite3'}"
    store = Store.from_url(db, writer=True)
    try:
        run = store.begin_run("site", crawl="example.test")
        record = PageRecord(
            url="http://example.test/ru.html",
            status=200,
            depth=0,
            simhash=5,
            links=[],
            encoding="koi8-r",
            body=pack_body(body),
        )
        with store.engine.begin() as conn:
            assert store.insert_page(conn, record, run) is not None
    finally:
        store.close()
    found, source = open_source(argparse.Namespace(paths=[], db=db))
    assert source is not None
    source.close()
    assert [url for url, _ in found] == ["http://example.test/ru.html"]
    assert "Заголовок" in text(found[0][1]) and "Русский текст" in text(found[0][1])


# --------------------------------------------------------------------------- reading a store

#: Every command that reads a store given by --db, as its arguments (``{db}`` the URL).
READERS = [
    ["report", "--db", "{db}"],
    ["report", "--db", "{db}", "--pages", "{d}/pages.csv"],
    ["drift", "--db", "{db}", "--fail-on", "warning"],
    ["cluster", "--db", "{db}"],
    ["extract", "--db", "{db}", "--out", "{d}/out.csv"],
]


def _one_error(capsys, status: int) -> str:
    captured = capsys.readouterr()
    lines = [x for x in captured.err.splitlines() if x.strip()]
    assert status == 2, captured.err
    assert len(lines) == 1 and lines[0].startswith("visdup: error:"), captured.err
    return lines[0]


def _store_with_a_page(path) -> str:
    from visdup.storage.store import PageRecord, Store, pack_body

    db = f"sqlite:///{path}"
    store = Store.from_url(db, writer=True)
    try:
        run = store.begin_run("site", crawl="example.test")
        body = page(3, 2).encode()
        record = PageRecord(
            url="http://example.test/a.html", status=200, depth=0, simhash=5, links=[]
        )
        record.body = pack_body(body)
        with store.engine.begin() as conn:
            store.insert_page(conn, record, run)
    finally:
        store.close()
    return db


@pytest.mark.parametrize("args", READERS, ids=lambda a: " ".join(a[:1] + a[3:4]))
def test_reading_commands_create_no_store_and_touch_no_other_database(tmp_path, capsys, args):
    """A mistyped path is not created, another application's SQLite file gains no table."""
    missing = tmp_path / "mistyped.sqlite3"
    argv = [a.format(db=f"sqlite:///{missing}", d=tmp_path) for a in args]
    assert "no store at" in _one_error(capsys, main(argv))
    assert list(tmp_path.iterdir()) == [], "nothing created, no output file either"

    other = tmp_path / "app.sqlite3"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, total REAL)")
    conn.close()
    before = other.read_bytes()
    argv = [a.format(db=f"sqlite:///{other}", d=tmp_path) for a in args]
    assert "holds no visdup store" in _one_error(capsys, main(argv))
    assert other.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["app.sqlite3"]


def test_an_older_store_is_read_once_visdup_migrate_upgraded_it(tmp_path, capsys):
    from visdup.storage.schema import SCHEMA_VERSION

    path = tmp_path / "old.sqlite3"
    db = _store_with_a_page(path)
    with sqlite3.connect(path) as conn:  # as version 2 left it: version 3 added tables only
        conn.execute("DROP TABLE visdup_comparisons")
        conn.execute("UPDATE visdup_meta SET value = '2' WHERE key = 'schema_version'")
    conn.close()
    for args in READERS:
        line = _one_error(capsys, main([a.format(db=db, d=tmp_path) for a in args]))
        assert "schema version 2, older" in line and "visdup migrate --db" in line, line
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT value FROM visdup_meta").fetchall() == [("2",)]
    conn.close()
    assert main(["migrate", "--db", db]) == 0
    assert f"schema version 2 upgraded to {SCHEMA_VERSION}" in capsys.readouterr().out
    assert main(["report", "--db", db]) == 0
    assert capsys.readouterr().out.startswith("1 page, 0 duplicate groups")
    assert main(["migrate", "--db", db]) == 0
    assert "already current" in capsys.readouterr().out
    missing = tmp_path / "none.sqlite3"
    assert "no store at" in _one_error(capsys, main(["migrate", "--db", f"sqlite:///{missing}"]))
    assert not missing.exists()
