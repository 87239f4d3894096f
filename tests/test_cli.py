"""The visdup command: outputs, and bad input as one line on stderr with exit status 2."""

from __future__ import annotations

import gzip
import json
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
    assert set(out) == {"similarity", "distance", "size_a", "size_b"}
    assert 0.8 < out["similarity"] < 1.0
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
