"""The two channels a page is labelled by: its structure (visual terms) and its main content
(layered text prints), each with its candidate sources, bounds and measure.

:func:`visdup.dedup.label.build_labeller` builds a crawl's from its settings; the final pass
(:mod:`visdup.dedup.settle`) reads the same channels, their caches and their measures.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from typing import Any

from visdup.config import Options
from visdup.dedup.channel import LOOKUP_PAGES, Channel
from visdup.dedup.prints import PrintSummary, content_bound, content_bounds, content_score
from visdup.storage.store import Store
from visdup.verdicts import STRUCTURAL

logger = logging.getLogger(__name__)

#: A structural match below VISDUP_SIMILARITY_THRESHOLD: one template, not a duplicate.
TEMPLATE = "template"


def structure_channel(
    store: Store, opts: Options, count: Callable[[str, int], None]
) -> Channel[Any]:
    """Visual terms: SimHash and shape candidates, histogram and sequence bounds, then the
    tree edit distance within each pair's and each page's work budget."""
    from visdup.index.small import SMALL_TERM_NODES
    from visdup.structure.distance import (
        OverBudget,
        Profile,
        Similarities,
        WorkBudget,
        best_similarities,
        sequence_similarities,
        similarity,
    )
    from visdup.structure.fingerprint import shape_simhash
    from visdup.structure.term import Term

    theta = opts.similarity_threshold
    template_theta = min(theta, opts.template_threshold)
    max_nodes = opts.max_term_nodes
    max_cells = opts.ted_max_cells
    page_cells = opts.ted_page_cells

    # pairs measured: a page confirmed again against one stored page (the pages stored
    # meanwhile, the original of its content), and the final pass, take them from here
    known = Similarities()

    def measure_terms(a: Term, b: Term, budget: WorkBudget | None) -> tuple[float, str | None]:
        if known.get(a, b) is None:
            count("visdup/ted_calls", 1)
        try:
            # no at_least: Channel.confirm measures only pairs whose bound reaches the floor
            sim = similarity(a, b, max_nodes=max_nodes, budget=budget, known=known)
        except OverBudget as exc:
            count("visdup/ted_skipped", 1)
            logger.debug("visdup: comparison skipped, %s", exc)
            return 0.0, None
        if sim >= theta:
            return sim, STRUCTURAL
        return sim, (TEMPLATE if sim >= template_theta else None)

    def refine_terms(a: Profile, b: Profile, at_least: float) -> float:
        count("visdup/ted_bounds", 1)
        return a.sequence_similarity(b, at_least)

    def refine_many(a: Profile, bs: list[Profile], at_least: float) -> list[float]:
        count("visdup/ted_bounds", len(bs))
        return sequence_similarities(a, bs, at_least)

    def small_term(t: Term) -> bytes | None:
        return term_key(t) if t.nodes < SMALL_TERM_NODES else None

    def load_terms(ids: list[int]) -> dict[int, Term]:
        return {i: Term.parse(t) for i, t in store.values("term", ids).items() if t}

    return Channel(
        "structure",
        store,
        fingerprint_column="simhash",
        load=load_terms,
        measure=measure_terms,
        accepts=lambda t: t.nodes <= max_nodes,
        good_enough=theta,
        floor=template_theta,
        summarise=Profile,
        bound=Profile.best_similarity,
        bounds=best_similarities,
        budget=lambda: WorkBudget(max_cells, page_cells),
        refine=refine_terms,
        refines=refine_many,
        shape=shape_simhash,
        small=small_term,
        k=opts.hamming_k,
        max_lookup=opts.index_max_candidates or None,
        candidates=opts.candidates,
        count=count,
    )


def term_key(term: Any) -> bytes:
    """A term's identity in 16 bytes: pages of one term are one candidate."""
    digest = getattr(term, "digest", None)  # a Term's own, made once
    if digest is not None:
        return bytes(digest())
    return hashlib.blake2b(str(term).encode(), digest_size=16).digest()


def content_channel(store: Store, opts: Options, count: Callable[[str, int], None]) -> Channel[Any]:
    """Layered text prints: SimHash and shared long sentences as candidates, the content
    measure itself as their bound (every candidate's score is known), the layers' kind for
    those that reach the threshold."""
    from visdup.content.textprint import ContentPrint, compare

    content_theta = opts.content_threshold
    min_sentences = opts.content_min_sentences

    def measure_content(a: ContentPrint, b: ContentPrint, _budget: Any) -> tuple[float, str | None]:
        # the setting, not the module default
        return content_score(compare(a, b, threshold=content_theta), content_theta)

    def load_prints(ids: list[int]) -> dict[int, ContentPrint]:
        return {
            i: ContentPrint.from_json(t) for i, t in store.values("content_print", ids).items() if t
        }

    return Channel(
        "content",
        store,
        fingerprint_column="content_simhash",
        load=load_prints,
        measure=measure_content,
        accepts=lambda cp: len(cp.sentences) >= min_sentences,
        keys=lambda cp: cp.sentence_set,  # the same set object as its summary's
        floor=content_theta,
        summarise=PrintSummary.of,
        bound=content_bound,
        bounds=content_bounds,
        # every candidate's score is stored, measured or not: the report's histogram and
        # its replay at other content thresholds read what measuring them all gave
        exact_bound=True,
        k=opts.hamming_k,
        max_lookup=opts.index_max_candidates or None,
        # only those that reach the floor are measured, best first
        candidates=max(opts.candidates, 2 * LOOKUP_PAGES),
        count=count,
    )
