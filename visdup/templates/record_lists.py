"""Values that belong to one of several records on a page, not to the page's own.

A value in one item of a list (a post in an archive, a product in a category, a book of a
carousel) comes from whichever item STM aligned on each page, so an unlabelled column there
would mix values of two records. :class:`RecordLists` tells which of a template's nodes are
the page's own: outside any list, or named by a label no other item carries.
"""

from __future__ import annotations

from collections import Counter

from visdup.templates.field_names import caption
from visdup.templates.flat_tree import FlatTree

#: Items of the same shape under one parent that make a list of records.
LIST_ITEMS = 3


class RecordLists:
    """Which lists a template's nodes lie in one item of, and the labels each list carries:
    read once per template, so that a page of thousands of rows costs each row once."""

    def __init__(self, tree: FlatTree, fixed: list[bool], parents: list[int]):
        self.tree = tree
        self.fixed = fixed
        self.parents = parents
        self._shapes: dict[tuple[str, ...], int] = {}  # a subtree's labels -> a small id
        self._shape_of: dict[int, int] = {}
        self._kinds: dict[int, Counter[int]] = {}  # parent -> its children's shapes
        self._captions: dict[int, Counter[str]] = {}  # list -> the labels inside it

    def _shape(self, i: int) -> int:
        got = self._shape_of.get(i)
        if got is None:
            labels = tuple(self.tree.labels[i : i + self.tree.sizes[i]])
            got = self._shape_of[i] = self._shapes.setdefault(labels, len(self._shapes))
        return got

    def lists_of(self, node: int) -> list[int]:
        """The lists ``node`` lies in one item of, innermost first: each the parent of an
        ancestor with at least two siblings of the very same shape (labels of the whole
        subtree); empty outside any list.

        A value there belongs to one of several records on the page (a post in an archive, a
        product in a category): which item a page's value comes from shifts from page to
        page, so an unlabelled field there would mix values of two records.
        """
        found: list[int] = []
        while node > 0:
            parent = self.parents[node]
            if parent < 0:
                break
            kinds = self._kinds.get(parent)
            if kinds is None:
                kinds = Counter(self._shape(k) for k in self.tree.children(parent))
                self._kinds[parent] = kinds
            if kinds[self._shape(node)] >= LIST_ITEMS:
                found.append(parent)
            node = parent
        return found

    def one_record(self, node: int, label: str | None) -> bool:
        """Whether a value at ``node``, named by the caption ``label`` (None: none), belongs
        to the page's own record.

        Outside a list, it does. In one item of a list (posts of an archive, books of a
        carousel, the rows of a details table) it does only when a label names it and no
        other item of any list around it carries the same label: "ISBN-13" once in a table of
        rows says which row is the ISBN, "Club Price:" on every book of a carousel says which
        row but not which book, and such a column would mix values of two records.
        """
        lists = self.lists_of(node)
        if not lists:
            return True
        if label is None:
            return False
        for container in lists:
            captions = self._captions.get(container)
            if captions is None:
                texts, fixed = self.tree.texts, self.fixed
                captions = Counter(
                    caption(t)
                    for k in range(container, container + self.tree.sizes[container])
                    if (t := texts[k]) is not None and fixed[k]
                )
                self._captions[container] = captions
            if captions[label] > 1:
                return False
        return True
