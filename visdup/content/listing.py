"""Whether a page's main content is a listing of linked rows (:func:`rows_of_links`), and the
search of each row's own text in the content's text that it takes."""

from __future__ import annotations

from typing import Any

from visdup.content.titles import _text_of

#: A listing shows at least this many teasers (a product page's one linked author is none).
LISTING_MIN_TEASERS = 3
#: Rows found nowhere before the text's words are indexed: the index costs about what as
#: many reads of the whole text do.
MISSES_BEFORE_WORDS = 64
#: Characters past the last row's place a row is looked for first.
NEAR = 4096


def rows_of_links(node: Any, text: str) -> bool:
    """Whether the content is mostly rows that each link to a page and say a line of their own
    (a table of articles with a summary each, a list of products with their prices): a listing
    to compare as one, whose rows may lie whole in a longer listing's without copying it. A
    menu's items, links alone, are no such rows."""
    if not text:
        return False
    enough = 0.6 * len(text)
    lists = list(node.iter("table", "ul", "ol"))
    # a row's own text is part of its list's: lists holding too little text in all (most
    # pages' contents) cannot cover enough, and their rows need not be read
    held = 0
    for data in lists:
        held += len(_text_of(data))
        if held >= enough:
            break
    else:
        return False
    within = _Within(text)
    covered = 0
    for data in lists:
        rows = data.findall("tr") + data.findall("tbody/tr") if data.tag == "table" else list(data)
        found = 0
        share = 0
        for row in rows:
            if not isinstance(row.tag, str) or next(row.iter("a"), None) is None:
                continue
            own = " ".join(_text_of(row).split())
            for a in row.iter("a"):
                own = own.replace(" ".join(_text_of(a).split()), "", 1)
            own = own.strip()
            if own and within(own):
                found += 1
                share += len(own)
        if found >= LISTING_MIN_TEASERS:
            covered += share
            if covered >= enough:
                return True
    return False


class _Within:
    """Whether a row's own text is in the content's text, for rows met in document order.

    The content's text follows the document too, so a row's text is looked for from where
    the last one was found, then (only when it is not there) before it: the answer of ``in``,
    without reading a long page's text from its start for each of its thousands of rows. A
    row whose link was cut from mid-sentence keeps a double space, which whitespace-normalised
    text without one cannot hold.

    A row's text found nowhere costs a read of the whole text, and a long listing may hold
    thousands of them (a row whose link stood mid-sentence): a quadratic cost on the longest
    pages. Once they are :data:`MISSES_BEFORE_WORDS`, the text's words are indexed where they
    stand (:class:`_Words`), and each row of three words or more is placed from the rarest of
    its own words between two spaces; a shorter one is still looked for in the whole text.
    """

    def __init__(self, text: str):
        self.text = text
        self.at = 0
        self.spaced = "  " in text
        self.missed = 0
        self.words: _Words | None = None

    def __call__(self, own: str) -> bool:
        text = self.text
        if not self.spaced and "  " in own:
            return False
        # a little past the last row, as most rows are: there, the first place past ``at``
        at = text.find(own, self.at, self.at + NEAR + len(own))
        if at < 0:
            at = self._elsewhere(own)
            if at < 0:
                return False
        self.at = at
        return True

    def _elsewhere(self, own: str) -> int:
        """Where ``own`` is first found from ``at``, else from the start (-1: nowhere)."""
        places = self.words.places(own) if self.words is not None else None
        if places is not None:
            return next((p for p in places if p >= self.at), places[0]) if places else -1
        text = self.text
        at = text.find(own, self.at)
        if at < 0:
            at = text.find(own, 0, self.at + len(own) - 1)
        if at < 0:
            self.missed += 1
            if self.missed == MISSES_BEFORE_WORDS:
                self.words = _Words(text)
        return at


class _Words:
    """A text's words between single spaces, with where each starts. Where a text ``own``
    lies in it, each word of ``own`` with a space on both sides is such a word there too,
    so every place ``own`` lies at is among those its rarest such word gives."""

    def __init__(self, text: str):
        self.text = text
        self.starts: dict[str, list[int]] = {}
        start = 0
        for word in text.split(" "):
            self.starts.setdefault(word, []).append(start)
            start += len(word) + 1

    def places(self, own: str) -> list[int] | None:
        """Every place ``own`` starts at, in order; None for one without a word between two
        spaces (the index cannot place it)."""
        parts = own.split(" ")
        if len(parts) < 3:
            return None
        offset = skip = len(parts[0]) + 1
        rarest: list[int] | None = None
        for part in parts[1:-1]:
            where = self.starts.get(part)
            if where is None:
                return []
            if rarest is None or len(where) < len(rarest):
                offset, rarest = skip, where
            skip += len(part) + 1
        text = self.text
        candidates = (p - offset for p in rarest or () if p >= offset)
        return [p for p in candidates if text.startswith(own, p)]
