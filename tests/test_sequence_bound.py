"""The preorder sequence bound on the tree edit distance: a true lower bound, in both kernels.

It lets the labeller drop most candidates without the DP (bench/bench_recall.py), so a bound
that ever exceeded the distance would silently lose near-duplicates: it is checked against
the exact distance on random marked trees of every shape and on real page terms.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.test_distance import LABELS, MARKS, as_term, brute_distance, random_tree
from visdup.structure import distance
from visdup.structure.distance import (
    Profile,
    distance_lower_bound,
    sequence_lower_bound,
    sequence_similarities,
    similarity,
    tree_distance,
)
from visdup.structure.term import Term, page_term

SEQUENCES = [
    pytest.param("c", marks=pytest.mark.skipif("c" not in distance._SEQUENCES, reason="not built")),
    "python",
]
SHAPES = ("random", "chain", "fan", "bushy")


def random_sequence(rng: random.Random, n: int) -> tuple[list[int], list[int]]:
    marks = rng.choice([MARKS, (0, 1, 2, 5)])  # zero marks cost nothing to delete
    return [rng.randrange(len(LABELS)) for _ in range(n)], [rng.choice(marks) for _ in range(n)]


def textbook(a: tuple[list[int], list[int]], b: tuple[list[int], list[int]]) -> int:
    """The full table of the weighted sequence edit distance, no early stop."""
    (la, ma), (lb, mb) = a, b
    d = [[0] * (len(lb) + 1) for _ in range(len(la) + 1)]
    for i in range(1, len(la) + 1):
        d[i][0] = d[i - 1][0] + ma[i - 1]
    for j in range(1, len(lb) + 1):
        d[0][j] = d[0][j - 1] + mb[j - 1]
    for i in range(1, len(la) + 1):
        for j in range(1, len(lb) + 1):
            r1, r2 = ma[i - 1], mb[j - 1]
            relabel = abs(r1 - r2) if la[i - 1] == lb[j - 1] else max(r1, r2)
            d[i][j] = min(d[i - 1][j] + r1, d[i][j - 1] + r2, d[i - 1][j - 1] + relabel)
    return d[-1][-1]


@pytest.mark.parametrize("kernel", SEQUENCES)
def test_sequence_distance_matches_the_full_table(kernel: str) -> None:
    rng = random.Random(11)
    fn = distance._SEQUENCES[kernel]
    for _ in range(300):
        a = random_sequence(rng, rng.randrange(0, 25))
        b = random_sequence(rng, rng.randrange(0, 25))
        full = textbook(a, b)
        assert fn(*a, *b, -1) == full
        for limit in (0, full - 1, full, full + 1, rng.randrange(0, full + 5)):
            if limit >= 0:  # with a limit: the distance, or limit + 1 when it is larger
                assert fn(*a, *b, limit) == min(full, limit + 1)


def test_kernels_agree_on_long_sequences() -> None:
    if "c" not in distance._SEQUENCES:
        pytest.skip("not built")
    rng = random.Random(5)
    for _ in range(20):
        a = random_sequence(rng, rng.randrange(100, 400))
        b = random_sequence(rng, rng.randrange(100, 400))
        for limit in (-1, 0, 50, 400, 10**6):
            assert distance._SEQUENCES["c"](*a, *b, limit) == distance._SEQUENCES["python"](
                *a, *b, limit
            )


def mutated(rng: random.Random, a: tuple[list[int], list[int]]) -> tuple[list[int], list[int]]:
    """A sequence near ``a``: some items dropped, inserted, relabelled or re-marked, as two
    pages of one site differ (their distances then fall near the limits the labelling asks)."""
    labels, marks = [], []
    for label, mark in zip(*a, strict=True):
        roll = rng.random()
        if roll < 0.08:
            continue
        if roll < 0.16:
            labels.append(rng.randrange(len(LABELS)))
            marks.append(rng.choice(MARKS))
        labels.append(label if roll > 0.24 else rng.randrange(len(LABELS)))
        marks.append(mark if rng.random() < 0.85 else rng.choice(MARKS))
    return labels, marks


@pytest.mark.parametrize("kernel", SEQUENCES)
def test_near_sequences_at_limits_around_their_distance(kernel: str) -> None:
    """The limits the labelling asks cut through the band of two near sequences: every limit
    from below to above their distance gives min(distance, limit + 1), long rows included (the
    compiled kernel takes several cells a step, the last few one by one)."""
    rng = random.Random(17)
    fn = distance._SEQUENCES[kernel]
    for _ in range(60):
        a = random_sequence(rng, rng.choice([1, 3, 7, 30, 90]))
        b = mutated(rng, a)
        full = textbook(a, b)
        for limit in {0, 1, full // 2, full - 2, full - 1, full, full + 1, 2 * full + 3}:
            if limit >= 0:
                assert fn(*a, *b, limit) == min(full, limit + 1)
                assert fn(*b, *a, limit) == min(full, limit + 1)


def test_heavy_marks_take_wide_cells() -> None:
    """Weights past what 32-bit cells hold are measured in 64-bit ones, with the same answer."""
    if "c" not in distance._SEQUENCES:
        pytest.skip("not built")
    rng = random.Random(23)
    c, python = distance._SEQUENCES["c"], distance._SEQUENCES["python"]
    for scale in (1 << 20, 1 << 25, 1 << 40):
        a = random_sequence(rng, 40)
        b = mutated(rng, a)
        heavy_a = (a[0], [m * scale for m in a[1]])
        heavy_b = (b[0], [m * scale for m in b[1]])
        full = python(*heavy_a, *heavy_b, -1)
        for limit in (0, full // 2, full - 1, full, full + 1):
            if limit >= 0:
                assert c(*heavy_a, *heavy_b, limit) == min(full, limit + 1)


@pytest.mark.parametrize("kernel", SEQUENCES)
def test_bad_input_is_refused(kernel: str) -> None:
    fn = distance._SEQUENCES[kernel]
    with pytest.raises(ValueError):
        fn([0, 1], [1], [0], [1], -1)
    with pytest.raises(ValueError):
        fn([0], [-1], [0], [1], -1)


@settings(max_examples=200, deadline=None)
@given(
    st.integers(min_value=0, max_value=2**32),
    st.integers(min_value=0, max_value=12),
    st.integers(min_value=0, max_value=12),
    st.sampled_from(SHAPES),
    st.sampled_from(SHAPES),
)
def test_bound_never_exceeds_the_distance(
    seed: int, n1: int, n2: int, shape1: str, shape2: str
) -> None:
    rng = random.Random(seed)
    ta, tb = random_tree(rng, n1, shape1, True), random_tree(rng, n2, shape2, True)
    a, b = as_term(ta), as_term(tb)
    bound = sequence_lower_bound(a, b)
    assert bound <= brute_distance(ta, tb) == tree_distance(a, b)
    assert bound >= abs(a.size - b.size)  # never weaker than the weighted sizes


def test_bound_on_larger_trees_and_profiles() -> None:
    rng = random.Random(3)
    for _ in range(40):
        a = as_term(random_tree(rng, rng.randrange(20, 120), rng.choice(SHAPES), True))
        b = as_term(random_tree(rng, rng.randrange(20, 120), rng.choice(SHAPES), True))
        delta = tree_distance(a, b)
        assert sequence_lower_bound(a, b) <= delta
        total = a.size + b.size
        ceiling = Profile(a).sequence_similarity(Profile(b))
        assert ceiling >= 1 - delta / total
        # with a floor it may stop early, but never claims more than the full bound
        for floor in (0.5, 0.8, 0.95):
            assert Profile(a).sequence_similarity(Profile(b), floor) >= 1 - delta / total


def test_preorder_sees_what_histograms_cannot() -> None:
    # the same nodes in another order: equal histograms, a real distance
    a = Term.parse("grp(row(text,[3]col),grp([4]text))")
    b = Term.parse("grp(grp([4]text),row(text,[3]col))")
    assert distance_lower_bound(a, b) == 0
    assert 0 < sequence_lower_bound(a, b) <= tree_distance(a, b)


PAGES = [
    "<html><body><nav><ul>{nav}</ul></nav><main><h1>Title</h1>{body}</main>"
    "<footer><p>f</p></footer></body></html>",
    "<html><body><table>{rows}</table><div><p>{text}</p></div></body></html>",
]


def page(rng: random.Random) -> Term:
    nav = "".join(f"<li><a href=x>{i}</a></li>" for i in range(rng.randint(1, 6)))
    body = "".join(
        rng.choice(["<p>text</p>", "<ul><li>a</li><li>b</li></ul>", "<pre>x</pre>", "<h2>h</h2>"])
        for _ in range(rng.randint(1, 12))
    )
    rows = "".join(
        "<tr>" + "<td>c</td>" * rng.randint(1, 4) + "</tr>" for _ in range(rng.randint(1, 8))
    )
    html = rng.choice(PAGES).format(nav=nav, body=body, rows=rows, text="words " * 5)
    return page_term(html)


def test_bound_on_page_terms_and_the_threshold_answer_stays_exact() -> None:
    rng = random.Random(8)
    terms = [page(rng) for _ in range(30)]
    for a in terms:
        for b in terms[:10]:
            exact = similarity(a, b)
            assert sequence_lower_bound(a, b) <= tree_distance(a, b)
            for theta in (0.8, 0.95):
                cut = similarity(a, b, at_least=theta)
                assert (cut >= theta) == (exact >= theta)
                assert cut >= exact - 1e-12
                if exact >= theta:
                    assert cut == exact


def _replay(queries, profiles, batch) -> tuple[list[list[float]], dict[int, int]]:
    """The answers to ``queries`` (mine, others, at_least) from an empty cache of measured
    pairs, by the batch or pair by pair in Python, and the cache they leave."""
    from visdup.structure import bounds

    saved = dict(bounds._KNOWN)
    bounds._KNOWN.clear()
    try:
        answers = []
        for mine, others, at_least in queries:
            views = [profiles[j] for j in others]
            if batch:
                answers.append(bounds.sequence_similarities(profiles[mine], views, at_least))
            else:
                answers.append([profiles[mine]._sequence_similarity(v, at_least) for v in views])
        return answers, dict(bounds._KNOWN)
    finally:
        bounds._KNOWN.clear()
        bounds._KNOWN.update(saved)


def test_batched_bounds_are_the_pairs_bounds_and_remember_the_same() -> None:
    """One call for many candidates answers what the Python method answers for each, from the
    same pairs measured before (a distance, or a number it is known to reach) and leaving the
    same ones behind, whatever the floors asked in between."""
    from visdup.structure import bounds

    if bounds._sequence_similarities is None:
        pytest.skip("the compiled kernel is not built")
    rng = random.Random(11)
    terms = [
        as_term(random_tree(rng, rng.randrange(2, 60), rng.choice(SHAPES), True)) for _ in range(24)
    ]
    terms.append(terms[3])  # a pair of equal terms
    profiles = [Profile(t) for t in terms]
    queries = []
    for _ in range(120):
        mine = rng.randrange(len(profiles))
        others = [rng.randrange(len(profiles)) for _ in range(rng.randrange(0, 8))]
        queries.append((mine, others, rng.choice((0.0, 0.2, 0.5, 0.6, 0.75, 0.9, 0.97, 1.0))))
    assert _replay(queries, profiles, True) == _replay(queries, profiles, False)


def test_batched_bounds_leave_huge_marks_to_python() -> None:
    from visdup.structure import bounds

    huge = Profile(Term(["grp", "text", "row"], [1, 2**60, 1], [3, 1, 1]))
    small = Profile(Term.parse("grp(text,row)"))
    assert bounds._sequence_similarities is None or (
        bounds._sequence_similarities(small, [huge], 0.5, {}) is None
    )
    assert sequence_similarities(small, [huge, small], 0.5) == [
        small._sequence_similarity(huge, 0.5),
        1.0,
    ]


def test_batched_bounds_at_the_edge_of_what_a_pair_is_known_to_reach() -> None:
    """A pair measured under a limit one short of its distance is known to reach the
    distance, no more: asked again with the distance as the limit, it is measured."""
    from visdup.structure import bounds

    rng = random.Random(5)
    profiles, queries = [], []
    while len(profiles) < 40:
        a = Profile(as_term(random_tree(rng, rng.randrange(5, 40), rng.choice(SHAPES), True)))
        b = Profile(as_term(random_tree(rng, rng.randrange(5, 40), rng.choice(SHAPES), True)))
        total = a.weight + b.weight
        d = round((1 - a._sequence_similarity(b, 0.0)) * total)
        bounds._KNOWN.clear()
        if d < 3:
            continue
        i = len(profiles)
        profiles += [a, b]
        for limit in (d - 1, d, d - 2, d - 1, d + 1, d - 2):
            queries.append((i, [i + 1], bounds.cmp(limit, total)))
            queries.append((i + 1, [i], bounds.cmp(limit, total)))
    assert _replay(queries, profiles, True) == _replay(queries, profiles, False)
