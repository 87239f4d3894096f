"""What the store keeps of one page, as the crawl's stages fill it in."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from visdup.page.fetch import Fetch
from visdup.storage.schema import signed
from visdup.storage.urls import canonical_url


@dataclass
class PageRecord(Fetch):
    """Everything stored about one page: its fetch, then what the analysis and labelling
    found (filled in stage by stage). The links go to their own table."""

    body_hash: str | None = None
    body: bytes | None = None
    problem: str | None = None
    truncated: bool = False
    replacement_ratio: float | None = None
    term: str | None = None
    term_size: int | None = None
    term_nodes: int | None = None
    simhash: int | None = None
    duplicate_of: int | None = None
    similarity: float | None = None
    kind: str | None = None
    title: str | None = None
    canonical: str | None = None
    content_print: str | None = None
    content_simhash: int | None = None
    content_duplicate_of: int | None = None
    content_similarity: float | None = None
    content_kind: str | None = None
    verdict: str | None = None
    cluster_id: int | None = None

    def row(self) -> dict[str, Any]:
        values = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "links"}
        values["url"] = canonical_url(self.url)
        for key in ("simhash", "content_simhash"):
            if values[key] is not None:
                values[key] = signed(values[key])
        return values
