"""Mappings a template build keeps answer the same calls after it, and only those.

The drift snapshot and an extraction map a template onto the pages it was just built from;
the build's own mappings answer them. Every answer must be the one STM gives: the same pairs,
the same fits and values, and a call with other trees or other match codes computed afresh.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from tests.test_stm import random_tree
from visdup.templates import kept_mappings
from visdup.templates import stm as stm_module
from visdup.templates.extract import match_template
from visdup.templates.signature import page_input
from visdup.templates.stm import stm_mapping
from visdup.templates.template import build_template

FIXTURES = Path(__file__).parent / "fixtures" / "templates"


@pytest.fixture(autouse=True)
def nothing_kept():
    kept_mappings.forget()
    yield
    kept_mappings.forget()


def counted_runs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the STM programmes run from here on."""
    runs: list[int] = []
    run = stm_module._run

    def counting(*args, **kwargs):
        runs.append(1)
        return run(*args, **kwargs)

    monkeypatch.setattr(stm_module, "_run", counting)
    return runs


def test_a_kept_mapping_answers_the_same_call_and_no_other(monkeypatch):
    rng = random.Random(3)
    a, b, c = (random_tree(rng, 60) for _ in range(3))
    da = [rng.choice((0, 0, 5, 7)) for _ in range(a.nodes)]
    db = [rng.choice((0, 5, 7)) for _ in range(b.nodes)]
    other = list(db)
    other[-1] = 9  # one match code differs
    expected = {
        "kept": fresh(a, b, da, db),
        "other codes": fresh(a, b, da, other),
        "other tree": fresh(a, c, da, None),
        "fewer nodes": fresh(a, b, da, db, 30),
    }
    runs = counted_runs(monkeypatch)
    assert stm_mapping(a, b, details_a=da, details_b=db, keep=True) == expected["kept"]
    assert stm_mapping(a, b, details_a=da, details_b=db) == expected["kept"]
    assert len(runs) == 1  # the second call was answered from the kept mapping
    assert stm_mapping(a, b, details_a=da, details_b=other) == expected["other codes"]
    assert stm_mapping(a, c, details_a=da) == expected["other tree"]
    assert stm_mapping(a, b, details_a=da, details_b=db, max_nodes=30) == expected["fewer nodes"]
    assert len(runs) == 4  # each of those ran its own programme


def fresh(a, b, da, db, max_nodes=stm_module.DEFAULT_MAX_NODES):
    """The mapping as the programme gives it, nothing kept asked."""
    return sorted(stm_module._run(a, b, da, db, True, max_nodes)[1])


def test_a_template_reads_its_pages_as_it_would_without_them(monkeypatch):
    """The fits and values of a template's own pages, and of a page it was not built from,
    with the build's mappings kept and without."""
    product = [page_input((FIXTURES / f"product-p{i}.html").read_bytes()).tree for i in (1, 2, 3)]
    stranger = page_input((FIXTURES / "product-p4.html").read_bytes()).tree
    template = build_template(product)
    assert kept_mappings.holding()
    runs = counted_runs(monkeypatch)
    kept = [match_template(template, tree) for tree in (*product, stranger)]
    answered = len(runs)
    kept_mappings.forget()
    fresh = [match_template(template, tree) for tree in (*product, stranger)]
    assert [(f.share, f.values) for f in kept] == [(f.share, f.values) for f in fresh]
    assert answered < len(runs) - answered  # the build's pages were answered, the stranger not


def test_only_the_last_are_kept(monkeypatch):
    monkeypatch.setattr(kept_mappings, "KEPT", 3)
    rng = random.Random(5)
    trees = [random_tree(rng, 20) for _ in range(6)]
    for t in trees[1:]:
        stm_mapping(trees[0], t, keep=True)
    assert len(kept_mappings._kept) == 3
    runs = counted_runs(monkeypatch)
    stm_mapping(trees[0], trees[5])  # kept
    stm_mapping(trees[0], trees[1])  # gone
    assert len(runs) == 1


def test_a_template_built_in_a_worker_reads_its_pages_here_without_matching(monkeypatch):
    """A build run in an analysis worker (another interpreter, its own string hashes) sends
    back the mappings it kept: its pages are then read here as after a build made here (no
    programme but the base page's own), with the same fits and values."""
    from functools import partial

    from visdup.runtime.workers import WorkerPool

    product = [page_input((FIXTURES / f"product-p{i}.html").read_bytes()).tree for i in (1, 2, 3)]
    pool = WorkerPool(1)
    try:
        template, kept = pool.submit(
            kept_mappings.run_keeping, partial(build_template, product)
        ).result(timeout=60)
    finally:
        pool.shutdown()
    assert kept, "the build kept no mapping"
    assert not kept_mappings.holding()
    kept_mappings.keep_all(kept)
    runs = counted_runs(monkeypatch)
    read = [match_template(template, tree) for tree in product]
    from_worker = len(runs)
    kept_mappings.forget()
    here = build_template(product)
    runs.clear()
    read_here = [match_template(here, tree) for tree in product]
    # the same programmes run as after a build made here: the base page's own, no other
    assert from_worker == len(runs) < len(product)
    assert [(f.share, f.values) for f in read] == [(f.share, f.values) for f in read_here]
    assert template.to_dict() == here.to_dict()


def test_run_keeping_gives_only_what_the_call_kept():
    rng = random.Random(9)
    a, b, c = (random_tree(rng, 40) for _ in range(3))
    stm_mapping(a, b, keep=True)
    pairs, kept = kept_mappings.run_keeping(lambda: stm_mapping(a, c, keep=True))
    assert len(kept) == 1
    kept_mappings.forget()
    kept_mappings.keep_all(kept)
    assert kept_mappings.recall(kept[0][0]) == pairs
