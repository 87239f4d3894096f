"""The small-term index returns every stored small term whose bound reaches its threshold."""

from __future__ import annotations

import random

import pytest

from visdup.index.small import SmallTerms
from visdup.structure.bounds import Profile
from visdup.structure.distance import similarity
from visdup.structure.term import Term


def random_term(rng: random.Random, nodes: int) -> Term:
    """A random term of about ``nodes`` nodes over the four visual classes."""
    labels = ("grp", "row", "col", "text")

    def build(budget: int) -> str:
        label = rng.choice(labels)
        mark = rng.choice((1, 1, 1, 2, 3))
        prefix = f"[{mark}]" if mark > 1 else ""
        if budget <= 1:
            return f"{prefix}{label}"
        kids = []
        left = budget - 1
        while left > 0:
            size = rng.randint(1, left)
            kids.append(build(size))
            left -= size
        return f"{prefix}{label}({', '.join(kids)})"

    return Term.parse(build(nodes))


def edited(rng: random.Random, term: Term) -> Term:
    """``term`` with one leaf's label or mark changed, from its text form."""
    text = str(term)
    spots = [i for i in range(len(text)) if text.startswith("text", i) and text[i - 1] != "]"]
    if not spots:
        return Term.parse(f"grp({text}, text)")
    at = rng.choice(spots)
    return Term.parse(text[:at] + rng.choice(("col", "row", "[2]text")) + text[at + 4 :])


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_query_is_the_bound_filtered_exhaustively(seed: int) -> None:
    rng = random.Random(seed)
    base = [random_term(rng, rng.randint(10, 45)) for _ in range(30)]
    terms = base + [edited(rng, t) for t in base for _ in range(2)]
    index = SmallTerms(0.9)
    profiles = [Profile(t) for t in terms]
    for key, (term, profile) in enumerate(zip(terms, profiles, strict=True)):
        index.add(key, profile, str(term))
    distinct = {str(t): k for k, t in reversed(list(enumerate(terms)))}
    for term, profile in zip(terms, profiles, strict=True):
        got = dict(index.query(profile))
        want = {
            k: profile.best_similarity(profiles[k])
            for k in distinct.values()
            if profile.best_similarity(profiles[k]) >= 0.9
        }
        assert got == pytest.approx(want)
        # every term at the threshold is there: the bound never falls below the measure
        for k in distinct.values():
            if similarity(term, terms[k], at_least=0.9) >= 0.9:
                assert k in got
        bounds = [b for _k, b in index.query(profile)]
        assert bounds == sorted(bounds, reverse=True)


def test_identical_terms_are_one_row_under_their_first_key() -> None:
    term = Term.parse("grp(row(text, col), [3]text)")
    index = SmallTerms(0.95)
    for key in (5, 3, 9):
        index.add(key, Profile(term), str(term))
    assert len(index) == 1
    assert 3 in index and 9 in index
    assert index.query(Profile(term)) == [(5, 1.0)]


def test_the_scan_stops_at_its_cap_nearest_sizes_first() -> None:
    rng = random.Random(4)
    index = SmallTerms(0.5, max_scan=10)
    terms = [random_term(rng, n) for n in range(20, 40)]
    for key, term in enumerate(terms):
        index.add(key, Profile(term), str(term))
    found = index.query(Profile(terms[0]))
    assert index.truncated >= 1
    assert len(found) <= 10
    with pytest.raises(ValueError):
        SmallTerms(0.0)


@pytest.mark.parametrize("seed", range(6))
def test_the_compiled_pass_ranks_as_numpy_does(seed: int, monkeypatch) -> None:
    """The kernel's pass over the rows read gives numpy's bounds in numpy's order: highest
    first, ties in reading order (buckets nearest in size first), cut at the limit."""
    from visdup.index import small

    if small._small_bounds is None:
        pytest.skip("the compiled kernel is not built")
    rng = random.Random(seed)
    index = SmallTerms(rng.choice((0.5, 0.7, 0.9)))
    base = [random_term(rng, rng.randint(2, 40)) for _ in range(8)]
    terms = [
        rng.choice(base) if rng.random() < 0.3 else edited(rng, rng.choice(base)) for _ in range(80)
    ]
    for key, term in enumerate(terms):
        index.add(key, Profile(term), (key % 60, str(term)))  # some terms stored twice
    for term in [*base, *terms[:20]]:
        for limit in (None, 1, 3, 50):
            fast = index.query(Profile(term), limit)
            monkeypatch.setattr(small, "_small_bounds", None)
            slow = index.query(Profile(term), limit)
            monkeypatch.undo()
            assert fast == slow
