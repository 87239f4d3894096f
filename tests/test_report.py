"""The report of a crawl of the demo site: groups, verdicts, templates, canonical links."""

from __future__ import annotations

import json

from scrapy.utils.defer import deferred_f_from_coro_f

from tests.crawling import crawl
from visdup.cli import main
from visdup.demo import SITE_ROOT
from visdup.demo.server import serve


def _url(member: dict) -> str:
    return member["url"]


@deferred_f_from_coro_f
async def test_demo_report(tmp_path, capsys):
    db = f"sqlite:///{tmp_path / 'demo.sqlite3'}"
    with serve(SITE_ROOT) as server:
        await crawl(db, server.url_for("/"))
        base = server.url
    assert main(["report", "--db", db, "--json"]) == 0
    report = json.loads(capsys.readouterr().out.replace(base, ""))
    assert set(report) >= {"pages", "groups", "verdicts", "templates", "undeclared"}
    assert report["pages"] >= 60
    assert set(report["verdicts"]) == {"duplicate", "moved", "same_template", "novel"}
    by_member = {m["url"]: (g, m) for g in report["groups"] for m in g["members"]}
    partner = "/partners/cityride/winter-riding-tips.html"
    (group,) = [g for g in report["groups"] if partner in {g["original"], *map(_url, g["members"])}]
    # the group agrees, through rel=canonical, on the clean article URL
    assert group["canonical"] == "/articles/winter-riding-tips.html"
    # the syndicated copy names no canonical; the winter print version names its article
    if partner in by_member:
        assert by_member[partner][1]["kind"] == "content"
        assert not by_member[partner][1]["declared"]
    printed = "/articles/winter-riding-tips/print.html"
    if printed in by_member:
        assert by_member[printed][1]["declared"]
    # the robots.txt-disallowed page was never fetched
    assert not any("/private/" in u for u in by_member)
    assert report["undeclared"] == sum(
        not m["declared"] for g in report["groups"] for m in g["members"]
    )
    assert main(["report", "--db", db]) == 0
    text = capsys.readouterr().out
    assert "duplicate groups" in text and "templates" in text and "canonical" in text
