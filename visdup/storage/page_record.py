"""What the store keeps of one page, as the crawl's stages fill it in."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from visdup.storage.schema import signed
from visdup.storage.urls import canonical_url


@dataclass
class PageRecord:
    """Everything stored about one page; the pipelines fill it in stage by stage."""

    url: str
    final_url: str | None = None
    status: int | None = None
    depth: int | None = None
    referer: str | None = None
    content_type: str | None = None
    encoding: str | None = None
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
    links: list[str] = field(default_factory=list)

    def row(self) -> dict[str, Any]:
        values = {k: v for k, v in self.__dict__.items() if k != "links"}
        values["url"] = canonical_url(self.url)
        for key in ("simhash", "content_simhash"):
            if values[key] is not None:
                values[key] = signed(values[key])
        return values
