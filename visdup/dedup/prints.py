"""A content print's layers as sets, and the content measure read from them alone: what the
content channel ranks its candidates by without rebuilding either page's sets."""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from visdup._native import kernel

if TYPE_CHECKING:
    from visdup.content.textprint import ContentMatch, ContentPrint

#: The compiled text kernel: the content bound of one summary against many.
_kernel = kernel("_text")


def _layer(
    values: tuple[int, ...], distinct: frozenset[int] | None = None
) -> tuple[frozenset[int], dict[int, int] | None]:
    """A print layer as a set, and the counts of the hashes it repeats (None: it repeats none).

    ``distinct``: the layer's set when the caller has it already (shared, not copied).
    """
    if distinct is None:
        distinct = frozenset(values)
    if len(distinct) == len(values):
        return distinct, None
    return distinct, {h: n for h, n in Counter(values).items() if n > 1}


def _shared(
    a: frozenset[int],
    a_repeats: dict[int, int] | None,
    b: frozenset[int],
    b_repeats: dict[int, int] | None,
) -> int:
    """Size of the multiset intersection of two layers (what ``textprint._common`` counts).

    A hash counts more than once only where both layers repeat it: min(ka, kb) - 1 more.
    """
    if a.isdisjoint(b):  # most candidates: stops at the first shared hash otherwise
        return 0
    n = len(a & b)
    if a_repeats and b_repeats:
        if len(b_repeats) < len(a_repeats):
            a_repeats, b_repeats = b_repeats, a_repeats
        for h, ka in a_repeats.items():
            kb = b_repeats.get(h)
            if kb is not None:
                n += min(ka, kb) - 1
    return n


@dataclass(frozen=True, eq=False)
class PrintSummary:
    """A content print's long-sentence and paragraph layers as sets, built once per page.

    The content channel keeps one per stored page (``Channel.summarise``), so ranking 256
    candidates costs 256 set intersections in C, not 256 rebuilds of both pages' sets.
    """

    document: int
    sentences: frozenset[int]
    sentence_repeats: dict[int, int] | None
    sentence_count: int
    paragraphs: frozenset[int]
    paragraph_repeats: dict[int, int] | None
    paragraph_count: int
    listing: bool = False
    #: The same for the compiled bound (:func:`content_bounds`): the document, the layers'
    #: lengths and the listing flag as four 64-bit words, then each layer's hashes sorted
    #: (b"" where a value is no 64-bit word: the bound is then taken in Python).
    packed: bytes = b""

    @classmethod
    def of(cls, cp: ContentPrint) -> PrintSummary:
        sentences, sentence_repeats = _layer(cp.sentences, cp.sentence_set)
        paragraphs, paragraph_repeats = _layer(cp.paragraphs)
        return cls(
            cp.document,
            sentences,
            sentence_repeats,
            len(cp.sentences),
            paragraphs,
            paragraph_repeats,
            len(cp.paragraphs),
            cp.listing,
            _packed(cp) if _kernel is not None else b"",
        )


def _packed(cp: ContentPrint) -> bytes:
    """:attr:`PrintSummary.packed` of a print."""
    head = (cp.document, len(cp.sentences), len(cp.paragraphs), int(cp.listing))
    try:
        return array("Q", [*head, *sorted(cp.sentences), *sorted(cp.paragraphs)]).tobytes()
    except (OverflowError, TypeError):  # a hash past 64 bits, or none
        return b""


def content_bound(a: PrintSummary, b: PrintSummary) -> float:
    """The content measure of two prints (``ContentMatch.measure`` of
    :func:`visdup.content.textprint.compare`, 1 for a mirror) from their summaries: an upper
    bound on it that is in fact equal to it, in set intersections alone.

    Let na, nb be the prints' long sentences, pa, pb their paragraphs, s the long sentences
    they share and c the paragraphs they share (multiset intersections of the hashes, as
    ``compare`` counts them).

    - Either print without long sentences: ``compare`` scores 0. Equal document
      fingerprints: a mirror, 1. Both are returned as ``compare`` decides them.
    - Sentence Dice 2s/(na + nb) is at most the containment s/min(na, nb), since
      na + nb >= 2 min(na, nb) (and float division rounds monotonically), so
      max(sentence Dice, containment) is the containment, computed here with the same
      float division as ``compare``.
    - Paragraph Dice is 2c/(pa + pb), with c <= min(pa, pb), and c <= s: a paragraph's
      fingerprint hashes its long sentences joined by a newline (``textprint.structure_tree``;
      a normalised sentence holds no newline, so the joined text gives the sentences back),
      and a print's sentence layer is the long sentences of its paragraphs, in order. So two
      paragraphs with one fingerprint (barring a 64-bit hash collision, which ``compare``
      trusts as well) hold the same one or more sentences, present in both sentence layers,
      and distinct matched paragraphs hold distinct positions there: s >= c. Hence
      paragraph Dice <= 2 min(s, pa, pb)/(pa + pb). When that ceiling is at most the
      containment, the measure is the containment; else c is counted and paragraph Dice
      computed as ``compare`` does.

    - When either print is a listing, containment does not count (``compare``): the bound
      starts from sentence Dice 2s/(na + nb) instead, by the same float division.

    So the value returned is max(paragraph Dice, sentence Dice, containment), the measure
    itself, and s = 0 (no long sentence shared, the commonest candidate) gives 0 after one
    ``isdisjoint``. The channel relies on it being an upper bound to skip candidates below
    the floor, and on the equality to store every candidate's score unmeasured
    (``Channel(exact_bound=True)``); tests/test_content_bound.py checks both against
    ``compare`` on generated print pairs.
    """
    na, nb = a.sentence_count, b.sentence_count
    if not na or not nb:
        return 0.0
    if a.document == b.document:
        return 1.0
    if a.sentences.isdisjoint(b.sentences):  # most candidates: no call beyond this one
        return 0.0
    s = _shared(a.sentences, a.sentence_repeats, b.sentences, b.sentence_repeats)
    bound = 2 * s / (na + nb) if a.listing or b.listing else s / min(na, nb)
    pa, pb = a.paragraph_count, b.paragraph_count
    if pa and pb and 2 * min(s, pa, pb) / (pa + pb) > bound:
        c = _shared(a.paragraphs, a.paragraph_repeats, b.paragraphs, b.paragraph_repeats)
        bound = max(bound, 2 * c / (pa + pb))
    return bound


def content_bounds(mine: PrintSummary, others: Sequence[PrintSummary]) -> list[float]:
    """:func:`content_bound` of ``mine`` against each of ``others``: one call into the kernel
    for a page's candidates (a merge of sorted hashes each), not a Python call each."""
    if _kernel is not None and mine.packed:
        packed = [o.packed for o in others]
        if all(packed):
            found = _kernel.content_bounds(mine.packed, packed)
            if found is not None:  # None: a summary the kernel cannot read in place
                return list(found)
    return [content_bound(mine, o) for o in others]


def content_score(m: ContentMatch, threshold: float) -> tuple[float, str | None]:
    """The content channel's score of a comparison and its kind: ``mirror`` (the same
    document), ``partial`` (the measure reaches ``threshold``), or None (no match)."""
    if m.kind == "mirror":
        return 1.0, "mirror"
    return m.measure, ("partial" if m.kind and m.measure >= threshold else None)
