"""The content channel's bound is the content measure itself, never below it.

Print pairs come from the real fingerprinting (``content_print``) of generated pages whose
paragraphs draw their sentences from a small pool, so that pages share sentences, repeat
them, hold one or several long sentences per paragraph, and are edited copies of each
other (paragraphs dropped, merged, split, reordered, repeated, sentences replaced). The
measure is the labeller's own (``build_labeller``'s content channel), run on every pair.
"""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path
from typing import Any

from visdup.config import defaults
from visdup.content.textprint import ContentPrint, compare, content_print
from visdup.dedup.label import build_labeller
from visdup.dedup.prints import PrintSummary, content_bound
from visdup.storage.store import Store

WORDS = (
    "river harbour lantern orchard meadow granite willow copper falcon ember quiet silver "
    "garden thunder velvet marble canyon prairie glacier compass beacon anchor voyage summit"
).split()

Blocks = list[tuple[str, int, str]]


def sentence_pool(rng: random.Random, n: int) -> list[str]:
    """Sentences of 2 to 12 words: the shortest fall under the long-sentence length."""
    return [
        " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 12))).capitalize() + "."
        for _ in range(n)
    ]


def page(rng: random.Random, pool: list[str]) -> Blocks:
    blocks: Blocks = []
    for _ in range(rng.randint(1, 12)):
        if rng.random() < 0.2:
            blocks.append(("heading", rng.randint(1, 3), rng.choice(WORDS)))
        blocks.append(("paragraph", 0, " ".join(rng.sample(pool, rng.randint(1, 4)))))
    return blocks


def edited(rng: random.Random, blocks: Blocks, pool: list[str]) -> Blocks:
    """A copy of a page with a few of the edits that copies of a text go through."""
    out = list(blocks)
    for _ in range(rng.randint(1, 3)):
        roll = rng.random()
        paragraphs = [i for i, b in enumerate(out) if b[0] == "paragraph"]
        if not paragraphs:
            out.append(("paragraph", 0, rng.choice(pool)))
            continue
        i = rng.choice(paragraphs)
        kind, level, text = out[i]
        if roll < 0.15:  # dropped
            del out[i]
        elif roll < 0.3 and i + 1 < len(out) and out[i + 1][0] == "paragraph":  # merged
            out[i : i + 2] = [(kind, level, text + " " + out[i + 1][2])]
        elif roll < 0.45 and ". " in text:  # split in two
            head, tail = text.split(". ", 1)
            out[i : i + 1] = [(kind, level, head + "."), (kind, level, tail)]
        elif roll < 0.6:  # repeated further down
            out.insert(rng.randrange(len(out) + 1), out[i])
        elif roll < 0.75:  # one sentence replaced
            out[i] = (kind, level, text + " " + rng.choice(pool))
        elif roll < 0.85:  # moved
            out.insert(rng.randrange(len(out) + 1), out.pop(i))
        elif roll < 0.95:  # a heading added
            out.insert(i, ("heading", rng.randint(1, 3), rng.choice(WORDS)))
        else:  # a new paragraph
            out.insert(i, ("paragraph", 0, " ".join(rng.sample(pool, 2))))
    return out


def prints(seed: int, n: int = 60) -> list[ContentPrint]:
    rng = random.Random(seed)
    pool = sentence_pool(rng, rng.choice((12, 30, 80)))
    pages: list[Blocks] = []
    for _ in range(n):
        if pages and rng.random() < 0.6:
            pages.append(edited(rng, rng.choice(pages), pool))
        else:
            pages.append(page(rng, pool))
    # about one page in five a listing: containment does not count for it (compare)
    return [content_print(b, listing=rng.random() < 0.2) for b in pages]


def measure_of(tmp_path: Path) -> Any:
    store = Store.from_url(f"sqlite:///{tmp_path / 'bound.sqlite3'}")
    try:
        return (
            build_labeller(store, defaults().__getitem__, lambda _k, _n: None)
            .channels["content"]
            .measure
        )
    finally:
        store.close()


def test_the_bound_is_never_below_the_measure(tmp_path: Path) -> None:
    measure = measure_of(tmp_path)
    seen = {"pairs": 0, "disjoint": 0, "paragraphs": 0, "repeats": 0, "mirror": 0}
    seen["listing"] = seen["listing contained"] = 0
    for seed in range(12):
        cps = [cp for cp in prints(seed) if cp.sentences]
        views = [PrintSummary.of(cp) for cp in cps]
        for i, a in enumerate(cps):
            for j, b in enumerate(cps):
                if i == j:
                    continue
                score, _kind = measure(a, b, None)
                bound = content_bound(views[i], views[j])
                assert bound >= score, (seed, i, j, bound, score)  # candidates it skips
                assert bound == score, (seed, i, j, bound, score)  # scores it stores
                m = compare(a, b)
                seen["pairs"] += 1
                seen["mirror"] += m.kind == "mirror"
                if not set(a.sentences) & set(b.sentences):
                    seen["disjoint"] += 1
                    assert bound == 0.0  # no shared long sentence: nothing to measure
                seen["paragraphs"] += m.paragraphs > m.containment  # the paragraph ceiling
                if a.listing or b.listing:
                    seen["listing"] += 1
                    # a listing inside a larger page: no copy for being contained
                    if m.kind != "mirror" and m.containment >= 0.8 > m.score:
                        seen["listing contained"] += 1
                        assert m.kind is None and score < 0.8
                if views[i].sentence_repeats and views[j].sentence_repeats:
                    shared = set(views[i].sentence_repeats) & set(views[j].sentence_repeats)
                    seen["repeats"] += bool(shared)  # multiset counts, not set sizes
    assert min(seen.values()) >= 20, seen  # every case of the proof was exercised


def test_the_summary_counts_what_compare_counts() -> None:
    """Shared counts are multiset intersections: a sentence twice on both pages counts 2."""
    rng = random.Random(3)
    pool = sentence_pool(rng, 8)
    long = [s for s in pool if len(s) > 40][:3]
    assert len(long) == 3, pool
    twice = [("paragraph", 0, long[0]), ("paragraph", 0, long[0]), ("paragraph", 0, long[1])]
    a = content_print(twice)
    b = content_print([*twice, ("paragraph", 0, long[2])])
    m = compare(a, b)
    assert m.containment == 1.0 and m.kind == "partial"
    assert content_bound(PrintSummary.of(a), PrintSummary.of(b)) == 1.0
    # twice on one page, once on the other: shared once
    c = content_print([("paragraph", 0, long[0]), ("paragraph", 0, long[2])])
    assert content_bound(PrintSummary.of(a), PrintSummary.of(c)) == compare(a, c).containment


def test_a_listing_inside_a_larger_one_is_no_copy() -> None:
    """A section's table of contents lies whole inside the manual's; an article quoted whole
    by a longer one is a partial copy."""
    rng = random.Random(5)
    pool = [s for s in sentence_pool(rng, 40) if len(s) > 40]
    entries = [("paragraph", 0, s) for s in pool[:12]]
    section = entries[:4]
    for listing, kind in ((False, "partial"), (True, None)):
        small = content_print(section, listing=listing)
        large = content_print(entries, listing=listing)
        m = compare(small, large)
        assert m.containment == 1.0 and m.kind == kind
        score = 1.0 if kind else m.score
        assert m.measure == score
        assert content_bound(PrintSummary.of(small), PrintSummary.of(large)) == score
    # the flag travels with a stored print; old prints read as articles
    flagged = content_print(section, listing=True)
    assert ContentPrint.from_json(flagged.to_json()).listing
    assert '"listing"' not in content_print(section).to_json()


def test_the_final_pass_leaves_out_only_candidates_below_the_floor() -> None:
    """The final pass's ceiling from the sentence postings (``SentencePostings.reaching``)
    never leaves out a candidate whose content bound reaches the floor: with few pages to a
    proposing sentence, frequent sentences, repeats, listings and mirrors all come up."""
    from visdup.dedup.sentence_postings import SentencePostings

    seen = {"kept": 0, "left out": 0, "reaching": 0}
    for limit in (2, 4, 64):
        for seed in range(8):
            cps = [cp for cp in prints(seed) if cp.sentences]
            views = [PrintSummary.of(cp) for cp in cps]
            sentences = SentencePostings(views, limit)
            for floor in (0.3, 0.5, 0.8, 1.0):
                for slot, view in enumerate(views):
                    later = list(range(slot + 1, len(views)))  # every page: the widest search
                    keys = sentences.proposed(slot)
                    assert keys == frozenset(
                        k
                        for k in view.sentences
                        if 1 < sum(k in v.sentences for v in views) <= limit
                    )
                    for k in keys:
                        assert sentences.postings[k] == [
                            s for s, v in enumerate(views) if k in v.sentences
                        ]
                    kept = set(sentences.reaching(slot, later, keys, floor))
                    for other in later:
                        reaches = content_bound(view, views[other]) >= floor
                        seen["reaching"] += reaches
                        assert other in kept or not reaches, (limit, seed, floor, slot, other)
                        seen["kept" if other in kept else "left out"] += 1
    assert min(seen.values()) >= 100, seen  # it leaves out most, and keeps what reaches


def test_the_compiled_bounds_equal_the_bound_to_the_last_bit() -> None:
    """One summary against many in the kernel gives content_bound's floats exactly (every
    candidate's score is stored from them), repeats, listings, mirrors and empty prints
    included; a summary it cannot pack is measured in Python, the answer the same."""
    from visdup.dedup import prints as prints_module

    compared = 0
    for seed in range(8):
        cps = prints(seed)
        cps.append(replace(cps[0], paragraphs=(), sentences=()))  # a mirror of no sentences
        views = [PrintSummary.of(cp) for cp in cps]
        if prints_module._kernel is not None:
            assert all(v.packed for v in views)
        for mine in views:
            expected = [content_bound(mine, other) for other in views]
            assert prints_module.content_bounds(mine, views) == expected
            compared += len(views)
    assert compared > 3000
    # a hash past 64 bits: no packed form, the Python bound
    odd = replace(prints(1)[0], sentences=(1 << 70, *prints(1)[0].sentences))
    summary = PrintSummary.of(odd)
    assert summary.packed == b""
    views = [PrintSummary.of(cp) for cp in prints(1)[:10]]
    assert prints_module.content_bounds(summary, views) == [
        content_bound(summary, v) for v in views
    ]
