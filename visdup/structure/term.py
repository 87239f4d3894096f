"""The visual irreducible term of a page (Alpuente & Romero 2009; ALGORITHMS.md §1).

A page becomes an ordered tree over four visual classes (grp, row, col, text); runs of
repeated siblings are packed into one node with a repetition mark (hrz), and chains of
single children are folded (vrt). What is left, the irreducible term, describes the layout
a reader sees and ignores how many items a list happens to hold.

Terms are stored flat in preorder (labels, marks, subtree sizes): equality, hashing, printing
and the distance kernels then never recurse, which matters for trees thousands of levels deep.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import lxml.etree

from visdup._native import kernel
from visdup.errors import InputError
from visdup.page.parse import HUGE_DEPTH_LIMIT, Document, from_tree, parse_html

if TYPE_CHECKING:
    from lxml.etree import _Element

GRP, ROW, COL, TEXT = "grp", "row", "col", "text"

#: Visual class of each HTML element. ``None``: never rendered, produces nothing.
#: ``<pre>`` stays text, as in the paper: as a group it cost structural-duplicate F1 on
#: labelled pairs (warpcore 0.947 → 0.935, ``bench/bench_classes.py``); no other extension
#: changed F1 by more than 0.01 on any set (README, "The methods").
#: Elements absent from the table are inline content (class text), like the paper's "everything
#: else". Override entries with ``VISDUP_VISUAL_CLASSES`` or the ``classes`` argument.
VISUAL_CLASSES: dict[str, str | None] = {
    # groups of other elements
    **dict.fromkeys(
        (
            "html body div p table tbody thead tfoot ul ol dl menu section article main nav "
            "header footer aside form fieldset figure blockquote address details dialog hgroup "
            "search center frameset colgroup optgroup"
        ).split(),
        GRP,
    ),
    # one row of a container
    **dict.fromkeys(
        "tr li h1 h2 h3 h4 h5 h6 hr dt dd caption legend figcaption summary".split(), ROW
    ),
    # one column / cell
    "td": COL,
    "th": COL,
    # never rendered
    **dict.fromkeys(
        (
            "head script style template noscript title meta link base param source track "
            "datalist area col frame"
        ).split(),
        None,
    ),
}

#: Inline elements that are content by themselves (an image has no text but is seen).
REPLACED = frozenset(
    "img input select textarea button video audio iframe canvas svg math object embed "
    "picture meter progress".split()
)

_HIDDEN_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.IGNORECASE)
_LABEL = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_MARK = re.compile(r"\s*([0-9]{1,40})\s*")
#: Largest repetition mark, and largest weighted size (sum of marks), a term in text form may
#: have: 2**53. Sizes and distances are summed in 64-bit integers and similarities divided in
#: doubles; bounded here, neither overflows nor rounds, however many nodes a term has.
MAX_MARK = 2**53


_kernel = kernel("_term")

#: Which implementation builds terms: "c" (visdup._native._term) or "python".
KERNEL = "c" if _kernel is not None else "python"

_NAMES = (GRP, ROW, COL, TEXT)
_CODE: dict[str | None, int] = {GRP: 0, ROW: 1, COL: 2, TEXT: 3, None: -1}


def _class_codes(table: Mapping[str, str | None]) -> dict[str, int]:
    return {tag: _CODE[cls] for tag, cls in table.items()}


_DEFAULT_CODES = _class_codes(VISUAL_CLASSES)


class TermSyntaxError(InputError, ValueError):
    """Term text that does not follow the ``[r]label(child,...)`` notation."""


def _revive(
    labels: tuple[str, ...], marks: tuple[int, ...], sizes: tuple[int, ...], shape: int | None
) -> Term:
    term = Term(labels, marks, sizes)
    term._shape = shape
    return term


class Term:
    """An immutable marked term, flat in preorder.

    ``sizes[i]`` is the node count of the subtree rooted at ``i``; the children of ``i`` are
    ``i + 1``, then ``j + sizes[j]`` while below ``i + sizes[i]``.
    """

    __slots__ = ("_hash", "_shape", "labels", "marks", "sizes")

    labels: tuple[str, ...]
    marks: tuple[int, ...]
    sizes: tuple[int, ...]

    def __init__(self, labels: Sequence[str], marks: Sequence[int], sizes: Sequence[int]):
        self.labels = tuple(labels)
        self.marks = tuple(marks)
        self.sizes = tuple(sizes)
        self._hash: int | None = None
        #: Its shape SimHash, once computed (:func:`visdup.structure.fingerprint.shape_simhash`).
        self._shape: int | None = None

    def __reduce__(self) -> tuple[Any, ...]:
        # The shape SimHash travels (an analysis worker computes it, the labelling reads it);
        # the hash does not: hash() of strings is salted per process.
        return (_revive, (self.labels, self.marks, self.sizes, self._shape))

    @classmethod
    def from_arrays(cls, labels: Sequence[str], marks: Sequence[int], sizes: Sequence[int]) -> Term:
        n = len(labels)
        if not (len(marks) == n == len(sizes)):
            raise ValueError("labels, marks and sizes differ in length")
        if n and sizes[0] != n:
            raise ValueError("the root's subtree size must be the node count")
        if any(m < 1 for m in marks):
            raise ValueError("repetition marks are positive")
        return cls(labels, marks, sizes)

    @classmethod
    def parse(cls, text: str) -> Term:
        return _parse(text)

    @property
    def size(self) -> int:
        """Weighted size |t| = sum of marks: what the similarity is normalised by."""
        return sum(self.marks)

    @property
    def nodes(self) -> int:
        return len(self.labels)

    @property
    def depth(self) -> int:
        best = 0
        ends: list[int] = []
        for i, s in enumerate(self.sizes):
            while ends and ends[-1] <= i:
                ends.pop()
            ends.append(i + s)
            best = max(best, len(ends))
        return best

    def children(self, i: int = 0) -> Iterator[int]:
        j, end = i + 1, i + self.sizes[i]
        while j < end:
            yield j
            j += self.sizes[j]

    def subterm(self, i: int) -> Term:
        end = i + self.sizes[i]
        return Term(self.labels[i:end], self.marks[i:end], self.sizes[i:end])

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Term):
            return NotImplemented
        return (
            self.labels == other.labels and self.marks == other.marks and self.sizes == other.sizes
        )

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash((self.labels, self.marks, self.sizes))
        return self._hash

    def __str__(self) -> str:
        out: list[str] = []
        ends: list[int] = []
        for i, label in enumerate(self.labels):
            while ends and ends[-1] == i:
                out.append(")")
                ends.pop()
            if i and out[-1] != "(":
                out.append(",")
            mark = self.marks[i]
            out.append(f"[{mark}]{label}" if mark != 1 else label)
            if self.sizes[i] > 1:
                out.append("(")
                ends.append(i + self.sizes[i])
        out.extend(")" * len(ends))
        return "".join(out)

    def __repr__(self) -> str:
        text = str(self)
        return f"Term({text if len(text) < 200 else text[:197] + '...'!r})"


# --------------------------------------------------------------------------- text form


def _parse(text: str) -> Term:
    labels: list[str] = []
    marks: list[int] = []
    parents: list[int] = []
    open_nodes: list[int] = []
    pos, n = 0, len(text)
    expect_node = True
    while True:
        while pos < n and text[pos].isspace():
            pos += 1
        if expect_node:
            mark = 1
            if pos < n and text[pos] == "[":
                close = text.find("]", pos)
                digits = _MARK.fullmatch(text, pos + 1, close) if close > 0 else None
                if digits is None:  # ASCII digits only: "²".isdigit() is true, int("²") fails
                    raise TermSyntaxError(f"bad repetition mark at offset {pos}")
                mark = int(digits.group(1))
                if mark < 1:
                    raise TermSyntaxError(f"repetition mark below 1 at offset {pos}")
                if mark > MAX_MARK:
                    raise TermSyntaxError(
                        f"repetition mark above the maximum {MAX_MARK} at offset {pos}"
                    )
                pos = close + 1
            m = _LABEL.match(text, pos)
            if not m:
                raise TermSyntaxError(f"expected a label at offset {pos}")
            labels.append(m.group())
            marks.append(mark)
            parents.append(open_nodes[-1] if open_nodes else -1)
            if len(labels) > 1 and not open_nodes:
                raise TermSyntaxError(f"text after the root term at offset {pos}")
            pos = m.end()
            while pos < n and text[pos].isspace():
                pos += 1
            if pos < n and text[pos] == "(":
                open_nodes.append(len(labels) - 1)
                pos += 1
                while pos < n and text[pos].isspace():
                    pos += 1
                if pos < n and text[pos] == ")":  # "grp()" is a leaf
                    open_nodes.pop()
                    pos += 1
                    expect_node = False
                    continue
                continue
            expect_node = False
            continue
        if pos >= n:
            break
        ch = text[pos]
        if ch == "," and open_nodes:
            pos += 1
            expect_node = True
        elif ch == ")" and open_nodes:
            open_nodes.pop()
            pos += 1
        else:
            raise TermSyntaxError(f"unexpected {ch!r} at offset {pos}")
    if open_nodes:
        raise TermSyntaxError("unbalanced parentheses: missing ')'")
    if not labels:
        raise TermSyntaxError("empty term")
    if sum(marks) > MAX_MARK:
        raise TermSyntaxError(f"the marks sum to more than the maximum {MAX_MARK}")
    sizes = [1] * len(labels)
    for i in range(len(labels) - 1, 0, -1):
        sizes[parents[i]] += sizes[i]
    return Term(labels, marks, sizes)


# --------------------------------------------------------------------------- nested builder


class _Node:
    """Mutable node used while translating and compressing; flattened into a Term at the end."""

    __slots__ = ("kids", "label", "mark", "shape")

    def __init__(self, label: str, mark: int = 1, kids: list[_Node] | None = None):
        self.label = label
        self.mark = mark
        self.kids: list[_Node] = kids if kids is not None else []
        self.shape = -1


def _to_nodes(term: Term) -> _Node:
    nodes = [_Node(label, mark) for label, mark in zip(term.labels, term.marks, strict=True)]
    open_nodes: list[tuple[int, _Node]] = []  # (end index, node)
    for i, node in enumerate(nodes):
        while open_nodes and open_nodes[-1][0] <= i:
            open_nodes.pop()
        if open_nodes:
            open_nodes[-1][1].kids.append(node)
        open_nodes.append((i + term.sizes[i], node))
    return nodes[0]


def _from_nodes(root: _Node) -> Term:
    labels: list[str] = []
    marks: list[int] = []
    parents: list[int] = []
    stack: list[tuple[_Node, int]] = [(root, -1)]
    while stack:
        node, parent = stack.pop()
        index = len(labels)
        labels.append(node.label)
        marks.append(node.mark)
        parents.append(parent)
        for kid in reversed(node.kids):
            stack.append((kid, index))
    sizes = [1] * len(labels)
    for i in range(len(labels) - 1, 0, -1):
        sizes[parents[i]] += sizes[i]
    return Term(labels, marks, sizes)


# --------------------------------------------------------------------------- compression


def _join(a: _Node, b: _Node) -> _Node:
    """join(a, b) of Def. 4.2 with cumulative ancestor marks (the reading Ex. 4.3 confirms)."""
    result: _Node | None = None
    stack: list[tuple[_Node, _Node, int, int, int, _Node | None]] = [(a, b, 1, 1, 1, None)]
    while stack:
        x, y, k1, k2, p, parent = stack.pop()
        m = -(-(x.mark * k1 + y.mark * k2) // p)
        node = _Node(x.label, m)
        node.shape = x.shape
        if parent is None:
            result = node
        else:
            parent.kids.append(node)
        k1x, k2y, pm = k1 * x.mark, k2 * y.mark, p * m
        for cx, cy in zip(reversed(x.kids), reversed(y.kids), strict=True):
            stack.append((cx, cy, k1x, k2y, pm, node))
    assert result is not None
    return result


def _pack(kids: list[_Node]) -> list[_Node]:
    """hrz at one level: each maximal run of consecutive ≡V siblings becomes its join."""
    if len(kids) < 2:
        return kids
    packed: list[_Node] = []
    for kid in kids:
        if packed and packed[-1].shape == kid.shape:
            packed[-1] = _join(packed[-1], kid)
        else:
            packed.append(kid)
    return packed


def _safe(node: _Node) -> bool:
    """Def. 4.6: a chain link whose folding loses no repetition and keeps groups and content."""
    if node.mark != 1 or len(node.kids) != 1:
        return False
    kid = node.kids[0]
    if kid.label == TEXT:
        return False
    return not (node.label == GRP and kid.label != GRP)


def _shr(node: _Node) -> _Node:
    kid = node.kids[0]
    if kid.mark == 1 and kid.label != GRP:
        return _Node(node.label, node.mark, kid.kids)
    return kid


class _Shapes:
    """Structural hashing: equal ids ⇔ ≡V (same labels and arity all the way down)."""

    __slots__ = ("table",)

    def __init__(self) -> None:
        self.table: dict[tuple[str, tuple[int, ...]], int] = {}

    def of(self, node: _Node) -> int:
        key = (node.label, tuple(k.shape for k in node.kids))
        shape = self.table.get(key)
        if shape is None:
            shape = self.table[key] = len(self.table)
        return shape


def _hrz(root: _Node, shapes: _Shapes) -> bool:
    """Def. 4.4: pack a level, then proceed to the next one; True if anything was packed.

    Shapes are hashed bottom-up first, so each ≡V test is an integer comparison.
    """
    _assign_shapes(root, shapes)
    changed = False
    stack = [root]
    while stack:
        node = stack.pop()
        if len(node.kids) > 1:
            packed = _pack(node.kids)
            if len(packed) != len(node.kids):
                node.kids = packed
                changed = True
        stack.extend(node.kids)
    return changed


def _vrt(root: _Node) -> tuple[_Node, bool]:
    """Fold every safe chain link, parents before children."""
    changed = False
    while _safe(root):
        root = _shr(root)
        changed = True
    stack = [root]
    while stack:
        node = stack.pop()
        kids = node.kids
        for i, kid in enumerate(kids):
            if _safe(kid):
                while _safe(kid):
                    kid = _shr(kid)
                kids[i] = kid
                changed = True
            stack.append(kid)
    return root, changed


def _compress_nodes(root: _Node) -> _Node:
    """compress = hrz ∘ vrt until nothing changes, each pass linear thanks to structural hashing.

    A single bottom-up pass does not give the same term: folding a chain before its parent
    packs loses shape (grp(grp(grp,grp),grp(grp,grp)) would become [4]grp, not [2]grp([2]grp)),
    and packing children before their parents changes how ceilings round. So vrt and hrz
    alternate as whole-tree passes, each linear; real pages settle in a few rounds.
    """
    shapes = _Shapes()
    while True:
        root, folded = _vrt(root)
        packed = _hrz(root, shapes)
        if not (folded or packed):
            return root


def compress_python(term: Term) -> Term:
    """The reference implementation of :func:`compress`, in Python."""
    return _from_nodes(_compress_nodes(_to_nodes(term)))


def compress(term: Term) -> Term:
    """The irreducible term: hrz and vrt applied until nothing changes (§1.6)."""
    if _kernel is not None:
        try:
            labels = bytes(map(_CODE.__getitem__, term.labels))
            labels, marks, sizes = _kernel.compress(labels, term.marks, term.sizes)
        except (KeyError, OverflowError):  # labels outside the four classes, huge marks
            return compress_python(term)
        return Term([_NAMES[c] for c in labels], marks, sizes)
    return compress_python(term)


def join(a: Term, b: Term) -> Term:
    """join of two ≡V terms (Def. 4.2)."""
    x, y = _to_nodes(a), _to_nodes(b)
    shapes = _Shapes()
    for root in (x, y):
        _assign_shapes(root, shapes)
    if x.shape != y.shape:
        raise ValueError("join needs terms equal modulo marks (≡V)")
    return _from_nodes(_join(x, y))


def _assign_shapes(root: _Node, shapes: _Shapes) -> None:
    stack: list[tuple[_Node, bool]] = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            node.shape = shapes.of(node)
        else:
            stack.append((node, True))
            stack.extend((k, False) for k in node.kids)


def equivalent(a: Term, b: Term) -> bool:
    """t ≡V s: the same tree once marks are ignored."""
    return a.labels == b.labels and a.sizes == b.sizes


# --------------------------------------------------------------------------- translation


def _classes(overrides: Mapping[str, str | None] | None) -> Mapping[str, str | None]:
    if not overrides:
        return VISUAL_CLASSES
    merged = dict(VISUAL_CLASSES)
    for tag, cls in overrides.items():
        if cls not in (GRP, ROW, COL, TEXT, None):
            raise ValueError(f"visual class of {tag!r} must be grp, row, col, text or None")
        merged[tag.lower()] = cls
    return merged


def _hidden(el: _Element) -> bool:
    attrib = el.attrib
    if "hidden" in attrib:
        return True
    if el.tag == "input" and attrib.get("type", "").lower() == "hidden":
        return True
    style = attrib.get("style")
    return bool(style and _HIDDEN_STYLE.search(style))


class Translation:
    """Raw marked term of a tree, plus what the walk saw (depth) for truncation checks."""

    __slots__ = ("depth", "term")

    def __init__(self, term: Term, depth: int):
        self.term = term
        self.depth = depth


def translate(
    root: lxml.etree._Element, classes: Mapping[str, str | None] | None = None
) -> Translation:
    """HTML tree → marked term with every mark 1 (§1.1), one text leaf per run of inline content."""
    if _kernel is not None:
        table = _classes(classes)
        codes = _DEFAULT_CODES if table is VISUAL_CLASSES else _class_codes(table)
        labels, sizes, depth = _kernel.translate(root, codes, REPLACED)
        return Translation(Term([_NAMES[c] for c in labels], [1] * len(labels), sizes), depth)
    return translate_python(root, classes)


def translate_python(
    root: lxml.etree._Element, classes: Mapping[str, str | None] | None = None
) -> Translation:
    """The reference implementation of :func:`translate`, in Python."""
    table = _classes(classes)
    root_cls = table.get(root.tag, TEXT) if isinstance(root.tag, str) else GRP
    top = _Node(root_cls if root_cls not in (None, TEXT) else GRP)
    containers: list[_Node] = [top]
    in_run: list[bool] = [False]
    # For every open element: True if it opened a container (so its end pops one).
    opened: list[bool] = []
    depth = best = 0

    def add_text() -> None:
        if not in_run[-1]:
            containers[-1].kids.append(_Node(TEXT))
            in_run[-1] = True

    walker = lxml.etree.iterwalk(root, events=("start", "end"))
    for event, el in walker:
        if event == "start":
            depth += 1
            if depth > best:
                best = depth
            tag = el.tag
            if not isinstance(tag, str):  # comment or processing instruction
                opened.append(False)
                walker.skip_subtree()
                continue
            if el is root:
                opened.append(False)
                if el.text and el.text.strip():
                    add_text()
                continue
            tag = tag.lower()
            cls = table.get(tag, TEXT)
            if cls is None or _hidden(el):
                opened.append(False)
                walker.skip_subtree()
                continue
            if cls == TEXT:
                opened.append(False)
                if tag in REPLACED:
                    add_text()
                    walker.skip_subtree()
                elif el.text and el.text.strip():
                    add_text()
                continue
            node = _Node(cls)
            containers[-1].kids.append(node)
            in_run[-1] = False
            containers.append(node)
            in_run.append(False)
            opened.append(True)
            if el.text and el.text.strip():
                add_text()
        else:
            depth -= 1
            if opened.pop():
                containers.pop()
                in_run.pop()
                in_run[-1] = False
            if el is not root:
                tail = el.tail
                if tail and tail.strip():
                    add_text()
    return Translation(_from_nodes(top), best)


def _document(html: str | bytes | Document | lxml.etree._Element, base_url: str | None) -> Document:
    if isinstance(html, Document):
        return html
    if isinstance(html, (str, bytes)):
        return parse_html(html, url=base_url)
    if isinstance(html, lxml.etree._ElementTree):
        return from_tree(html.getroot())
    if isinstance(html, lxml.etree._Element):
        return from_tree(html)
    raise TypeError(f"page_term takes str, bytes, a Document or an lxml tree, not {type(html)}")


def document_term(
    doc: Document, classes: Mapping[str, str | None] | None = None
) -> tuple[Term, Term]:
    """(raw term, irreducible term) of a parsed page; marks the Document truncated if so seen."""
    if doc.root is None or doc.problem:
        raise InputError(doc.problem or "no document")
    tr = translate(doc.root, classes)
    if tr.depth >= HUGE_DEPTH_LIMIT - 1 and not doc.truncated:
        doc.truncated = True
        doc.notes.append("parser limit reached: deep content was dropped")
    return tr.term, compress(tr.term)


def page_term(
    html: str | bytes | Document | lxml.etree._Element,
    *,
    base_url: str | None = None,
    classes: Mapping[str, str | None] | None = None,
) -> Term:
    """The irreducible term of a page given as text, bytes, a parsed Document or an lxml tree."""
    return document_term(_document(html, base_url), classes)[1]
