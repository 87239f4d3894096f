"""A cluster's template: its medoid page generalised against the members (seed 003 §2.4).

Two STM passes. The first maps the medoid onto every member by structure alone and finds the
*fixed* texts (labels such as "ISBN-13" that read the same wherever they are mapped). The
second pass makes those fixed texts part of matching, so a row labelled "Publisher" can only
map to a row labelled "Publisher": structure alone would happily align the third row of one
page with the third row of another when a row is missing. The second pass decides:

- required nodes: mapped in (nearly) every member;
- optional nodes: the rest;
- fields: text leaves that are not fixed (their text varies) and are present often enough,
  but for the article's own text (it is the record's ``main_text``, :func:`_in_main_text`)
  and one item of a list of other records (:class:`_Lists`).

Fields are named after what a reader would call them: a label just before the value
("Author:", ``<th>Price</th>``, ``<strong>ISBN-13</strong>``, a fixed heading), else the
nearest class or id on the way up that the template's pages share (:func:`_stable_names`),
else the node's position path. The field that reads as the page's ``<title>`` is ``title``
(:func:`_own_title`), else the page's main heading, the highest one, when nothing up to it
names it. Names are unique within a template and depend only on it.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from visdup import config
from visdup.templates.stm import (
    DEFAULT_MAX_NODES,
    HEADING_LEVELS,
    FlatTree,
    PackedTree,
    stm_mapping,
    text_code,
    unpacked,
)

logger = logging.getLogger(__name__)

#: Members a template is generalised against at most (spread evenly over the cluster).
DEFAULT_MAX_PAGES = config.VISDUP_TEMPLATE_MAX_PAGES
#: Share of pages a node must be mapped in to be required.
DEFAULT_REQUIRED_SHARE = 1.0
#: Share of pages a varying text must be present in to become a field.
DEFAULT_FIELD_SUPPORT = 0.2
#: Columns every record has (:func:`visdup.templates.extract.extract_record`, the file key):
#: no field may take these names, or a field labelled "Fits:" would overwrite the verdict.
RECORD_COLUMNS = ("url", "path", "cluster", "fits", "main_text")
#: Names a field never takes: the record's own columns and the key of a page.
RESERVED_NAMES = frozenset((*RECORD_COLUMNS, "key"))
#: A label is short: longer fixed texts are content, not captions.
MAX_LABEL_CHARS = 40

_SLUG = re.compile(r"[^0-9a-z]+")
_LEADING_SEPARATOR = re.compile(r"^[:\uff1a]\s*")
#: A heading that reads the same on every page names what follows it ("Next topic", "Related
#: posts"), as a caption does; inside the main text it is a section's, and what follows it is
#: that text (:func:`_in_main_text`).
_HEADING_LABELS = frozenset({"h2", "h3", "h4", "h5", "h6"})
_LABEL_TAGS = frozenset({"th", "dt", "label", "strong", "b", "em", "span", "td", "legend"})
_LABEL_TAGS |= _HEADING_LABELS


def _has_digit(text: str) -> bool:
    return any(c.isdigit() for c in text)


def slug(text: str) -> str:
    out = _SLUG.sub("_", text.lower()).strip("_")
    return out[:48].strip("_")


def clean_value(text: str | None) -> str | None:
    """Drop the separator a label leaves in front of a value (``: 9780316125581``)."""
    if text is None:
        return None
    return _LEADING_SEPARATOR.sub("", text).strip()


@dataclass(frozen=True)
class Anchor:
    """Where a labelled field's value stands from its label: the label's text node in the
    template (``label``), up ``up`` levels to the label's element, then its next sibling and
    down ``path`` (child positions) to the value.

    STM aligns rows by how many nodes they share, and a row with another label shares all but
    its label's text: a book without an ISBN-10 row had its ISBN-13 read where the template's
    ISBN-10 row stood. A page's value is read from its own label when the template's label
    did not map onto the same text (:func:`visdup.templates.extract.match_template`).
    """

    label: int
    up: int
    path: tuple[int, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"label": self.label, "up": self.up, "path": list(self.path)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Anchor:
        return cls(int(data["label"]), int(data["up"]), tuple(int(i) for i in data["path"]))


@dataclass
class Field:
    name: str
    node: int
    anchor: Anchor | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "node": self.node}
        if self.anchor is not None:
            out["anchor"] = self.anchor.to_dict()
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Field:
        anchor = data.get("anchor")
        return cls(data["name"], int(data["node"]), Anchor.from_dict(anchor) if anchor else None)


@dataclass
class Template:
    """A generalised page: ``tree`` (the medoid), per-node roles and the named fields."""

    tree: FlatTree
    required: list[bool]
    fixed: list[bool]
    fields: list[Field]
    pages: int
    cluster: int | str | None = None
    representative: str | None = None

    @property
    def field_names(self) -> list[str]:
        return [f.name for f in self.fields]

    def details(self) -> list[int]:
        """Match codes: fixed texts must be met by the same text, everything else by structure."""
        return [
            text_code(t) if fix and t is not None else 0
            for t, fix in zip(self.tree.texts, self.fixed, strict=True)
        ]

    def roles(self) -> list[str]:
        field_nodes = {f.node for f in self.fields}
        return [
            "field" if i in field_nodes else ("required" if req else "optional")
            for i, req in enumerate(self.required)
        ]

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": 1,
            "cluster": self.cluster,
            "representative": self.representative,
            "pages": self.pages,
            "tree": self.tree.to_dict(),
            "required": [i for i, r in enumerate(self.required) if r],
            "fixed": [i for i, f in enumerate(self.fixed) if f],
            "fields": [f.to_dict() for f in self.fields],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Template:
        if data.get("version") != 1:
            raise ValueError(f"unknown template version {data.get('version')!r}")
        tree = FlatTree.from_dict(data["tree"])
        n = tree.nodes
        required = [False] * n
        for i in data["required"]:
            required[i] = True
        fixed = [False] * n
        for i in data["fixed"]:
            fixed[i] = True
        return cls(
            tree=tree,
            required=required,
            fixed=fixed,
            fields=[Field.from_dict(f) for f in data["fields"]],
            pages=int(data["pages"]),
            cluster=data.get("cluster"),
            representative=data.get("representative"),
        )


def _spread(count: int, limit: int) -> list[int]:
    if count <= limit:
        return list(range(count))
    return sorted({round(k * (count - 1) / (limit - 1)) for k in range(limit)})


def build_template(
    sample: Sequence[FlatTree | PackedTree],
    *,
    medoid: int | None = None,
    cluster: int | str | None = None,
    representative: str | None = None,
    keys: Sequence[str] | None = None,
    max_pages: int = DEFAULT_MAX_PAGES,
    required_share: float = DEFAULT_REQUIRED_SHARE,
    field_support: float = DEFAULT_FIELD_SUPPORT,
    max_nodes: int = DEFAULT_MAX_NODES,
    main_texts: Sequence[str | None] | None = None,
    titles: Sequence[str | None] | None = None,
) -> Template:
    """Generalise a cluster's pages into a template (``medoid``: index of the initial template).

    Pages may come packed (the crawl keeps its samples so): they are unpacked here, in the
    process that builds. ``main_texts``: each page's main content as text (its record's
    ``main_text``); an unlabelled text that is part of it on nearly every page is no field of
    its own (:func:`_in_main_text`). ``titles``: each page's own title (``<title>``); a field
    that reads the same on most pages is the template's ``title`` (:func:`_own_title`).
    ``keys``: each page's URL or name; without ``representative``, the template's is the
    medoid's, found here when ``medoid`` is not given.
    """
    if not sample:
        raise ValueError("a template needs at least one page")
    trees = [unpacked(t) or FlatTree((), ()) for t in sample]
    picked = _spread(len(trees), max_pages)
    if medoid is None:
        from visdup.templates.cluster import medoid as find_medoid

        medoid = picked[find_medoid([trees[i] for i in picked], max_nodes)]
    if representative is None and keys is not None:
        representative = keys[medoid]
    base = trees[medoid]
    if base.nodes > max_nodes:
        base = FlatTree(
            base.labels[:max_nodes],
            [min(s, max_nodes - i) for i, s in enumerate(base.sizes[:max_nodes])],
            base.texts[:max_nodes],
            base.hints[:max_nodes],
            truncated=True,
        )
    others = [trees[i] for i in picked if i != medoid]
    n = base.nodes
    texts = base.texts

    their_details = [other.text_details() for other in others]
    # Pass 1: structure only. A missing row shifts its neighbours onto the wrong labels, so a
    # text is a candidate label when it reads the same in most pages it is mapped in.
    fixed, _ = _fixed_texts(base, others, None, None, max_nodes, majority=True)
    # Pass 2: candidates take part in matching; a label must now read the same everywhere.
    candidates = _details(texts, fixed)
    fixed, mappings = _fixed_texts(
        base, others, candidates, their_details, max_nodes, majority=False
    )
    # Pass 3: the final mapping decides required nodes and fields. When pass 2 kept every
    # candidate, the matching it ran is that mapping already (same trees, same details).
    details = _details(texts, fixed)
    if details != candidates:
        mappings = [
            stm_mapping(base, other, details_a=details, details_b=d, max_nodes=max_nodes)
            for other, d in zip(others, their_details, strict=True)
        ]
    mapped = [1] * n  # the medoid maps onto itself
    varies = [False] * n
    for other, pairs in zip(others, mappings, strict=True):
        for i, j in pairs:
            mapped[i] += 1
            if texts[i] is not None and other.texts[j] != texts[i]:
                varies[i] = True
    pages = len(others) + 1
    need = max(1, int(required_share * pages + 1e-9))
    required = [m >= need for m in mapped]
    if others:
        field_nodes = [
            i
            for i, t in enumerate(texts)
            if t is not None
            and not fixed[i]
            and (varies[i] or mapped[i] < pages)
            and mapped[i] >= field_support * pages
        ]
    else:
        # One page shows no variation: every text may be a value.
        field_nodes = [i for i, t in enumerate(texts) if t is not None]
    # A field is a value: the page fits without it.
    for i in field_nodes:
        required[i] = False
    labelled: dict[int, tuple[str, Anchor]] = {}
    parents = base.parents()
    # each page with where the base's nodes map onto it (None: the base itself)
    onto: list[Mapped] = [
        (base, None),
        *((o, dict(pairs)) for o, pairs in zip(others, mappings, strict=True)),
    ]
    order = [medoid, *(i for i in picked if i != medoid)]
    stable = _stable_names(onto[1:]) if others else None
    own_title = (
        _own_title(onto, field_nodes, [titles[i] for i in order]) if titles is not None else None
    )
    _field_names(base, fixed, field_nodes, labelled, parents, stable)  # the captions
    lists = _Lists(base, fixed, parents)
    field_nodes = [
        i for i in field_nodes if lists.one_record(i, labelled[i][0] if i in labelled else None)
    ]
    if main_texts is not None and others:
        title = _title_field(base, field_nodes, parents)
        captioned = {
            i for i, (_c, anchor) in labelled.items() if not _by_heading(base, anchor, parents)
        }
        flow = _in_main_text(
            onto,
            [i for i in field_nodes if i not in captioned],
            [main_texts[i] for i in order],
            headed=set(labelled) - captioned,
        )
        field_nodes = [
            i
            for i in field_nodes
            if i in captioned
            or (title is not None and i == title[0])
            or i == own_title
            or i not in flow
        ]
    # Named once the fields are known: a dropped one leaves no gap in the numbering.
    labelled = {}
    names = _field_names(base, fixed, field_nodes, labelled, parents, stable, own_title)
    fields = [
        Field(name, i, labelled[i][1] if i in labelled else None)
        for name, i in zip(names, field_nodes, strict=True)
    ]
    logger.debug(
        "Template over %d pages: %d nodes, %d required, %d fields",
        pages,
        n,
        sum(required),
        len(fields),
    )
    return Template(
        tree=base,
        required=required,
        fixed=fixed,
        fields=fields,
        pages=pages,
        cluster=cluster,
        representative=representative,
    )


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


def _words(text: str) -> str:
    """Text as its words between spaces, case-folded: a value is inside a text when its words
    stand there in a row, however either is spaced or punctuated (no words: two spaces)."""
    return " " + " ".join(_WORD.findall(text.casefold())) + " "


#: A sample page and where the base page's nodes map onto it (None: it is the base).
Mapped = tuple[FlatTree, dict[int, int] | None]


def _onto(mapping: dict[int, int] | None, node: int) -> int | None:
    """The page's node that the base's ``node`` maps onto (the base: itself), or None."""
    return node if mapping is None else mapping.get(node)


def _in_main_text(
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
        flow = _words(main)
        blocks = _Blocks(tree)
        for i in nodes:
            j = _onto(mapping, i)
            if j is None or not (value := tree.texts[j]):
                continue
            words = _words(value)
            if words == "  ":
                continue  # no word in it: punctuation, a symbol
            seen[i] += 1
            in_blocks = blocks.repeated(j)
            items[i] += in_blocks
            if words in flow:
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
        ident, classes = _hint_parts(self.tree.hints[k])
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


def _details(texts: Sequence[str | None], fixed: Sequence[bool]) -> list[int]:
    return [
        text_code(t) if fix and t is not None else 0 for t, fix in zip(texts, fixed, strict=True)
    ]


def _fixed_texts(
    base: FlatTree,
    others: Sequence[FlatTree],
    details: list[int] | None,
    their_details: Sequence[Any] | None,
    max_nodes: int,
    *,
    majority: bool,
) -> tuple[list[bool], list[list[tuple[int, int]]]]:
    """Text leaves of ``base`` that read the same in the pages they are mapped in, and the
    mapping of each page (``their_details``: each page's text details, when ``details``)."""
    n = base.nodes
    texts = base.texts
    if not others:
        return [False] * n, []
    same = [0] * n
    differ = [0] * n
    mappings = []
    for k, other in enumerate(others):
        pairs = stm_mapping(
            base,
            other,
            details_a=details,
            details_b=their_details[k] if details is not None and their_details else None,
            max_nodes=max_nodes,
        )
        mappings.append(pairs)
        for i, j in pairs:
            if texts[i] is not None:
                if other.texts[j] == texts[i]:
                    same[i] += 1
                else:
                    differ[i] += 1
    if majority:
        return [t is not None and same[i] > differ[i] for i, t in enumerate(texts)], mappings
    fixed = [t is not None and same[i] > 0 and differ[i] == 0 for i, t in enumerate(texts)]
    return fixed, mappings


def _anchor(tree: FlatTree, prev: int, node: int, value: int, parents: list[int]) -> Anchor:
    """The way from label ``prev`` (a text, or an element around one text) to ``value``
    inside ``node``, its next sibling."""
    label, up = prev, 0
    if tree.texts[prev] is None:  # the element's one text: the caption (_label_of)
        label = next(k for k in range(prev, prev + tree.sizes[prev]) if tree.texts[k] is not None)
        k = label
        while k != prev:
            k = parents[k]
            up += 1
    path: list[int] = []
    k = value
    while k != node:
        p = parents[k]
        path.append(tree.children(p).index(k))
        k = p
    return Anchor(label, up, tuple(reversed(path)))


def _caption(text: str) -> str:
    return text.rstrip().rstrip(":\uff1a").strip()


def _label_of(tree: FlatTree, fixed: list[bool], node: int) -> str | None:
    """The caption of a sibling element or text, if ``node`` is preceded by one."""
    texts = tree.texts
    sizes = tree.sizes
    end = node + sizes[node]
    inner = [k for k in range(node, end) if texts[k] is not None]
    if any(not fixed[k] for k in inner) and texts[node] is None:
        return None
    t = texts[node]
    if t is not None:
        if fixed[node] and len(t) <= MAX_LABEL_CHARS and t.rstrip().endswith((":", "\uff1a")):
            return _caption(t)
        return None
    tag = tree.labels[node].split(".", 1)[0]
    if len(inner) == 1 and fixed[inner[0]] and len(texts[inner[0]] or "") <= MAX_LABEL_CHARS:
        t = texts[inner[0]] or ""
        if tag in _LABEL_TAGS or t.rstrip().endswith((":", "\uff1a")):
            return _caption(t)
    return None


#: Items of the same shape under one parent that make a list of records.
LIST_ITEMS = 3


class _Lists:
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

    def one_record(self, node: int, caption: str | None) -> bool:
        """Whether a value at ``node`` belongs to the page's own record.

        Outside a list, it does. In one item of a list (posts of an archive, books of a
        carousel, the rows of a details table) it does only when a label names it and no
        other item of any list around it carries the same label: "ISBN-13" once in a table of
        rows says which row is the ISBN, "Club Price:" on every book of a carousel says which
        row but not which book, and such a column would mix values of two records.
        """
        lists = self.lists_of(node)
        if not lists:
            return True
        if caption is None:
            return False
        for container in lists:
            captions = self._captions.get(container)
            if captions is None:
                texts, fixed = self.tree.texts, self.fixed
                captions = Counter(
                    _caption(t)
                    for k in range(container, container + self.tree.sizes[container])
                    if (t := texts[k]) is not None and fixed[k]
                )
                self._captions[container] = captions
            if captions[caption] > 1:
                return False
        return True


def _title_field(
    tree: FlatTree, field_nodes: list[int], parents: list[int]
) -> tuple[int, int] | None:
    """(field, heading element) of the page's main heading: the text of the highest heading
    element (then the first), itself or through up to two inline elements (``<h1><a>``,
    ``<h2><span>``).

    A book's name in an unnamed ``<h2>`` came out as ``module``, the class of the section
    around it: a reader calls it the title. A label, or a class or id on the way up to the
    heading (``h1.headline``), still names it (:func:`_field_names`).
    """
    best: tuple[int, int, int] | None = None
    for f in field_nodes:
        node = parents[f]
        for _ in range(3):
            if node < 0:
                break
            level = HEADING_LEVELS.get(tree.labels[node].split(".", 1)[0])
            if level is not None:
                if best is None or (level, f) < best[:2]:
                    best = (level, f, node)
                break
            node = parents[node]
    return (best[1], best[2]) if best is not None else None


def _by_heading(tree: FlatTree, anchor: Anchor, parents: list[int]) -> bool:
    """Whether a field's label is a heading (its element: ``up`` levels above the text)."""
    node = anchor.label
    for _ in range(anchor.up):
        node = parents[node]
    return tree.labels[node].split(".", 1)[0] in _HEADING_LABELS


def _own_title(
    sample: Sequence[Mapped], nodes: Sequence[int], titles: Sequence[str | None]
) -> int | None:
    """The field among ``nodes`` that reads as its page's own title (the same words) on more
    pages than any other, and on at least half of those that have a title; None if none does.

    A manual's page names itself in its navigation bar on every page (DocBook's header row)
    and in a heading only on some: the title is the one a reader finds on all of them.
    """
    named: Counter[int] = Counter()
    counted = 0
    for (tree, mapping), title in zip(sample, titles, strict=True):
        words = _words(title) if title else "  "
        if words == "  ":
            continue  # no title, or none in words
        counted += 1
        for i in nodes:
            j = _onto(mapping, i)
            value = tree.texts[j] if j is not None else None
            if value and _words(value) == words:
                named[i] += 1
    if not named:
        return None
    best = min(named, key=lambda i: (-named[i], i))
    return best if 2 * named[best] >= counted else None


def _hint_parts(hint: str) -> tuple[str, list[str]]:
    """The id ('' if none) and the class names of a ``tag#id.class`` hint."""
    ident = hint.split("#", 1)[1].split(".", 1)[0] if "#" in hint else ""
    return ident, [c for c in hint.split(".")[1:] if c]


def _hint_words(hint: str) -> list[str]:
    """The id, then the class names, of a ``tag#id.class`` hint."""
    ident, classes = _hint_parts(hint)
    return [ident, *classes] if ident else classes


def _stable_names(others: Sequence[Mapped]) -> Callable[[int, str], bool]:
    """Whether an id or class name of a base element is the template's: the element it is
    mapped onto in ``others`` carries it too on at least half of the pages it is mapped in.

    Ids made from the page itself (``sql-abort`` on the ``ABORT`` page, ``s-troubleshooting``
    on a section titled Troubleshooting, a Scaladoc entity's package) name one page's value,
    not the field.
    """
    known: dict[tuple[int, str], bool] = {}

    def stable(node: int, word: str) -> bool:
        got = known.get((node, word))
        if got is None:
            met = carried = 0
            for other, mapping in others:
                j = _onto(mapping, node)
                if j is not None:
                    met += 1
                    carried += word in _hint_words(other.hints[j])
            got = known[(node, word)] = met > 0 and 2 * carried >= met
        return got

    return stable


def _field_names(
    tree: FlatTree,
    fixed: list[bool],
    field_nodes: list[int],
    labelled: dict[int, tuple[str, Anchor]] | None = None,
    parents: list[int] | None = None,
    stable: Callable[[int, str], bool] | None = None,
    own_title: int | None = None,
) -> list[str]:
    """Names of the fields at ``field_nodes``; those named from a label text go in
    ``labelled``, with the label's caption and where the value stands from it. ``stable``:
    whether an element's id or class name is the template's (:func:`_stable_names`);
    ``own_title``: the field that reads as the page's own title (:func:`_own_title`), which is
    then the ``title`` in place of the main heading."""
    if parents is None:
        parents = tree.parents()
    kids_cache: dict[int, list[int]] = {}

    def kids(p: int) -> list[int]:
        got = kids_cache.get(p)
        if got is None:
            got = kids_cache[p] = tree.children(p)
        return got

    def previous_sibling(i: int) -> int | None:
        p = parents[i]
        if p < 0:
            return None
        siblings = kids(p)
        at = siblings.index(i)
        return siblings[at - 1] if at > 0 else None

    def position(i: int) -> str:
        parts: list[str] = []
        node = i
        while node > 0 and len(parts) < 3:
            p = parents[node]
            label = tree.labels[node].split(".", 1)[0].lstrip("#")
            same = [k for k in kids(p) if tree.labels[k] == tree.labels[node]]
            parts.append(f"{label}{same.index(node) + 1}" if len(same) > 1 else label)
            node = p
        return "_".join(reversed(parts))

    title = _title_field(tree, field_nodes, parents) if own_title is None else None
    names: list[str] = []
    for f in field_nodes:
        name = None
        by_label = False
        # Nearby label text: previous sibling of the value or of up to two enclosing elements.
        node = f
        for _ in range(3):
            prev = previous_sibling(node)
            if prev is not None:
                label = _label_of(tree, fixed, prev)
                if label:
                    name = slug(label)
                    by_label = bool(name)
                    if name and labelled is not None:
                        labelled[f] = (label, _anchor(tree, prev, node, f, parents))
                break
            node = parents[node]
            if node <= 0:
                break
        if not name:
            node = parents[f]
            for _ in range(3):
                if node < 0:
                    break
                if title is not None and f == title[0] and node == parents[title[1]]:
                    break  # above the heading: the section's names, not the title's
                hint = tree.hints[node]
                if "#" in hint or "." in hint:
                    # Words with digits are generated from the page (``s-django-1-9-3``,
                    # ``post-4182``): they name one page's value, not the field.
                    words = [
                        w
                        for w in _hint_words(hint)
                        if not _has_digit(w) and (stable is None or stable(node, w))
                    ]
                    name = slug(words[0]) if words else ""
                    if name:
                        break
                node = parents[node]
        if title is not None and f == title[0] and not by_label and (not name or "title" in name):
            name = "title"  # unnamed, or entry-title, product_title, btAsinTitle: the title
        if f == own_title and not by_label:
            name = "title"
        if not name:
            name = slug(position(f)) or "field"
        names.append(name)
    # Unique names, first come first served in document order.
    seen: dict[str, int] = {}
    out = []
    for name in names:
        if name in RESERVED_NAMES:
            name = f"{name}_field"
        count = seen.get(name, 0) + 1
        seen[name] = count
        out.append(name if count == 1 else f"{name}_{count}")
    # A suffixed name could collide with a real one; resolve by extending further.
    final: list[str] = []
    used: set[str] = set()
    for name in out:
        candidate = name
        k = 2
        while candidate in used:
            candidate = f"{name}_{k}"
            k += 1
        used.add(candidate)
        final.append(candidate)
    return final
