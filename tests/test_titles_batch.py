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
