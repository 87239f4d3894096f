"""Page items leave the pipelines exportable by Scrapy's feed exporters."""

from __future__ import annotations

import io
import json

from scrapy.exporters import JsonLinesItemExporter
from scrapy.http import HtmlResponse, Request

from visdup.items import Page, Record


def test_page_from_response_keeps_the_parsed_tree_and_exports_without_bytes():
    request = Request("http://example.com/a", headers={"Referer": "http://example.com/"})
    response = HtmlResponse(
        "http://example.com/b",
        body=b"<html><body><p>x</p></body></html>",
        encoding="utf-8",
        request=request,
    )
    response.request.meta["redirect_urls"] = ["http://example.com/a"]
    page = Page.from_response(response, links=["http://example.com/c"])
    assert page.url == "http://example.com/a" and page.final_url == "http://example.com/b"
    assert page.referer == "http://example.com/"
    assert page.tree is not None and page.tree.tag == "html"
    out = io.BytesIO()
    exporter = JsonLinesItemExporter(out)
    exporter.export_item(page)
    exporter.export_item(Record(url="http://example.com/a", cluster=1, fits=True, title="T"))
    first, second = (json.loads(line) for line in out.getvalue().splitlines())
    assert first["url"] == "http://example.com/a" and first["body"] is None
    assert first["tree"] is None and first["links"] == ["http://example.com/c"]
    assert second == {"url": "http://example.com/a", "cluster": 1, "fits": True, "title": "T"}
