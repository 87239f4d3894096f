"""Helpers for in-process crawls against a local HTTP server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from scrapy.utils.test import get_crawler

from visdup.spiders.site import SiteSpider


def crawl_settings(db_url: str, **extra: Any) -> dict[str, Any]:
    settings: dict[str, Any] = {
        "ADDONS": {"visdup.Addon": 100},
        "VISDUP_DATABASE_URL": db_url,
        "ROBOTSTXT_OBEY": True,
        "TWISTED_REACTOR": "twisted.internet.asyncioreactor.AsyncioSelectorReactor",
        "LOG_LEVEL": "INFO",
        "CONCURRENT_REQUESTS": 16,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 16,
        "DOWNLOAD_DELAY": 0,
        "TELNETCONSOLE_ENABLED": False,
        "RETRY_ENABLED": False,
        "DOWNLOAD_TIMEOUT": 20,
    }
    settings.update(extra)
    return settings


async def crawl(
    db_url: str, url: str, settings: dict[str, Any] | None = None, **spider_kwargs: Any
):
    crawler = get_crawler(SiteSpider, crawl_settings(db_url, **(settings or {})))
    await crawler.crawl_async(url=url, **spider_kwargs)
    return crawler


def write_site(root: Path, pages: dict[str, str]) -> Path:
    for rel, text in pages.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def article(
    title: str, paragraphs: list[str], links: list[str], nav: list[str] | None = None
) -> str:
    nav_html = "".join(f'<li><a href="{u}">{u}</a></li>' for u in (nav or []))
    body = "".join(f"<p>{p}</p>" for p in paragraphs)
    related = "".join(f'<li><a href="{u}">{u}</a></li>' for u in links)
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{title}</title></head><body>"
        f"<header><h1>Site</h1><ul class=nav>{nav_html}</ul></header>"
        f"<main><article><h2>{title}</h2>{body}</article></main>"
        f"<aside><h3>Related</h3><ul>{related}</ul></aside>"
        f"<footer><p>Footer text</p></footer></body></html>"
    )


def listing(title: str, items: list[tuple[str, str]]) -> str:
    rows = "".join(f"<tr><td><a href='{u}'>{t}</a></td><td>{t} summary</td></tr>" for u, t in items)
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{title}</title></head><body>"
        f"<div id=top><h1>{title}</h1></div><table>{rows}</table>"
        f"<div class=pager><a href='/index.html'>home</a></div></body></html>"
    )
