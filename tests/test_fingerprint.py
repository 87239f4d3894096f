from __future__ import annotations

import csv
import itertools
import pathlib
import random
import subprocess
import sys

import pytest

from visdup.structure.fingerprint import (
    _simhash64_slow,
    hamming,
    mark_bucket,
    shape_features,
    shape_simhash,
    simhash64,
    term_features,
    term_simhash,
)
from visdup.structure.term import Term

DATA = pathlib.Path(__file__).resolve().parent.parent.parent / "shared" / "data"


def naive_simhash(features):
    """Textbook SimHash, written independently of the module's bit tricks."""
    import hashlib

    counts = [0] * 64
    for feature in features:
        text, weight = feature if isinstance(feature, tuple) else (feature, 1)
        h = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")
        for bit in range(64):
            counts[bit] += weight if h >> bit & 1 else -weight
    return sum(1 << bit for bit in range(64) if counts[bit] > 0)


def test_simhash_matches_textbook_definition():
    rnd = random.Random(7)
    for _ in range(300):
        features = [
            (f"f{rnd.randrange(10**6)}", rnd.randrange(0, 400)) for _ in range(rnd.randrange(40))
        ]
        if rnd.random() < 0.3:
            features = [name for name, _ in features]
        assert simhash64(features) == naive_simhash(features)


def test_simhash_odd_weights_fall_back_to_exact_loop():
    features = [("a", 2**40), ("b", 3), ("c", -5), ("d", 0.5)]
    assert simhash64(features) == naive_simhash(features) == _simhash64_slow(features)


def test_simhash_is_unsigned_64_bit():
    values = {simhash64([f"x{i}"]) for i in range(200)}
    assert all(0 <= v < 2**64 for v in values)
    assert any(v >= 2**63 for v in values)
    assert simhash64([]) == 0


def test_hamming():
    assert hamming(0, 0) == 0
    assert hamming(0, 2**64 - 1) == 64
    assert hamming(0b1011, 0b0001) == 2


def test_mark_buckets():
    assert [mark_bucket(r) for r in (1, 2, 3, 4, 5, 6, 8, 9, 16, 17)] == [
        0, 1, 2, 2, 3, 3, 3, 4, 4, 5,
    ]  # fmt: skip


def test_features_keep_brackets_and_structure():
    t = Term.parse("grp([2]row([4]text),col)")
    features = dict(term_features(t))
    assert features["s:grp(row*1,col)"] == 1
    assert features["s:row*1(text*2)"] == 2
    assert features["p:grp/row/text"] == 4
    assert features["p:grp/col"] == 1
    assert "p:grp" in features


def test_path_features_keep_the_last_three_ancestors():
    t = Term.parse("grp(row(col(grp(row(text)))))")
    features = dict(term_features(t))
    assert "p:col/grp/row/text" in features
    assert "p:grp/row/col/grp/row/text" not in features


def test_features_follow_flat_children_not_neighbours():
    a = Term.parse("grp(row(text),col)")
    b = Term.parse("grp(row(text,col))")
    assert dict(term_features(a)) != dict(term_features(b))
    assert "s:grp(row,col)" in dict(term_features(a))
    assert "s:row(text,col)" in dict(term_features(b))


def list_page(rows: int) -> Term:
    return Term.parse(
        f"grp(grp(row(text),grp([3]row(text))),grp(row(text),grp([{rows}]row([3]col(text))),"
        "grp(text)),grp(grp(text),[2]grp))"
    )


def test_row5_and_row6_differ_by_few_bits():
    assert hamming(term_simhash(list_page(5)), term_simhash(list_page(6))) <= 3
    assert hamming(term_simhash(list_page(9)), term_simhash(list_page(12))) <= 3


def test_different_layouts_differ_by_many_bits():
    table = list_page(5)
    nested = Term.parse(
        "grp(row(grp(text,[4]col(grp(text))),row(text)),[7]grp(grp([2]row(text),col(text)),text),"
        "grp([3]col([2]row(text))))"
    )
    flat = Term.parse("grp([12]text)")
    fps = [term_simhash(t) for t in (table, nested, flat)]
    for a, b in itertools.combinations(fps, 2):
        assert hamming(a, b) >= 12


def test_deep_term_does_not_recurse():
    depth = 5000
    labels = ["grp", "row"] * (depth // 2)
    t = Term.from_arrays(labels, [1] * depth, list(range(depth, 0, -1)))
    fp = term_simhash(t)
    assert 0 <= fp < 2**64
    assert len(term_features(t)) < 20


def test_stable_across_processes():
    code = (
        "from visdup.structure.term import Term;"
        "from visdup.structure.fingerprint import term_simhash;"
        "print(term_simhash(Term.parse('grp([2]row([4]text),col(text))')))"
    )
    root = pathlib.Path(__file__).resolve().parent.parent
    outs = {
        subprocess.run(
            [sys.executable, "-c", code],
            cwd=root,
            env={"PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        for seed in ("1", "2")
    }
    assert outs == {str(term_simhash(Term.parse("grp([2]row([4]text),col(text))")))}


@pytest.mark.slow
@pytest.mark.skipif(not (DATA / "warpcore" / "labels.csv").exists(), reason="no warpcore data")
def test_real_site_templates_separate():
    """On the documentation site, nearly every page has a same-template page within 6 bits,
    and no page of another generator is that close."""
    from visdup.errors import InputError
    from visdup.structure.term import page_term

    root = DATA / "warpcore"
    with open(root / "labels.csv", newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if r["template"] not in ("other", "template")]
    fps = []
    for row in rows:
        try:
            t = page_term((root / "site" / row["path"]).read_bytes())
        except InputError:
            continue
        family = "scaladoc" if row["template"].startswith("scaladoc") else row["template"]
        fps.append((row["template"], family, term_simhash(t)))
    near_same = near_other = 0
    for i, (tpl, fam, fp) in enumerate(fps):
        same = [hamming(fp, o) for j, (t2, _, o) in enumerate(fps) if j != i and t2 == tpl]
        other = [hamming(fp, o) for _, f2, o in fps if f2 != fam]
        near_same += bool(same) and min(same) <= 6
        near_other += min(other) <= 6
    assert near_same >= 0.9 * len(fps)
    assert near_other == 0


def test_shape_simhash_ignores_marks_and_repeats():
    # a list that grows changes mark buckets, and so the structural SimHash, but not the shape
    assert shape_simhash(list_page(5)) == shape_simhash(list_page(9))
    assert shape_features(Term.parse("grp(row,row,text,row)")) == shape_features(
        Term.parse("grp([4]row,text,[2]row)")
    )
    assert "s:grp(row,text,row)" in shape_features(Term.parse("grp(row,row,text,row)"))
    assert shape_simhash(list_page(5)) != shape_simhash(Term.parse("grp(grp(text),grp(text))"))
    assert 0 <= shape_simhash(list_page(5)) < 1 << 64


def test_a_term_carries_its_shape_across_processes_but_not_its_hash():
    """The analysis worker computes the shape SimHash, the labelling reads it from the term
    that crossed over; hash() of strings is salted per process, so the hash stays behind."""
    import pickle

    term = Term.parse("grp([2]row([4]text),col(text))")
    hash(term)
    shape = shape_simhash(term)
    copy = pickle.loads(pickle.dumps(term))
    assert copy == term and copy._shape == shape and copy._hash is None
    assert shape_simhash(copy) == shape == shape_simhash(Term.parse(str(term)))


def _random_term(rng: random.Random, labels: list[str]) -> Term:
    """A random tree's shape with labels of any text and marks of 0, 1 and past MAX_WEIGHT."""
    from test_distance import random_tree

    shape = rng.choice(("random", "chain", "fan", "bushy"))
    sizes = random_tree(rng, rng.randrange(1, 50), shape, False)[2]
    marks = [rng.choice([0, 1, 1, 1, 2, 3, 5, 9, 33, 100, 10**6]) for _ in sizes]
    return Term([rng.choice(labels) for _ in sizes], marks, sizes)


def test_compiled_term_simhashes_equal_the_features_simhash() -> None:
    """The text kernel's term and shape SimHashes are those of the Python features."""
    from visdup.structure import fingerprint

    kernel = fingerprint._text_kernel
    if kernel is None:
        pytest.skip("text-print kernel not built")
    rng = random.Random(17)
    labels = ["grp", "row", "col", "text", "t\u00e9xt", "\u5217", "a/b", "c,d"]
    for _ in range(2000):
        t = _random_term(rng, labels)
        expected = simhash64(term_features(t))
        assert kernel.term_simhash(t.labels, t.marks, t.sizes, 3, 32) == expected, str(t)
        assert term_simhash(t) == expected
        assert kernel.shape_simhash(t.labels, t.marks, t.sizes) == simhash64(shape_features(t))
    # a mark past what the kernel counts: Python answers, the same way
    huge = Term(("grp", "text"), (1, 2**70), (2, 1))
    assert kernel.term_simhash(huge.labels, huge.marks, huge.sizes, 3, 32) is None
    assert term_simhash(huge) == simhash64(term_features(huge))
    assert shape_simhash(huge) == simhash64(shape_features(huge))
    with pytest.raises(ValueError):  # sizes that are no preorder
        kernel.term_simhash(("a", "b"), (1, 1), (3, 1), 3, 32)
