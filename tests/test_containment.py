"""The skeleton and containment views of two layouts are symmetric and see one inside the other."""

from __future__ import annotations

from visdup.structure.containment import containment, skeleton
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
