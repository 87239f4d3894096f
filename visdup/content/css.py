"""The slice of the CSS cascade that decides whether an element is seen at all.

Seed 001 removes what a reader never sees; styles come from inline ``style`` attributes and
the page's own ``<style>`` rules. Only the properties that hide an element are read, and
they are resolved as a browser would: ``!important`` first, then specificity, then order.
"""

from __future__ import annotations

import functools
import logging
import re
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from typing import Any

import lxml.etree
from cssselect import GenericTranslator, SelectorError

from visdup._native import kernel
from visdup.content.selectors import TooLong, Walk, chain_of, has_siblings, parsed
from visdup.page.dom import at_paths

logger = logging.getLogger(__name__)

_kernel = kernel("_dom")
_css_kernel = kernel("_css")

#: Complex CSS selectors (with combinators) evaluated per page at most: each one scans the
#: whole tree, and a hostile stylesheet can hold millions.
MAX_SELECTOR_EVALUATIONS = 400

#: Declarations: {property: (value, important)}.
Declarations = dict[str, tuple[str, bool]]

#: The properties that can hide an element or push it out of sight.
HIDE_STYLE_PROPS = frozenset(
    {"display", "visibility", "position", "opacity", "clip", "clip-path", "left", "text-indent"}
)
#: States a page is not in when it loads (hover, focus...) and generated content.
_DYNAMIC_PSEUDO = re.compile(
    r":(hover|focus|active|visited|checked|target|focus-within|focus-visible|"
    r"before|after|first-line|first-letter|placeholder|selection|marker|backdrop|"
    r"-webkit|-moz|-ms)",
    re.IGNORECASE,
)
_BRACE = re.compile(r"[{}]")
_CSS_COMMENT = re.compile(r"/\*.*?\*/", re.DOTALL)
#: The characters of the sheets kept read, in all (:func:`_read_sheet`).
SHEET_CACHE_CHARS = 4 * 1024 * 1024
#: A complex selector is matched from the elements its rightmost compound can select (and
#: up their ancestors) when these are at most this share of the page: otherwise XPath scans
#: the whole tree, which costs less than walking up from most of its elements.
POOL_SHARE = 1 / 4
#: A selector's rightmost compound, read backwards from its end (trailing blanks stripped):
#: the characters up to the first blank or combinator. A search for the compound at the end
#: (``([^\s>+~]+)\s*$``) would try every start and read on from each.
_KEY_COMPOUND_REVERSED = re.compile(r"[^\s>+~]*")
_CLASS_TOKEN = re.compile(r"\.(-?[_a-zA-Z][\w-]*)")
_ID_TOKEN = re.compile(r"#(-?[_a-zA-Z][\w-]*)")
_TAG_TOKEN = re.compile(r"^([a-zA-Z][\w-]*)")
_SIMPLE = re.compile(r"^([a-zA-Z][\w-]*)?((?:[.#]-?[_a-zA-Z][\w-]*)*)$")
#: An offset of three digits or more to the left pushes an element off any screen.
_OFF_SCREEN = re.compile(r"-\d{3,}")


def declarations(text: str) -> Declarations:
    """Parse `prop: value [!important]; …`; broken pieces are skipped, never raised on.

    The parts whose property can hide something are found in C where it is built
    (``hiding_declarations``, :func:`_hiding_parts` its reference): a rule's body or an
    inline style holds a dozen declarations, and most name other properties."""
    out: Declarations = {}
    found = (
        _css_kernel.hiding_declarations(text) if _css_kernel is not None else _hiding_parts(text)
    )
    for prop, value in found:
        value = value.strip().lower()
        important = "!important" in value
        value = value.replace("!important", "").strip()
        out[prop] = (value, important)
    return out


def _hiding_parts(text: str) -> list[tuple[str, str]]:
    """(property, value as written) of each part of ``text`` whose property can hide an
    element, in order."""
    found = []
    for part in text.split(";"):
        if ":" not in part:
            continue
        prop, _, value = part.partition(":")
        prop = prop.strip().lower()
        if prop in HIDE_STYLE_PROPS:
            found.append((prop, value))
    return found


def style_rules(css: str) -> Iterator[tuple[str, Declarations]]:
    """Yield (selector, declarations) for the rules a screen applies on load.

    A brace scanner with an explicit stack rather than a CSS library: at-rule blocks are
    skipped except `@media screen`/`@media all` without conditions, nested rules are
    skipped, blocks left open at the end are dropped, stray closing braces ignored
    (:func:`_rule_bodies`). The compiled scan (``visdup._native._css``) gives the same
    rules, less those whose body names no property that can hide anything.
    """
    css = _CSS_COMMENT.sub(" ", css)
    found = _css_kernel.rule_bodies(css) if _css_kernel is not None else _rule_bodies(css)
    for prelude, body in found:
        decls = declarations(body)
        if decls:
            for selector in prelude.split(","):
                selector = selector.strip()
                if selector and not _DYNAMIC_PSEUDO.search(selector):
                    yield selector, decls


def _rule_bodies(css: str) -> Iterator[tuple[str, str]]:
    """(prelude, body) of each rule a screen applies, in the order they close: the scan of
    :func:`style_rules` (comments already blanked) in Python, the compiled one's reference."""
    # Frames: [kind, prelude, body start, has nested blocks]; kind "media", "rule" or "skip".
    stack: list[list[Any]] = []
    start = 0
    for brace in _BRACE.finditer(css):
        pos = brace.start()
        if brace.group() == "{":
            prelude = css[start:pos].rpartition(";")[2].strip()
            if stack and stack[-1][0] != "media":
                stack[-1][3] = True
                stack.append(["skip", "", 0, False])
            elif prelude.startswith("@"):
                media = prelude.lower()
                ok = media.startswith("@media") and media[6:].strip() in {"screen", "all"}
                stack.append(["media" if ok else "skip", "", 0, False])
            else:
                stack.append(["rule", prelude, pos + 1, False])
        elif stack:
            kind, prelude, body_start, nested = stack.pop()
            if kind == "rule" and not nested:
                yield prelude, css[body_start:pos]
        start = pos + 1


class _Sheet:
    """A sheet's rules, with what a page asks of each: whether it hides (the first pass
    matches those) and the names its selector's rightmost compound holds (for
    :meth:`_Index.may_hold`)."""

    __slots__ = ("hiding", "names", "others", "rules")

    def __init__(self, rules: tuple[tuple[str, Declarations], ...]):
        self.rules = rules
        self.names = [_key_names(selector) for selector, _ in rules]
        hides = [is_hiding(decls) or visually_hidden(decls) for _, decls in rules]
        self.hiding = [k for k, hide in enumerate(hides) if hide]
        self.others = [k for k, hide in enumerate(hides) if not hide]


def _read_sheet(css: str) -> _Sheet:
    """A sheet read once per process: the pages of a site repeat their ``<style>`` blocks (a
    news site's inline one can pass a megabyte), and reading one is a scan of it all. The
    sheets read most recently are kept, up to :data:`SHEET_CACHE_CHARS` of them in all. The
    declarations are shared between the pages: nothing writes to them."""
    with _sheets_lock:
        sheet = _sheets.get(css)
        if sheet is not None:
            _sheets.move_to_end(css)
            return sheet
    sheet = _Sheet(tuple(style_rules(css)))
    if len(css) <= SHEET_CACHE_CHARS // 4:
        global _sheet_chars
        with _sheets_lock:
            if css not in _sheets:
                _sheets[css] = sheet
                _sheet_chars += len(css)
                while _sheet_chars > SHEET_CACHE_CHARS:
                    _sheet_chars -= len(_sheets.popitem(last=False)[0])
    return sheet


#: The sheets read (text → rules), least recently used first; their characters in all.
_sheets: OrderedDict[str, _Sheet] = OrderedDict()
_sheet_chars = 0
_sheets_lock = threading.Lock()


def is_hiding(decls: Declarations) -> bool:
    """Not rendered (display, visibility) or floating over the page (position: fixed)."""
    display = decls.get("display", ("", False))[0]
    visibility = decls.get("visibility", ("", False))[0]
    position = decls.get("position", ("", False))[0]
    return display == "none" or visibility in {"hidden", "collapse"} or position == "fixed"


def visually_hidden(decls: Declarations) -> bool:
    """Screen-reader-only tricks: transparent, clipped to nothing or pushed off-screen."""
    opacity = decls.get("opacity", ("", False))[0]
    clip = decls.get("clip", ("", False))[0] + decls.get("clip-path", ("", False))[0]
    left = decls.get("left", ("", False))[0] + decls.get("text-indent", ("", False))[0]
    if opacity in {"0", "0.0", "0%"}:
        return True
    if "rect(0" in clip.replace(" ", "") or "inset(50%" in clip.replace(" ", ""):
        return True
    return bool(_OFF_SCREEN.search(left))


class Cascade:
    """The few properties that hide an element, resolved by specificity and order."""

    def __init__(self) -> None:
        self.values: dict[Any, dict[str, tuple[tuple[int, ...], str]]] = {}

    def add(self, el: Any, decls: Declarations, rank: tuple[int, ...]) -> None:
        slot = self.values.setdefault(el, {})
        for prop, (value, important) in decls.items():
            key = (1 if important else 0, *rank)
            old = slot.get(prop)
            if old is None or key >= old[0]:
                slot[prop] = (key, value)

    def resolved(self, el: Any) -> Declarations:
        return {p: (v, False) for p, (_, v) in self.values.get(el, {}).items()}


class _Index:
    """Elements by class, id and tag: a pre-filter for selectors and a fast path for simple ones."""

    def __init__(self, elements: Iterable[Any]) -> None:
        self.classes: dict[str, list[Any]] = {}
        self.ids: dict[str, list[Any]] = {}
        self.tags: dict[str, list[Any]] = {}
        tags, classes, ids = self.tags, self.classes, self.ids
        lower: dict[str, str] = {}  # a page has a few dozen tags over thousands of elements
        count = 0
        for el in elements:
            tag = el.tag
            if tag.__class__ is not str:
                continue
            count += 1
            key = lower.get(tag)
            if key is None:
                key = lower[tag] = tag.lower()
            tags.setdefault(key, []).append(el)
            get = el.get
            names = get("class")
            if names:
                for cls in names.split():
                    classes.setdefault(cls, []).append(el)
            ident = get("id")
            if ident:
                ids.setdefault(ident, []).append(el)
        #: The elements indexed.
        self.count = count
        #: The names' element numbers (an index the compiled walk read: :meth:`of_tree`).
        self.numbered: _Numbers | None = None

    @classmethod
    def of_tree(cls, root: Any) -> _Index:
        """The index of ``root.iter()``. The compiled walk reads every element's names
        without a proxy for it (an element's proxy and its attributes read through it were
        most of what a page's index cost); the elements a rule asks for are made from their
        numbers when first asked for (:class:`_Elements`). The index holds the walk's table
        of the tree for the compiled matches: it serves while the tree stays as it is."""
        found = None
        if _kernel is not None and getattr(_kernel, "DOM_WALK", False):
            found = _kernel.element_names(root)
        if found is None:
            return cls(root.iter())
        tags, classes, ids, count, parents, positions, table = found
        elements = _Elements(root, parents, positions)
        index = cls.__new__(cls)
        index.tags = _Numbered(tags, elements)
        index.classes = _Numbered(classes, elements)
        index.ids = _Numbered(ids, elements)
        index.count = count
        index.numbered = _Numbers(index.tags, index.classes, index.ids, table, elements)
        return index

    def may_hold(self, names: tuple[tuple[str, ...], tuple[str, ...], str | None] | None) -> bool:
        """False when a selector's rightmost compound (its :func:`_key_names`) names a class,
        id or tag that is not here."""
        if names is None:
            return True
        classes, ids, tag = names
        if any(c not in self.classes for c in classes):
            return False
        if any(i not in self.ids for i in ids):
            return False
        return not (tag and tag not in self.tags)

    def simple(self, selector: str) -> tuple[list[Any], tuple[int, int, int]] | None:
        """Match `tag.class#id` compounds from the index; None for anything more complex."""
        m = _SIMPLE.match(selector)
        if not m or not selector:
            return None
        tag = (m.group(1) or "").lower()
        classes = _CLASS_TOKEN.findall(m.group(2))
        ids = _ID_TOKEN.findall(m.group(2))
        if ids:
            pool = self.ids.get(ids[0], [])
        elif classes:
            pool = self.classes.get(classes[0], [])
        else:
            pool = self.tags.get(tag, [])
        found = [
            el
            for el in pool
            if (not tag or el.tag.lower() == tag)
            and all(c in (el.get("class") or "").split() for c in classes)
            and all(el.get("id") == i for i in ids)
        ]
        return found, (len(ids), len(classes), 1 if tag else 0)


class _Elements:
    """The elements of ``root.iter()`` by their numbers in it (:meth:`_Index.of_tree`).

    A page's rules ask for a handful of them on most pages, each reached from the root by its
    child positions; once they have asked for :data:`FEW` in all, every element's proxy is
    made in one pass instead.
    """

    #: Elements reached one by one before all of them are made at once.
    FEW = 64

    def __init__(self, root: Any, parents: bytes, positions: bytes):
        self.root = root
        self.parents = memoryview(parents).cast("i")
        self.positions = memoryview(positions).cast("i")
        self.made: dict[int, Any] = {}
        self.everything: list[Any] | None = None

    def __call__(self, numbers: list[int]) -> list[Any]:
        if self.everything is None and len(self.made) + len(numbers) > self.FEW:
            self.everything = list(self.root.iter())
        if self.everything is not None:
            everything = self.everything
            return [everything[n] for n in numbers]
        made = self.made
        wanted = sorted({n for n in numbers if n not in made})
        for n, el in zip(wanted, at_paths(self.root, [self._path(n) for n in wanted]), strict=True):
            made[n] = el
        return [made[n] for n in numbers]

    def _path(self, number: int) -> tuple[int, ...]:
        parents, positions = self.parents, self.positions
        steps = []
        while number > 0:
            steps.append(positions[number])
            number = parents[number]
        return tuple(reversed(steps))


class _Numbered(dict[str, list[Any]]):
    """An index's names with the numbers of their elements in ``root.iter()``
    (:meth:`_Index.of_tree`): :meth:`get` gives the elements, made when first asked for."""

    def __init__(self, numbers: dict[str, list[int]], elements: _Elements):
        super().__init__(numbers)
        self.numbers = numbers
        self._elements = elements
        self._made: set[str] = set()

    def get(self, name: str, default: Any = None) -> Any:  # type: ignore[override]
        if name not in self:
            return default
        if name not in self._made:
            self[name] = self._elements(self.numbers[name])
            self._made.add(name)
        return self[name]


class _Numbers:
    """An index by element numbers (:class:`visdup.content.selectors.Index`'s names, their
    values numbers), with the compiled walk's table of the tree and the elements' maker:
    what a selector's compiled match reads (:func:`_pooled`)."""

    def __init__(
        self, tags: _Numbered, classes: _Numbered, ids: _Numbered, table: Any, elements: _Elements
    ):
        self.tags, self.classes, self.ids = tags.numbers, classes.numbers, ids.numbers
        self.table = table
        self.elements = elements


@functools.lru_cache(maxsize=4096)
def _key_names(selector: str) -> tuple[tuple[str, ...], tuple[str, ...], str | None] | None:
    """The classes, ids and tag (lowercased) the rightmost compound of a selector names; None
    when it has no compound. Read once per selector: a site's pages share their sheets."""
    found = _KEY_COMPOUND_REVERSED.match(selector.rstrip()[::-1])
    key = found.group()[::-1] if found else ""
    if not key:
        return None
    tag = _TAG_TOKEN.match(key)
    return (
        tuple(_CLASS_TOKEN.findall(key)),
        tuple(_ID_TOKEN.findall(key)),
        tag.group(1).lower() if tag else None,
    )


_TRANSLATOR = GenericTranslator()


@functools.lru_cache(maxsize=4096)
def _compile(selector: str) -> tuple[str, tuple[int, int, int]] | None:
    """Pages of one site share their stylesheets: translate each selector once per process.

    The XPath text is cached, not an lxml XPath object, which must not be shared by threads.
    """
    one = parsed(selector)
    if one is None:
        return None
    try:
        return _TRANSLATOR.selector_to_xpath(one), one.specificity()
    except (SelectorError, ValueError, TypeError):
        return None


def _pooled(
    root: Any, selector: str, index: _Index, elements: int
) -> tuple[list[Any], tuple[int, int, int]] | None:
    """What :func:`_select` gives, found from the elements of ``index`` that the selector's
    rightmost compound may select (:mod:`visdup.content.selectors`), when they are few; None:
    ask :func:`_select`."""
    chain = chain_of(selector)
    if chain is None or has_siblings(root):  # XPath would select some of these siblings
        return None
    numbered = index.numbered
    in_c = chain.compiled() if numbered is not None and numbered.elements.root is root else None
    # matched in C, the pool by element numbers; else in Python, the pool by elements
    pool = chain.pool(numbered if numbered is not None and in_c is not None else index)
    if pool is None or len(pool) > POOL_SHARE * elements:
        return None
    # a selector read into a chain always translates to XPath: none is written unless XPath
    # answers, and the rule's specificity is the parsed selector's
    one = parsed(selector)
    if one is None:
        return None
    specificity = one.specificity()
    if numbered is not None and in_c is not None:
        assert _kernel is not None
        matched = _kernel.chain_match(numbered.table, *in_c, pool, elements)
        if matched is None:  # past its steps, or a value it cannot read: XPath answers
            return None
        return numbered.elements(matched), specificity
    seen: set[Any] = set()
    found = []
    walk = Walk(elements)  # walked further than a scan of the tree: XPath scans it
    try:
        for el in pool:
            if el not in seen:
                seen.add(el)
                if chain.matches(el, root, walk):
                    found.append(el)
    except TooLong:
        return None
    return found, specificity


def _select(root: Any, selector: str) -> tuple[list[Any], tuple[int, int, int]] | None:
    compiled = _compile(selector)
    if compiled is None:
        return None
    xpath, specificity = compiled
    try:
        return root.xpath(xpath), specificity
    except lxml.etree.XPathError:
        return None


def apply_sheets(root: Any, sheets: list[str], cascade: Cascade) -> None:
    """Resolve the page's own rules, but only where they can hide something.

    Hiding rules are matched first; the other rules are matched only when their rightmost
    compound could select one of the elements those hid (they may show it again). A page
    loading a whole CSS framework thus costs a handful of selector evaluations, not thousands.
    """
    read: list[tuple[int, _Sheet]] = []  # each sheet, after the rules of those before it
    offset = 0
    for text in sheets:
        sheet = _read_sheet(text)
        read.append((offset, sheet))
        offset += len(sheet.rules)
    if not any(sheet.hiding for _, sheet in read):
        return
    index = _Index.of_tree(root)
    page_elements = index.count
    candidates: set[Any] = set()
    budget = [MAX_SELECTOR_EVALUATIONS]

    def select(index: _Index, selector: str) -> tuple[list[Any], tuple[int, int, int]] | None:
        found = index.simple(selector)
        if found is not None:
            return found
        if budget[0] <= 0:
            return None
        budget[0] -= 1
        if not budget[0]:
            logger.debug("Stylesheet too large: the rest of its complex selectors are ignored")
        return _pooled(root, selector, index, page_elements) or _select(root, selector)

    def apply(kind: str, index: _Index, among: set[Any] | None) -> None:
        """The rules of one kind, in order, on the elements they select: each one joins the
        candidates, or (with ``among``) only those among them count."""
        for offset, sheet in read:
            for k in getattr(sheet, kind):
                if not index.may_hold(sheet.names[k]):
                    continue
                selector, decls = sheet.rules[k]
                found = select(index, selector)
                if found is None:
                    continue
                elements, specificity = found
                for el in elements:
                    if among is None:
                        candidates.add(el)
                    elif el not in among:
                        continue
                    cascade.add(el, decls, (0, *specificity, offset + k))

    apply("hiding", index, None)
    if candidates:
        apply("others", _Index(candidates), candidates)
