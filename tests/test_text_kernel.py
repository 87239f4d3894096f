"""The compiled text-print kernel (``visdup._native._text``) gives what Python gives.

BLAKE2b-64 against hashlib, long sentences and normalising against the Python functions on
adversarial text (every terminator, closer and whitespace of the sentence rule, characters
outside ASCII that blank and ones that do not), the shingle SimHash against the general one,
and whole content prints of real pages with the kernel and without.
"""

from __future__ import annotations

import gzip
import hashlib
import random
from pathlib import Path

import pytest
from kernels import python_kernels

from visdup.content import main_content, textprint
from visdup.content.textprint import (
    MIN_SENTENCE_CHARS,
    SHINGLE_WORDS,
    _blanks,
    _python_long_sentences,
    _python_normalise,
    _shingle_simhash,
    _shingles,
    content_print,
)
from visdup.page.parse import parse_html
from visdup.structure.fingerprint import python_hash64

_text = pytest.importorskip("visdup._native._text", reason="text-print kernel not built")

FIXTURES = Path(__file__).parent / "fixtures"
AEB = Path(__file__).resolve().parents[2] / "shared" / "data" / "aeb" / "html"

#: What the sentence rule and the blanking turn on: terminators (… too), closers (” ’ »),
#: every kind of whitespace \s knows, line breaks, blanks outside ASCII (quotes, dashes,
#: pilcrows, NBSP, soft hyphen, zero-width space, emoji) and letters outside ASCII (é, ß,
#: Cyrillic, CJK, a ligature and ™ that NFKC rewrites), CJK terminators.
ALPHABET = (
    list("aZ09 xy_.!?;\"')],-:\n\t\r\x0b\x0c\x1c\x1f")
    + list("…”’»“‘¶§—–\xa0\u2009\u2028\u3000\u00ad\u200b→©€½")
    + list("éßжд中かﬁ™ǅ。！？；")
    + ["\U0001f600"]
)


def _python_hash(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "big")


def _random_texts(seed: int, count: int, alphabet: list[str], longest: int) -> list[str]:
    rng = random.Random(seed)
    return [
        "".join(rng.choice(alphabet) for _ in range(rng.randrange(longest))) for _ in range(count)
    ]


def test_blake64_equals_hashlib_across_block_boundaries() -> None:
    rng = random.Random(1)
    lengths = [*range(0, 300), 383, 384, 385, 1000, 10_000]
    for n in lengths:
        text = "".join(rng.choice("ab .\u00e9\u4e00\U0001f600") for _ in range(n))
        assert _text.blake64(text) == _python_hash(text), n
    texts = _random_texts(2, 200, ALPHABET, 60)
    assert _text.blake64_many(texts) == [_python_hash(t) for t in texts]
    with pytest.raises(UnicodeEncodeError):  # a lone surrogate, as str.encode says
        _text.blake64("a\ud800b")


def test_long_sentences_and_normalise_equal_python() -> None:
    fast = slow = 0
    mostly_ascii = [*"abcdefgh  .;…”\xa0", "' ", ". )"]
    for i, text in enumerate(
        _random_texts(3, 30_000, ALPHABET, 90) + _random_texts(4, 10_000, mostly_ascii, 120)
    ):
        keep = (2, 0, 1, 5)[i % 4]
        expected = _python_long_sentences(text, keep)
        assert textprint.long_sentences(text, keep) == expected, repr(text)
        assert textprint.normalise(text) == _python_normalise(text), repr(text)
        if _text.long_sentences(text, keep, MIN_SENTENCE_CHARS, _blanks()) is None:
            slow += 1
        else:
            fast += 1
    assert fast > 10_000 and slow > 10_000  # both paths were taken, many times


def test_blanks_hold_punctuation_and_no_letters() -> None:
    blanks = _blanks()

    def blank(char: str) -> bool:
        code = ord(char)
        return code < len(blanks) * 8 and bool(blanks[code >> 3] >> (code & 7) & 1)

    for char in "…”’»“‘¶§—–\xa0\u2009\u3000\u00ad\u200b→©€\U0001f600":
        assert blank(char), hex(ord(char))
    for char in "éßж中ﬁ™½。！？；\u0301":  # letters, what NFKC rewrites, CJK sentence ends
        assert not blank(char), hex(ord(char))


def test_shingle_simhash_equals_the_general_one() -> None:
    words = list("ab cd_e.") + list("é中文かёß٣² ")
    rng = random.Random(5)
    for _ in range(3000):
        sentences = _random_texts(rng.randrange(10**6), rng.randrange(0, 30), words, 40)
        shingles = _shingles(sentences)
        expected = _shingle_simhash(shingles) if shingles else 0
        assert _text.shingle_simhash(sentences, SHINGLE_WORDS) == expected, sentences
    # counts past the 255 cap, and sentences of three tokens or fewer (one shingle each)
    # and ideographs, a token each with nothing between them
    sentences = ["the same words again"] * 600 + ["other words here now", "one", "", "a b c"]
    sentences += ["中文字かな" * 40, "ab中文cd 中 e"]
    assert _text.shingle_simhash(sentences, SHINGLE_WORDS) == _shingle_simhash(_shingles(sentences))
    assert _text.shingle_simhash([], SHINGLE_WORDS) == 0


def test_numbers_zeroed_equals_the_pattern() -> None:
    """Runs of digits and hex ids as ``_NUMBERS`` finds them: ASCII hex at word boundaries,
    decimal digits of any script, word characters that are neither (``_``, ``g``, ``é``, a
    superscript two and a Roman numeral: alphanumeric, not decimal), a mathematical digit
    outside the BMP."""
    chars = list("0123456789abcdefgz_ -.A") + list("é٣٠²Ⅳ〇\U0001d7ce")
    texts = _random_texts(6, 60_000, chars, 40)
    texts += ["deadbeef", "deadbeef1", "1deadbeef", "a1b2c3", "a1b2c", "12345abcdefg", "_123456"]
    for text in texts:
        assert _text.numbers_zeroed(text) == textprint._NUMBERS.sub("0", text), repr(text)
    plain = "no digits here"
    assert _text.numbers_zeroed(plain) is plain  # nothing to replace: the same string
    page = "order 4f3c2a9e1b placed 2024-05-01, ref ٣٤٥ " * 200
    assert _text.numbers_zeroed(page) == textprint._NUMBERS.sub("0", page)


def test_holding_finds_the_texts_python_finds() -> None:
    rng = random.Random(7)
    chars = [*"ab :\uff1a\u00e9\u4e2d", "\U0001f600"]
    for _ in range(2000):
        texts: list[str | None] = [
            None
            if rng.random() < 0.2
            else "".join(rng.choice(chars) for _ in range(rng.randrange(6)))
            for _ in range(rng.randrange(30))
        ]
        expected = [i for i, t in enumerate(texts) if t and (":" in t or "\uff1a" in t)]
        assert _text.holding(texts, ":\uff1a") == expected, texts
    assert _text.holding(["a", "b"], "") == []
    with pytest.raises(ValueError):
        _text.holding([], "abcdefghi")


def _pages() -> list[bytes]:
    pages = [path.read_bytes() for path in sorted(FIXTURES.rglob("*.htm*"))[:80]]
    if AEB.is_dir():  # articles in several languages and scripts
        pages.extend(gzip.decompress(p.read_bytes()) for p in sorted(AEB.glob("*.gz"))[:60])
    return pages


def test_content_prints_same_with_and_without_kernel(monkeypatch) -> None:
    pages = _pages()

    def prints() -> list[str]:
        out = []
        for i, body in enumerate(pages):
            doc = parse_html(body)
            if doc.root is None:
                continue
            found = main_content(doc.root)
            printed = content_print(
                found.blocks, visible=found.page_text, url=f"http://site.test/{i}?q={i}"
            )
            out.append(printed.to_json())
        return out

    fast = prints()
    python_kernels(monkeypatch)
    monkeypatch.setattr(textprint, "_hash64", python_hash64)
    assert prints() == fast
    assert sum(1 for p in fast if '"sentences":[]' not in p) > 40


def test_blanked_asks_once_a_character_and_passes_errors_on() -> None:
    def refuse(code: int) -> bool:
        raise ValueError(code)

    with pytest.raises(ValueError):
        _text.blanked("a\U0010fffd", refuse)
    asked: list[int] = []

    def ask(code: int) -> bool:
        asked.append(code)
        return code == 0x10FFFD  # private use: normalising blanks it

    assert _text.blanked("x\U0010fffd\U0010fffdy_z", ask) == "x y z"
    assert _text.blanked("\U0010fffd", ask) == ""
    assert asked == [0x10FFFD]
