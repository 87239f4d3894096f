"""Strip what a reader never sees, then find the page's main content by node weight.

Seed 001 (Wang & Zhang): invisible and floating layers go first; every block node then gets
a weight from its text, its links, its depth and the words of its class/id, and low-weight
branches are pruned top-down. The seed's formula (1) is lost; the combination used here:

- a paragraph (text between block boundaries) is worth its characters minus 1.5 x its link
  characters when it reads like prose, and costs 0.2 x its plain and 1 x its link
  characters when it does not (menus, labels); a linked heading (a teaser card) costs 3 x;
- S(Q) sums the paragraphs of Q's subtree (t rewarded, k punished); a child whose
  class/id factor m is below 1 passes up only m of its positive sum;
- H(Q) = S(Q) x m(Q) x the smallest m among Q's ancestors x (1 + 0.02 x min(d, 20)), d the
  depth below <body> (furniture sits shallower); the node with the highest H is the content;
- inside it, children go top-down when their m is below 1 and they hold under half of the
  content's prose, when they are link lists, or when they are figures.

Every walk uses lxml's iterative walkers or explicit stacks: pages nest thousands deep.
With the compiled kernel (``visdup._native._stm.blocks_walk``) the paragraph walk reads libxml2's
nodes directly and the weights run on element numbers, so that only the elements pruning
visits become Python objects; the Python walk gives the same results (tests compare both).
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import lxml.etree
from cssselect import GenericTranslator, SelectorError
from cssselect import parse as css_parse

from visdup.page.parse import parse_html

logger = logging.getLogger(__name__)

#: Elements that are never rendered, or rendered as widgets rather than text.
NEVER_RENDERED = frozenset(
    {
        "script",
        "style",
        "template",
        "noscript",
        "head",
        "meta",
        "link",
        "base",
        "title",
        "svg",
        "canvas",
        "iframe",
        "object",
        "embed",
        "audio",
        "video",
        "map",
        "input",
        "button",
        "select",
        "textarea",
        "option",
        "datalist",
    }
)

#: A CSS-hidden element holding this share of the page's prose (and at least
#: REVEAL_MIN_CHARS characters) is taken to be revealed by a script on load, and kept.
REVEAL_SHARE = 0.5
REVEAL_MIN_CHARS = 500

#: Complex CSS selectors (with combinators) evaluated per page at most: each one scans the
#: whole tree, and a hostile stylesheet can hold millions.
MAX_SELECTOR_EVALUATIONS = 400

#: Elements that start a new paragraph of text; everything else flows inline.
BLOCK_TAGS = frozenset(
    {
        "address", "article", "aside", "blockquote", "body", "caption", "center", "dd",
        "details", "dialog", "div", "dl", "dt", "fieldset", "figcaption", "figure", "footer",
        "form", "h1", "h2", "h3", "h4", "h5", "h6", "header", "hgroup", "hr", "html", "li",
        "main", "menu", "nav", "ol", "p", "pre", "section", "summary", "table", "tbody", "td",
        "tfoot", "th", "thead", "tr", "ul", "br",
    }
)  # fmt: skip

HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}

#: Structural elements that hold page furniture rather than the article.
NOISE_TAGS = frozenset({"nav", "aside", "footer", "menu"})

#: class/id words that mark page furniture (weight factor below 1).
NOISE_WORDS = frozenset(
    {
        "nav", "navbar", "navigation", "menu", "footer", "sidebar", "aside", "complementary",
        "contentinfo", "ad", "ads", "advert", "advertisement", "advertising", "banner",
        "sponsor", "sponsored", "promo", "comment", "comments", "disqus", "share", "sharing",
        "social", "related", "recommended", "popular", "trending", "newsletter", "subscribe",
        "signup", "breadcrumb", "breadcrumbs", "widget", "cookie", "cookies", "consent", "gdpr",
        "modal", "popup", "masthead", "toolbar", "pagination", "pager", "tags", "taglist",
        "outbrain", "taboola", "byline", "author", "meta", "more", "recirc", "teaser",
        "caption", "credit", "gallery", "slideshow", "date", "dateline", "timestamp", "header",
        "skip", "print", "topics",
    }
)  # fmt: skip

#: class/id words that mark the article itself (weight factor above 1).
CONTENT_WORDS = frozenset(
    {
        "article", "content", "post", "entry", "body", "story", "text", "main", "blog",
        "articlebody", "postbody", "entrycontent", "storybody", "richtext", "prose",
    }
)  # fmt: skip

#: The d of seed 001: weight gained per level below <body> (capped at 20 levels); page
#: furniture sits shallower than the article.
DEPTH_BONUS = 0.02

#: Elements dropped from inside the main content: captions describe pictures, not the story.
PRUNE_TAGS = frozenset({"figure", "figcaption"})
#: A furniture-named branch inside the content goes unless it holds this share of its prose.
PRUNE_NOISE_SHARE = 0.5
#: A branch with net negative weight goes when this share of its text is links.
PRUNE_LINK_DENSITY = 0.3

_WORD_SPLIT = re.compile(r"[^a-z0-9]+")
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")
_SPACE = re.compile(r"\s+")
_SENTENCE_END = re.compile(r"[.!?。！？;；:,，、]")


# --------------------------------------------------------------------------- invisible


_NEVER_SET = set(NEVER_RENDERED)  # the compiled scan takes a plain set
_HIDE_STYLE_PROPS = frozenset(
    {"display", "visibility", "position", "opacity", "clip", "clip-path", "left", "text-indent"}
)
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


def _declarations(text: str) -> dict[str, tuple[str, bool]]:
    """Parse `prop: value [!important]; …`; broken pieces are skipped, never raised on."""
    out: dict[str, tuple[str, bool]] = {}
    for part in text.split(";"):
        if ":" not in part:
            continue
        prop, _, value = part.partition(":")
        prop = prop.strip().lower()
        if prop not in _HIDE_STYLE_PROPS:
            continue
        value = value.strip().lower()
        important = "!important" in value
        value = value.replace("!important", "").strip()
        out[prop] = (value, important)
    return out


def _style_rules(css: str) -> Iterator[tuple[str, dict[str, tuple[str, bool]]]]:
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
                decls = _declarations(css[body_start:pos])
                if decls:
                    for selector in prelude.split(","):
                        selector = selector.strip()
                        if selector and not _DYNAMIC_PSEUDO.search(selector):
                            yield selector, decls
        start = pos + 1


def _is_hiding(decls: dict[str, tuple[str, bool]]) -> bool:
    display = decls.get("display", ("", False))[0]
    visibility = decls.get("visibility", ("", False))[0]
    position = decls.get("position", ("", False))[0]
    return display == "none" or visibility in {"hidden", "collapse"} or position == "fixed"


def _visually_hidden(decls: dict[str, tuple[str, bool]]) -> bool:
    """Screen-reader-only tricks: transparent, clipped to nothing or pushed off-screen."""
    opacity = decls.get("opacity", ("", False))[0]
    clip = decls.get("clip", ("", False))[0] + decls.get("clip-path", ("", False))[0]
    left = decls.get("left", ("", False))[0] + decls.get("text-indent", ("", False))[0]
    if opacity in {"0", "0.0", "0%"}:
        return True
    if "rect(0" in clip.replace(" ", "") or "inset(50%" in clip.replace(" ", ""):
        return True
    return bool(re.search(r"-\d{3,}", left))


class _Cascade:
    """The few properties that hide an element, resolved by specificity and order."""

    def __init__(self) -> None:
        self.values: dict[Any, dict[str, tuple[tuple[int, ...], str]]] = {}

    def add(self, el: Any, decls: dict[str, tuple[str, bool]], rank: tuple[int, ...]) -> None:
        slot = self.values.setdefault(el, {})
        for prop, (value, important) in decls.items():
            key = (1 if important else 0, *rank)
            old = slot.get(prop)
            if old is None or key >= old[0]:
                slot[prop] = (key, value)

    def resolved(self, el: Any) -> dict[str, tuple[str, bool]]:
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


def _remove(el: Any) -> None:
    """Remove an element but keep its tail, which is the parent's visible text."""
    parent = el.getparent()
    if parent is None:
        return
    tail = el.tail
    if tail:
        prev = el.getprevious()
        if prev is not None:
            prev.tail = (prev.tail or "") + tail
        else:
            parent.text = (parent.text or "") + tail
    parent.remove(el)


def _own_text_len(root: Any) -> dict[Any, int]:
    """Non-link visible characters per element (for the scripted-reveal guard)."""
    sizes: dict[Any, int] = {}
    stack: list[list[Any]] = []
    link_depth = 0
    for event, el in lxml.etree.iterwalk(root, events=("start", "end")):
        if event == "start":
            is_link = el.tag == "a"
            if is_link:
                link_depth += 1
            n = 0 if link_depth else _char_count(el.text)
            stack.append([el, n])
        else:
            node, n = stack.pop()
            sizes[node] = n
            if node.tag == "a":
                link_depth -= 1
            if stack:
                stack[-1][1] += n + (0 if link_depth else _char_count(node.tail))
    return sizes


def _apply_sheets(root: Any, sheets: list[str], cascade: _Cascade) -> None:
    """Resolve the page's own rules, but only where they can hide something.

    Hiding rules are matched first; the other rules are matched only when their rightmost
    compound could select one of the elements those hid (they may show it again). A page
    loading a whole CSS framework thus costs a handful of selector evaluations, not thousands.
    """
    rules = [
        (order, selector, decls)
        for order, (selector, decls) in enumerate(
            r for sheet in sheets for r in _style_rules(sheet)
        )
    ]
    hiding = [r for r in rules if _is_hiding(r[2]) or _visually_hidden(r[2])]
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
        if _is_hiding(decls) or _visually_hidden(decls) or not index.may_match(selector):
            continue
        found = select(index, selector)
        if found is not None:
            elements, specificity = found
            for el in elements:
                if el in candidates:
                    cascade.add(el, decls, (0, *specificity, order))


def _remove_outermost(root: Any, doomed: set[Any]) -> int:
    """Remove the doomed elements, skipping those inside one already going (no depth scans)."""
    outermost: list[Any] = []
    walker = lxml.etree.iterwalk(root, events=("start",))
    for _, el in walker:
        if el in doomed and el is not root:
            outermost.append(el)
            walker.skip_subtree()
    for el in outermost:
        _remove(el)
    return len(outermost)


def remove_invisible(root: Any) -> int:
    """Remove in place what is never seen or floats over the page; return how many went.

    Inline styles and the page's own <style> rules both count. Hidden by CSS but holding
    most of the page's prose means scripts reveal it on load: such an element stays.
    `aria-hidden="true"` alone keeps an element (icons, but also visible duplicates
    of real text); combined with a visually-hidden style it is seen by nobody and goes.
    The count is of outermost elements removed: what sat inside them is not counted.
    """
    if root is None:
        return 0
    scanned = _compiled_scan(root)
    if scanned is None:
        removed, sheets, inline = _scan_invisible(root)
    else:
        outer_paths, raw_sheets, styles = scanned
        sheets = []
        for text, media in raw_sheets:
            media = (media or "all").lower()
            if "screen" in media or "all" in media:
                sheets.append(text)
        # Paths name elements of the tree as it was: resolve them all before removing.
        outermost = list(_resolve(root, outer_paths))
        found = _resolve(root, [p for p, _ in styles])
        inline = list(zip(found, [s for _, s in styles], strict=True))
        for el in outermost:
            _remove(el)
        removed = len(outermost)
    cascade = _Cascade()
    if sheets:
        _apply_sheets(root, sheets, cascade)
    for el, style in inline:
        if style:
            cascade.add(el, _declarations(style), (1, 0, 0, 0, 0))
    return _remove_hidden(root, cascade, removed)


def _compiled_scan(root: Any) -> Any:
    """visdup._native._stm.invisible_scan of the tree, or None when Python must scan it."""
    from visdup.templates import stm

    kernel = stm._kernel
    if kernel is None or not getattr(kernel, "DOM_WALK", 0) or not stm.use_compiled():
        return None
    return kernel.invisible_scan(root, _NEVER_SET)


def _resolve(root: Any, paths: list[tuple[int, ...]]) -> Iterator[Any]:
    """The elements at these child-position paths (in document order, sharing prefixes)."""
    chain = [root]
    prev: tuple[int, ...] = ()
    for path in paths:
        common = 0
        limit = min(len(prev), len(path))
        while common < limit and prev[common] == path[common]:
            common += 1
        del chain[common + 1 :]
        for pos in path[common:]:
            chain.append(chain[-1][pos])
        prev = path
        yield chain[-1]


def _scan_invisible(root: Any) -> tuple[int, list[str], list[tuple[Any, str | None]]]:
    """remove_invisible's scan in Python: never-rendered elements go; sheets, inline styles."""
    never: set[Any] = set()
    sheets: list[str] = []
    # Held until the end: the later walks then reuse these element proxies rather than
    # building new ones through lxml.html's Python class lookup.
    everything = list(root.iter())
    for el in everything:
        tag = el.tag
        if not isinstance(tag, str):
            never.add(el)  # comments and processing instructions
            continue
        tag = tag.lower()
        if tag == "style" and el.text:
            media = (el.get("media") or "all").lower()
            if "screen" in media or "all" in media:
                sheets.append(el.text)
        if (
            tag in NEVER_RENDERED
            or el.get("hidden") is not None
            or (tag == "dialog" and el.get("open") is None)
        ):
            never.add(el)
    removed = _remove_outermost(root, never)
    inline = [(el, el.get("style")) for el in root.iter(lxml.etree.Element)]
    return removed, sheets, inline


def _remove_hidden(root: Any, cascade: _Cascade, removed: int) -> int:
    """Remove what the resolved styles hide, unless it holds most of the page's prose."""
    hidden: list[Any] = []
    for el in cascade.values:
        if el.tag in {"html", "body"}:
            continue
        decls = cascade.resolved(el)
        if _is_hiding(decls) or (
            el.get("aria-hidden", "").lower() == "true" and _visually_hidden(decls)
        ):
            hidden.append(el)
    if not hidden:
        return removed
    sizes = _own_text_len(root)
    page_text = max(sizes.get(root, 0), 1)
    doomed: set[Any] = set()
    for el in hidden:
        size = sizes.get(el, 0)
        if size >= REVEAL_SHARE * page_text and size >= REVEAL_MIN_CHARS:
            logger.debug("Keeping hidden <%s>: it holds most of the page's text", el.tag)
            continue
        doomed.add(el)
    return removed + _remove_outermost(root, doomed)


# --------------------------------------------------------------------------- weights


def _char_count(text: str | None) -> int:
    if not text:
        return 0
    return sum(map(len, text.split()))


def _attr_words(el: Any) -> list[str]:
    words: list[str] = []
    for attr in ("class", "id", "role", "itemprop"):
        value = el.get(attr)
        if value:
            words.extend(w for w in _WORD_SPLIT.split(_CAMEL.sub(" ", value).lower()) if w)
    return words


#: class_factor by (tag, class, id, role, itemprop): pages of a site repeat the same few.
_FACTORS: dict[tuple[Any, ...], float] = {}
_FACTORS_MAX = 50_000


def class_factor(el: Any) -> float:
    """The m of seed 001: what the page's author called this node.

    The classes of <html> and <body> describe the whole page (``class="print"`` on a
    printer-friendly version), never a part of it, so they weigh nothing.
    """
    tag = el.tag
    if tag in ("html", "body"):
        return 1.0
    get = el.get
    key = (tag, get("class"), get("id"), get("role"), get("itemprop"))
    factor = _FACTORS.get(key)
    if factor is None:
        factor = _class_factor(el)
        if len(_FACTORS) >= _FACTORS_MAX:
            _FACTORS.clear()
        _FACTORS[key] = factor
    return factor


def _class_factor(el: Any) -> float:
    words = _attr_words(el)
    factor = 1.0
    if el.tag in NOISE_TAGS:
        factor *= 0.3
    if any(w in NOISE_WORDS for w in words):
        factor *= 0.25
    if any(w in CONTENT_WORDS for w in words) or el.tag in {"article", "main"}:
        factor *= 1.5
    if el.get("itemprop") == "articleBody":
        factor *= 2.0
    return factor


def _key_factor(key: tuple[Any, ...]) -> float:
    """class_factor from its key (tag, class, id, role, itemprop), with the same cache."""
    tag = key[0]
    if tag in ("html", "body"):
        return 1.0
    factor = _FACTORS.get(key)
    if factor is None:
        words: list[str] = []
        for value in key[1:]:
            if value:
                words.extend(w for w in _WORD_SPLIT.split(_CAMEL.sub(" ", value).lower()) if w)
        factor = 1.0
        if tag in NOISE_TAGS:
            factor *= 0.3
        if any(w in NOISE_WORDS for w in words):
            factor *= 0.25
        if any(w in CONTENT_WORDS for w in words) or tag in {"article", "main"}:
            factor *= 1.5
        if key[4] == "articleBody":
            factor *= 2.0
        if len(_FACTORS) >= _FACTORS_MAX:
            _FACTORS.clear()
        _FACTORS[key] = factor
    return factor


@dataclass
class _Block:
    """One paragraph of visible text, as a reader would see it."""

    owner: Any
    kind: str
    level: int
    parts: list[str] = field(default_factory=list)
    link_chars: int = 0
    chars: int = 0

    @property
    def text(self) -> str:
        return _SPACE.sub(" ", "".join(self.parts)).strip()


def _blocks(
    root: Any,
    order: list[tuple[Any, Any]] | None = None,
    spans: dict[Any, list[int]] | None = None,
) -> list[_Block]:
    """Split a subtree into paragraphs at block elements, iteratively.

    A paragraph belongs to the deepest element that holds all of its text, so that text
    flowing through inline wrappers (a <span> around a whole article) counts for them.
    ``order``, when given, receives (element, parent) in preorder: the weights reuse this
    walk instead of walking the tree again. ``spans`` receives, per block element, the
    [first, end) range of its paragraphs and whether no heading encloses it: those are the
    paragraphs a walk of that element alone would give.
    """
    blocks: list[_Block] = []
    open_els: list[Any] = []
    # The paragraph being read: its text parts, counts, kind and heading level.
    parts: list[str] = []
    chars = links = 0
    kind, level = "paragraph", 0
    low = 0  # shallowest stack depth reached since the current paragraph began
    link_depth = 0
    heading: list[int] = []
    block_tags, headings = BLOCK_TAGS, HEADINGS
    record = order.append if order is not None else None

    for event, el in lxml.etree.iterwalk(root, events=("start", "end")):
        tag = el.tag
        if tag.__class__ is not str:
            tag = ""
        if event == "start":
            if record is not None and tag:
                record((el, open_els[-1] if open_els else None))
            open_els.append(el)
            if tag in block_tags:
                if tag in headings:
                    heading.append(headings[tag])
                if chars:
                    owner = open_els[low - 1] if low else root
                    blocks.append(_Block(owner, kind, level, parts, links, chars))
                low = len(open_els)
                kind, level = ("heading", heading[-1]) if heading else ("paragraph", 0)
                parts = []
                chars = links = 0
                if spans is not None:
                    enclosed = len(heading) > (1 if tag in headings else 0)
                    spans[el] = [len(blocks), -1, 0 if enclosed else 1]
            if tag == "a":
                link_depth += 1
            text = el.text
        else:
            if tag == "a":
                link_depth -= 1
            if tag in block_tags:
                if tag in headings:
                    heading.pop()
                if chars:
                    owner = open_els[low - 1] if low else root
                    blocks.append(_Block(owner, kind, level, parts, links, chars))
                low = len(open_els)
                kind, level = ("heading", heading[-1]) if heading else ("paragraph", 0)
                parts = []
                chars = links = 0
                if spans is not None:
                    spans[el][1] = len(blocks)
            open_els.pop()
            if len(open_els) < low:
                low = len(open_els)
            if el is root:
                continue
            text = el.tail
        if text:
            if text.isspace():
                parts.append(" ")
                continue
            n = _char_count(text)
            parts.append(text)
            chars += n
            if link_depth:
                links += n
    if chars:
        blocks.append(_Block(open_els[low - 1] if low else root, kind, level, parts, links, chars))
    return blocks


_BLOCK_SET = set(BLOCK_TAGS)  # the compiled walk takes a plain set and dict
_HEADING_LEVELS = dict(HEADINGS)


def _is_good(block: _Block) -> bool:
    """Prose rather than furniture: long enough, few links, sentence-like."""
    if block.chars < 20:
        return False
    if block.link_chars > 0.6 * block.chars:
        return False
    text = block.text
    if text.endswith(("…", "...", "[…]")):
        return False  # a teaser for another page, not this page's prose
    return (
        block.chars >= 90
        or bool(_SENTENCE_END.search(text[-2:] or ""))
        or (block.chars >= 40 and " " in text and len(_SENTENCE_END.findall(text)) >= 1)
    )


def _block_value(block: _Block) -> float:
    if block.kind == "heading":
        # A linked heading titles a teaser card for another page.
        return -3.0 * block.chars if block.link_chars > 0.5 * block.chars else 0.0
    if _is_good(block):
        return float(block.chars - 1.5 * block.link_chars)
    return -0.2 * (block.chars - block.link_chars) - 1.0 * block.link_chars


@dataclass
class MainContent:
    """The article a page carries, with its title kept apart from the body text."""

    title: str | None
    node: Any
    text: str
    blocks: list[tuple[str, int, str]]


def page_title(root: Any) -> str | None:
    """The page's title: an <h1> the <title> contains, else og:title, <title>, the first <h1>."""
    og = root.xpath("//meta[@property='og:title' or @name='og:title']/@content")
    h1s = [_SPACE.sub(" ", h.text_content()).strip() for h in root.iter("h1")]
    h1s = [h for h in h1s if h]
    titles = root.xpath("//title")
    text = _SPACE.sub(" ", titles[0].text_content()).strip() if titles else ""
    for h in h1s:
        if text and h.lower() in text.lower():
            return h
    if og and og[0].strip():
        return _SPACE.sub(" ", og[0]).strip()
    if text:
        return text
    return h1s[0] if h1s else None


@dataclass
class _Weights:
    """Per-element sums over the paragraphs a subtree holds."""

    net: dict[Any, float] = field(default_factory=dict)
    good: dict[Any, float] = field(default_factory=dict)
    chars: dict[Any, int] = field(default_factory=dict)
    links: dict[Any, int] = field(default_factory=dict)
    factors: dict[Any, float] = field(default_factory=dict)

    def factor(self, el: Any) -> float:
        value = self.factors.get(el)
        if value is None:
            value = self.factors[el] = class_factor(el)
        return value

    def link_density(self, el: Any) -> float:
        return self.links.get(el, 0) / max(1, self.chars.get(el, 0))


def _scores(order: list[tuple[Any, Any]], blocks: list[_Block]) -> _Weights:
    """S(Q), the net prose a node holds, and its good prose, summed bottom-up.

    A subtree whose class/id says furniture (comments, related links) passes up only a
    fraction of its prose, so that a parent holding article and comments scores below the
    article alone. ``order`` is the (element, parent) preorder of the walk that made the
    blocks.
    """
    w = _Weights()
    net, good, chars, links = w.net, w.good, w.chars, w.links
    for block in blocks:
        value = _block_value(block)
        owner = block.owner
        net[owner] = net.get(owner, 0.0) + value
        chars[owner] = chars.get(owner, 0) + block.chars
        links[owner] = links.get(owner, 0) + block.link_chars
        if value > 0:
            good[owner] = good.get(owner, 0.0) + block.chars - block.link_chars
    factor_of = w.factor
    for i in range(len(order) - 1, 0, -1):
        el, parent = order[i]
        n = chars.get(el, 0)
        if not n:
            continue
        s, g = net.get(el, 0.0), good.get(el, 0.0)
        # The factor only scales what is positive: skip its lookup for the rest.
        factor = min(1.0, factor_of(el)) if s > 0 or g else 1.0
        net[parent] = net.get(parent, 0.0) + (s * factor if s > 0 else s)
        good[parent] = good.get(parent, 0.0) + g * factor
        chars[parent] = chars.get(parent, 0) + n
        links[parent] = links.get(parent, 0) + links.get(el, 0)
    return w


def _choose(order: list[tuple[Any, Any]], w: _Weights) -> Any:
    """The node with the highest weight H, deeper nodes winning ties.

    H = S(Q) · m(Q) · the furniture discounts of Q's ancestors: one comment inside a
    comment list does not win over the article however long it is.
    """
    root = order[0][0]
    best, best_score = root, float("-inf")
    path: dict[Any, float] = {root: 1.0}
    depth: dict[Any, int] = {root: 0}
    net, factor_of = w.net, w.factor
    for el, parent in order:
        if el is not root:
            p = path[el] = min(path[parent], factor_of(parent)) if parent is not root else 1.0
            d = depth[el] = depth[parent] + 1
        else:
            p, d = 1.0, 0
        score = net.get(el, 0.0)
        if score <= 0:
            continue
        weighted = score * factor_of(el) * p * (1 + DEPTH_BONUS * (d if d < 20 else 20))
        if weighted >= best_score:
            best, best_score = el, weighted
    return best


def _prune(node: Any, w: _Weights) -> int:
    """Top-down: drop branches whose weight is far below the content they sit in; count them."""
    removed = 0
    total = max(w.good.get(node, 0), 1)
    stack = [node]
    while stack:
        el = stack.pop()
        for child in list(el):
            if not isinstance(child.tag, str) or child.tag in HEADINGS:
                continue
            g = w.good.get(child, 0)
            s = w.net.get(child, 0.0)
            furniture = g < PRUNE_NOISE_SHARE * total and w.factor(child) < 1
            link_list = s < 0 and g < 0.1 * total and w.link_density(child) > PRUNE_LINK_DENSITY
            if child.tag in PRUNE_TAGS or furniture or link_list:
                _remove(child)
                removed += 1
            else:
                stack.append(child)
    return removed


def _join_blocks(blocks: Iterable[_Block]) -> list[tuple[str, int, str]]:
    out: list[tuple[str, int, str]] = []
    for b in blocks:
        text = b.text
        if text:
            out.append((b.kind, b.level, text))
    return out


def _tidy(blocks: list[tuple[str, int, str]], title: str | None) -> list[tuple[str, int, str]]:
    """Drop the title heading (kept apart) and headings left with nothing under them."""
    if title:
        folded = title.casefold()
        for i, (kind, _, text) in enumerate(blocks[:3]):
            if kind == "heading" and text.casefold() == folded:
                blocks = blocks[:i] + blocks[i + 1 :]
                break
    while blocks and blocks[-1][0] == "heading":
        blocks = blocks[:-1]
    return blocks


def _compiled_walk(root: Any) -> Any:
    """visdup._native._stm.blocks_walk of a subtree, or None when Python must walk it."""
    from visdup.templates import stm

    kernel = stm._kernel
    if kernel is None or not getattr(kernel, "DOM_WALK", 0) or not stm.use_compiled():
        return None
    return kernel.blocks_walk(root, _BLOCK_SET, _HEADING_LEVELS)


def _content_by_index(body: Any, walked: Any, title: str | None) -> MainContent | None:
    """main_content's weighing on element numbers (preorder) from the compiled walk.

    Only the chosen node and the branches pruning visits become Python objects. The sums run
    in the same order as :func:`_scores`, :func:`_choose` and :func:`_prune`, so the floats
    and every tie come out the same.
    """
    raw, parents, raw_spans, keys, positions = walked
    if not raw:
        return MainContent(title, body, "", [])
    n = len(parents)
    net = [0.0] * n
    good = [0.0] * n
    chars = [0] * n
    links = [0] * n
    values: list[float] = []
    for owner, heading, level, text, lc, count in raw:
        block = _Block(None, "heading" if heading else "paragraph", level, [text], lc, count)
        value = _block_value(block)
        values.append(value)
        net[owner] += value
        chars[owner] += count
        links[owner] += lc
        if value > 0:
            good[owner] += count - lc
    factors: list[float | None] = [None] * n

    def factor_of(i: int) -> float:
        f = factors[i]
        if f is None:
            f = factors[i] = _key_factor(keys[i])
        return f

    for i in range(n - 1, 0, -1):
        c = chars[i]
        if not c:
            continue
        parent = parents[i]
        s, g = net[i], good[i]
        factor = min(1.0, factor_of(i)) if s > 0 or g else 1.0
        net[parent] += s * factor if s > 0 else s
        good[parent] += g * factor
        chars[parent] += c
        links[parent] += links[i]
    # _choose
    best, best_score = 0, float("-inf")
    path = [1.0] * n
    depth = [0] * n
    for i in range(n):
        if i:
            parent = parents[i]
            path[i] = min(path[parent], factor_of(parent)) if parent else 1.0
            depth[i] = depth[parent] + 1
        score = net[i]
        if score <= 0:
            continue
        d = depth[i]
        weighted = score * factor_of(i) * path[i] * (1 + DEPTH_BONUS * (d if d < 20 else 20))
        if weighted >= best_score:
            best, best_score = i, weighted
    # The chosen element, reached by its child positions from the body.
    steps = []
    i = best
    while i:
        steps.append(positions[i])
        i = parents[i]
    node = body
    for pos in reversed(steps):
        node = node[pos]
    # _prune, walking the node's subtree with the element numbers alongside.
    sizes = [1] * n
    for i in range(n - 1, 0, -1):
        sizes[parents[i]] += sizes[i]
    total = max(good[best], 1)
    removed = 0
    stack = [(node, best)]
    while stack:
        el, idx = stack.pop()
        j = idx + 1
        for child in list(el):
            if child.tag.__class__ is not str:
                continue
            k = j
            j += sizes[k]
            if child.tag in HEADINGS:
                continue
            g = good[k]
            s = net[k]
            furniture = g < PRUNE_NOISE_SHARE * total and factor_of(k) < 1
            link_list = (
                s < 0 and g < 0.1 * total and links[k] / max(1, chars[k]) > (PRUNE_LINK_DENSITY)
            )
            if child.tag in PRUNE_TAGS or furniture or link_list:
                _remove(child)
                removed += 1
            else:
                stack.append((child, k))
    span = next((sp for sp in raw_spans if sp[0] == best), None)
    if removed or span is None or not span[3]:
        again = _compiled_walk(node)
        if again is None:
            inside = _blocks(node)
        else:
            inside = [
                _Block(None, "heading" if h else "paragraph", level, [text], lc, count)
                for _o, h, level, text, lc, count in again[0]
            ]
    else:
        inside = [
            _Block(None, "heading" if h else "paragraph", level, [text], lc, count)
            for _o, h, level, text, lc, count in raw[span[1] : span[2]]
        ]
    kept = _tidy(_join_blocks(inside), title)
    return MainContent(title, node, "\n\n".join(t for _, _, t in kept), kept)


def main_content(root: Any, *, cleaned: bool = False, title: str | None = None) -> MainContent:
    """Find the article in a parsed page; the tree is modified in place (noise removed).

    ``cleaned``: :func:`remove_invisible` already ran on this tree (then pass the ``title``
    read before, since the <head> is gone).
    """
    if root is None:
        return MainContent(None, None, "", [])
    if not cleaned:
        title = page_title(root)
        remove_invisible(root)
    bodies = root.xpath("//body")
    body = bodies[0] if bodies else root
    walked = _compiled_walk(body)
    if walked is not None:
        return _content_by_index(body, walked, title)
    # The Python walk. Its element list also keeps every element's Python proxy alive, so
    # the later passes reuse them instead of building new ones through lxml.html's lookup.
    order: list[tuple[Any, Any]] = []
    spans: dict[Any, list[int]] = {}
    blocks = _blocks(body, order, spans)
    if not blocks:
        return MainContent(title, body, "", [])
    weights = _scores(order, blocks)
    node = _choose(order, weights)
    span = spans.get(node)
    if _prune(node, weights) or span is None or not span[2]:
        inside = _blocks(node)
    else:  # nothing left the content: its paragraphs are those the first walk found
        inside = blocks[span[0] : span[1]]
    kept = _tidy(_join_blocks(inside), title)
    text = "\n\n".join(t for _, _, t in kept)
    return MainContent(title, node, text, kept)


def extract(html: bytes | str) -> MainContent:
    """Parse and extract in one call; unusable input gives empty content, never an error."""
    doc = parse_html(html)
    if doc.root is None:
        return MainContent(None, None, "", [])
    return main_content(doc.root)
