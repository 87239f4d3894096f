"""The skeleton and containment views of two layouts are symmetric and see one inside the other."""

from __future__ import annotations

import json
from itertools import combinations

import pytest

from bench._variants import captured_site
from visdup.cli import main
from visdup.structure.containment import (
    FRAME_THRESHOLD,
    containment,
    frame_similarity,
    repertoire,
    repertoire_similarity,
    skeleton,
)
from visdup.structure.distance import similarity, tree_distance
from visdup.structure.term import Term, page_term

# Seeds the captures bench does not tune or check on.
SEEDS = range(100, 104)


def test_skeleton_keeps_the_top_levels_and_packs_what_repeats_there() -> None:
    term = Term.parse("grp(row(text, col(text, text)), col(row(text), row(col, text)))")
    top = skeleton(term, 2)
    assert str(top) == "grp(row,col)"
    assert skeleton(term, 1).nodes == 1


def test_containment_is_symmetric_and_one_for_a_layout_inside_another() -> None:
    small = Term.parse("grp(row(text), col(text), row)")
    large = Term.parse("grp(row(text, col(text)), col(text, row, text), row(text))")
    assert containment(small, large) == containment(large, small)
    assert containment(small, small) == 1.0
    assert containment(small, large) > similarity(small, large)


def test_repertoire_keeps_one_child_of_each_kind_in_the_order_each_first_appears() -> None:
    term = Term.parse("grp(row(text), col(text), [3]row(text), col(text), grp(row, row))")
    assert str(repertoire(term)) == "grp(row(text),col(text),grp(row))"
    assert repertoire(Term.parse("grp(col, row)")) != repertoire(Term.parse("grp(row, col)"))


def test_repertoire_similarity_sees_two_story_counts_as_one_frame() -> None:
    story_a, story_b = "grp(row(text), text)", "grp(text, grp(text), row)"
    few = Term.parse(f"grp(row(text), grp({story_a}, {story_b}), grp(col, col(text)))")
    many = Term.parse(
        f"grp(row(text), grp({story_a}, {story_b}, {story_b}, {story_a}, {story_b}, {story_a}),"
        " grp(col, col(text)))"
    )
    other = Term.parse(f"grp(grp({story_a}, {story_b}), row(text), grp(col(text), col))")
    assert repertoire_similarity(few, many) == repertoire_similarity(many, few)
    assert repertoire_similarity(few, many) == 1.0 > similarity(few, many)
    assert repertoire_similarity(few, many) > repertoire_similarity(few, other)


@pytest.fixture(scope="module")
def sites() -> dict[int, dict[str, list[Term]]]:
    """Each generated site's front page at two times and its listing at two lengths."""
    out: dict[int, dict[str, list[Term]]] = {}
    for seed in SEEDS:
        pages = out.setdefault(seed, {})
        for page, body in captured_site(seed):
            pages.setdefault(page, []).append(page_term(body))
    return out


def test_frame_similarity_is_symmetric_and_one_for_a_page_and_itself(sites) -> None:
    terms = [t for pages in sites.values() for twice in pages.values() for t in twice]
    for a, b in combinations(terms[:8], 2):
        assert frame_similarity(a, b) == frame_similarity(b, a)
    assert all(frame_similarity(t, t) == 1.0 for t in terms)
    a, b = terms[0], terms[1]
    assert frame_similarity(a, b, distance=tree_distance(a, b)) == frame_similarity(a, b)


def test_a_front_page_at_two_times_and_a_listing_at_two_lengths_are_one_frame(sites) -> None:
    falls = 0
    for pages in sites.values():
        for first, second in pages.values():
            assert frame_similarity(first, second) >= FRAME_THRESHOLD
            falls += similarity(first, second) < FRAME_THRESHOLD
    assert falls >= len(sites), "the edit similarity alone misses most of them"


def test_pages_of_two_generated_sites_are_different_frames(sites) -> None:
    for s, t in combinations(sites, 2):
        for a in (x for twice in sites[s].values() for x in twice):
            for b in (x for twice in sites[t].values() for x in twice):
                assert frame_similarity(a, b) < FRAME_THRESHOLD, (s, t)


def test_one_frame_needs_the_skeletons_and_the_holding_to_agree() -> None:
    story_a, story_b = "grp(row(text), text)", "grp(text, grp(text), row)"
    mixes = [f"grp({story_a}, {story_b})", f"grp({story_b}, {story_a}, {story_b})"]
    frame = "grp(row(text), grp({}), grp(col, col(text)))"
    few = Term.parse(frame.format(mixes[0]))
    many = Term.parse(frame.format(", ".join(mixes * 3)))
    assert repertoire_similarity(few, many) < FRAME_THRESHOLD <= frame_similarity(few, many)
    moved = Term.parse(f"grp(grp({mixes[0]}), row(text), grp(col(text), col))")
    assert containment(few, moved) < 1.0
    assert frame_similarity(few, moved) < FRAME_THRESHOLD
    part = Term.parse(f"grp(row(text), grp({mixes[1]}))")  # held whole, without the frame's end
    assert containment(part, many) == 1.0 > frame_similarity(part, many)


def test_compare_prints_the_frame_similarity_and_a_verdict(sites, tmp_path, capsys) -> None:
    paths = []
    for seed in list(SEEDS)[:2]:
        for n, (page, body) in enumerate(captured_site(seed)):
            if page == "front":
                paths.append(tmp_path / f"{seed}-{n}.html")
                paths[-1].write_bytes(body)
    one, two, other = paths[0], paths[1], paths[2]
    assert main(["compare", str(one), str(two), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["frame_similarity"] >= FRAME_THRESHOLD and out["one_frame"] is True
    assert out["frame_similarity"] > out["similarity"]
    assert main(["compare", str(two), str(one), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["frame_similarity"] == out["frame_similarity"]
    assert main(["compare", str(one), str(other), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["one_frame"] is False
    assert main(["compare", str(one), str(other)]) == 0
    assert "verdict    different frames" in capsys.readouterr().out
