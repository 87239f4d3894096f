"""Simple Tree Matching (Yang 1991) on flat preorder trees, and DOM trees in that layout.

STM is the top-down restricted tree mapping of seed 003: two nodes can only be mapped when
their parents are. It is too fragile for near-duplicate confirmation (a change near the root
unmaps a whole subtree) but cheap and good at telling pages of one template apart from others,
which is what clustering and extraction need.

A tree is any object with ``labels`` and ``sizes`` in preorder (a :class:`FlatTree`, a
:class:`visdup.structure.term.Term`). The work is done by the compiled kernel
``visdup._native._stm`` with the GIL released; ``VISDUP_PURE_PYTHON=1`` or a missing compiler
selects the Python fallback.
Both walk the trees with explicit stacks: pages can nest thousands of levels deep.
"""

from __future__ import annotations

import logging
import pickle
import re
import zlib
from array import array
from collections.abc import Sequence
from itertools import accumulate
from typing import Any, Protocol

from visdup._native import kernel
from visdup.page.dom import subtree_sizes

logger = logging.getLogger(__name__)

_kernel = kernel("_stm")

#: DOM trees are cut to this many nodes (a preorder prefix) before matching, to bound time and
#: memory. Not the TED cap of ``visdup.structure.distance`` (5000 term nodes, quadratic memory):
#: STM keeps one row per pair of sibling lists, so DOM trees, larger than terms, fit.
DEFAULT_MAX_NODES = 6000
#: Label given to text leaves by :func:`dom_tree`.
TEXT = "#text"

#: Elements that never render: they carry no structure a reader sees.
_SKIP_TAGS = frozenset(
    {"script", "style", "noscript", "template", "head", "link", "meta", "base", "iframe"}
)
_SKIP_SET = set(_SKIP_TAGS)  # the compiled walk takes a plain set
_SPACE = re.compile(r"\s+")


class Tree(Protocol):
    """Read-only members: a tuple-holding tree (FlatTree, Term, Layout) satisfies it."""

    @property
    def labels(self) -> Sequence[Any]: ...

    @property
    def sizes(self) -> Sequence[int]: ...


def use_compiled() -> bool:
    """Whether the compiled kernel serves calls (checked per call so tests can flip it)."""
    return _kernel is not None


_CODES: dict[Any, int] = {}


def _code(label: Any) -> int:
    code = _CODES.get(label)
    if code is None:
        code = _CODES.setdefault(label, len(_CODES) + 1)
    return code


def text_code(text: str) -> int:
    """A nonzero int32 standing for a text, for ``details`` arrays (stable within a process)."""
    return (hash(text) & 0x7FFFFFFF) or 1


class FlatTree:
    """A DOM-like tree flat in preorder, with what templates need to name and read fields.

    ``texts[i]`` is the whitespace-normalised text of a text leaf, None for elements;
    ``hints[i]`` is ``tag#id.class`` of an element ('' for text leaves).
    """

    __slots__ = ("_arrays", "hints", "labels", "sizes", "texts", "truncated")

    def __init__(
        self,
        labels: Sequence[str],
        sizes: Sequence[int],
        texts: Sequence[str | None] | None = None,
        hints: Sequence[str] | None = None,
        *,
        truncated: bool = False,
    ):
        self.labels = tuple(labels)
        self.sizes = tuple(sizes)
        n = len(self.labels)
        if len(self.sizes) != n:
            raise ValueError("labels and sizes differ in length")
        if n and self.sizes[0] != n:
            raise ValueError("the root's subtree size must be the node count")
        self.texts = tuple(texts) if texts is not None else (None,) * n
        self.hints = tuple(hints) if hints is not None else ("",) * n
        if len(self.texts) != n or len(self.hints) != n:
            raise ValueError("texts and hints need one entry per node")
        self.truncated = truncated
        self._arrays: tuple[array, array] | None = None

    @property
    def nodes(self) -> int:
        return len(self.labels)

    def children(self, i: int = 0) -> list[int]:
        out = []
        j, end = i + 1, i + self.sizes[i]
        while j < end:
            out.append(j)
            j += self.sizes[j]
        return out

    def parents(self) -> list[int]:
        """Parent index of each node (-1 for the root).

        Each node hands its index to its children, found by jumping over their subtrees: one
        step per node, where keeping a stack of the open nodes costs three times as long
        (template builds and extraction ask it of every tree they read). Sizes no tree here
        has (below 1, past the end) move on by one node or stop at the end.
        """
        sizes = self.sizes
        n = len(sizes)
        parent = [-1] * n
        for i, size in enumerate(sizes):
            if size > 1:
                j, end = i + 1, min(i + size, n)
                while j < end:
                    parent[j] = i
                    step = sizes[j]
                    j += step if step > 0 else 1
        return parent

    def text_details(self) -> array:
        """Per node the code of its text (0 for elements): makes texts part of matching."""
        return array("i", (text_code(t) if t is not None else 0 for t in self.texts))

    def to_dict(self) -> dict[str, Any]:
        return {
            "labels": list(self.labels),
            "sizes": list(self.sizes),
            "texts": list(self.texts),
            "hints": list(self.hints),
            "truncated": self.truncated,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FlatTree:
        return cls(
            data["labels"],
            data["sizes"],
            data.get("texts"),
            data.get("hints"),
            truncated=bool(data.get("truncated", False)),
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FlatTree):
            return NotImplemented
        return (self.labels, self.sizes, self.texts) == (other.labels, other.sizes, other.texts)

    def __hash__(self) -> int:
        return hash((self.labels, self.sizes))

    def __repr__(self) -> str:
        return f"FlatTree(nodes={len(self.labels)})"


class PackedTree:
    """A :class:`FlatTree` kept as bytes until a template build or an extraction reads it.

    A page's tree is about 150 KiB of Python objects, 36 KiB pickled and 9 KiB compressed.
    The crawl keeps up to VISDUP_TEMPLATE_MAX_PAGES trees per cluster for its template (and
    drift keeps samples too), and with analysis in worker processes the tree crosses to the
    labelling on every page, which keeps few of them: a worker sends it pickled alone
    (``compress=False``), and only a tree that stays is compressed (:meth:`compact`), so no
    page pays for compressing a tree nothing keeps, and no process builds the objects of a
    tree it only passes on or keeps.
    """

    __slots__ = ("compressed", "data", "nodes")

    def __init__(self, data: bytes, nodes: int, compressed: bool = True):
        self.data = data
        self.nodes = nodes
        self.compressed = compressed

    @classmethod
    def of(cls, tree: FlatTree, *, compress: bool = True) -> PackedTree:
        fields = (tree.labels, tree.sizes, tree.texts, tree.hints, tree.truncated)
        data = pickle.dumps(fields, protocol=5)
        return cls(zlib.compress(data, 1) if compress else data, tree.nodes, compress)

    def compact(self) -> PackedTree:
        """This tree compressed, to be kept (the same object when it already is)."""
        if self.compressed:
            return self
        return PackedTree(zlib.compress(self.data, 1), self.nodes)

    def unpack(self) -> FlatTree:
        data = zlib.decompress(self.data) if self.compressed else self.data
        labels, sizes, texts, hints, truncated = pickle.loads(data)
        return FlatTree(labels, sizes, texts, hints, truncated=truncated)

    def __reduce__(self) -> tuple[Any, ...]:
        return PackedTree, (self.data, self.nodes, self.compressed)

    def __repr__(self) -> str:
        return f"PackedTree(nodes={self.nodes}, bytes={len(self.data)})"


def unpacked(tree: FlatTree | PackedTree | None) -> FlatTree | None:
    """The tree itself, unpacked when it is kept packed."""
    return tree.unpack() if isinstance(tree, PackedTree) else tree


def packed(tree: FlatTree | PackedTree) -> PackedTree:
    """The tree packed and compressed, to be kept (the same object when it already is)."""
    return PackedTree.of(tree) if isinstance(tree, FlatTree) else tree.compact()


def truncate_sizes(sizes: Sequence[int], n: int) -> list[int]:
    """Sizes of the first ``n`` preorder nodes as a tree of their own (a prefix is a tree)."""
    return [min(s, n - i) for i, s in enumerate(sizes[:n])]


def _arrays(tree: Tree, max_nodes: int) -> tuple[array, array]:
    cached = tree._arrays if isinstance(tree, FlatTree) else None
    if cached is not None and len(cached[0]) <= max_nodes:
        return cached
    labels, sizes = tree.labels, tree.sizes
    if len(labels) > max_nodes:
        labels = labels[:max_nodes]
        sizes = truncate_sizes(sizes, max_nodes)
    out = (array("i", [_code(x) for x in labels]), array("i", sizes))
    if isinstance(tree, FlatTree) and len(tree.labels) <= max_nodes:
        tree._arrays = out
    return out


def _details(details: Sequence[int] | None, n: int) -> array | None:
    if details is None:
        return None
    d = details if isinstance(details, array) and details.typecode == "i" else array("i", details)
    return d[:n] if len(d) > n else d


def _check(labels: array, sizes: array) -> None:
    """Reject size arrays that are not a preorder tree (the kernel checks the same)."""
    n = len(labels)
    if len(sizes) != n:
        raise ValueError("labels, sizes and details must have one entry per node")
    if n == 0:
        return
    if sizes[0] != n:
        raise ValueError("sizes do not describe a preorder tree")
    ends: list[int] = []
    for i, s in enumerate(sizes):
        while ends and ends[-1] <= i:
            ends.pop()
        if s < 1 or (ends and i + s > ends[-1]) or i + s > n:
            raise ValueError("sizes do not describe a preorder tree")
        ends.append(i + s)


def _py_stm(
    al: array,
    asz: array,
    ad: array | None,
    bl: array,
    bsz: array,
    bd: array | None,
    mapping: bool,
) -> Any:
    """The kernel's algorithm in Python: one frame per matched pair, children scored first."""
    _check(al, asz)
    _check(bl, bsz)
    if len(ad or ()) not in (0, len(al)) or len(bd or ()) not in (0, len(bl)):
        raise ValueError("labels, sizes and details must have one entry per node")

    def kids(sizes: array, i: int) -> list[int]:
        out = []
        j, end = i + 1, i + sizes[i]
        while j < end:
            out.append(j)
            j += sizes[j]
        return out

    def match(i: int, j: int) -> bool:
        if al[i] != bl[j]:
            return False
        return not (ad is not None and bd is not None and ad[i] and bd[j] and ad[i] != bd[j])

    if not al or not bl or not match(0, 0):
        return (0, []) if mapping else 0
    # frame: [i, j, kids_i, kids_j, W, R, p, q, parent_slot]
    stack: list[list[Any]] = []

    def push(i: int, j: int, slot: int) -> None:
        ki, kj = kids(asz, i), kids(bsz, j)
        n = len(ki) * len(kj)
        stack.append([i, j, ki, kj, [0] * n, [None] * n if mapping else None, 0, 0, slot])

    push(0, 0, -1)
    result: Any = None
    while stack:
        f = stack[-1]
        ki, kj, w, rec = f[2], f[3], f[4], f[5]
        ni, nj = len(ki), len(kj)
        descended = False
        while nj and f[6] < ni:
            p, q = f[6], f[7]
            cell = p * nj + q
            f[7] += 1
            if f[7] == nj:
                f[7] = 0
                f[6] += 1
            ci, cj = ki[p], kj[q]
            if not match(ci, cj):
                continue
            if asz[ci] == 1 or bsz[cj] == 1:
                w[cell] = 1
                continue
            push(ci, cj, cell)
            descended = True
            break
        if descended:
            continue
        # Dynamic programme over the child sequences.
        prev = [0] * (nj + 1)
        rows = [prev] if mapping else None
        for x in range(ni):
            cur = [0] * (nj + 1)
            base = x * nj
            for y in range(1, nj + 1):
                best = cur[y - 1] if cur[y - 1] > prev[y] else prev[y]
                diag = prev[y - 1] + w[base + y - 1]
                cur[y] = diag if diag > best else best
            if rows is not None:
                rows.append(cur)
            prev = cur
        score = prev[nj] + 1
        record: Any = None
        if rows is not None:
            matched = []
            x, y = ni, nj
            while x > 0 and y > 0:
                v = rows[x][y]
                if v == rows[x][y - 1]:
                    y -= 1
                elif v == rows[x - 1][y]:
                    x -= 1
                else:
                    cell = (x - 1) * nj + (y - 1)
                    matched.append((ki[x - 1], kj[y - 1], rec[cell]))
                    x -= 1
                    y -= 1
            record = matched
        stack.pop()
        slot = f[8]
        if stack:
            parent = stack[-1]
            parent[4][slot] = score
            if mapping:
                parent[5][slot] = record
        else:
            result = (score, record)
    score, record = result
    if not mapping:
        return score
    pairs = [(0, 0)]
    todo = [record]
    while todo:
        for ci, cj, sub in todo.pop():
            pairs.append((ci, cj))
            if sub:
                todo.append(sub)
    return score, pairs


def _run(
    a: Tree,
    b: Tree,
    details_a: Sequence[int] | None,
    details_b: Sequence[int] | None,
    mapping: bool,
    max_nodes: int,
) -> Any:
    al, asz = _arrays(a, max_nodes)
    bl, bsz = _arrays(b, max_nodes)
    ad = _details(details_a, len(al))
    bd = _details(details_b, len(bl))
    if _kernel is not None:
        return _kernel.stm(al, asz, ad, bl, bsz, bd, mapping)
    return _py_stm(al, asz, ad, bl, bsz, bd, mapping)


def stm(
    a: Tree,
    b: Tree,
    *,
    details_a: Sequence[int] | None = None,
    details_b: Sequence[int] | None = None,
    max_nodes: int = DEFAULT_MAX_NODES,
) -> int:
    """Number of node pairs in the maximum top-down mapping of ``a`` onto ``b``.

    ``details`` (one int per node, 0 = any) narrow matching: nodes with equal labels match only
    when their nonzero details agree.
    """
    return int(_run(a, b, details_a, details_b, False, max_nodes))


def stm_mapping(
    a: Tree,
    b: Tree,
    *,
    details_a: Sequence[int] | None = None,
    details_b: Sequence[int] | None = None,
    max_nodes: int = DEFAULT_MAX_NODES,
) -> list[tuple[int, int]]:
    """The mapped node pairs ``(i in a, j in b)`` behind :func:`stm`, sorted by ``i``."""
    _, pairs = _run(a, b, details_a, details_b, True, max_nodes)
    return sorted(pairs)


def tree_distance_stm(a: Tree, b: Tree, *, max_nodes: int = DEFAULT_MAX_NODES) -> float:
    """``1 - 2·STM/(n1+n2)`` in [0, 1]: seed 003's page distance (node counts after capping)."""
    n1 = min(len(a.labels), max_nodes)
    n2 = min(len(b.labels), max_nodes)
    if n1 + n2 == 0:
        return 0.0
    return 1.0 - 2.0 * stm(a, b, max_nodes=max_nodes) / (n1 + n2)


def normalize_text(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


def _hint(el: Any) -> str:
    tag = el.tag.lower()
    ident = (el.get("id") or "").strip()
    cls = ".".join((el.get("class") or "").split())
    return tag + (f"#{ident}" if ident else "") + (f".{cls}" if cls else "")


def dom_tree(
    root: Any,
    *,
    classes: bool = False,
    text: bool = True,
    denoise: bool = False,
    max_nodes: int = DEFAULT_MAX_NODES,
) -> FlatTree:
    """An lxml element as a :class:`FlatTree`: one node per rendered element, one per text run.

    Labels are tag names (``tag.class1.class2`` with ``classes``); text leaves are labelled
    ``#text`` and keep their normalised text. Comments, scripts, styles and the head are
    skipped; ``denoise`` first removes invisible nodes (it edits ``root`` in place). More than
    ``max_nodes`` nodes: the preorder prefix is kept and ``truncated`` is set.
    """
    if root is None:
        return FlatTree((), ())
    if denoise:
        try:
            from visdup.content.visibility import remove_invisible
        except ImportError:  # pragma: no cover - optional module
            pass
        else:
            remove_invisible(root)
    walked = None
    if _kernel is not None and _kernel.DOM_WALK and use_compiled():
        walked = _kernel.dom_walk(root, _SKIP_SET, TEXT, classes, text, max_nodes)
    if walked is None:
        walked = _dom_walk(root, classes=classes, text=text, max_nodes=max_nodes)
    labels, texts, hints, parent, truncated = walked
    if text:
        labels, texts, hints, parent = _split_inline_labels(labels, texts, hints, parent, max_nodes)
    # Subtree sizes from parent links: children always follow their parent in preorder.
    return FlatTree(labels, subtree_sizes(parent), texts, hints, truncated=truncated)


#: A text that opens with its own caption: "ISBN-13: 978-0316125581", "Publisher: Little,
#: Brown". The caption starts with a letter, holds at most four words and no colon; the value
#: follows after the colon and at least one space (so "10:30", "http://x" stay whole).
_INLINE_LABEL = re.compile(r"([^\W\d_][^:\uff1a]{0,39}?)\s*([:\uff1a])\s+(\S.*)", re.S)
#: Longer texts, and values longer than this or holding a sentence's end, are prose whatever
#: they open with ("Start slightly cold: after ten minutes you will be warm. A thin...").
_INLINE_MAX = 200
_VALUE_MAX = 80
_SENTENCE_END = re.compile(r"[.!?]\s+\S")
#: Heading elements and their levels.
HEADING_LEVELS = {f"h{level}": level for level in range(1, 7)}
#: Elements whose text is a name, not a row: a heading's or a link's colon is a title's
#: ("Bike lights decoded: lumens, beams and batteries"), never a caption's.
_NAMES = frozenset({"a", "button", "option", "label", "legend", "summary", *HEADING_LEVELS})


def inline_label(text: str) -> tuple[str, str] | None:
    """``(caption with its colon, value)`` of a text that opens with its caption, else None."""
    if len(text) > _INLINE_MAX:
        return None
    m = _INLINE_LABEL.fullmatch(text)
    if m is None or len(m.group(1).split()) > 4:
        return None
    value = m.group(3)
    if len(value) > _VALUE_MAX or _SENTENCE_END.search(value):
        return None
    return m.group(1) + m.group(2), value


def _split_inline_labels(
    labels: list[str],
    texts: list[str | None],
    hints: list[str],
    parent: list[int],
    max_nodes: int,
) -> tuple[list[str], list[str | None], list[str], list[int]]:
    """Each text that opens with its own caption becomes two text leaves, the caption and
    the value, as if the page had written ``<b>ISBN-13:</b> 978...``.

    Shops and references often put a row's label and value in one text: the whole text then
    differs on every page, so nothing marked it as a label, no field was named after it, and
    rows that shift (a book without an ISBN-10) were matched by position. Split, the caption
    reads the same wherever its row is, takes part in matching and names the value.
    """
    room = max_nodes - len(labels)
    splits: dict[int, tuple[str, str]] = {}  # a text's index -> (caption, value)
    # the texts with a colon, in one pass over them all: most texts have none
    colons = [i for i, t in enumerate(texts) if t and (":" in t or "\uff1a" in t)]
    for i in colons:
        if len(splits) >= room:
            break
        t = texts[i]
        assert t is not None
        if len(t) <= _INLINE_MAX and not _named(labels, parent, parent[i]):
            split = inline_label(t)
            if split is not None:
                splits[i] = split
    if not splits:
        return labels, texts, hints, parent
    # old index -> new: each caption goes in just before its text
    marks = [0] * len(labels)
    for i in splits:
        marks[i] = 1
    shift = list(accumulate(marks))
    moved = [p + shift[p] if p >= 0 else -1 for p in parent]
    texts = list(texts)
    out_labels: list[str] = []
    out_texts: list[str | None] = []
    out_hints: list[str] = []
    out_parent: list[int] = []
    at = 0
    for i, (caption, value) in sorted(splits.items()):
        out_labels += labels[at:i]
        out_texts += texts[at:i]
        out_hints += hints[at:i]
        out_parent += moved[at:i]
        out_labels.append(TEXT)
        out_texts.append(caption)
        out_hints.append("")
        out_parent.append(moved[i])
        texts[i] = value
        at = i
    out_labels += labels[at:]
    out_texts += texts[at:]
    out_hints += hints[at:]
    out_parent += moved[at:]
    return out_labels, out_texts, out_hints, out_parent


def _named(labels: Sequence[str], parent: Sequence[int], node: int) -> bool:
    """Whether element ``node``, or the element around it, is one whose text is a name."""
    for _ in range(2):
        if node < 0:
            return False
        if labels[node].partition(".")[0] in _NAMES:
            return True
        node = parent[node]
    return False


def _dom_walk(
    root: Any, *, classes: bool, text: bool, max_nodes: int
) -> tuple[list[str], list[str | None], list[str], list[int], bool]:
    """dom_tree's walk in Python: (labels, texts, hints, parent indices, truncated)."""
    labels: list[str] = []
    texts: list[str | None] = []
    hints: list[str] = []
    parent: list[int] = []
    truncated = False
    skip = _SKIP_TAGS
    # Explicit stack of elements and pending tail texts, each with its parent's index; a
    # tail is pushed under its element so that it comes out after the element's subtree.
    stack: list[tuple[Any, int]] = [(root, -1)]
    pop, push = stack.pop, stack.append
    while stack:
        el, up = pop()
        if isinstance(el, str):  # a pending tail text (never empty)
            if text and not el.isspace():
                if len(labels) >= max_nodes:
                    truncated = True
                    break
                labels.append(TEXT)
                texts.append(" ".join(el.split()))  # = normalize_text, without the regex
                hints.append("")
                parent.append(up)
            continue
        tag = el.tag
        if not isinstance(tag, str):
            continue
        tag = tag.lower()
        if tag in skip:
            continue
        if len(labels) >= max_nodes:
            truncated = True
            break
        get = el.get
        ident = (get("id") or "").strip()
        cls_attr = get("class") or ""
        label = tag
        if classes:
            cls = ".".join(sorted(cls_attr.split()))
            if cls:
                label = f"{tag}.{cls}"
        cls = ".".join(cls_attr.split())
        labels.append(label)
        texts.append(None)
        hints.append(tag + (f"#{ident}" if ident else "") + (f".{cls}" if cls else ""))
        parent.append(up)
        me = len(labels) - 1
        raw = el.text
        if text and raw and not raw.isspace():
            if len(labels) >= max_nodes:
                truncated = True
                break
            labels.append(TEXT)
            texts.append(" ".join(raw.split()))
            hints.append("")
            parent.append(me)
        for child in reversed(el):
            tail = child.tail
            if tail:
                push((tail, me))
            push((child, me))
    return labels, texts, hints, parent, truncated


def page_tree(
    html: bytes | str,
    *,
    url: str | None = None,
    classes: bool = False,
    text: bool = True,
    denoise: bool = True,
    max_nodes: int = DEFAULT_MAX_NODES,
) -> FlatTree:
    """Parse a page and convert it; unusable input (empty, binary) gives an empty tree."""
    from visdup.page.parse import parse_html

    doc = parse_html(html, url=url)
    if not doc.ok:
        logger.debug("No tree for %s: %s", url or "page", doc.problem)
        return FlatTree((), (), truncated=doc.truncated)
    tree = dom_tree(doc.root, classes=classes, text=text, denoise=denoise, max_nodes=max_nodes)
    if doc.truncated:
        tree.truncated = True
    return tree


def label_paths(tree: Tree, max_nodes: int = DEFAULT_MAX_NODES) -> dict[int, int]:
    """Counts of root-to-node label paths (hashed).

    STM maps a node only together with its parent, so mapped nodes share their whole label
    path: ``sum(min(count_a[p], count_b[p]))`` bounds STM from above. A free, exact prefilter.
    """
    labels, sizes = tree.labels, tree.sizes
    n = min(len(labels), max_nodes)
    out: dict[int, int] = {}
    stack: list[tuple[int, int]] = []  # (end, path hash)
    for i in range(n):
        while stack and stack[-1][0] <= i:
            stack.pop()
        h = hash((stack[-1][1] if stack else 0, labels[i]))
        out[h] = out.get(h, 0) + 1
        stack.append((i + sizes[i], h))
    return out


def stm_upper_bound(paths_a: dict[int, int], paths_b: dict[int, int]) -> int:
    # the shared paths by a set intersection, their smaller counts summed: all in C
    common = paths_a.keys() & paths_b.keys()
    return sum(map(min, map(paths_a.__getitem__, common), map(paths_b.__getitem__, common)))


def stm_upper_bounds(paths: dict[int, int], others: Sequence[dict[int, int]]) -> list[int]:
    """:func:`stm_upper_bound` of one histogram against each of ``others``, in one call: a
    new layout meets every signature of a cluster whose common one it does not match."""
    if _kernel is not None and (found := _kernel.path_bounds(paths, others)) is not None:
        return list(found)
    return [stm_upper_bound(paths, b) for b in others]
