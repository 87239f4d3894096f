"""CSS selectors matched from the elements they name, as cssselect's XPath matches them.

A page's hiding rules name a few elements by the rightmost compound of their selectors (a
class, an id, a tag); XPath would scan the whole tree for each of a page's hundreds of
selectors. :func:`chain_of` reads a selector into compounds and combinators, and
:meth:`Chain.matches` walks up (or back, for sibling combinators) from an element, asking
each ancestor or sibling once per search (:class:`Walk`). The answers are those of the XPath
that cssselect's ``GenericTranslator`` writes: tags and attribute names as written, class
names split at XPath's whitespace, the attribute operators of Selectors Level 3. What it
cannot ask (pseudo-classes, namespaces, case flags, ``!=``) makes :func:`chain_of` answer
None, and XPath matches that selector.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any, Protocol

from cssselect import SelectorError
from cssselect import parse as css_parse
from cssselect.parser import Attrib, Class, CombinedSelector, Element, Hash, Selector, Tree

#: A name cssselect writes as an XPath name test (others it compares with name()).
_SAFE_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_.-]*$")
#: XPath's whitespace (normalize-space): what separates the names of a class attribute.
_XML_SPACE = re.compile(r"[ \t\r\n]+")
#: CSS's whitespace, what cssselect skips around compounds and combinators; one of them in
#: a name; any character ``str.isspace`` takes (``\s`` is it, character for character).
_CSS_SPACE = " \t\r\n\f"
_CSS_BLANK = re.compile(r"[ \t\r\n\f]")
_ANY_SPACE = re.compile(r"\s")
#: The characters of a plain selector (:func:`_plain_parse`).
_PLAIN_CHARS = re.compile(r"[-_a-zA-Z0-9.#>+~ \t\r\n\f]+")
#: A plain selector's tokens: a combinator (blanks alone: descendant), a tag, a class, an id;
#: names as cssselect's tokenizer reads them when they hold no escape and no character
#: outside ASCII.
_PLAIN_TOKEN = re.compile(
    r"([ \t\r\n\f]*[>+~][ \t\r\n\f]*|[ \t\r\n\f]+)"
    r"|(-?[_a-zA-Z][-_a-zA-Z0-9]*)"
    r"|\.(-?[_a-zA-Z][-_a-zA-Z0-9]*)"
    r"|#([-_a-zA-Z0-9]+)"
)


class Index(Protocol):
    """Elements by class name (Python's split), id and lowercased tag, in document order."""

    classes: dict[str, list[Any]]
    ids: dict[str, list[Any]]
    tags: dict[str, list[Any]]


class Compound:
    """What one compound selector asks of an element, as the XPath of ``GenericTranslator``
    asks it: a tag (case and namespace as written, None for any), ids, class names (tokens
    of the class attribute split at XPath's whitespace), and attributes, present or compared
    by the operators of Selectors Level 3 (a test each, :data:`_ATTRIBUTE_TESTS`)."""

    __slots__ = ("attrs", "classes", "ids", "never", "tag")

    def __init__(self) -> None:
        self.tag: str | None = None
        self.ids: list[str] = []
        self.classes: list[str] = []
        #: (attribute, its test, the selector's value, the operator)
        self.attrs: list[tuple[str, Callable[[str, str], bool], str, str]] = []
        self.never = False  # an empty class name, or one with whitespace: XPath's "0"

    def test(self, el: Any) -> bool:
        if self.never or (self.tag is not None and el.tag != self.tag):
            return False
        get = el.get
        for ident in self.ids:
            if get("id") != ident:
                return False
        if self.classes:
            value = get("class")
            if value is None:
                return False
            names = _class_names(value)
            for name in self.classes:
                if name not in names:
                    return False
        for attr, holds, want, _op in self.attrs:
            value = get(attr)
            if value is None or not holds(value, want):
                return False
        return True


def _includes(value: str, want: str) -> bool:
    return want in _class_names(value)


#: An attribute operator's test of a present attribute's value against the selector's, as
#: cssselect writes it in XPath; an operator whose XPath is "0" for the value given never
#: matches (:func:`_compound`).
_ATTRIBUTE_TESTS: dict[str, Callable[[str, str], bool]] = {
    "exists": lambda value, want: True,
    "=": str.__eq__,
    "^=": str.startswith,
    "$=": str.endswith,
    "*=": str.__contains__,
    "~=": _includes,
    "|=": lambda value, want: value == want or value.startswith(want + "-"),
}


def _utf8(name: str) -> bytes:
    """A name as the compiled match compares it; ValueError for one it cannot (a NUL ends a
    C string, a lone surrogate has no UTF-8)."""
    if "\0" in name:
        raise ValueError("a NUL in a selector's name")
    return name.encode()


#: The attribute operators by their number in the compiled match.
_OPERATORS = {"exists": 0, "=": 1, "^=": 2, "$=": 3, "*=": 4, "~=": 5, "|=": 6}


@functools.lru_cache(maxsize=4096)
def _class_names(value: str) -> frozenset[str]:
    """The names of a class attribute as XPath's normalize-space splits it (a site's pages
    repeat a few hundred class attributes)."""
    return frozenset(_XML_SPACE.split(value))


class Chain:
    """A selector as compounds from the rightmost, with the combinator before each."""

    __slots__ = ("_compiled", "_in_python", "combinators", "compounds")

    def __init__(self, compounds: list[Compound], combinators: list[str]):
        self.compounds = compounds
        self.combinators = combinators  # combinators[i]: between compounds[i + 1] and [i]
        self._compiled: tuple[tuple[Any, ...], bytes] | None = None
        self._in_python = False  # a name the compiled match cannot read

    def compiled(self) -> tuple[tuple[Any, ...], bytes] | None:
        """The chain as the compiled match reads it (``_dom.chain_match``): each compound's
        tag, ids, classes, attribute names, operators, values and whether it never matches,
        in UTF-8; the combinators. None for a name the match cannot compare as bytes (a lone
        surrogate from a CSS escape, a NUL): the Python match reads it."""
        if self._compiled is None and not self._in_python:
            try:
                compounds = tuple(
                    (
                        _utf8(c.tag) if c.tag is not None else None,
                        tuple(map(_utf8, c.ids)),
                        tuple(map(_utf8, c.classes)),
                        tuple(_utf8(a) for a, _holds, _want, _op in c.attrs),
                        tuple(_OPERATORS[op] for _a, _holds, _want, op in c.attrs),
                        tuple(_utf8(want) for _a, _holds, want, _op in c.attrs),
                        c.never,
                    )
                    for c in self.compounds
                )
                self._compiled = compounds, "".join(self.combinators).encode()
            except ValueError:  # UnicodeEncodeError is one
                self._in_python = True
        return self._compiled

    def pool(self, index: Index) -> list[Any] | None:
        """The indexed elements the rightmost compound may select (a superset), or None
        when it names nothing the index keys (every element may match)."""
        key = self.compounds[0]
        if key.ids:
            return index.ids.get(key.ids[0], [])
        if key.classes:
            name = key.classes[0]
            if _ANY_SPACE.search(name):  # the index splits class attributes at these
                return None
            return index.classes.get(name, [])
        if key.tag is not None:
            return index.tags.get(key.tag.lower(), [])
        return None

    def matches(self, el: Any, top: Any, walk: Walk | None = None) -> bool:
        """Whether ``el`` matches the selector with every element it names in ``top``'s
        subtree (``top`` included), as ``top.xpath('descendant-or-self::...')`` selects.
        ``walk``: the memo and step budget shared by the elements of one search."""
        return self.compounds[0].test(el) and self._left(el, 0, top, walk or Walk(0))

    def _left(self, el: Any, i: int, top: Any, walk: Walk) -> bool:
        """Whether the compounds left of ``compounds[i]`` (which ``el`` matches) match."""
        if i + 1 == len(self.compounds):
            return True
        known = walk.known
        got = known.get((el, i))
        if got is not None:
            return got
        got = False
        if el is not top:
            combinator = self.combinators[i]
            if combinator == ">":
                other = el.getparent()
                got = other is not None and self._here(other, i, top, walk)
            elif combinator == "+":
                other = _previous_element(el)
                got = other is not None and self._here(other, i, top, walk)
            elif combinator == " ":
                got = self._along(el.getparent(), i, top, walk, _parent)
            else:  # "~"
                got = self._along(_previous_element(el), i, top, walk, _previous_element)
        known[(el, i)] = got
        return got

    def _here(self, other: Any, i: int, top: Any, walk: Walk) -> bool:
        """Whether ``other`` matches ``compounds[i + 1]`` and the compounds left of it."""
        walk.step()
        return self.compounds[i + 1].test(other) and self._left(other, i + 1, top, walk)

    def _along(self, node: Any, i: int, top: Any, walk: Walk, step: Callable[[Any], Any]) -> bool:
        """Whether ``node`` or one after it along ``step`` (its ancestors up to ``top``, or
        its earlier siblings) matches ``compounds[i + 1]`` and the compounds left of it.

        Each node's answer is kept for the search: the candidates of one selector share
        their ancestors and siblings, and each is asked about once, not once per candidate.
        """
        memo = walk.along
        unknown = []
        got = False
        while node is not None:
            seen = memo.get((node, i))
            if seen is not None:
                got = seen
                break
            unknown.append(node)
            if self._here(node, i, top, walk):
                got = True
                break
            if node is top and step is _parent:
                break
            node = step(node)
        for node in unknown:  # each of them has that answer: the search passed through it
            memo[(node, i)] = got
        return got


def _parent(el: Any) -> Any:
    return el.getparent()


class TooLong(Exception):
    """A pooled search went past its steps: XPath answers instead."""


class Walk:
    """One pooled search's memo (element, compound) → matched, and its steps left (0: no
    limit). A deep tree makes a few elements' ancestors more than a scan of the tree."""

    __slots__ = ("along", "known", "left")

    def __init__(self, steps: int):
        self.known: dict[tuple[Any, int], bool] = {}
        #: (node, i) → whether it or a node after it (ancestors; earlier siblings) matches
        #: compounds[i + 1] and those left of it.
        self.along: dict[tuple[Any, int], bool] = {}
        self.left = steps or -1

    def step(self) -> None:
        self.left -= 1
        if self.left == 0:
            raise TooLong


def has_siblings(el: Any) -> bool:
    """Whether ``el`` has an element sibling (a page's root has none)."""
    return _previous_element(el) is not None or any(
        isinstance(other.tag, str) for other in el.itersiblings()
    )


def _previous_element(el: Any) -> Any:
    """The element sibling before ``el`` (comments and processing instructions skipped, as
    XPath's ``*`` skips them), or None."""
    other = el.getprevious()
    while other is not None and not isinstance(other.tag, str):
        other = other.getprevious()
    return other


def _compound(tree: Any, into: Compound) -> bool:
    """Fill ``into`` from a compound's parse tree; False for what it cannot test."""
    while not isinstance(tree, Element):
        if isinstance(tree, Class):
            name = tree.class_name
            if not name or _CSS_BLANK.search(name):
                into.never = True
            into.classes.append(name)
        elif isinstance(tree, Hash):
            into.ids.append(tree.id)
        elif isinstance(tree, Attrib):
            holds = _ATTRIBUTE_TESTS.get(tree.operator)
            if (
                holds is None
                or tree.namespace is not None
                or getattr(tree, "flag", None) is not None
                or not _SAFE_NAME.match(tree.attrib)
            ):
                return False
            want = (tree.value.value if tree.value is not None else None) or ""
            if tree.operator in ("^=", "$=", "*=") and not want:
                into.never = True  # cssselect: "0"
            if tree.operator == "~=" and (not want or _CSS_BLANK.search(want)):
                into.never = True
            into.attrs.append((tree.attrib, holds, want, tree.operator))
        else:  # pseudo-classes, functions, negations: XPath answers
            return False
        tree = tree.selector
    if tree.namespace is not None:
        return False
    if tree.element:
        if not _SAFE_NAME.match(tree.element):
            return False
        into.tag = tree.element
    return True


@functools.lru_cache(maxsize=4096)
def parsed(selector: str) -> Selector | None:
    """The selector as cssselect parses it, once per process (the translation to XPath and
    :func:`chain_of` both read it); None when it does not parse to one selector."""
    plain = _plain_parse(selector)
    if plain is not None:
        return plain
    try:
        found = css_parse(selector)
    except (SelectorError, ValueError, TypeError):
        return None
    return found[0] if len(found) == 1 else None


def _plain_parse(selector: str) -> Selector | None:
    """A plain selector (compounds of a tag, classes and ids, in ASCII and without escapes,
    and combinators) as cssselect parses it, the same tree; None for any other, which
    cssselect reads. A page's sheets are read once per process, but a crawl over many sites
    meets most of its selectors once, and cssselect's tokenizer reads each a token at a time
    in Python."""
    text = selector.strip(_CSS_SPACE)
    if not text or not _PLAIN_CHARS.fullmatch(text):
        return None
    compounds: list[Tree] = []
    combinators: list[str] = []
    current: Tree | None = None
    at = 0
    for token in _PLAIN_TOKEN.finditer(text):
        if token.start() != at:
            return None  # a character no token starts with here ("-1", "*", a lone "#")
        at = token.end()
        combinator, tag, name, ident = token.groups()
        if combinator is not None:
            if current is None:
                return None  # a compound left empty: cssselect reads it as "*"
            compounds.append(current)
            combinators.append(combinator.strip(_CSS_SPACE) or " ")
            current = None
        elif tag is not None:
            if current is not None:
                return None
            current = Element(None, tag)
        elif name is not None:
            current = Class(current if current is not None else Element(), name)
        else:
            current = Hash(current if current is not None else Element(), ident)
    if at != len(text) or current is None:
        return None
    compounds.append(current)
    tree = compounds[0]
    for combinator, compound in zip(combinators, compounds[1:], strict=True):
        tree = CombinedSelector(tree, combinator, compound)
    return Selector(tree)


@functools.lru_cache(maxsize=4096)
def chain_of(selector: str) -> Chain | None:
    """The selector as a :class:`Chain`, or None where only XPath can match it."""
    one = parsed(selector)
    if one is None:
        return None
    tree = one.parsed_tree
    compounds: list[Compound] = []
    combinators: list[str] = []
    while True:
        right = tree.subselector if isinstance(tree, CombinedSelector) else tree
        compound = Compound()
        if not _compound(right, compound):
            return None
        compounds.append(compound)
        if not isinstance(tree, CombinedSelector):
            return Chain(compounds, combinators)
        if tree.combinator not in " >+~":
            return None
        combinators.append(tree.combinator)
        tree = tree.selector
