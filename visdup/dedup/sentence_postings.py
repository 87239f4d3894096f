"""The final pass's index of long sentences: the pages that hold each, the sentences that
propose candidates, and which candidates' content measure may reach a floor at all.

A page's content candidates in the final pass are the pages within the SimHash radius and
the pages that share a long sentence with it, among sentences held by few enough pages (a
sentence every page holds, a footer's, proposes nothing). The content measure of each is
then bounded by ``content_bound``; most fall below the floor. :meth:`SentencePostings.reaching`
leaves those out first, from the postings alone.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from itertools import chain
from typing import Any


class SentencePostings:
    """The long sentences of a set of pages (their content prints' summaries, by slot).

    Two prints share s long sentences (a multiset intersection): their distinct shared
    sentences, each either a proposing one (held by at most ``max_postings`` pages: counted
    from the postings) or a frequent one (more pages: at most the fewer that either page
    holds), plus the repeats both hold (at most the fewer repeated sentences either holds).
    That ceiling S on s bounds every part of the measure as ``content_bound`` computes it from
    s: containment s / min(na, nb) (Dice 2s / (na + nb) when either is a listing), and
    paragraph Dice, whose shared paragraphs are at most min(s, pa, pb). A candidate whose
    ceiling is below the floor has a measure below it too; a mirror (the same document
    print) always reaches it.
    """

    def __init__(self, summaries: Sequence[Any], max_postings: int):
        self.summaries = summaries
        # how many of the pages hold each sentence, counted in C: most sentences are one
        # page's own, and get no list of their own
        held = Counter(chain.from_iterable(summary.sentences for summary in summaries))
        #: The sentences that propose candidates: shared, but by no more than max_postings
        #: pages (a sentence of one page proposes only that page).
        self.proposing = frozenset(key for key, n in held.items() if 1 < n <= max_postings)
        #: Proposing sentence -> the slots of the pages that hold it, in slot order.
        self.postings: dict[int, list[int]] = {key: [] for key in self.proposing}
        frequent = frozenset(key for key, n in held.items() if n > max_postings)
        self._frequent = []
        for slot, summary in enumerate(summaries):
            for key in summary.sentences & self.proposing:
                self.postings[key].append(slot)
            self._frequent.append(len(summary.sentences & frequent))
        self._repeats = [summary.sentence_count - len(summary.sentences) for summary in summaries]

    def proposed(self, slot: int) -> frozenset[int]:
        """The sentences of page ``slot`` that propose candidates."""
        found: frozenset[int] = self.summaries[slot].sentences & self.proposing
        return found

    def reaching(self, slot: int, later: list[int], keys: Iterable[int], floor: float) -> list[int]:
        """The candidates of ``later`` (slots of pages after ``slot``, whose proposing
        sentences are ``keys``) whose ceiling reaches ``floor``, in order."""
        if not later:
            return later
        shared = Counter(chain.from_iterable(map(self.postings.__getitem__, keys)))
        summaries, frequent, repeats = self.summaries, self._frequent, self._repeats
        a = summaries[slot]
        na, pa = a.sentence_count, a.paragraph_count
        kept = []
        for other in later:
            b = summaries[other]
            nb, pb = b.sentence_count, b.paragraph_count
            if not na or not nb:
                continue  # scored 0
            if a.document == b.document:
                kept.append(other)  # a mirror
                continue
            s = (
                shared[other]
                + min(frequent[slot], frequent[other])
                + min(repeats[slot], repeats[other])
            )
            ceiling = 2 * s / (na + nb) if a.listing or b.listing else s / min(na, nb)
            if pa and pb:
                ceiling = max(ceiling, 2 * min(s, pa, pb) / (pa + pb))
            if ceiling >= floor:
                kept.append(other)
        return kept
