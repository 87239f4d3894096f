"""The slice of the CSS cascade that decides whether an element is seen at all.

Seed 001 removes what a reader never sees; styles come from inline ``style`` attributes and
the page's own ``<style>`` rules. Only the properties that hide an element are read, and
they are resolved as a browser would: ``!important`` first, then specificity, then order.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Iterable, Iterator
from typing import Any

import lxml.etree
from cssselect import GenericTranslator, SelectorError
from cssselect import parse as css_parse

logger = logging.getLogger(__name__)

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
_KEY_COMPOUND = re.compile(r"([^\s>+~]+)\s*$")
_CLASS_TOKEN = re.compile(r"\.(-?[_a-zA-Z][\w-]*)")
_ID_TOKEN = re.compile(r"#(-?[_a-zA-Z][\w-]*)")
_TAG_TOKEN = re.compile(r"^([a-zA-Z][\w-]*)")
_SIMPLE = re.compile(r"^([a-zA-Z][\w-]*)?((?:[.#]-?[_a-zA-Z][\w-]*)*)$")
#: An offset of three digits or more to the left pushes an element off any screen.
_OFF_SCREEN = re.compile(r"-\d{3,}")


def declarations(text: str) -> Declarations:
    """Parse `prop: value [!important]; …`; broken pieces are skipped, never raised on."""
    out: Declarations = {}
    for part in text.split(";"):
        if ":" not in part:
            continue
        prop, _, value = part.partition(":")
        prop = prop.strip().lower()
        if prop not in HIDE_STYLE_PROPS:
            continue
        value = value.strip().lower()
        important = "!important" in value
        value = value.replace("!important", "").strip()
        out[prop] = (value, important)
    return out


def style_rules(css: str) -> Iterator[tuple[str, Declarations]]:
    """Yield (selector, declarations) for the rules a screen applies on load.

    A brace scanner with an explicit stack rather than a CSS library: at-rule blocks are
    skipped except `@media screen`/`@media all` without conditions, nested rules are
    skipped, blocks left open at the end are dropped, stray closing braces ignored.
    """
    css = _CSS_COMMENT.sub(" ", css)
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
                decls = declarations(css[body_start:pos])
                if decls:
                    for selector in prelude.split(","):
                        selector = selector.strip()
                        if selector and not _DYNAMIC_PSEUDO.search(selector):
                            yield selector, decls
        start = pos + 1


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
        for el in elements:
            if not isinstance(el.tag, str):
                continue
            self.tags.setdefault(el.tag.lower(), []).append(el)
            for cls in (el.get("class") or "").split():
                self.classes.setdefault(cls, []).append(el)
            ident = el.get("id")
            if ident:
                self.ids.setdefault(ident, []).append(el)

    def may_match(self, selector: str) -> bool:
        """False when the rightmost compound names a class, id or tag that is not here."""
        m = _KEY_COMPOUND.search(selector)
        if not m:
            return True
        key = m.group(1)
        if any(c not in self.classes for c in _CLASS_TOKEN.findall(key)):
            return False
        if any(i not in self.ids for i in _ID_TOKEN.findall(key)):
            return False
        tag = _TAG_TOKEN.match(key)
        return not (tag and tag.group(1).lower() not in self.tags)

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


_TRANSLATOR = GenericTranslator()


@functools.lru_cache(maxsize=4096)
def _compile(selector: str) -> tuple[str, tuple[int, int, int]] | None:
    """Pages of one site share their stylesheets: translate each selector once per process.

    The XPath text is cached, not an lxml XPath object, which must not be shared by threads.
    """
    try:
        parsed = css_parse(selector)
        if len(parsed) != 1:
            return None
        return _TRANSLATOR.selector_to_xpath(parsed[0]), parsed[0].specificity()
    except (SelectorError, ValueError, TypeError):
        return None


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
    rules = [
        (order, selector, decls)
        for order, (selector, decls) in enumerate(r for sheet in sheets for r in style_rules(sheet))
    ]
    hiding = [r for r in rules if is_hiding(r[2]) or visually_hidden(r[2])]
    if not hiding:
        return
    index = _Index(root.iter())
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
        return _select(root, selector)

    for order, selector, decls in hiding:
        if not index.may_match(selector):
            continue
        found = select(index, selector)
        if found is not None:
            elements, specificity = found
            for el in elements:
                candidates.add(el)
                cascade.add(el, decls, (0, *specificity, order))
    if not candidates:
        return
    index = _Index(candidates)
    for order, selector, decls in rules:
        if is_hiding(decls) or visually_hidden(decls) or not index.may_match(selector):
            continue
        found = select(index, selector)
        if found is not None:
            elements, specificity = found
            for el in elements:
                if el in candidates:
                    cascade.add(el, decls, (0, *specificity, order))
