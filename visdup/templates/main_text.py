"""Text nodes that are the article's own text, not slots of the template.

STM maps an article's paragraphs, headings and code by position, one page's third section
onto another's: such a node's value lies inside the page's main text (its record's
``main_text``) and is no field of its own. :func:`in_main_text` finds them, from how often
each node's value stands inside the main text and in one of several blocks of a kind.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from visdup.templates.flat_tree import FlatTree, hint_parts
from visdup.templates.template_model import Mapped, onto

#: An unlabelled text that lies inside the page's main text on at least this share of the
#: sample pages where it has a value, and that fewer than this share of the pages have at all,
#: is part of that text (``main_text``), not a field: the article's own paragraphs, headings
#: and code, which STM maps by position, one page's third section onto another's. A slot of
#: the template (a book's author in its details block) is on every page. Chosen on the
#: PostgreSQL manual (its reference pages' fragments: inside on 0.96-1.00 of the pages that
#: have them, present on 0.17-0.38) against SWDE booksamillion (its unlabelled fields inside
#: on 0.50-0.89, present on all pages) and the test site; Django's manual checked after.
MAIN_TEXT_SHARE = 0.9

_WORD = re.compile(r"\w+")


def words(text: str) -> str:
    """Text as its words between spaces, case-folded: a value is inside a text when its words
    stand there in a row, however either is spaced or punctuated (no words: two spaces)."""
    return " " + " ".join(_WORD.findall(text.casefold())) + " "


def in_main_text(
    sample: Sequence[Mapped],
    nodes: Sequence[int],
    main_texts: Sequence[str | None],
    headed: set[int] | frozenset[int] = frozenset(),
) -> set[int]:
    """The text nodes among ``nodes`` of the base page that are part of the page's main text,
    not slots of the template: their value lies inside the main text on
    :data:`MAIN_TEXT_SHARE` of the pages (those with a main text) where they have one, and
    either fewer pages than that have one at all, or on half of them it stands in one of
    several blocks of a kind (sections, paragraphs, list items), where which one STM maps
    shifts from page to page. Also, unless a heading in ``headed`` names it, an item of such
    blocks that fewer than that share of the pages have, wherever it stands (a release's third
    bug fix, a class's fifth member, a second breadcrumb): a list whose length varies puts one
    page's item in the column and another's elsewhere."""
    seen: Counter[int] = Counter()
    inside: Counter[int] = Counter()
    repeated: Counter[int] = Counter()
    items: Counter[int] = Counter()
    counted = 0
    for (tree, mapping), main in zip(sample, main_texts, strict=True):
        if not main:
            continue
        counted += 1
        flow = words(main)
        blocks = _Blocks(tree)
        for i in nodes:
            j = onto(mapping, i)
            if j is None or not (value := tree.texts[j]):
                continue
            said = words(value)
            if said == "  ":
                continue  # no word in it: punctuation, a symbol
            seen[i] += 1
            in_blocks = blocks.repeated(j)
            items[i] += in_blocks
            if said in flow:
                inside[i] += 1
                repeated[i] += in_blocks
    return {
        i
        for i, n in seen.items()
        if (
            inside[i] >= MAIN_TEXT_SHARE * n
            and (n < MAIN_TEXT_SHARE * counted or 2 * repeated[i] >= inside[i])
        )
        or (i not in headed and n < MAIN_TEXT_SHARE * counted and 2 * items[i] >= n)
    }


class _Blocks:
    """Whether a node of a page lies in one of several sibling blocks of a kind: the same tag
    and class names (an element with an id and no class is a kind of its own)."""

    def __init__(self, tree: FlatTree):
        self.tree = tree
        self.parents = tree.parents()
        self._known: dict[int, bool] = {}

    def _kind(self, k: int) -> tuple[str, str]:
        ident, classes = hint_parts(self.tree.hints[k])
        tag = self.tree.labels[k].split(".", 1)[0]
        if classes:
            return tag, ".".join(sorted(classes))
        return tag, "#" + ident if ident else ""

    def repeated(self, node: int) -> bool:
        path = []
        found = False
        while node > 0:
            known = self._known.get(node)
            if known is not None:
                found = known
                break
            path.append(node)
            parent = self.parents[node]
            if parent < 0:
                break
            kind = self._kind(node)
            if any(k != node and self._kind(k) == kind for k in self.tree.children(parent)):
                found = True
                break
            node = parent
        for k in path:
            self._known[k] = found
        return found
