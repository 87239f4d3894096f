"""Verdicts and groups recomputed from what the store holds, at other thresholds, no fetching.

"What if the threshold were 0.9?" is answered as the end of a crawl answers it: the final pass
(:mod:`visdup.dedup.settle`) runs over the stored pages at the new thresholds, reusing every
measure the crawl stored (visdup_comparisons: each pair's tree edit or text similarity,
confirmed or rejected), so groups and originals follow the crawl's rules. The similarity
histograms come from those stored comparisons; where the store has none (made before them), or
a threshold goes below the crawl's template threshold (pairs whose bound stayed under it were
never measured), the channels run again over the stored terms and prints to draw them. Stored
verdicts change only when the caller saves the result.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import Any

from visdup.config import defaults, read
from visdup.content.textprint import ContentPrint
from visdup.report.data import Comparisons, PageRow, Similarities, StoreData, similarities
from visdup.storage.schema import unsigned as to_unsigned
from visdup.storage.store import Store
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


def reanalyse(
    store: Store,
    data: StoreData,
    t: Thresholds,
    comparisons: Comparisons | None = None,
    missing: int = 0,
) -> tuple[StoreData, Similarities]:
    """New labels for every stored page, and the similarity of every candidate compared.

    From the stored comparisons when they cover every page and the thresholds (see
    :func:`replay_refused`); otherwise by running the channels again (:func:`recompute`).
    """
    why = replay_refused(data, t, comparisons, missing)
    if why is None and comparisons is not None:
        result, sims = replay(store, data, t, comparisons)
    else:
        logger.info("Re-analysing from the stored terms and prints: %s", why)
        result, sims = recompute(store, data, t)
    return settled(store, result), sims


def settled(store: Store, data: StoreData) -> StoreData:
    """The labels the end of a crawl gives (:mod:`visdup.dedup.settle`) at ``data``'s
    settings: groups, originals and copies that do not depend on the order pages were stored
    in. The replay above gives the measures; this gives the verdicts."""
    from visdup.dedup.label import build_labeller
    from visdup.dedup.settle import derive

    settings = {**defaults(), **data.settings, "VISDUP_COMPARISONS_MAX": 0}
    labeller = build_labeller(store, settings.__getitem__, lambda _key, _n: None)
    labels = derive(store, labeller)
    pages = [p.with_labels(**labels[p.id]) if p.id in labels else p for p in data.pages]
    return replace(data, pages=pages)


def replay_refused(
    data: StoreData, t: Thresholds, comparisons: Comparisons | None, missing: int
) -> str | None:
    """Why the stored comparisons cannot decide at thresholds ``t`` (None: they can)."""
    if comparisons is None:
        return "the store predates visdup_comparisons"
    if missing:
        return f"{missing} pages were stored without their comparisons"
    crawl = Thresholds.of(data.settings)
    if t.template < crawl.template:
        return (
            f"template threshold {t.template:.2f} is below the crawl's {crawl.template:.2f}, "
            "under which pairs were not measured"
        )
    return None


def replay(
    store: Store, data: StoreData, t: Thresholds, comparisons: Comparisons
) -> tuple[StoreData, Similarities]:
    """Every comparison the crawl stored, split at thresholds ``t``: the similarity histograms
    of a re-analysis that needs no measure again. Its labels are the final pass's at ``t``
    (:func:`settled`), which reuses the same stored measures."""
    settings = {**defaults(), **data.settings, **t.settings()}
    content_on = read(settings, "VISDUP_CONTENT_ENABLED") and bool(
        _column(store, "content_print", [p.id for p in data.pages[:1000]])
    )
    n = sum(len(rows) for rows in comparisons.values())
    result = _result(
        data,
        data.pages,
        t,
        content_on,
        f"a re-analysis of {n} stored comparisons at similarity {t.similarity:.2f}, "
        f"template {t.template:.2f}, content {t.content:.2f} (stored crawl verdicts unchanged)",
    )
    sims = similarities(data.pages, result.settings, comparisons)
    sims.source = "every candidate the crawl compared, at the re-analysis's thresholds"
    return result, sims


def _result(
    data: StoreData, pages: list[PageRow], t: Thresholds, content_on: bool, described: str
) -> StoreData:
    return replace(
        data,
        pages=pages,
        source=described,
        settings={**data.settings, **t.settings(), "VISDUP_CONTENT_ENABLED": content_on},
    )


def recompute(store: Store, data: StoreData, t: Thresholds) -> tuple[StoreData, Similarities]:
    """The channels run again over the stored terms and prints, for the histograms of every
    candidate they compare (the labels are then the final pass's, :func:`settled`).

    The crawl's own channels (:func:`visdup.dedup.label.build_labeller`: candidate sources,
    bounds, measures) run over the stored fingerprints, terms and prints in the order the pages
    were stored; nothing is written.
    """
    from visdup.dedup.label import build_labeller

    settings = {**defaults(), **data.settings, **t.settings(), "VISDUP_COMPARISONS_MAX": 0}
    prints_stored = bool(_column(store, "content_print", [p.id for p in data.pages[:1000]]))
    settings["VISDUP_CONTENT_ENABLED"] = read(settings, "VISDUP_CONTENT_ENABLED") and (
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
    result = _result(data, out, t, content_channel is not None, described)
    sims.source = "every candidate compared by the re-analysis"
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
