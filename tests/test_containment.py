"""The skeleton and containment views of two layouts are symmetric and see one inside the other."""

from __future__ import annotations

from visdup.structure.containment import (
    containment,
    repertoire,
    repertoire_similarity,
    skeleton,
)
from visdup.structure.distance import similarity
from visdup.structure.term import Term


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


def test_repertoire_similarity_sees_two_story_counts_as_one_layout() -> None:
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
