"""Node weights of seed 001 (Wang & Zhang): where on the page the article is.

The seed's formula (1) is lost; the combination used here rewards text (t), punishes links
(k) and shallow nodes (d), and scales by what the author called the node (m):

- a paragraph is worth its characters minus LINK_COST x its link characters when it reads
  like prose, and costs PLAIN_COST x its plain and LINK_COST_NOT_PROSE x its link characters
  when it does not (menus, labels); a linked heading (a teaser card) costs
  LINKED_HEADING_COST x;
- S(Q) sums the paragraphs of Q's subtree; a child whose factor m is below 1 passes up only
  m of its positive sum;
- H(Q) = S(Q) x m(Q) x the smallest m among Q's ancestors x (1 + DEPTH_BONUS x min(d,
  DEPTH_CAP)), d the depth below the walked root; the node with the highest H is the content.

Every number here was chosen on the article-extraction benchmark (AEB) with
``bench/bench_content.py --set aeb`` and checked, untouched, on the Python and PostgreSQL
manuals (``--set python``, ``--set postgres``); the README has both tables.
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field

from visdup._native import kernel
from visdup.content.blocks import Block, Key, Walk

#: The compiled loops over every element (``visdup._native._weights``): the same sums, the
#: same element chosen; without it, the Python below.
_kernel = kernel("_weights")

#: Structural elements that hold page furniture rather than the article.
NOISE_TAGS = frozenset({"nav", "aside", "footer", "menu"})
#: Structural elements that hold the article.
CONTENT_TAGS = frozenset({"article", "main"})

#: class/id words that mark page furniture (weight factor below 1).
NOISE_WORDS = frozenset(
    {
        "nav", "navbar", "navigation", "menu", "footer", "sidebar", "aside", "complementary",
        "contentinfo", "ad", "ads", "advert", "advertisement", "advertising", "banner",
        "sponsor", "sponsored", "promo", "comment", "comments", "disqus", "share", "sharing",
        "social", "related", "recommended", "popular", "trending", "newsletter", "subscribe",
        "signup", "breadcrumb", "breadcrumbs", "widget", "cookie", "cookies", "consent", "gdpr",
        "modal", "popup", "masthead", "toolbar", "pagination", "pager", "tags", "taglist",
        "outbrain", "taboola", "byline", "author", "meta", "recirc", "teaser",
        "caption", "credit", "gallery", "slideshow", "date", "dateline", "timestamp", "header",
        "skip", "print", "topics", "readmore", "loadmore", "showmore", "viewmore",
    }
)  # fmt: skip
#: ``more`` marks furniture only beside one of these (``read-more``, ``loadMore``): alone it
#: is a section's slug (Sphinx's ``more-on-lists``) or a page's own call to learn more.
MORE_WORDS = frozenset({"read", "load", "show", "view", "see"})

#: A class word this long may be a compound of a furniture word and another...
COMPOUND_MIN_CHARS = 9
#: ...one of these furniture words, which say furniture whatever they are glued to (not
#: ``header``, ``author`` or ``caption``: Sphinx's ``headerlink`` is a heading's anchor,
#: DocBook's ``authorgroup`` a bibliography's entry).
_COMPOUND_WORDS = (
    "related", "comment", "footer", "sidebar", "social", "sharing", "newsletter", "subscribe",
    "sponsor", "advert", "breadcrumb", "recommend", "popular", "trending", "outbrain",
    "taboola", "disqus", "pagination", "navbar", "navigation", "masthead", "toolbar", "signup",
)  # fmt: skip

#: class/id words that mark the article itself (weight factor above 1).
CONTENT_WORDS = frozenset(
    {
        "article", "content", "post", "entry", "body", "story", "text", "main", "blog",
        "articlebody", "postbody", "entrycontent", "storybody", "richtext", "prose",
    }
)  # fmt: skip

#: m for a furniture element (nav, aside, footer, menu): below the 0.5 that lets a long
#: article inside a <nav>-wrapped page still win, above the word factor (a tag is a weaker
#: hint than a class the author chose).
NOISE_TAG_FACTOR = 0.3
#: m for a furniture class/id word: a comment list four times the article's length still
#: loses to it.
NOISE_WORD_FACTOR = 0.25
#: m for an article class/id word or <article>/<main>: breaks near-ties toward the article.
CONTENT_FACTOR = 1.5
#: m for schema.org's itemprop="articleBody": the page says where its article is.
ARTICLE_BODY_FACTOR = 2.0

#: The d of seed 001: weight gained per level below the walked root, up to DEPTH_CAP levels;
#: furniture sits shallower than the article.
DEPTH_BONUS = 0.02
DEPTH_CAP = 20

#: Prose needs this many characters: shorter runs are labels, buttons and dates.
MIN_PROSE_CHARS = 20
#: A run whose link characters exceed this share is navigation, whatever its length.
MAX_PROSE_LINK_SHARE = 0.6
#: A run this long is prose without further checks (no menu item is 90 characters).
LONG_PROSE_CHARS = 90
#: A run this long with a space and a sentence mark inside is prose too.
SENTENCE_PROSE_CHARS = 40
#: Link characters inside prose cost this much: a paragraph that is mostly links weighs less.
LINK_COST = 1.5
#: Plain characters outside prose cost this much (labels are weak evidence of furniture).
PLAIN_COST = 0.2
#: Link characters outside prose cost this much (menus are strong evidence).
LINK_COST_NOT_PROSE = 1.0
#: A heading whose link characters exceed this share is a teaser card's title...
LINKED_HEADING_SHARE = 0.5
#: ...and costs this much per character: a list of teasers is not the article.
LINKED_HEADING_COST = 3.0
#: Endings of a teaser for another page, not this page's prose.
TEASER_ENDINGS = ("…", "...", "[…]")

_WORD = re.compile(r"[a-z0-9]+")
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")
#: What ends a sentence, or a clause inside one.
_SENTENCE_MARKS = ".!?。！？;；:,，、"
_SENTENCE_END = re.compile(f"[{re.escape(_SENTENCE_MARKS)}]")

#: factor() by key: pages of a site repeat the same few (tag, class, id, role, itemprop).
_FACTORS: dict[Key, float] = {}
_FACTORS_MAX = 50_000
#: What ``_weights.key_factor`` reads :func:`_factor_of`'s rules from.
_FACTOR_TABLES = (
    NOISE_TAGS,
    CONTENT_TAGS,
    NOISE_WORDS,
    MORE_WORDS,
    CONTENT_WORDS,
    _COMPOUND_WORDS,
    COMPOUND_MIN_CHARS,
    NOISE_TAG_FACTOR,
    NOISE_WORD_FACTOR,
    CONTENT_FACTOR,
    ARTICLE_BODY_FACTOR,
)


def _words(key: Key) -> set[str]:
    """The words of a node's class, id, role and itemprop, lower case (camelCase split)."""
    words: set[str] = set()
    for attr in key[1:]:
        if attr:
            if not attr.islower():  # no upper case letter: no camelCase to split
                attr = _CAMEL.sub(" ", attr)
            words.update(_WORD.findall(attr.lower()))
    return words


def _noise_compound(word: str) -> bool:
    """A class word glued from a furniture word and another (``relatedposts``,
    ``commentlist``, ``sitefooter``): the furniture word at either end counts."""
    if len(word) < COMPOUND_MIN_CHARS:
        return False
    return word.startswith(_COMPOUND_WORDS) or word.endswith(_COMPOUND_WORDS)


def factor(key: Key) -> float:
    """The m of seed 001: what the page's author called this node, from its attribute key.

    The classes of <html> and <body> describe the whole page (``class="print"`` on a
    printer-friendly version), never a part of it, so they weigh nothing.
    """
    tag = key[0]
    if tag in ("html", "body"):
        return 1.0
    value = _FACTORS.get(key)
    if value is not None:
        return value
    if _kernel is not None:  # a key of ASCII words (most): read in C
        value = _kernel.key_factor(key, _FACTOR_TABLES)
    if value is None:
        value = _factor_of(tag, _words(key), key[4])
    if len(_FACTORS) >= _FACTORS_MAX:
        _FACTORS.clear()
    _FACTORS[key] = value
    return value


def _factor_of(tag: str, words: set[str], itemprop: str | None) -> float:
    """The factor of a key's words (:func:`_words`); ``_weights.key_factor`` is held to it."""
    value = 1.0
    if tag in NOISE_TAGS:
        value *= NOISE_TAG_FACTOR
    # itemprop="articleBody" is the page's own word: a widget's generated id on the same
    # element (a share bar's "gigya-share-btns" container) does not make it furniture.
    if itemprop != "articleBody" and (
        not words.isdisjoint(NOISE_WORDS)
        or any(map(_noise_compound, words))
        or ("more" in words and not words.isdisjoint(MORE_WORDS))
    ):
        value *= NOISE_WORD_FACTOR
    if not words.isdisjoint(CONTENT_WORDS) or tag in CONTENT_TAGS:
        value *= CONTENT_FACTOR
    if itemprop == "articleBody":
        value *= ARTICLE_BODY_FACTOR
    return value


#: Class names of one post of a discussion (``div.post``, ``li.comment``, Discourse's
#: ``crawler-post``, vBulletin's ``postcontainer``, a Q&A site's ``answer``): siblings
#: named alike make a thread. Whole class names, not words of one (``post-content`` is an
#: article's body).
POST_WORDS = frozenset({"post", "comment", "reply", "message", "answer"})
_POST_PREFIXES = ("post", "comment", "reply", "message")


def post_words(key: Key) -> frozenset[str]:
    """The class names of a node that say it is one post of a discussion."""
    classes = key[1]
    if not classes:
        return frozenset()
    found = set()
    for name in classes.lower().split():
        last = name.rsplit("-", 1)[-1]
        if last in POST_WORDS:
            found.add(last)
        elif len(name) >= COMPOUND_MIN_CHARS and name.isalpha():
            found.update(p for p in _POST_PREFIXES if name.startswith(p))
    return frozenset(found)


#: Words that discount a discussion's posts on an article's page; inside a thread they are
#: the content.
THREAD_WORDS = frozenset({"comment", "comments", "commentlist"})


def thread_factor(key: Key) -> float:
    """:func:`factor` of a node inside a thread, where a comment is no furniture."""
    tag = key[0]
    if tag in ("html", "body"):
        return 1.0
    words = {
        w for w in _words(key) if w not in THREAD_WORDS and not (
            len(w) >= COMPOUND_MIN_CHARS and (w.startswith("comment") or w.endswith("comment"))
        )
    }  # fmt: skip
    return _factor_of(tag, words, key[4])


#: Names of the one piece of furniture that never holds a page's article: its footer. Not a
#: menu (a restaurant's), a cookie (a recipe's), a <nav> (whole pages are wrapped in one), a
#: widget (page builders wrap whole articles in ``elementor-widget-container``: 4 of AEB's
#: pages) or a sidebar.
FOOTER_TAGS = frozenset({"footer"})
FOOTER_WORDS = frozenset({"footer", "contentinfo", "copyright"})


def in_footer(walk: Walk, index: int) -> bool:
    """Whether element ``index`` of a walk sits in the page's footer: it or an ancestor is
    named a footer (``<footer>``, ``class="footer"``, ``role="contentinfo"``) before any is
    named for content (``<article>``, ``<main>``, ``entry-footer``, ``articleBody``)."""
    keys, parents = walk.keys, walk.parents
    i = index
    while i >= 0:
        key = keys[i]
        tag = key[0]
        if tag in ("html", "body"):
            return False
        words = _words(key)
        if tag in CONTENT_TAGS or key[4] == "articleBody" or not words.isdisjoint(CONTENT_WORDS):
            return False
        if tag in FOOTER_TAGS or not words.isdisjoint(FOOTER_WORDS):
            return True
        i = parents[i]
    return False


def is_teaser(block: Block) -> bool:
    """A paragraph that announces another page: a linked heading, or an excerpt cut short."""
    if block.kind == "heading":
        return block.link_chars > LINKED_HEADING_SHARE * block.chars
    return block.chars >= MIN_PROSE_CHARS and block.text.endswith(TEASER_ENDINGS)


def is_prose(block: Block) -> bool:
    """Prose rather than furniture: long enough, few links, sentence-like."""
    if block.chars < MIN_PROSE_CHARS:
        return False
    if block.link_chars > MAX_PROSE_LINK_SHARE * block.chars:
        return False
    text = block.text
    if text.endswith(TEASER_ENDINGS):
        return False
    return (
        block.chars >= LONG_PROSE_CHARS
        or bool(_SENTENCE_END.search(text[-2:] or ""))
        or (
            block.chars >= SENTENCE_PROSE_CHARS and " " in text and bool(_SENTENCE_END.search(text))
        )
    )


def block_value(block: Block) -> float:
    """What one paragraph says about its owner: prose is worth its length, furniture costs."""
    if block.kind == "heading":
        if block.link_chars > LINKED_HEADING_SHARE * block.chars:
            return -LINKED_HEADING_COST * block.chars
        return 0.0
    if is_prose(block):
        return float(block.chars - LINK_COST * block.link_chars)
    return -PLAIN_COST * (block.chars - block.link_chars) - LINK_COST_NOT_PROSE * block.link_chars


@dataclass
class Weights:
    """Per-element sums over the paragraphs of its subtree, by element number."""

    walk: Walk
    # lists, or arrays (``d``, ``q``) when the compiled kernel made them
    net: Sequence[float]  # S(Q): prose minus furniture
    good: Sequence[float]  # prose characters alone (discounted by furniture factors)
    chars: Sequence[int]
    links: Sequence[int]
    teasers: Sequence[float]  # characters of teasers (linked headings, cut excerpts)
    teaser_count: Sequence[int]
    linked: Sequence[float]  # link characters, discounted like the prose (an index's content)
    factors: Sequence[float]  # m of every element, read once per page
    _ancestry: tuple[Sequence[float], Sequence[int]] | None = field(default=None, repr=False)

    def factor(self, i: int) -> float:
        return self.factors[i]

    def link_density(self, i: int) -> float:
        return self.links[i] / max(1, self.chars[i])

    def ancestry(self) -> tuple[Sequence[float], Sequence[int]]:
        """Per element: the smallest furniture factor of its ancestors (the root's aside),
        and its depth. The same for every score :func:`choose` ranks: made once a page."""
        if self._ancestry is None and _kernel is not None and isinstance(self.factors, array):
            path_bytes, depth_bytes = _kernel.ancestry(self.walk.parents, self.factors)
            self._ancestry = (array("d", path_bytes), array("q", depth_bytes))
        if self._ancestry is None:
            parents = self.walk.parents
            m_of = self.factors
            n = len(parents)
            path = [1.0] * n
            depth = [0] * n
            for i in range(1, n):
                parent = parents[i]
                if parent:
                    m = m_of[parent]
                    p = path[parent]
                    path[i] = p if p < m else m
                depth[i] = depth[parent] + 1
            self._ancestry = (path, depth)
        return self._ancestry


def weigh(walk: Walk, m_of: Sequence[float] | None = None) -> Weights:
    """S(Q) and the prose of every element, summed bottom-up over the walk's paragraphs.

    A subtree whose factor says furniture (comments, related links) passes up only that
    share of its prose, so that a parent holding article and comments scores below the
    article alone. ``m_of``: the factors to use instead of each element's own.
    """
    if m_of is None:
        m_of = walk.factors  # the compiled walk asked factor() once per distinct key
    if m_of is None:
        cached = _FACTORS.get  # most keys were met on earlier pages: no call for those
        m_of = [cached(key) or factor(key) for key in walk.keys]
    if _kernel is not None:
        # every paragraph valued in C, as block_value and is_teaser value it
        factors = m_of if isinstance(m_of, array) else array("d", m_of)
        rules = (
            MIN_PROSE_CHARS, LONG_PROSE_CHARS, SENTENCE_PROSE_CHARS, MAX_PROSE_LINK_SHARE,
            LINK_COST, PLAIN_COST, LINK_COST_NOT_PROSE, LINKED_HEADING_SHARE,
            LINKED_HEADING_COST, TEASER_ENDINGS, _SENTENCE_MARKS,
        )  # fmt: skip
        if walk.rows is not None and walk.columns is not None:  # the compiled walk's
            sums = _kernel.weigh_rows(walk.parents, walk.rows, walk.columns, factors, *rules)
        else:
            sums = _kernel.weigh_blocks(walk.parents, walk.blocks, factors, *rules)
        net_, good_, chars_, links_, teasers_, count_, linked_ = (
            array(code, raw) for code, raw in zip("ddqqdqd", sums, strict=True)
        )
        return Weights(walk, net_, good_, chars_, links_, teasers_, count_, linked_, factors)
    n = len(walk.parents)
    net = [0.0] * n
    good = [0.0] * n
    chars = [0] * n
    links = [0] * n
    teasers = [0.0] * n
    count = [0] * n
    linked = [0.0] * n
    w = Weights(walk, net, good, chars, links, teasers, count, linked, m_of)
    for block in walk.blocks:
        value = block_value(block)
        owner = block.owner
        net[owner] += value
        chars[owner] += block.chars
        links[owner] += block.link_chars
        linked[owner] += block.link_chars
        if value > 0:
            good[owner] += block.chars - block.link_chars
        if is_teaser(block):
            teasers[owner] += block.chars
            count[owner] += 1
    parents = walk.parents
    for i in range(n - 1, 0, -1):
        c = chars[i]
        if not c:
            continue
        parent = parents[i]
        s, g, t = net[i], good[i], teasers[i]
        # The factor only scales what is positive: skip its lookup for the rest.
        m = min(1.0, m_of[i]) if s > 0 or g or t or linked[i] else 1.0
        net[parent] += s * m if s > 0 else s
        good[parent] += g * m
        teasers[parent] += t * m
        count[parent] += count[i]
        linked[parent] += linked[i] * m
        chars[parent] += c
        links[parent] += links[i]
    return w


def choose(w: Weights, score: Sequence[float] | None = None) -> int:
    """The element with the highest weight H (its number), deeper elements winning ties.

    H = S(Q) · m(Q) · the furniture discounts of Q's ancestors: one comment inside a
    comment list does not win over the article however long it is. ``score`` replaces S(Q)
    (the listing fallback weighs teasers instead).
    """
    values = w.net if score is None else score
    m_of = w.factors
    path, depth = w.ancestry()
    if _kernel is not None and isinstance(values, array) and isinstance(path, array):
        return int(_kernel.choose(values, m_of, path, depth, DEPTH_BONUS, DEPTH_CAP))
    best, best_score = 0, float("-inf")
    for i in range(len(path)):
        s = values[i]
        if s <= 0:
            continue
        d = depth[i]
        bonus = 1 + DEPTH_BONUS * (d if d < DEPTH_CAP else DEPTH_CAP)
        weighted = s * m_of[i] * path[i] * bonus
        if weighted >= best_score:
            best, best_score = i, weighted
    return best
