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

from visdup.config import defaults
from visdup.content.textprint import ContentPrint, compare
from visdup.dedup.label import SharedKeys
from visdup.index import MemoryIndex
from visdup.report.data import PageRow, Similarities, StoreData
from visdup.storage.store import Store, to_unsigned
from visdup.structure.distance import similarity
from visdup.structure.term import Term

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
        values = {
            "similarity": given.get("similarity") or base["VISDUP_SIMILARITY_THRESHOLD"],
            "template": given.get("template") or base["VISDUP_TEMPLATE_THRESHOLD"],
            "content": given.get("content") or base["VISDUP_CONTENT_THRESHOLD"],
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
    """New labels for every stored page, and the similarity of every candidate compared."""
    extra = {
        r.id: r for r in store.rows("id", "body_hash", "problem", "simhash", "content_simhash")
    }
    ids = [p.id for p in data.pages]
    texts = _column(store, "term", ids)
    prints = {i: ContentPrint.from_json(v) for i, v in _column(store, "content_print", ids).items()}
    content_on = any(len(cp.sentences) >= t.min_sentences for cp in prints.values())
    parsed: dict[int, Term] = {}

    def term_of(page_id: int) -> Term | None:
        term = parsed.get(page_id)
        if term is None and page_id in texts:
            term = parsed[page_id] = Term.parse(texts[page_id])
        return term

    sims = Similarities(complete=True)
    structure_index = MemoryIndex(k=t.k)
    content_index = MemoryIndex(k=t.k)
    shared = SharedKeys()
    first_of_body: dict[str, int] = {}
    structure_root: dict[int, int] = {}
    content_root: dict[int, int] = {}
    out: list[PageRow] = []
    for page in data.pages:
        row = extra[page.id]
        labels: dict[str, Any] = dict.fromkeys(LABEL_COLUMNS)
        exact = None
        if row.body_hash and row.problem is None:
            exact = first_of_body.get(row.body_hash)
            first_of_body.setdefault(row.body_hash, page.id)
        term = term_of(page.id)
        fp = to_unsigned(row.simhash) if row.simhash is not None else None
        structure: tuple[int, float] | None = None
        if term is not None and fp is not None and term.nodes <= t.max_nodes:
            for other, _fp, _d in structure_index.query(fp, k=t.k, limit=t.candidates):
                other_term = term_of(other)
                if other_term is None or other_term.nodes > t.max_nodes:
                    continue
                sim = similarity(term, other_term, at_least=t.template, max_nodes=t.max_nodes)
                (
                    sims.structure_accepted if sim >= t.similarity else sims.structure_rejected
                ).append(sim)
                if sim >= t.template and (structure is None or sim > structure[1]):
                    structure = (other, sim)
            structure_index.add(page.id, fp)
        content: tuple[int, float, str] | None = None
        cp = prints.get(page.id)
        cfp = to_unsigned(row.content_simhash) if row.content_simhash is not None else None
        if (
            content_on
            and cp is not None
            and cfp is not None
            and len(cp.sentences) >= t.min_sentences
        ):
            near = [key for key, _f, _d in content_index.query(cfp, k=t.k, limit=t.candidates)]
            near += [key for key in shared.query(cp.sentences, t.candidates) if key not in near]
            for other in near:
                m = compare(cp, prints[other], threshold=t.content)
                score = 1.0 if m.kind == "mirror" else max(m.score, m.containment)
                kind = m.kind if m.kind == "mirror" or score >= t.content else None
                (sims.content_accepted if kind else sims.content_rejected).append(score)
                if kind and (content is None or score > content[1]):
                    content = (other, score, kind)
            content_index.add(page.id, cfp)
            shared.add(page.id, cp.sentences)
        if exact is not None:
            labels.update(verdict="duplicate", duplicate_of=exact, similarity=1.0, kind="exact")
        else:
            if structure is not None:
                labels["similarity"] = round(structure[1], 6)
                if structure[1] >= t.similarity:
                    labels["duplicate_of"] = _root(structure_root, structure[0])
                    labels["kind"] = "structural"
        if content is not None:
            labels["content_duplicate_of"] = _root(content_root, content[0])
            labels["content_similarity"] = round(content[1], 6)
            labels["content_kind"] = content[2]
        if exact is None:
            labels["verdict"] = _verdict(content_on, structure, content, term, term_of, t)
        if labels["duplicate_of"] is not None:
            structure_root[page.id] = labels["duplicate_of"]
        if labels["content_duplicate_of"] is not None:
            content_root[page.id] = labels["content_duplicate_of"]
        out.append(page.with_labels(**labels))
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
        settings={**data.settings, **t.settings(), "VISDUP_CONTENT_ENABLED": content_on},
    )
    return result, sims


def _verdict(
    content_on: bool,
    structure: tuple[int, float] | None,
    content: tuple[int, float, str] | None,
    term: Term | None,
    term_of: Any,
    t: Thresholds,
) -> str:
    """The labeller's rule: content decides duplicate/moved, structure same_template/novel."""
    if not content_on:
        if structure is not None and structure[1] >= t.similarity:
            return "duplicate"
        return "same_template" if structure is not None else "novel"
    if content is not None:
        other = term_of(content[0])
        same_layout = (
            term is not None
            and other is not None
            and max(term.nodes, other.nodes) <= t.max_nodes
            and similarity(term, other, at_least=t.template, max_nodes=t.max_nodes) >= t.template
        )
        return "duplicate" if same_layout else "moved"
    return "same_template" if structure is not None else "novel"


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
