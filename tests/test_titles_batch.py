"""Batch commands learn a site's title affixes over the pages they are given, as a crawl does:
the stored titles are the pages' own, the same in any order."""

from __future__ import annotations

import random

from visdup.dedup.offline import label_files


def _page(n: int) -> tuple[str, bytes]:
    # most pages take their title from the first heading; the index pages have none, so
    # theirs is the <title>, which carries the site's suffix
    heading = "" if n % 4 == 0 else f"<h1>Chapter {n}</h1>"
    words = " ".join(f"word{n}x{i}" for i in range(60))
    html = (
        f"<html><head><title>Chapter {n} — Example Manual 2.1 documentation</title></head>"
        f"<body>{heading}<p>{words}.</p><p>More about chapter {n}, its own sentence.</p></body>"
        "</html>"
    )
    return f"http://docs.example/ch{n:02d}.html", html.encode()


def _titles(pages: list[tuple[str, bytes]]) -> dict[str, str | None]:
    store, tmp = label_files(pages)
    try:
        return {row.url: row.title for row in store.rows()}
    finally:
        store.close()
        if tmp is not None:
            tmp.unlink()


def test_batch_titles_lose_the_sites_suffix_whatever_the_order() -> None:
    pages = [_page(n) for n in range(24)]
    shuffled = pages[:]
    random.Random(7).shuffle(shuffled)
    titles = _titles(pages)
    assert len(titles) == 24
    assert not any("documentation" in (t or "") for t in titles.values())
    assert titles["http://docs.example/ch00.html"] == "Chapter 0"
    assert _titles(shuffled) == titles
    assert _titles(pages[::-1]) == titles


def test_content_command_titles_lose_the_sites_suffix(tmp_path, capsys) -> None:
    import json

    from visdup.cli import main

    for n in range(24):
        (tmp_path / f"ch{n:02d}.html").write_bytes(_page(n)[1])
    assert main(["content", "--json", str(tmp_path)]) == 0
    titles = [json.loads(line)["title"] for line in capsys.readouterr().out.splitlines()]
    assert len(titles) == 24 and titles[0] == "Chapter 0"
    assert not any("documentation" in t for t in titles)


def _source_page(n: int) -> tuple[str, bytes]:
    """A Sphinx manual's source-code page: its one <h1> inside the <title> is the manual's name,
    a link home; the page's own name is only the title's first part."""
    html = (
        f"<html><head><title>django.mod{n} — Django 3.2.25 documentation</title></head><body>"
        '<div id="hd"><h1><a href="../../index.html">Django 3.2.25 documentation</a></h1></div>'
        f"<div id=bd><h2>Source code for django.mod{n}</h2><pre>def f{n}(): return {n}</pre>"
        f'<a class="headerlink" href="#s{n}">¶</a></div></body></html>'
    )
    return f"http://docs.example/_modules/django/mod{n}.html", html.encode()


def test_a_manuals_name_in_its_one_heading_is_no_pages_title() -> None:
    pages = [_source_page(n) for n in range(12)] + [_page(n) for n in range(12)]
    titles = _titles(pages)
    banner = [u for u, t in titles.items() if t and "Django" in t]
    assert banner == [], banner
    assert titles["http://docs.example/_modules/django/mod3.html"] == "django.mod3"
    assert titles["http://docs.example/ch05.html"] == "Chapter 5"


def test_a_heading_linking_to_itself_stays_the_title() -> None:
    from visdup.content.titles import page_title
    from visdup.page.parse import parse_html

    def title(h1: str) -> str | None:
        html = f"<html><head><title>Fixing a flat | Bikes</title></head><body>{h1}</body></html>"
        return page_title(parse_html(html.encode()).root)

    # a permalink, a ¶ mark, a link to the post itself: the heading is the page's name
    assert title('<h1><a href="/2024/fixing-a-flat/">Fixing a flat</a></h1>') == "Fixing a flat"
    assert title('<h1>Fixing a flat<a href="#top">¶</a></h1>') == "Fixing a flat"
    # the site's name as a heading linking home gives way to the title's other part
    html = "<html><head><title>Bikes | Fixing a flat</title></head><body>"
    html += '<h1><a href="/">Bikes</a></h1></body></html>'
    assert page_title(parse_html(html.encode()).root) == "Fixing a flat"
