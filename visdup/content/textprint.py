"""Content fingerprints: text structure tree, long sentences, layered fingerprints (seed 002).

A hash of a whole paragraph breaks on one changed character; the few longest sentences of
each paragraph survive small edits, inserted ads and template text. Fingerprints are layered
(paragraph -> section -> document) so that exact mirrors are told from partial ones, and a
64-bit SimHash of the long sentences feeds the near-duplicate index.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property, lru_cache, partial
from operator import methodcaller
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from visdup._native import kernel
from visdup.structure.fingerprint import hamming, hash64, simhash64

#: Long sentences kept per paragraph.
LONG_SENTENCES = 2
#: Sentences shorter than this (normalised characters) carry no identity ("Read more.").
MIN_SENTENCE_CHARS = 15
#: Share of matching long sentences or paragraphs (or of the smaller page contained in the
#: larger) from which two pages are partial mirrors; VISDUP_CONTENT_THRESHOLD in a crawl.
PARTIAL_THRESHOLD = 0.8
#: A page this small (in long sentences) is not called a partial copy for being contained.
MIN_CONTAINED_SENTENCES = 3
#: Words per SimHash shingle.
SHINGLE_WORDS = 3

_FORMAT_VERSION = 1

# A Western terminator needs whitespace after it (3.5 and example.com stay whole); closing
# quotes and brackets, French-spaced or not, stay with their sentence. CJK terminators end a
# sentence on the spot.
_WESTERN_END = re.compile(r"([.!?;…](?:\s?[\"'”’»)\]])*)\s+")
_CJK_END = re.compile(r"([。！？；][」』”’）)]*)")
_SPACE = re.compile(r"\s+")
# CJK ideographs, kana and hangul syllables count one token each: they use no spaces.
_TOKEN = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]|\w+")


#: The compiled text-print kernel (``visdup._native._text``): the same values, computed in C.
_kernel = kernel("_text")

#: The 64-bit hash of every layer (the structural fingerprint's, one function for both).
_hash64 = hash64


class _Blanking(dict[int, str]):
    """str.translate table: punctuation, symbols, separators and controls become spaces.

    Filled lazily from the Unicode categories, so translate runs at C speed once a
    character has been seen.
    """

    def __missing__(self, code: int) -> str:
        char = chr(code)
        value = " " if unicodedata.category(char)[0] in "PSZC" else char
        self[code] = value
        return value


_BLANKING = _Blanking()


#: The same blanking for ASCII, with case folded (NFKC changes no ASCII character, and
#: casefold is lower there): bytes.translate runs it without a lookup per character.
_ASCII_BLANKING = bytes([ord(_BLANKING[c].lower()) for c in range(128)] + list(range(128, 256)))


#: ``_ASCII_BLANKING`` that leaves line breaks (the sentence breaks split_sentences marks).
_ASCII_BLANKING_LINES = _ASCII_BLANKING[:10] + b"\n" + _ASCII_BLANKING[11:]


#: Where the compiled kernel looks for characters outside ASCII that normalise to blanks
#: (Latin-1 to CJK punctuation, half- and full-width forms, emoji): a page's dashes, quotes,
#: pilcrows and arrows. Any other character sends a text to Python.
_BLANK_RANGES = ((0x80, 0x3040), (0xFE00, 0x10000), (0x1F000, 0x1FB00))
#: CJK sentence ends: a text that holds one is split by _CJK_END, which the kernel does not do.
_CJK_TERMINATORS = frozenset("。！？；")


@lru_cache(maxsize=1)
def _blanks() -> bytes:
    """The kernel's bitmap of characters outside ASCII that :func:`normalise` turns to blanks
    wherever they stand (alone they leave nothing, and NFKC joins them to no neighbour).

    Made from this Python's unicodedata on first use, so that kernel and Python read one
    Unicode version.
    """
    bits = bytearray(_BLANK_RANGES[-1][1] // 8)
    for low, high in _BLANK_RANGES:
        for code in range(low, high):
            char = chr(code)
            if char in _CJK_TERMINATORS or unicodedata.category(char) == "Cs":
                continue
            if unicodedata.combining(char) or _python_normalise(char):
                continue
            folded = unicodedata.normalize("NFKC", char)
            if unicodedata.normalize("NFKC", "a" + char + "a") != "a" + folded + "a":
                continue
            bits[code >> 3] |= 1 << (code & 7)
    return bytes(bits)


def normalise(text: str) -> str:
    """Case-fold, drop punctuation and symbols, collapse whitespace: what edits rarely touch."""
    if _kernel is not None:
        value = _kernel.normalise(text, _blanks())
        if value is not None:  # None: a letter outside ASCII, for NFKC and case folding
            return value
    return _python_normalise(text)


def _python_normalise(text: str) -> str:
    """:func:`normalise` where the one-pass kernel declines (a letter outside ASCII): NFKC and
    case folding are Python's; the blanking after them is the kernel's ``blanked`` where it is
    built (the table's answers, kept), else ``str.translate``."""
    if text.isascii():
        return " ".join(text.encode("ascii").translate(_ASCII_BLANKING).decode("ascii").split())
    folded = unicodedata.normalize("NFKC", text).casefold()
    if _kernel is not None:  # str.translate looks the table up for every character
        return str(_kernel.blanked(folded, _is_blank))
    return " ".join(folded.translate(_BLANKING).split())


def _is_blank(code: int) -> bool:
    """Whether normalising blanks the character ``code`` once NFKC and case folding are done
    (the kernel's ``blanked`` keeps each answer)."""
    return _BLANKING[code] == " "


def split_sentences(text: str) -> list[str]:
    """Sentences of a paragraph on . ! ? ; and 。！？；, in order, empty ones dropped."""
    marked = _WESTERN_END.sub("\\1\n", text)
    if not marked.isascii():  # CJK terminators are not ASCII
        marked = _CJK_END.sub("\\1\n", marked)
    parts = (p.strip() for p in marked.split("\n"))
    return [p for p in parts if p]


def long_sentences(paragraph: str, keep: int = LONG_SENTENCES) -> list[str]:
    """The `keep` longest normalised sentences of a paragraph, in their original order."""
    if _kernel is not None and keep >= 0:  # the same in one pass of C
        found = _kernel.long_sentences(paragraph, keep, MIN_SENTENCE_CHARS, _blanks())
        if found is not None:  # None: a letter outside ASCII
            return found
    return _python_long_sentences(paragraph, keep)


def _python_long_sentences(paragraph: str, keep: int = LONG_SENTENCES) -> list[str]:
    plain = paragraph.isascii()
    if len(paragraph) < MIN_SENTENCE_CHARS and plain:
        return []  # normalising ASCII never lengthens it: no sentence here is long enough
    if plain:
        # split_sentences and normalise in one pass: the blanking keeps the sentence breaks
        marked = _WESTERN_END.sub("\\1\n", paragraph).encode("ascii")
        parts = marked.translate(_ASCII_BLANKING_LINES).decode("ascii").split("\n")
        normed = [" ".join(p.split()) for p in parts]
    else:
        normed = [_python_normalise(s) for s in split_sentences(paragraph)]
    indexed = [(i, s) for i, s in enumerate(normed) if len(s) >= MIN_SENTENCE_CHARS]
    if len(indexed) <= keep:  # most paragraphs: all of them, already in order
        return [s for _, s in indexed]
    longest = sorted(indexed, key=lambda item: (-len(item[1]), item[0]))[:keep]
    return [s for _, s in sorted(longest)]


@dataclass
class TextNode:
    """A node of the text structure tree: the document, a section under a heading, a paragraph."""

    kind: str
    level: int
    text: str = ""
    children: list[TextNode] = field(default_factory=list)
    sentences: tuple[str, ...] = ()
    fingerprint: int = 0


def structure_tree(blocks: Iterable[tuple[str, int, str]]) -> TextNode:
    """Document -> sections by heading level -> paragraphs, with layered fingerprints.

    A heading opens a section under the nearest open section of a higher rank; paragraphs
    hang under the innermost open section. Paragraphs without a long sentence are left out.
    """
    root = TextNode("document", 0)
    open_sections = [root]
    for kind, level, text in blocks:
        if kind == "heading":
            level = max(1, min(6, level or 1))
            while open_sections[-1].level >= level and len(open_sections) > 1:
                open_sections.pop()
            section = TextNode("section", level, text)
            open_sections[-1].children.append(section)
            open_sections.append(section)
            continue
        sentences = tuple(long_sentences(text))
        if sentences:
            node = TextNode("paragraph", 7, text, sentences=sentences)
            node.fingerprint = _hash64("\n".join(sentences))
            open_sections[-1].children.append(node)
    _fingerprint_sections(root)
    return root


def _fingerprint_sections(root: TextNode) -> None:
    """Bottom-up without recursion: a section's fingerprint hashes its heading and children."""
    order: list[TextNode] = []
    stack = [root]
    while stack:
        node = stack.pop()
        if node.kind != "paragraph":
            order.append(node)
            stack.extend(node.children)
    for node in reversed(order):
        parts = [normalise(node.text)] + [f"{c.fingerprint:016x}" for c in node.children]
        node.fingerprint = _hash64("\x1f".join(parts))


def _walk(root: TextNode) -> list[TextNode]:
    out: list[TextNode] = []
    stack = [root]
    while stack:
        node = stack.pop()
        out.append(node)
        stack.extend(reversed(node.children))
    return out


def _shingles(sentences: Iterable[str]) -> Counter[str]:
    counts: Counter[str] = Counter()
    join = " ".join
    for sentence in sentences:
        tokens = _TOKEN.findall(sentence)
        if len(tokens) > SHINGLE_WORDS:  # every window of SHINGLE_WORDS tokens, counted in C
            windows = zip(*(tokens[i:] for i in range(SHINGLE_WORDS)), strict=False)
            counts.update(map(join, windows))
        else:  # a short sentence is one shingle (an empty one too, as ever)
            counts[join(tokens)] += 1
    return counts


@lru_cache(maxsize=1)
def _numpy() -> Any:
    """numpy, imported on first use: with the compiled kernel no page needs it, and an
    analysis worker process then starts without it (None: not installed, the plain SimHash
    serves)."""
    try:
        import numpy
    except ImportError:  # pragma: no cover
        return None
    return numpy


_BLAKE8 = partial(hashlib.blake2b, digest_size=8)
_DIGEST = methodcaller("digest")

#: Shingles whose hash bits are summed at a time (a 4 MiB block of int64 bits).
_SLICE = 8192


def _shingle_simhash(shingles: Counter[str]) -> int:
    """``simhash64`` of the shingles weighted by their counts (capped at 255), vectorised.

    Shingles rarely repeat across pages, so the per-feature work of the general SimHash is
    paid in full for each: here the hashes are summed per bit by numpy in one product.
    """
    items = [(s, c if c < 255 else 255) for s, c in shingles.items()]
    np = _numpy() if len(items) >= 16 else None
    if np is None:
        return simhash64(items)
    # every hash made in C: map over partial and methodcaller runs no Python frame per shingle
    # (the shingles in the order of ``items``, which was read from them)
    hashed = map(_BLAKE8, map(str.encode, shingles))
    digests = np.frombuffer(b"".join(map(_DIGEST, hashed)), dtype=np.uint8).reshape(-1, 8)
    weights = np.fromiter((c for _, c in items), dtype=np.int64, count=len(items))
    ones = np.zeros(64, dtype=np.int64)
    # In slices: the bit matrix as int64 is 512 bytes per shingle, 100 MB on a 4 MB page.
    for start in range(0, len(items), _SLICE):
        # Row k: the 64 bits of shingle k's big-endian hash, most significant first.
        bits = np.unpackbits(digests[start : start + _SLICE], axis=1)
        ones += weights[start : start + _SLICE] @ bits.astype(np.int64)
    # Bit i is set when the weight of features having it outweighs that of the others.
    mask = 2 * ones > int(weights.sum())
    return int.from_bytes(np.packbits(mask).tobytes(), "big")


def shingle_simhash(sentences: list[str]) -> int:
    """The SimHash of the sentences' shingles (0 for none): the near-duplicate index's key."""
    if _kernel is not None:
        return int(_kernel.shingle_simhash(sentences, SHINGLE_WORDS))
    shingles = _shingles(sentences)
    return _shingle_simhash(shingles) if shingles else 0


#: Runs of digits, and hex or dashed ids with a digit in them (session ids, UUIDs, request
#: ids): what varies from one URL of a family to the next.
#: (The leading lookahead changes no match: both branches start so. It lets the scan skip
#: every other character at once.)
_NUMBERS = re.compile(r"(?=[\da-f])(?:\b(?=[0-9a-f]*[0-9])[0-9a-f]{6,}\b|\d+)")


def visible_key(text: str, url: str | None = None) -> int:
    """64-bit hash of a page's whole visible text, without what varies per URL.

    Thin pages (a login wall, a soft 404, an empty result list) are told apart by all the
    text they show, read the way a reader compares them: case, punctuation and whitespace
    aside, numbers and ids as one placeholder, and the page's own URL (its path, its query
    values: a ``ReturnUrl`` echoed back, the missing path a 404 names) taken out.
    """
    norm = " " + normalise(text) + " "
    if url:
        parts = urlsplit(url)
        echoes = [parts.path, parts.path + "?" + parts.query if parts.query else ""]
        echoes += [value for _key, value in parse_qsl(parts.query, keep_blank_values=True)]
        pieces = {normalise(unquote(e)) for e in echoes if e}
        for piece in sorted(pieces, key=len, reverse=True):  # a whole URL before its path
            if piece:
                norm = norm.replace(" " + piece + " ", " ")
    norm = _kernel.numbers_zeroed(norm) if _kernel is not None else _NUMBERS.sub("0", norm)
    norm = norm.strip()  # single spaces throughout: normalise made them
    return _hash64(norm) if norm else 0


@dataclass(frozen=True)
class ContentPrint:
    """A page's storable content fingerprint: exact layers plus a SimHash for the index.

    ``thin`` is the :func:`visible_key` of the whole page (0: not computed): pages too thin
    for the layers are compared by it. ``listing``: the content is a list of teasers or links
    to other pages (:attr:`visdup.content.main.MainContent.listing`).
    """

    document: int
    simhash: int
    sections: tuple[int, ...]
    paragraphs: tuple[int, ...]
    sentences: tuple[int, ...]
    thin: int = 0
    listing: bool = False

    @property
    def empty(self) -> bool:
        return not self.sentences

    @cached_property
    def sentence_set(self) -> frozenset[int]:
        """The long sentences as a set, made once: the content channel's shared-sentence index
        and the print's summary keep this one object, not a copy each."""
        return frozenset(self.sentences)

    def to_json(self) -> str:
        # Hex strings: 64-bit integers lose bits in JSON readers that use doubles.
        return json.dumps(
            {
                "v": _FORMAT_VERSION,
                "document": f"{self.document:016x}",
                "simhash": f"{self.simhash:016x}",
                "sections": [f"{x:016x}" for x in self.sections],
                "paragraphs": [f"{x:016x}" for x in self.paragraphs],
                "sentences": [f"{x:016x}" for x in self.sentences],
                **({"thin": f"{self.thin:016x}"} if self.thin else {}),
                **({"listing": True} if self.listing else {}),
            },
            separators=(",", ":"),
        )

    @classmethod
    def from_json(cls, text: str | bytes) -> ContentPrint:
        data: dict[str, Any] = json.loads(text)
        if data.get("v") != _FORMAT_VERSION:
            raise ValueError(f"unknown content print version {data.get('v')!r}")
        return cls(
            document=int(data["document"], 16),
            simhash=int(data["simhash"], 16),
            sections=tuple(int(x, 16) for x in data["sections"]),
            paragraphs=tuple(int(x, 16) for x in data["paragraphs"]),
            sentences=tuple(int(x, 16) for x in data["sentences"]),
            thin=int(data.get("thin", "0"), 16),
            listing=bool(data.get("listing", False)),
        )


def content_print(
    blocks: Iterable[tuple[str, int, str]],
    *,
    visible: str | None = None,
    url: str | None = None,
    thin_below: int | None = None,
    listing: bool = False,
) -> ContentPrint:
    """Fingerprint main-content blocks (`MainContent.blocks`).

    ``visible``: the page's whole visible text (`MainContent.page_text`), keyed for thin
    pages with :func:`visible_key` (``url`` names what varies per URL); with ``thin_below``,
    only when the page has fewer long sentences than that.
    """
    if _kernel is not None:
        if not isinstance(blocks, list | tuple):
            blocks = list(blocks)  # read twice when the kernel hands a block to Python
        layers = _kernel.layers(
            blocks,
            LONG_SENTENCES,
            MIN_SENTENCE_CHARS,
            _blanks(),
            SHINGLE_WORDS,
            _python_normalise,
            _python_long_sentences,
        )
        if layers is not None:  # the tree's fingerprints, made without the tree
            document, sections, paragraphs, hashes, simhash = layers
            return ContentPrint(
                document=document,
                simhash=simhash,
                sections=sections,
                paragraphs=paragraphs,
                sentences=hashes,
                thin=_thin(visible, url, thin_below, len(hashes)),
                listing=listing,
            )
    tree = structure_tree(blocks)
    nodes = _walk(tree)
    paragraph_nodes = [n for n in nodes if n.kind == "paragraph"]
    sentences = [s for p in paragraph_nodes for s in p.sentences]
    return ContentPrint(
        document=tree.fingerprint if sentences else 0,
        simhash=shingle_simhash(sentences),
        sections=tuple(n.fingerprint for n in nodes if n.kind == "section"),
        paragraphs=tuple(p.fingerprint for p in paragraph_nodes),
        sentences=tuple(map(_hash64, sentences)),
        thin=_thin(visible, url, thin_below, len(sentences)),
        listing=listing,
    )


def _thin(visible: str | None, url: str | None, thin_below: int | None, sentences: int) -> int:
    """The visible key of a page too thin for its layers (0: not wanted)."""
    if visible and (thin_below is None or sentences < thin_below):
        return visible_key(visible, url)
    return 0


def text_print(text: str) -> ContentPrint:
    """Fingerprint plain text: paragraphs are separated by blank lines, there are no headings."""
    paragraphs = [p for p in re.split(r"\n\s*\n", text) if p.strip()]
    return content_print(("paragraph", 0, p) for p in paragraphs)


@dataclass(frozen=True)
class ContentMatch:
    """How much of two pages' main content is the same."""

    score: float
    kind: str | None
    sections: float
    paragraphs: float
    sentences: float
    containment: float
    simhash_distance: int
    #: The content channel's score: 1 for a mirror, else the larger of ``score`` and
    #: ``containment``, or ``score`` alone when either page is a listing.
    measure: float = 0.0


def _common(a: Sequence[int], b: Sequence[int]) -> int:
    """Size of the multiset intersection; plain sets when neither side repeats a value."""
    sa, sb = set(a), set(b)
    if len(sa) == len(a) and len(sb) == len(b):
        return len(sa & sb)
    return sum((Counter(a) & Counter(b)).values())


def _dice(a: Sequence[int], b: Sequence[int], common: int | None = None) -> float:
    if not a or not b:
        return 0.0
    if common is None:
        common = _common(a, b)
    return 2 * common / (len(a) + len(b))


def _containment(a: Sequence[int], b: Sequence[int], common: int | None = None) -> float:
    if not a or not b:
        return 0.0
    if common is None:
        common = _common(a, b)
    return common / min(len(a), len(b))


def compare(
    a: ContentPrint, b: ContentPrint, *, threshold: float = PARTIAL_THRESHOLD
) -> ContentMatch:
    """Top-down over the layers: document, sections, paragraphs, long sentences.

    score is the larger of the paragraph and sentence overlaps (Dice): the paragraph layer
    is exact, the sentence layer survives a changed sentence. "mirror" needs identical
    document fingerprints; "partial" a score at or above the threshold, or the smaller page
    (of at least MIN_CONTAINED_SENTENCES long sentences) contained in the larger at that
    share. Pages without long sentences match nothing. Containment does not count when
    either page is a listing: a section's table of contents lies whole inside the manual's,
    a category's teasers inside the home page's, and neither copies the other.
    """
    distance = hamming(a.simhash, b.simhash)
    if a.empty or b.empty:
        return ContentMatch(0.0, None, 0.0, 0.0, 0.0, 0.0, distance)
    if a.document == b.document:
        return ContentMatch(1.0, "mirror", 1.0, 1.0, 1.0, 1.0, distance, 1.0)
    sections = _dice(a.sections, b.sections)
    paragraphs = _dice(a.paragraphs, b.paragraphs)
    shared = _common(a.sentences, b.sentences)
    sentences = _dice(a.sentences, b.sentences, shared)
    containment = _containment(a.sentences, b.sentences, shared)
    score = max(paragraphs, sentences)
    listing = a.listing or b.listing
    contained = (
        not listing
        and containment >= threshold
        and min(len(a.sentences), len(b.sentences)) >= MIN_CONTAINED_SENTENCES
    )
    kind = "partial" if score >= threshold or contained else None
    measure = score if listing else max(score, containment)
    return ContentMatch(
        score, kind, sections, paragraphs, sentences, containment, distance, measure
    )
