"""Verdicts and groups recomputed from what the store holds, at other thresholds, no fetching.

A crawl stores each page's irreducible term, its content print, their SimHashes and its body
hash. Replaying the labeller over them in the order the pages were stored (the first page
stored stays the original) answers "what if the threshold were 0.9?" in seconds, as
Screaming Frog re-runs its near-duplicate analysis after a crawl. The same channels decide:
exact body hash first, SimHash candidates confirmed by tree edit distance, content candidates
(SimHash and shared long sentences) confirmed by layered text prints. Stored verdicts change
only when the caller saves the result.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from visdup.config import defaults, flag
from visdup.content.textprint import ContentPrint
from visdup.report.data import PageRow, Similarities, StoreData
from visdup.storage.store import Store, to_unsigned
from visdup.structure.term import Term
from visdup.verdicts import CONTENT, DUPLICATE, EXACT, MOVED, NOVEL, SAME_TEMPLATE, STRUCTURAL

logger = logging.getLogger(__name__)

#: Columns a re-analysis rewrites when its result is saved.
LABEL_COLUMNS = (
    "verdict",
    "duplicate_of",
    "similarity",
    "kind",
    "content_duplicate_of",
    "content_similarity",
    "content_kind",
)


@dataclass
class Thresholds:
    similarity: float
    template: float
    content: float
    k: int
    candidates: int
    min_sentences: int
    max_nodes: int

    @classmethod
    def of(cls, settings: dict[str, Any], **given: float | None) -> Thresholds:
        base = {**defaults(), **settings}
        names = {
            "similarity": "VISDUP_SIMILARITY_THRESHOLD",
            "template": "VISDUP_TEMPLATE_THRESHOLD",
            "content": "VISDUP_CONTENT_THRESHOLD",
        }
        values: dict[str, Any] = {
            key: given[key] if given.get(key) is not None else base[name]
            for key, name in names.items()
        }
        return cls(
            similarity=float(values["similarity"]),
            template=min(float(values["template"]), float(values["similarity"])),
            content=float(values["content"]),
            k=int(base["VISDUP_HAMMING_K"]),
            candidates=int(base["VISDUP_CANDIDATES"]),
            min_sentences=int(base["VISDUP_CONTENT_MIN_SENTENCES"]),
            max_nodes=int(base["VISDUP_MAX_TERM_NODES"]),
        )

    def settings(self) -> dict[str, Any]:
        return {
            "VISDUP_SIMILARITY_THRESHOLD": self.similarity,
            "VISDUP_TEMPLATE_THRESHOLD": self.template,
            "VISDUP_CONTENT_THRESHOLD": self.content,
            "VISDUP_HAMMING_K": self.k,
            "VISDUP_CANDIDATES": self.candidates,
            "VISDUP_CONTENT_MIN_SENTENCES": self.min_sentences,
            "VISDUP_MAX_TERM_NODES": self.max_nodes,
        }


def reanalyse(store: Store, data: StoreData, t: Thresholds) -> tuple[StoreData, Similarities]:
    """New labels for every stored page, and the similarity of every candidate compared.

    The crawl's own channels (:func:`visdup.dedup.label.build_labeller`: candidate sources,
    bounds, measures) run over the stored fingerprints, terms and prints in the order the pages
    were stored; nothing is written.
    """
    from visdup.dedup.label import build_labeller

    settings = {**defaults(), **data.settings, **t.settings()}
    prints_stored = bool(_column(store, "content_print", [p.id for p in data.pages[:1000]]))
    settings["VISDUP_CONTENT_ENABLED"] = flag(settings.get("VISDUP_CONTENT_ENABLED", True)) and (
        prints_stored
    )
    sims = Similarities(complete=True)
    channels = build_labeller(store, settings.__getitem__, lambda _key, _n: None).channels
    _record(channels, "structure", t.similarity, sims.structure_accepted, sims.structure_rejected)
    _record(channels, "content", t.content, sims.content_accepted, sims.content_rejected)
    structure_channel, content_channel = channels["structure"], channels.get("content")
    extra = {
        r.id: r for r in store.rows("id", "body_hash", "problem", "simhash", "content_simhash")
    }
    first_of_body: dict[str, int] = {}
    structure_root: dict[int, int] = {}
    content_root: dict[int, int] = {}
    out: list[PageRow] = []
    for start in range(0, len(data.pages), 500):
        chunk = data.pages[start : start + 500]
        ids = [p.id for p in chunk]
        terms = structure_channel.cache.get_many(ids)
        prints = content_channel.cache.get_many(ids) if content_channel is not None else {}
        for page in chunk:
            out.append(
                _label(
                    page,
                    extra[page.id],
                    terms.get(page.id),
                    prints.get(page.id),
                    structure_channel,
                    content_channel,
                    first_of_body,
                    structure_root,
                    content_root,
                    t,
                )
            )
    described = (
        f"a re-analysis at similarity {t.similarity:.2f}, template {t.template:.2f}, "
        f"content {t.content:.2f} (stored crawl verdicts unchanged)"
    )
    result = StoreData(
        database_url=data.database_url,
        pages=out,
        clusters=data.clusters,
        runs=data.runs,
        source=described,
        settings={
            **data.settings,
            **t.settings(),
            "VISDUP_CONTENT_ENABLED": content_channel is not None,
        },
    )
    return result, sims


def _record(
    channels: dict[str, Any], name: str, theta: float, accepted: list[float], rejected: list[float]
) -> None:
    """Keep every similarity the channel measures, confirmed (at or above theta) or not."""
    channel = channels.get(name)
    if channel is None:
        return
    measure = channel.measure

    def recorded(a: Any, b: Any, budget: Any) -> tuple[float, str | None]:
        score, kind = measure(a, b, budget)
        (accepted if kind is not None and score >= theta else rejected).append(score)
        return score, kind

    channel.measure = recorded


def _label(
    page: PageRow,
    row: Any,
    term: Term | None,
    cp: ContentPrint | None,
    structure_channel: Any,
    content_channel: Any,
    first_of_body: dict[str, int],
    structure_root: dict[int, int],
    content_root: dict[int, int],
    t: Thresholds,
) -> PageRow:
    """One page's labels from the pages stored before it, as the labeller decides them."""
    labels: dict[str, Any] = dict.fromkeys(LABEL_COLUMNS)
    exact = None
    if row.body_hash and row.problem is None:
        exact = first_of_body.setdefault(row.body_hash, page.id)
        exact = None if exact == page.id else exact
    structure = content = None
    fp = to_unsigned(row.simhash) if row.simhash is not None else None
    if term is not None and fp is not None and structure_channel.accepts(term):
        if exact is None:
            ids, _mark = structure_channel.candidates(fp, term)
            structure = structure_channel.confirm(term, ids, structure_channel.budget())
        structure_channel.added(page.id, fp, term)
    cfp = to_unsigned(row.content_simhash) if row.content_simhash is not None else None
    if (
        content_channel is not None
        and cp is not None
        and cfp is not None
        and (content_channel.accepts(cp))
    ):
        ids, _mark = content_channel.candidates(cfp, cp)
        content = content_channel.confirm(cp, ids, content_channel.budget())
        content_channel.added(page.id, cfp, cp)
    # the labeller's vocabulary (visdup.verdicts): only a duplicate has a kind and an original
    if structure is not None:
        labels["similarity"] = round(structure.similarity, 6)
    if content is not None:
        labels["content_duplicate_of"] = _root(structure_root, content.page_id)
        labels["content_similarity"] = round(content.similarity, 6)
        labels["content_kind"] = content.kind
    if exact is not None:
        labels.update(verdict=DUPLICATE, similarity=1.0, kind=EXACT)
        labels["duplicate_of"] = _root(structure_root, exact)
    elif content is not None:
        same_layout = term is not None and structure_channel.confirm(
            term, [content.page_id], structure_channel.budget()
        )
        labels.update(verdict=DUPLICATE if same_layout else MOVED, kind=CONTENT)
        labels["duplicate_of"] = labels["content_duplicate_of"]
    elif content_channel is None and structure is not None and structure.similarity >= t.similarity:
        labels.update(verdict=DUPLICATE, kind=STRUCTURAL)
        labels["duplicate_of"] = _root(structure_root, structure.page_id)
    else:
        labels["verdict"] = SAME_TEMPLATE if structure is not None else NOVEL
    if labels["duplicate_of"] is not None:
        structure_root[page.id] = labels["duplicate_of"]
    if labels["content_duplicate_of"] is not None:
        content_root[page.id] = labels["content_duplicate_of"]
    return page.with_labels(**labels)


def _root(roots: dict[int, int], page_id: int) -> int:
    seen = {page_id}
    while page_id in roots and roots[page_id] not in seen:
        page_id = roots[page_id]
        seen.add(page_id)
    return page_id


def _column(store: Store, column: str, ids: list[int]) -> dict[int, str]:
    out: dict[int, str] = {}
    for start in range(0, len(ids), 500):
        out.update({i: v for i, v in store.values(column, ids[start : start + 500]).items() if v})
    return out


def save(store: Store, data: StoreData) -> int:
    """Store a re-analysis's labels in place of the crawl's; returns the pages changed."""
    values = {p.id: {c: getattr(p, c) for c in LABEL_COLUMNS} for p in data.pages}
    store.update_pages(values)
    return len(values)
