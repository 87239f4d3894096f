from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from visdup.content import extract, textprint
from visdup.content.textprint import (
    _BLANKING,
    ContentPrint,
    _python_normalise,
    compare,
    content_print,
    long_sentences,
    normalise,
    split_sentences,
    structure_tree,
    text_print,
)
from visdup.structure.fingerprint import hamming

FIXTURES = Path(__file__).parent / "fixtures" / "content"


def page_print(name: str) -> ContentPrint:
    return content_print(extract((FIXTURES / name).read_bytes()).blocks)


# ----------------------------------------------------------------- sentences


def test_split_english_keeps_decimals_and_domains() -> None:
    text = "Prices rose 3.5 percent at example.com last year. Did they? Yes! Up; down"
    assert split_sentences(text) == [
        "Prices rose 3.5 percent at example.com last year.",
        "Did they?",
        "Yes!",
        "Up;",
        "down",
    ]


def test_split_other_european_languages() -> None:
    text = "Das Wetter ist schön. Kommst du mit? « Oui, bien sûr ! » dit-elle. ¿Vienes? ¡Sí!"
    assert split_sentences(text) == [
        "Das Wetter ist schön.",
        "Kommst du mit?",
        "« Oui, bien sûr ! »",
        "dit-elle.",
        "¿Vienes?",
        "¡Sí!",
    ]


def test_split_cjk_without_spaces() -> None:
    text = "今天天气很好。我们去公园吧！你来吗？好的；走吧"
    assert split_sentences(text) == [
        "今天天气很好。",
        "我们去公园吧！",
        "你来吗？",
        "好的；",
        "走吧",
    ]


def test_split_keeps_closing_quotes_with_their_sentence() -> None:
    assert split_sentences('He said "stop." Then he left.') == ['He said "stop."', "Then he left."]


def test_normalise() -> None:
    assert normalise("  Hello,\n  WORLD!  “Quoted” — Été ") == "hello world quoted été"
    assert normalise("ＡＢＣ，１２３。") == "abc 123"


def _normalised_by_definition(text: str) -> str:
    """What normalising is: NFKC, case folding, every punctuation, symbol, separator and
    control a blank (the table, character by character), whitespace collapsed."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return " ".join(folded.translate(_BLANKING).split())


# Letters and marks outside ASCII, ones that case folding or NFKC turn into ASCII (ß, the
# Kelvin sign, a ligature, fullwidth letters), blanks outside ASCII, astral characters, a
# lone surrogate, unassigned and private-use code points, and ASCII punctuation between them.
_MIXED = [
    *"aZ09 .,;:!?'\"()-_/\n\t\x00\x1f\x7f",
    *"éÉßẞжДΣς中かｶＡｚ\u212a\ufb01™ǅ\u0301\u0915\u093f\u0e01\u0e31",
    *"¶§—–\xa0\u2009\u2028\u3000\u00ad\u200b→©€½\u0378\ue000",
    "\U0001f600",
    "\U00010400",
    "\U000e0041",
    "\ud800",
]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_MIXED), max_size=60).map("".join))
def test_normalise_outside_ascii_is_its_definition(text: str) -> None:
    expected = _normalised_by_definition(text)
    assert _python_normalise(text) == expected
    assert normalise(text) == expected
    with pytest.MonkeyPatch.context() as patch:  # and without the compiled kernel
        patch.setattr(textprint, "_kernel", None)
        assert normalise(text) == expected


def test_normalise_of_a_long_mostly_ascii_text() -> None:
    words = ["Straße", "naïve", "\u212aelvin", "\ufb01le", "«quoted»", "x—y", "ok.", "ЖУК", "中文"]
    text = " ".join(words[i % len(words)] + f"{i}," for i in range(5_000))
    assert _python_normalise(text) == _normalised_by_definition(text)
    assert _python_normalise(text).startswith("strasse0 naïve1 kelvin2 file3 quoted 4 x y5")


def test_long_sentences_keeps_the_longest_in_order() -> None:
    paragraph = (
        "Short one. This is the longest sentence of the paragraph by a wide margin. "
        "A medium sentence is here. Tiny. Another long sentence, though a bit shorter."
    )
    assert long_sentences(paragraph, keep=2) == [
        "this is the longest sentence of the paragraph by a wide margin",
        "another long sentence though a bit shorter",
    ]
    assert long_sentences("Too short. Also.") == []


# ----------------------------------------------------------------- structure tree


def test_structure_tree_nests_headings_by_level() -> None:
    blocks = [
        ("paragraph", 0, "A lead paragraph that comes before any heading at all."),
        ("heading", 2, "First"),
        ("paragraph", 0, "Text under the first second-level heading, long enough."),
        ("heading", 3, "Inner"),
        ("paragraph", 0, "Text under the third-level heading inside the first one."),
        ("heading", 2, "Second"),
        ("paragraph", 0, "Text under the second second-level heading of the page."),
        ("paragraph", 0, "Ok."),
    ]
    tree = structure_tree(blocks)
    assert tree.kind == "document"
    lead, first, second = tree.children
    assert lead.kind == "paragraph"
    assert (first.kind, first.level, first.text) == ("section", 2, "First")
    assert [c.kind for c in first.children] == ["paragraph", "section"]
    assert first.children[1].text == "Inner"
    assert second.text == "Second"
    assert len(second.children) == 1  # "Ok." has no long sentence


def test_section_fingerprint_changes_only_along_the_changed_path() -> None:
    blocks = [
        ("heading", 2, "One"),
        ("paragraph", 0, "The first section holds this fairly long sentence."),
        ("heading", 2, "Two"),
        ("paragraph", 0, "The second section holds another fairly long sentence."),
    ]
    changed = [*blocks[:3], ("paragraph", 0, "The second section holds a different sentence now.")]
    a, b = structure_tree(blocks), structure_tree(changed)
    assert a.fingerprint != b.fingerprint
    assert a.children[0].fingerprint == b.children[0].fingerprint
    assert a.children[1].fingerprint != b.children[1].fingerprint


def test_structure_tree_of_many_nested_headings_does_not_recurse() -> None:
    blocks = []
    for i in range(20000):
        blocks.append(("heading", 1 + i % 6, f"Heading {i}"))
        blocks.append(("paragraph", 0, f"Paragraph number {i} has a long enough sentence."))
    cp = content_print(blocks)
    assert len(cp.paragraphs) == 20000


# ----------------------------------------------------------------- fingerprints


def test_same_article_in_two_templates_is_a_mirror() -> None:
    a, b = page_print("article_x_site1.html"), page_print("article_x_site2.html")
    assert a == b
    match = compare(a, b)
    assert (match.kind, match.score) == ("mirror", 1.0)


def test_one_changed_sentence_is_a_partial_mirror() -> None:
    a, b = page_print("article_x_site1.html"), page_print("article_x_site1_changed.html")
    match = compare(a, b)
    assert match.kind == "partial"
    assert 0.8 < match.score < 1.0
    assert match.paragraphs < match.sentences or match.paragraphs < 1.0
    assert match.simhash_distance <= 12
    assert match.sections < 1.0


def test_different_articles_in_one_template_do_not_match() -> None:
    a, b = page_print("article_x_site1.html"), page_print("article_y_site1.html")
    match = compare(a, b)
    assert match.kind is None
    assert match.score == 0.0
    assert match.simhash_distance > 12
    near = compare(a, page_print("article_x_site1_changed.html"))
    assert near.simhash_distance < match.simhash_distance


def test_boilerplate_page_matches_nothing() -> None:
    empty = page_print("boilerplate_only.html")
    assert empty.empty
    assert compare(empty, empty).kind is None
    assert compare(empty, page_print("article_x_site1.html")).score == 0.0


def test_cjk_fingerprints() -> None:
    cjk = page_print("cjk_article.html")
    assert len(cjk.paragraphs) == 4
    assert len(cjk.sentences) == 8
    edited = text_print(
        extract((FIXTURES / "cjk_article.html").read_bytes()).text.replace("八百万元", "九百万元")
    )
    match = compare(cjk, edited)
    assert match.kind == "partial" and match.score > 0.8


def test_partial_copy_counts_by_containment() -> None:
    article = [
        ("paragraph", 0, f"Original paragraph {i} has its own long sentence.") for i in range(4)
    ]
    bigger = article + [
        ("paragraph", 0, f"Unrelated added paragraph {i} with another sentence.") for i in range(12)
    ]
    match = compare(content_print(article), content_print(bigger))
    assert match.kind == "partial"
    assert match.containment == 1.0
    assert match.score < 0.5
    one_sentence = content_print(article[:1])
    assert compare(one_sentence, content_print(bigger)).kind is None  # too small to call


def test_json_round_trip() -> None:
    cp = page_print("article_x_site1.html")
    text = cp.to_json()
    data = json.loads(text)
    assert isinstance(data["simhash"], str)  # 64-bit values survive double-based readers
    assert ContentPrint.from_json(text) == cp
    assert ContentPrint.from_json(text.encode()) == cp
    with pytest.raises(ValueError):
        ContentPrint.from_json(json.dumps({**data, "v": 99}))


@settings(max_examples=50, deadline=None)
@given(st.lists(st.text(min_size=0, max_size=200), max_size=12))
def test_any_text_gives_a_valid_print(paragraphs: list[str]) -> None:
    cp = content_print(("paragraph", 0, p) for p in paragraphs)
    assert 0 <= cp.simhash < 2**64 and 0 <= cp.document < 2**64
    assert ContentPrint.from_json(cp.to_json()) == cp
    match = compare(cp, cp)
    assert match.kind == ("mirror" if not cp.empty else None)


def test_compare_is_symmetric() -> None:
    a, b = page_print("article_x_site1.html"), page_print("article_x_site1_changed.html")
    assert compare(a, b) == compare(b, a)
    assert hamming(a.simhash, b.simhash) == compare(a, b).simhash_distance
