"""The page's main content: weigh, choose, prune (seed 001), and what the page is called.

:func:`main_content` walks the cleaned page once (:mod:`visdup.content.blocks`), weighs every
element (:mod:`visdup.content.weights`), takes the heaviest as the article, and prunes the
furniture left inside it. A listing or archive page has no single article: when teasers
(linked headings, excerpts cut short) outweigh the best article by LISTING_RATIO, the
element that holds the teasers is the content, never a footer with one sentence in it.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from visdup._native import kernel
from visdup.content.blocks import (
    BLOCK_TAGS,
    HEADINGS,
    Block,
    char_count,
    join_blocks,
    paragraph_rows,
    walk,
)
from visdup.content.listing import LISTING_MIN_TEASERS, rows_of_links
from visdup.content.titles import _text_of
from visdup.content.visibility import remove_element, titled_and_cleaned
from visdup.content.weights import (
    _FACTORS,
    Weights,
    choose,
    factor,
    in_footer,
    is_prose,
    post_words,
    thread_factor,
    weigh,
)
from visdup.page.dom import subtree_sizes
from visdup.page.parse import parse_html

#: The compiled descent of :func:`_prune` (``visdup._native._weights``).
_kernel = kernel("_weights")

#: Elements dropped from inside the main content: captions describe pictures, not the story.
PRUNE_TAGS = frozenset({"figure", "figcaption"})
_HEADING_TAGS = frozenset(HEADINGS)
#: A furniture-named branch inside the content goes unless it holds this share of its prose.
PRUNE_NOISE_SHARE = 0.5
#: A branch with net negative weight goes when this share of its text is links...
PRUNE_LINK_DENSITY = 0.3
#: ...and it holds under this share of the content's prose (a link-rich paragraph stays).
PRUNE_LINK_LIST_SHARE = 0.1
#: Lists and tables inside the content are its data (a table of films, a changelog's items,
#: a manual's list of functions): they go for their links only when nearly all is links (a
#: "related stories" list), not at PRUNE_LINK_DENSITY. Chosen on the readability pages
#: (0.931 to 0.941) and checked on AEB (0.9734 to 0.9741) and the manuals (Python 0.937 to
#: 0.945, PostgreSQL unchanged).
DATA_TAGS = frozenset(
    {"table", "thead", "tbody", "tfoot", "tr", "td", "th", "ul", "ol", "li", "dl", "dt", "dd"}
)
PRUNE_DATA_LINK_DENSITY = 0.9
#: A table or list kept whole keeps its cells and items: a row's one linked film title is
#: the table's data, however much of that cell is link. A cell's inline elements are the
#: cell's; a block inside an item (a forum post's buttons in an ``<li>``) is judged alone.
DATA_ROOTS = frozenset({"table", "ul", "ol", "dl"})
#: ...block elements that are no part of the cell they sit in (a paragraph is).
CELL_BLOCKS = BLOCK_TAGS - {"p"}
#: Teasers must outweigh the best article's prose this many times for a page to be a
#: listing: an article with a "related stories" box keeps its article (AEB: no page of the
#: 181 turns into a listing at 2; the generated archives all do).
LISTING_RATIO = 2.0
#: A page whose best article has less prose than this (two short paragraphs) and whose links
#: outweigh it LISTING_RATIO times is an index: its list of links is the content (a
#: documentation index or table of contents; AEB has no such page, the manuals have 40).
INDEX_MAX_PROSE = 200
#: ...and it holds at least this many link characters outside furniture-named branches: a
#: 404 page's menus and "popular" box are no index.
INDEX_MIN_LINKS = 300

#: The content widens to an ancestor holding this many times its prose (see _widen): chosen
#: on the Python manual (3 against 2: 2 takes a page's whole navigation along with one short
#: paragraph); no page of AEB or the readability set changes.
WIDEN_RATIO = 3.0
#: Levels above the content :func:`_parts` looks for the article's other parts.
PARTS_LEVELS = 3
#: A thread shows at least this many posts side by side (see _thread).
THREAD_MIN_POSTS = 3
#: An element holding MathML whose text is at least this share the formulas' is their wrapper.
FORMULA_SHARE = 0.5
#: A page without prose keeps its paragraphs that are at most this share links.
SHORT_PAGE_LINK_SHARE = 0.5


@dataclass
class MainContent:
    """The article a page carries, with its title kept apart from the body text.

    ``page_text`` is the whole visible text of the page (before pruning): thin pages are
    compared by it. ``listing``: the content is a list of teasers, not one article.
    """

    title: str | None
    node: Any
    text: str
    blocks: list[tuple[str, int, str]]
    page_text: str = ""
    listing: bool = False
    heading: str | None = field(default=None)


def main_content(
    root: Any,
    *,
    cleaned: bool = False,
    title: str | None = None,
    chosen: Callable[[Any], None] | None = None,
) -> MainContent:
    """Find the article in a parsed page; the tree is modified in place (noise removed).

    ``cleaned``: :func:`remove_invisible` already ran on this tree (then pass the ``title``
    read before, since the <head> is gone). ``chosen`` is called with the article's element
    before anything is pruned: the layout signature reads the page whole.
    """
    if root is None:
        return MainContent(None, None, "", [])
    if not cleaned:
        title = titled_and_cleaned(root)
    body = first_body(root)
    walked = walk(body, factor, _FACTORS)
    page_text = walked.visible_text()
    if not walked.count:
        return MainContent(title, body, "", [], page_text)
    w = weigh(walked)
    best = _widen(w, choose(w))
    thread = _thread(w, best)
    if thread is not None:
        w, best = _thread_weights(w, thread), thread
    else:
        best = _parts(w, best)
    mass: Sequence[float] | None = None  # what the content is made of, when not prose
    # the best article's prose, less what its name says it is not (a footer is no article)
    article = max(w.good[best], 0.0) * min(1.0, w.factor(best))
    if max(w.teasers) > 0:
        teasers = choose(w, w.teasers)
        if (
            w.teaser_count[teasers] >= LISTING_MIN_TEASERS
            and w.teasers[teasers] > LISTING_RATIO * article
        ):
            best, mass = teasers, w.teasers
    if mass is None and article < INDEX_MAX_PROSE and max(w.linked) >= INDEX_MIN_LINKS:
        index = choose(w, w.linked)
        if w.linked[index] >= max(INDEX_MIN_LINKS, LISTING_RATIO * article):
            best, mass = index, w.linked
    listing = mass is not None
    if not listing and w.net[best] <= 0:
        best = 0  # no prose anywhere: the page is what little text it shows
    node = walked.element(best)
    if chosen is not None:
        chosen(node)
    if best == 0 and not listing and w.net[0] <= 0:
        kept = _tidy(_short_page(w), title) if page_text else []
        text = "\n\n".join(t for _, _, t in kept)
        return MainContent(title, node, text, kept, page_text, rows_of_links(node, text))
    if not listing and in_footer(walked, best):
        # The most prose sits in the page's footer (a documentation index whose links are
        # too few for an index: its copyright lines win): the page has no article. Its
        # content would be the site's footer, the same on every such page.
        return MainContent(title, body, "", [], page_text)
    span = walked.spans.get(best)
    if _prune(best, w, mass) or span is None or not span[2]:
        kept = paragraph_rows(node)
    else:  # nothing left the content: its paragraphs are those the first walk found
        kept = walked.joined(span[0], span[1])
    heading = next((t for kind, _, t in kept if kind == "heading"), None)
    kept = _tidy(kept, title)
    text = "\n\n".join(t for _, _, t in kept)
    listing = listing or rows_of_links(node, text)
    return MainContent(title, node, text, kept, page_text, listing, heading)


def first_body(root: Any) -> Any:
    """The page's first ``<body>`` in document order (``root`` itself when there is none).

    On a parsed page it is a child of ``<html>`` after the ``<head>``: found there without
    a search of the whole tree (an XPath search, or lxml's iterator, which looks past the
    first match for the next one, read every element of the page).
    """
    if root.tag == "body":
        return root
    for child in root:
        if child.tag == "body":
            return child
        if isinstance(child.tag, str) and child.find(".//body") is not None:
            break  # a <body> inside an earlier child: the search below finds it first
    bodies = root.xpath("//body")
    return bodies[0] if bodies else root


def _prune(index: int, w: Weights, mass: Sequence[float] | None) -> int:
    """Top-down: drop branches whose weight is far below the content they sit in; count them.

    In a listing or an index, ``mass`` (teasers, links) is the content: link-rich branches
    stay, and a furniture-named branch goes when it holds under half of that mass.

    The descent runs over the walk's element numbers (tags from its keys), so no element of
    the content is touched but those removed; they go last first (reverse preorder), which
    leaves the child positions that lead to the earlier ones as they were.
    """
    listing = mass is not None
    walked = w.walk
    parents = walked.parents
    keys = walked.keys
    if mass is None:
        mass = w.good
    total = max(mass[index], 1)
    noise = PRUNE_NOISE_SHARE * total
    link_floor = PRUNE_LINK_LIST_SHARE * total
    net, good, m_of = w.net, w.good, _prune_factors(w, index)
    doomed: list[int] = []
    if _kernel is not None and isinstance(mass, array) and isinstance(m_of, array):
        doomed = _kernel.prune(
            index, parents, keys, _HEADING_TAGS, PRUNE_TAGS, mass, m_of, net, good, w.links,
            w.chars, listing, noise, link_floor, PRUNE_LINK_DENSITY, DATA_TAGS,
            PRUNE_DATA_LINK_DENSITY, DATA_ROOTS, CELL_BLOCKS,
        )  # fmt: skip
        for child in doomed:  # last first, as below
            remove_element(walked.element(child))
        return len(doomed)
    sizes = subtree_sizes(parents)
    stack = [(index, False)]
    while stack:
        idx, kept_data = stack.pop()
        k = idx + 1
        end = idx + sizes[idx]
        while k < end:
            child = k
            k += sizes[child]
            tag = keys[child][0]
            if tag in HEADINGS:
                continue
            cell = kept_data and (tag in DATA_TAGS or tag not in CELL_BLOCKS)
            if (
                tag in PRUNE_TAGS
                or (mass[child] < noise and m_of[child] < 1)
                or (
                    not listing
                    and not cell
                    and net[child] < 0
                    and good[child] < link_floor
                    and w.link_density(child)
                    > (PRUNE_DATA_LINK_DENSITY if tag in DATA_TAGS else PRUNE_LINK_DENSITY)
                )
            ):
                doomed.append(child)
            else:
                stack.append((child, cell or tag in DATA_ROOTS))
    doomed.sort(reverse=True)
    for child in doomed:
        remove_element(walked.element(child))
    return len(doomed)


def _prune_factors(w: Weights, index: int) -> Sequence[float]:
    """The factors :func:`_prune` reads: a furniture-named element inside a sentence (an
    inline ``<a class="related-link">`` or ``<span class="date">`` whose text is part of a
    prose paragraph around it) is no branch of furniture, whatever its name: removing it
    would cut words out of the sentence. It owns no paragraph (its text is an ancestor's
    paragraph), so its own weight is nothing and the name alone would doom it. A paragraph
    that is not prose (a byline, a post's date line) loses its named parts as before.
    """
    m_of, chars, parents = w.factors, w.chars, w.walk.parents
    found = []
    for k in _named_below_one(m_of, index + 1):
        up = parents[k]
        while up > index:
            up = parents[up]
        if up < index:
            break  # past the content's subtree (preorder): so is every later one
        found.append(k)
    if not found:
        return m_of
    paragraphs: dict[int, list[Block]] | None = None
    out = array("d", m_of) if isinstance(m_of, array) else list(m_of)
    for k in found:
        if _formula(w.walk.element(k)):
            out[k] = 1.0
            continue
        if chars[k]:
            continue
        if paragraphs is None:
            paragraphs = _paragraphs_by_owner(w.walk)
        text = " ".join(_text_of(w.walk.element(k)).split())
        if not text:
            continue
        owner = parents[k]
        while owner >= 0 and owner not in paragraphs:
            owner = parents[owner]
        for block in paragraphs.get(owner, ()):
            if text in block.text:
                if len(block.text) > len(text) and is_prose(block):
                    out[k] = 1.0
                break
    return out


def _named_below_one(m_of: Sequence[float], start: int) -> list[int]:
    """The elements from ``start`` on whose factor is below 1 (a page has a few in
    thousands): the compiled walk's factors are read in one pass of the kernel. No numpy
    here: an analysis worker imports this module, and numpy alone takes a fifth of the
    address space a worker may be given (``VISDUP_ANALYSIS_MEMORY_MB``)."""
    if isinstance(m_of, array) and _kernel is not None and hasattr(_kernel, "below"):
        found: list[int] = _kernel.below(m_of, start, 1.0)
        return found
    return [k for k in range(start, len(m_of)) if m_of[k] < 1]


def _formula(el: Any) -> bool:
    """Whether an element is a MathML formula's wrapper (most of its text is the formula's),
    inline or a paragraph of its own: a formula is the text's own, and the class names a
    renderer gives its wrapper (MathJax's ``CtxtMenu_Attached``: a context menu is
    attached) name the renderer's menus, not the formula."""
    formulas = [char_count(_text_of(math)) for math in el.iter("math")]
    return bool(formulas) and sum(formulas) >= FORMULA_SHARE * char_count(_text_of(el))


def _paragraphs_by_owner(walked: Any) -> dict[int, list[Block]]:
    """The walk's paragraphs by the element that owns them."""
    found: dict[int, list[Block]] = {}
    for block in walked.blocks:
        found.setdefault(block.owner, []).append(block)
    return found


def _widen(w: Weights, best: int) -> int:
    """The chosen element, or the ancestor whose prose it is only a small part of.

    A manual's chapter of many short paragraphs around a table of contents (whose links cost)
    weighs less than its longest paragraph alone; a table's rows each hold a sentence. An
    ancestor with WIDEN_RATIO times the prose is the content, unless its name says furniture;
    comments, discounted by their names, count a quarter of theirs.
    """
    parents, good, m_of = w.walk.parents, w.good, w.factors
    while True:
        parent = parents[best]
        if parent < 0 or m_of[parent] < 1 or good[parent] < WIDEN_RATIO * good[best]:
            return best
        best = parent


def _parts(w: Weights, best: int) -> int:
    """The chosen element, or the parent of it (or of a wrapper around it and nothing else)
    when a sibling named alike holds prose too: an article split in parts around an advert
    (``story-body story-body-1``, ``story-body story-body-2``) is all of its parts."""
    parents, keys, good, m_of = w.walk.parents, w.walk.keys, w.good, w.factors
    sizes: list[int] | None = None
    part = best
    for _ in range(PARTS_LEVELS):
        parent = parents[part]
        if parent < 0 or m_of[parent] < 1:
            return best
        classes = keys[part][1]
        if classes:
            if sizes is None:
                sizes = subtree_sizes(parents)
            name, tag = _unnumbered(classes), keys[part][0]
            k, end = parent + 1, parent + sizes[parent]
            while k < end:  # the parent's children
                if (
                    k != part
                    and keys[k][0] == tag
                    and good[k] > 0
                    and m_of[k] >= 1
                    and keys[k][1]
                    and _unnumbered(keys[k][1]) == name
                ):
                    return parent
                k += sizes[k]
        if good[parent] > good[part]:
            return best  # the parent holds more than this part: no wrapper of it alone
        part = parent
    return best


def _unnumbered(classes: str) -> frozenset[str]:
    """An element's class names without their digits."""
    return frozenset(name.rstrip("-_0123456789") for name in classes.split())


def _thread(w: Weights, best: int) -> int | None:
    """The element holding the thread the chosen content is one post of, if it is one.

    A forum's posts, a guestbook's entries, a comment thread without an article: the best
    prose sits in (or is) one of THREAD_MIN_POSTS or more siblings of one tag named alike
    (``div.post``, ``li.comment``); then the thread is the content, every post of it. A
    blog's article is no such sibling: its comments stay out. Nested replies: the
    outermost list of posts that is long enough.
    """
    parents, keys = w.walk.parents, w.walk.keys
    found = None
    i = best
    while i > 0:
        words = post_words(keys[i])
        parent = parents[i]
        if words and parent >= 0:
            tag = keys[i][0]
            if _posts(w, parent, tag, words) >= THREAD_MIN_POSTS:
                found = parent
        i = parent
    return found


def _posts(w: Weights, parent: int, tag: str, words: frozenset[str]) -> int:
    """How many posts like one named ``words`` the element holds, replies nested in replies
    counted (its subtree ends at the first element whose parent comes before it)."""
    parents, keys, chars = w.walk.parents, w.walk.keys, w.chars
    count = 0
    for k in range(parent + 1, len(parents)):
        if parents[k] < parent:
            break
        key = keys[k]
        if key[0] == tag and chars[k] > 0 and not words.isdisjoint(post_words(key)):
            count += 1
    return count


def _thread_weights(w: Weights, thread: int) -> Weights:
    """The weights again, with the thread's elements weighed as a thread's (comments count)."""
    parents, keys = w.walk.parents, w.walk.keys
    inside = bytearray(len(parents))
    inside[thread] = 1
    m_of = list(w.factors)
    for k in range(thread + 1, len(parents)):
        if inside[parents[k]]:
            inside[k] = 1
            m_of[k] = thread_factor(keys[k])
        elif parents[k] < thread:
            break
    m_of[thread] = thread_factor(keys[thread])
    return weigh(w.walk, m_of)


def _short_page(w: Weights) -> list[tuple[str, int, str]]:
    """The content of a page without prose: its paragraphs outside furniture that are not
    mostly links.

    A test page of two headings, a note of three lines: nothing weighs as an article, yet the
    page says something. A 404 page's menus, search button and footer say nothing.
    """
    path, _ = w.ancestry()
    m_of = w.factors
    kept = [
        b
        for b in w.walk.blocks
        if path[b.owner] >= 1
        and m_of[b.owner] >= 1
        and b.link_chars <= SHORT_PAGE_LINK_SHARE * b.chars
    ]
    return join_blocks(kept)


def _tidy(blocks: list[tuple[str, int, str]], title: str | None) -> list[tuple[str, int, str]]:
    """Drop the title heading (kept apart) and headings left with nothing under them."""
    if title:
        folded = title.casefold()
        for i, (kind, _, text) in enumerate(blocks[:3]):
            if kind == "heading" and text.casefold() == folded:
                blocks = blocks[:i] + blocks[i + 1 :]
                break
    if all(kind == "heading" for kind, _, _ in blocks):
        return blocks  # a page of headings alone says what they say
    while blocks and blocks[-1][0] == "heading":
        blocks = blocks[:-1]
    return blocks


def extract(html: bytes | str) -> MainContent:
    """Parse and extract in one call; unusable input gives empty content, never an error."""
    doc = parse_html(html)
    if doc.root is None:
        return MainContent(None, None, "", [])
    return main_content(doc.root)
