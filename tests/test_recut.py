"""Template clusters cut again from a crawl's stored pages (``report --cluster-threshold``)."""

from __future__ import annotations

import json

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from tests.crawling import crawl
from visdup import config
from visdup.cli import main
from visdup.demo import SITE_ROOT
from visdup.demo.server import serve


@deferred_f_from_coro_f
async def test_cluster_threshold_recuts_templates_from_the_store(tmp_path, capsys):
    db = f"sqlite:///{tmp_path / 'demo.sqlite3'}"
    with serve(SITE_ROOT) as server:
        await crawl(db, server.url_for("/"))
    assert main(["report", "--db", db, "--json"]) == 0
    crawled = json.loads(capsys.readouterr().out)
    # at the crawl's own threshold the batch makes the crawl's templates: the same code on
    # the same signatures, whatever order the pages were stored in
    threshold = str(config.VISDUP_CLUSTER_THRESHOLD)
    assert main(["report", "--db", db, "--json", "--cluster-threshold", threshold]) == 0
    captured = capsys.readouterr()
    same = json.loads(captured.out)
    assert "re-cut" in captured.err
    assert [(t["id"], t["size"]) for t in same["templates"]] == [
        (t["id"], t["size"]) for t in crawled["templates"]
    ]
    # a tighter threshold: more, smaller templates; the stored ones stay
    assert main(["report", "--db", db, "--json", "--cluster-threshold", "0.99"]) == 0
    tight = json.loads(capsys.readouterr().out)
    assert len(tight["templates"]) > len(crawled["templates"])
    assert sum(t["size"] for t in tight["templates"]) == sum(
        t["size"] for t in crawled["templates"]
    )
    assert main(["report", "--db", db, "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == crawled
    # --save stores them in place of the crawl's
    assert main(["report", "--db", db, "--cluster-threshold", "0.99", "--save"]) == 0
    assert "saved" in capsys.readouterr().err
    assert main(["report", "--db", db, "--json"]) == 0
    saved = json.loads(capsys.readouterr().out)
    assert [(t["id"], t["size"]) for t in saved["templates"]] == [
        (t["id"], t["size"]) for t in tight["templates"]
    ]
    with pytest.raises(SystemExit):
        main(["report", "--db", db, "--cluster-threshold", "1.5"])


@deferred_f_from_coro_f
async def test_cluster_threshold_needs_stored_bodies(tmp_path, capsys):
    db = f"sqlite:///{tmp_path / 'nobody.sqlite3'}"
    with serve(SITE_ROOT) as server:
        await crawl(db, server.url_for("/"), {"VISDUP_STORE_BODY": False})
    assert main(["report", "--db", db, "--cluster-threshold", "0.9", "--save"]) == 2
    assert "kept no bodies" in capsys.readouterr().err
    assert main(["report", "--db", db, "--json"]) == 0
    assert json.loads(capsys.readouterr().out).get("templates")  # nothing was replaced


def test_help_tells_the_two_thresholds_apart(capsys):
    with pytest.raises(SystemExit):
        main(["report", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--cluster-threshold" in text and "re-cut template clusters" in text
    assert "duplicate channel's template floor" in text
