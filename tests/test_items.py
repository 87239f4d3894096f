"""Page items leave the pipelines exportable by Scrapy's feed exporters."""

from __future__ import annotations

import dataclasses
import io
import json

import lxml.etree
import pytest
from scrapy.exporters import JsonLinesItemExporter
from scrapy.http import HtmlResponse, Request

from visdup.dedup.analysis import analyse, declared_charset
from visdup.items import Page, Record
from visdup.page.parse import parse_html


def test_page_from_response_keeps_the_parsed_tree_and_exports_without_bytes():
    request = Request("http://example.com/a", headers={"Referer": "http://example.com/"})
    response = HtmlResponse(
        "http://example.com/b",
        body=b"<html><body><p>x</p></body></html>",
        encoding="utf-8",
        request=request,
    )
    response.request.meta["redirect_urls"] = ["http://example.com/a"]
    assert Page.from_response(response).tree is None, "no tree until the spider parses one"
    assert response._cached_selector is None, "from_response parses nothing itself"
    response.selector.css("p")  # the spider reads the page
    page = Page.from_response(response, links=["http://example.com/c"])
    # the page at its final URL, whichever way the crawl came to it first
    assert page.url == page.final_url == "http://example.com/b"
    assert page.referer == "http://example.com/"
    assert page.tree is not None and page.tree.tag == "html"
    out = io.BytesIO()
    exporter = JsonLinesItemExporter(out)
    exporter.export_item(page)
    exporter.export_item(Record(url="http://example.com/a", cluster=1, fits=True, title="T"))
    first, second = (json.loads(line) for line in out.getvalue().splitlines())
    assert first["url"] == "http://example.com/b" and "body" not in first
    assert "tree" not in first and first["links"] == ["http://example.com/c"]
    assert second == {"url": "http://example.com/a", "cluster": 1, "fits": True, "title": "T"}


def _response(body: bytes, content_type: str | None = None) -> HtmlResponse:
    """A response its spider has read (parsed): ``Page.from_response`` reuses that tree."""
    headers = {"Content-Type": content_type} if content_type else {}
    response = HtmlResponse("http://example.com/p", body=body, headers=headers)
    response.selector.xpath("//title")
    return response


PAGE = (
    "<html><head><title>Café</title></head>"
    "<body><h1>Café</h1><p>Crème brûlée, served at the café by the fjord.</p></body></html>"
)


def _analyse(page: Page):
    return analyse(
        page.body,
        url=page.url,
        content_type=page.content_type,
        tree=page.tree,
        encoding=page.encoding,
    )


def test_a_page_without_a_declared_charset_keeps_the_responses_reading():
    """cp1252 bytes, nothing declared: Scrapy's reading stands; no second parse, no note."""
    response = _response(PAGE.encode("cp1252"))
    page = Page.from_response(response)
    analysis = _analyse(page)
    assert response.encoding.startswith("cp125") and analysis.encoding == response.encoding
    assert analysis.notes == () and analysis.title == "Café"
    # parsing the bytes afresh would have read them as UTF-8, with replacement characters
    fresh = parse_html(page.body)
    assert fresh.encoding in {"utf8", "utf-8"} and "\ufffd" in fresh.root.findtext(".//title")
    # the bytes alone (a worker process gets no tree) are read as the response read them
    alone = analyse(page.body, url=page.url, content_type=None, encoding=response.encoding)
    assert alone.encoding == response.encoding and alone.title == "Café"
    assert alone.term == analysis.term and alone.content == analysis.content


def test_a_lying_header_is_read_as_the_body_says_and_noted():
    response = _response(PAGE.encode("utf-8"), "text/html; charset=iso-8859-1")
    page = Page.from_response(response)
    analysis = _analyse(page)
    assert analysis.encoding == "utf-8" and analysis.title == "Café"
    assert analysis.notes == (("charset", "charset declared as cp1252, the body is utf-8"),)


def test_a_declared_charset_that_holds_reuses_the_tree_and_leaves_it_whole():
    response = _response(PAGE.encode("cp1252"), "text/html; charset=windows-1252")
    page = Page.from_response(response)
    before = lxml.etree.tostring(page.tree)
    analysis = _analyse(page)
    assert analysis.notes == () and analysis.title == "Café" and analysis.content is not None
    assert lxml.etree.tostring(response.selector.root) == before, "the spider's tree is intact"
    assert declared_charset(page.body, page.content_type) == "cp1252"
    assert declared_charset(b"<meta charset='utf8'><p>x", None) == "utf-8"
    assert declared_charset(b"<p>x</p>", "text/html") is None


def test_the_analysis_is_immutable_and_not_exported():
    page = Page.from_response(_response(PAGE.encode("utf-8"), "text/html; charset=utf-8"))
    page.analysis = _analyse(page)
    with pytest.raises(dataclasses.FrozenInstanceError):
        page.analysis.title = "x"  # type: ignore[misc]
    out = io.BytesIO()
    JsonLinesItemExporter(out).export_item(page)
    assert "analysis" not in json.loads(out.getvalue())
