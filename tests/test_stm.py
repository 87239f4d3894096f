"""Simple Tree Matching: compiled kernel and Python fallback against a textbook recursion."""

from __future__ import annotations

import json
import os
import pickle
import random
import subprocess
import sys
from array import array
from pathlib import Path

import lxml.html
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kernels import python_kernels

from visdup.storage.compressed import decompress
from visdup.templates import stm as stm_module
from visdup.templates.stm import (
    FlatTree,
    PackedTree,
    dom_tree,
    label_paths,
    page_tree,
    stm,
    stm_mapping,
    stm_upper_bound,
    stm_upper_bounds,
    text_code,
    tree_distance_stm,
    unpacked,
)

KERNELS = ["python"] + (["compiled"] if stm_module._kernel is not None else [])


@pytest.fixture(params=KERNELS)
def kernel(request, monkeypatch):
    if request.param == "python":
        python_kernels(monkeypatch)
    return request.param


def random_tree(rng: random.Random, n: int, alphabet: str = "abc") -> FlatTree:
    parent = [-1] + [rng.randrange(i) for i in range(1, n)]
    kids: list[list[int]] = [[] for _ in range(n)]
    for i in range(1, n):
        kids[parent[i]].append(i)
    order, stack = [], [0]
    while stack:
        x = stack.pop()
        order.append(x)
        stack.extend(reversed(kids[x]))
    pos = {x: k for k, x in enumerate(order)}
    sizes = [1] * n
    for x in reversed(order):
        if parent[x] >= 0:
            sizes[pos[parent[x]]] += sizes[pos[x]]
    labels = [rng.choice(alphabet) for _ in range(n)]
    return FlatTree([labels[x] for x in order], sizes)


def textbook(a: FlatTree, b: FlatTree, i: int = 0, j: int = 0) -> int:
    """Yang's recursion, written as in the paper (small trees only)."""
    if a.labels[i] != b.labels[j]:
        return 0
    ka, kb = a.children(i), b.children(j)
    m = [[0] * (len(kb) + 1) for _ in range(len(ka) + 1)]
    for x in range(1, len(ka) + 1):
        for y in range(1, len(kb) + 1):
            m[x][y] = max(
                m[x][y - 1], m[x - 1][y], m[x - 1][y - 1] + textbook(a, b, ka[x - 1], kb[y - 1])
            )
    return m[-1][-1] + 1


def tree(text: str) -> FlatTree:
    """'a(b,c(d))' notation for small test trees."""
    labels: list[str] = []
    parent: list[int] = []
    stack: list[int] = []
    token = ""
    for ch in text + ",":
        if ch in "(),":
            if token:
                labels.append(token)
                parent.append(stack[-1] if stack else -1)
                token = ""
            if ch == "(":
                stack.append(len(labels) - 1)
            elif ch == ")":
                stack.pop()
        else:
            token += ch
    sizes = [1] * len(labels)
    for i in range(len(labels) - 1, 0, -1):
        sizes[parent[i]] += sizes[i]
    return FlatTree(labels, sizes)


def test_worked_example(kernel):
    a = tree("html(body(div(p,p),ul(li,li)))")
    b = tree("html(body(div(p),ul(li,li,li),div(p)))")
    assert stm(a, b) == 7
    pairs = stm_mapping(a, b)
    assert pairs[:3] == [(0, 0), (1, 1), (2, 2)]
    assert len(pairs) == 7
    assert tree_distance_stm(a, b) == pytest.approx(1 - 14 / 18)


def test_different_roots_match_nothing(kernel):
    assert stm(tree("a(b)"), tree("b(b)")) == 0
    assert stm_mapping(tree("a(b)"), tree("b(b)")) == []
    assert tree_distance_stm(tree("a(b)"), tree("b(b)")) == 1.0


def test_top_down_restriction(kernel):
    # The c subtrees are equal but their parents differ: nothing below them maps.
    assert stm(tree("r(x(c(d,e)))"), tree("r(y(c(d,e)))")) == 1


def test_random_trees_against_textbook(kernel):
    rng = random.Random(7)
    for _ in range(150):
        a = random_tree(rng, rng.randint(1, 25))
        b = random_tree(rng, rng.randint(1, 25))
        expected = textbook(a, b)
        assert stm(a, b) == expected
        pairs = stm_mapping(a, b)
        assert len(pairs) == expected
        # A valid top-down mapping: one-to-one, labels equal, parents mapped to parents.
        pa, pb = a.parents(), b.parents()
        image = dict(pairs)
        assert len(set(image.values())) == len(pairs)
        for i, j in pairs:
            assert a.labels[i] == b.labels[j]
            if i:
                assert image.get(pa[i]) == pb[j]


def test_kernels_agree():
    if stm_module._kernel is None:
        pytest.skip("compiled kernel not built")
    rng = random.Random(3)
    a, b = random_tree(rng, 400, "ab"), random_tree(rng, 400, "ab")
    compiled = (stm(a, b), stm_mapping(a, b))
    with pytest.MonkeyPatch.context() as mp:
        python_kernels(mp)
        assert (stm(a, b), stm_mapping(a, b)) == compiled


def repeating_tree(rng: random.Random, items: int) -> tuple[FlatTree, list[int]]:
    """A page-like tree of lists whose items are mostly one of a few shapes (equal subtrees,
    as a manual's tables of contents have), with a detail per node: 0 or one of two codes."""
    shapes = ["li(a(t))", "li(a(t),ul(li(a(t))))", "li(t)", "li(a(t),t)"]
    parts = [f"div(h(t),{','.join(rng.choice(shapes) for _ in range(items))})" for _ in range(3)]
    t = tree(f"body({','.join(parts)},div(p(t),p(t)))")
    details = [rng.choice((0, 0, 1, 2)) for _ in t.labels]
    return t, details


def _measures(a: FlatTree, b: FlatTree, da: list[int], db: list[int]) -> list[object]:
    return [
        stm(a, b),
        stm_mapping(a, b),
        stm_mapping(a, b, details_a=da, details_b=db),
        stm_mapping(a, b, details_a=da),
        stm_mapping(a, a, details_a=da, details_b=da),
        stm(a, a, details_a=da, details_b=da),
    ]


def test_equal_subtrees_map_as_the_matrices_would():
    """The compiled kernel maps equal subtrees without their matrices: the same scores and
    pairs as the Python reference, with and without details (0 matches anything)."""
    if stm_module._kernel is None:
        pytest.skip("compiled kernel not built")
    rng = random.Random(11)
    for _ in range(40):
        (a, da), (b, db) = repeating_tree(rng, rng.randint(1, 30)), repeating_tree(rng, 25)
        compiled = _measures(a, b, da, db)
        with pytest.MonkeyPatch.context() as mp:
            python_kernels(mp)
            assert _measures(a, b, da, db) == compiled
        assert compiled[-1] == len(a.labels)


def random_shape(rng: random.Random, depth: int = 0) -> str:
    """A list item of a random shape: links, texts and nested lists, a few levels deep."""
    parts = [rng.choice(["a(t)", "t", "span(t)", "a(t)"]) for _ in range(rng.randint(1, 3))]
    if depth < 2 and rng.random() < 0.3:
        parts.append(f"ul({','.join(random_shape(rng, depth + 1) for _ in range(2))})")
    return f"li({','.join(parts)})"


def list_page(rng: random.Random, shapes: list[str], items: int) -> str:
    """Two lists of ``items`` items each of one of ``shapes``, and a paragraph."""
    lists = [f"div(h(t),ul({','.join(rng.choice(shapes) for _ in range(items))}))" for _ in "ab"]
    return f"body({','.join(lists)},p(t))"


def test_pairs_met_again_take_the_first_ones_score_and_mapping():
    """Items of one page against the items of another meet the same two shapes again and
    again (a manual's index); the kernel scores such a pair once: the scores and mappings of
    the Python reference, with details (0 matches anything) and without, over enough distinct
    pairs of shapes to grow its table several times."""
    if stm_module._kernel is None:
        pytest.skip("compiled kernel not built")
    rng = random.Random(17)
    for round_ in range(8):
        shapes = [random_shape(rng) for _ in range(12 if round_ < 6 else 45)]

        a, b = (tree(list_page(rng, shapes, rng.randint(5, 50))) for _ in range(2))
        # few distinct details, so that shapes with their details come again too
        da = [rng.choice((0, 0, 0, 1, 2)) for _ in a.labels]
        db = [rng.choice((0, 0, 0, 1, 2)) for _ in b.labels]
        compiled = _measures(a, b, da, db)
        with pytest.MonkeyPatch.context() as mp:
            python_kernels(mp)
            assert _measures(a, b, da, db) == compiled


def test_shapes_apart_by_one_label_or_one_child_stay_apart():
    """Subtrees that differ only in one node's label, its detail, or how many children it has,
    are shapes of their own (many of them, so that they meet in the kernel's tables), and so
    are the items that hold them: scores and mappings are the Python reference's."""
    if stm_module._kernel is None:
        pytest.skip("compiled kernel not built")
    rng = random.Random(23)
    items = [f"li(x{k}({','.join(['t'] * m)}))" for k in range(30) for m in (1, 2, 3)]
    pages = [[tree(f"ul({','.join(rng.choices(items, k=150))})") for _ in "ab"] for _ in "abc"]
    # and apart by one node's detail: the same trees with a few distinct details
    details = [[[rng.choice((1, 2)) for _ in t.labels] for t in pair] for pair in pages]

    def measures() -> list[object]:
        return [
            (stm(a, b), stm_mapping(a, b), stm_mapping(a, b, details_a=da, details_b=db))
            for (a, b), (da, db) in zip(pages, details, strict=True)
        ]

    kept = stm_module._kernel.digest_bits(0)  # every shape in one slot's probe: all compared
    try:
        compiled = measures()
    finally:
        stm_module._kernel.digest_bits(kept)
    with pytest.MonkeyPatch.context() as mp:
        python_kernels(mp)
        assert measures() == compiled


def test_repeating_real_pages_score_and_map_as_the_reference():
    """Index pages of the Python manual (long lists of entries of a few shapes), cut to
    their first nodes: the kernel's scores and mappings are the Python reference's."""
    if stm_module._kernel is None:
        pytest.skip("compiled kernel not built")
    base = Path(
        os.environ.get("VISDUP_DEBIAN_DOCS", Path(__file__).resolve().parents[1] / "debian-docs")
    )
    pages = sorted((base / "usr/share/doc/python3.11/html").glob("genindex-*.html"))[:4]
    if len(pages) < 4:
        pytest.skip(f"{base} lacks the Python manual (bash ../shared/data/get-debian-docs.sh)")
    trees = [page_tree(p.read_bytes()) for p in pages]
    details = [t.text_details() for t in trees]

    def measures(x: int, y: int) -> list[object]:
        a, b = trees[x], trees[y]
        return [
            stm(a, b, max_nodes=700),
            stm_mapping(a, b, max_nodes=700),
            stm_mapping(a, b, details_a=details[x], details_b=details[y], max_nodes=700),
        ]

    compiled = [measures(0, 1), measures(2, 3)]
    with pytest.MonkeyPatch.context() as mp:
        python_kernels(mp)
        assert [measures(0, 1), measures(2, 3)] == compiled


def test_details_restrict_matches(kernel):
    a = tree("ul(li(t))")
    b = tree("ul(li(t),li(t))")
    # By structure alone the first item maps; a fixed label text must meet the same text.
    assert stm_mapping(a, b) == [(0, 0), (1, 1), (2, 2)]
    da = [0, 0, text_code("ISBN")]
    db = [0, 0, text_code("Date"), 0, text_code("ISBN")]
    assert stm_mapping(a, b, details_a=da, details_b=db) == [(0, 0), (1, 3), (2, 4)]
    # A free (0) detail on either side matches anything.
    assert stm(a, b, details_a=[0, 0, 0], details_b=db) == 3


def test_deep_trees_do_not_recurse(kernel):
    n = 4000
    chain = FlatTree(["div"] * n, list(range(n, 0, -1)))
    assert stm(chain, chain, max_nodes=n) == n
    assert len(stm_mapping(chain, chain, max_nodes=n)) == n


def test_node_cap_truncates(kernel):
    n = 100
    chain = FlatTree(["div"] * n, list(range(n, 0, -1)))
    assert stm(chain, chain, max_nodes=10) == 10
    assert tree_distance_stm(chain, chain, max_nodes=10) == 0.0


def test_empty_trees(kernel):
    empty = FlatTree((), ())
    assert stm(empty, tree("a")) == 0
    assert tree_distance_stm(empty, empty) == 0.0


def test_bad_sizes_rejected(kernel):
    bad = FlatTree.__new__(FlatTree)
    bad.labels, bad.sizes, bad._arrays = ("a", "b", "c"), (3, 3, 1), None
    with pytest.raises(ValueError):
        stm(bad, tree("a(b,c)"))


def test_upper_bound_holds():
    rng = random.Random(11)
    for _ in range(100):
        a = random_tree(rng, rng.randint(1, 40), "ab")
        b = random_tree(rng, rng.randint(1, 40), "ab")
        assert stm(a, b) <= stm_upper_bound(label_paths(a), label_paths(b))


def test_batched_upper_bounds_are_the_single_ones(kernel):
    """One histogram against many in one call: the same sums, whichever side is smaller,
    with keys of any hash (label paths are salted hashes, negative ones too)."""
    rng = random.Random(12)
    trees = [random_tree(rng, rng.randint(1, 60), "abcd") for _ in range(80)]
    paths = [label_paths(t) for t in trees]
    paths += [{}, {-1: 3, 2**62: 1}, {rng.randrange(-(2**63), 2**63): rng.randint(1, 9)}]
    for a in paths[:20] + paths[-3:]:
        assert stm_upper_bounds(a, paths) == [stm_upper_bound(a, b) for b in paths]
    assert stm_upper_bounds(paths[0], []) == []


def test_batched_upper_bounds_leave_odd_counts_to_python():
    if stm_module._kernel is None:
        pytest.skip("no compiled kernel")
    assert stm_module._kernel.path_bounds({1: 2}, [{1: 3}]) == [2]
    for odd in ({1: 2.5}, {1: True}, {1: 2**70}):
        assert stm_module._kernel.path_bounds({1: 3}, [odd]) is None  # Python answers
        assert stm_upper_bounds({1: 3}, [odd]) == [stm_upper_bound({1: 3}, odd)]
    assert stm_module._kernel.path_bounds({1: 3}, [{2: 1}, "not a dict"]) is None
    with pytest.raises(TypeError):
        stm_module._kernel.path_bounds([1], [])


def test_dom_tree_skips_invisible_and_keeps_texts():
    root = lxml.html.fromstring(
        "<html><head><title>T</title></head><body><!-- c --><script>x()</script>"
        "<div class='a b'>Hello <b>big</b> world<p>  two\n words </p></div></body></html>"
    )
    t = dom_tree(root, classes=True)
    assert t.labels == ("html", "body", "div.a.b", "#text", "b", "#text", "#text", "p", "#text")
    assert t.texts[3] == "Hello" and t.texts[6] == "world" and t.texts[8] == "two words"
    assert t.hints[2] == "div.a.b"
    assert t.sizes[0] == t.nodes


def test_page_tree_bad_input():
    assert page_tree(b"").nodes == 0
    assert page_tree(b"\x00\x01\x02\x03" * 100).nodes == 0
    deep = b"<html><body>" + b"<div>" * 5000 + b"x" + b"</div>" * 5000 + b"</body></html>"
    t = page_tree(deep, max_nodes=1000)
    assert t.nodes == 1000 and t.truncated
    assert stm(t, t) == 1000


def test_flat_tree_roundtrip():
    t = page_tree(b"<html><body><p class='x'>a</p></body></html>")
    assert FlatTree.from_dict(t.to_dict()) == t


def test_packed_tree_keeps_everything():
    t = page_tree(
        b"<html><body><div id='a' class='x y'><p>one</p><p>two \xc3\xa9</p></div></body></html>",
        max_nodes=4,
    )
    assert t.truncated
    packed = PackedTree.of(t)
    assert packed.nodes == t.nodes
    back = pickle.loads(pickle.dumps(packed)).unpack()
    assert back == t  # labels, sizes, texts
    assert (back.hints, back.truncated) == (t.hints, t.truncated)
    assert unpacked(packed) == t and unpacked(t) is t and unpacked(None) is None
    # a worker's tree crosses uncompressed; what is kept is compressed, with the same nodes
    raw = pickle.loads(pickle.dumps(PackedTree.of(t, compress=False)))
    assert not raw.compressed and raw.unpack() == t
    kept = raw.compact()
    assert kept.compressed and decompress(kept.data) == raw.data
    # a page's tree of real size takes less room kept than crossing
    row = b"<div class='row'><p>text %d</p><a href='/%d'>link</a></div>"
    rows = b"".join(row % (i, i) for i in range(60))
    big = PackedTree.of(page_tree(b"<html><body>" + rows + b"</body></html>"), compress=False)
    assert len(big.compact().data) < len(big.data) / 4
    assert raw.compact() is kept  # a tree two samples keep is compressed once
    assert pickle.loads(pickle.dumps(raw))._compact is None
    assert kept.unpack() == t and (kept.unpack().hints, kept.unpack().truncated) == (
        t.hints,
        t.truncated,
    )
    assert kept.compact() is kept and stm_module.packed(kept) is kept
    assert stm_module.packed(raw).compressed
    assert stm_module.packed(t).unpack() == t


def test_worker_analysis_sends_the_tree_packed():
    from visdup.dedup.analysis import AnalysisOptions, analyse, analyse_bytes

    html = (
        b"<html><body><nav><a href='/'>home</a></nav><main><p>"
        + b"word " * 80
        + b"</p></main></body></html>"
    )
    options = AnalysisOptions(template=True)
    here = analyse(html, url="http://x/a", options=options)
    there = analyse_bytes(html, "http://x/a", None, "text/html", None, options)
    assert here.template_input is not None and there.template_input is not None
    assert isinstance(there.template_input.tree, PackedTree)
    assert not there.template_input.tree.compressed  # compressed only where it is kept
    assert unpacked(there.template_input.tree) == here.template_input.tree


def _parents_by_stack(tree: FlatTree) -> list[int]:
    """The parents as the open nodes say them: the reference for FlatTree.parents."""
    parent = [-1] * tree.nodes
    stack: list[int] = []
    for i in range(tree.nodes):
        while stack and stack[-1] + tree.sizes[stack[-1]] <= i:
            stack.pop()
        if stack:
            parent[i] = stack[-1]
        stack.append(i)
    return parent


def test_parents_equal_the_open_nodes_on_random_and_real_trees():
    rng = random.Random(11)
    trees = [random_tree(rng, rng.randrange(1, 300)) for _ in range(300)]
    trees.append(
        page_tree(b"<html><body><div><p>a<b>b</b></p><ul><li>x</li><li>y</li></ul></div></body>")
    )
    trees.append(
        page_tree(b"<html><body>" + b"<div>" * 500 + b"deep" + b"</div>" * 500, max_nodes=80)
    )
    for tree in trees:
        assert tree.parents() == _parents_by_stack(tree)
        assert all(tree.sizes[p] > i - p for i, p in enumerate(tree.parents()) if p >= 0)
        assert tree.parents() == tree._parents_python()


@given(st.lists(st.one_of(st.integers(-3, 12), st.integers(2**62, 2**63 - 1)), max_size=40))
@settings(max_examples=500, deadline=None)
def test_the_kernels_parents_and_text_codes_are_pythons(sizes):
    """Sizes no tree has (below 1, past the end, near 2**63) the kernel reads as Python does;
    past 64 bits it leaves them to Python."""
    from visdup.templates import flat_tree

    tree = FlatTree.__new__(FlatTree)  # sizes as they come, not checked
    tree.sizes = tuple(sizes)
    assert tree.parents() == tree._parents_python()
    if flat_tree._kernel is not None:
        assert flat_tree._kernel.parents((*sizes, 2**64)) is None
        texts = [None, "", "a", "ä x", "日本\U0001f600", *map(str, sizes)]
        assert list(array("i", flat_tree._kernel.text_codes(texts))) == [
            flat_tree._text_code_python(t) if t is not None else 0 for t in texts
        ]
        with pytest.raises(TypeError):
            flat_tree._kernel.text_codes(["a", 3])


def test_text_codes_are_the_same_in_every_process():
    """A text's match code does not depend on the interpreter's string hashes: a mapping found
    in an analysis worker is kept under the codes the process that asked computes."""
    texts = ["ISBN-13", "", "ä x", "日本\U0001f600", "Date"]
    here = [text_code(t) for t in texts]
    assert 0 not in here and len(set(here)) == len(here)
    script = (
        "import sys, json; from visdup.templates.flat_tree import text_code, _text_code_python;"
        "texts = json.loads(sys.argv[1]);"
        "print(json.dumps([[text_code(t) for t in texts], [_text_code_python(t) for t in texts]]))"
    )
    for seed in ("1", "2"):
        out = subprocess.run(
            [sys.executable, "-c", script, json.dumps(texts)],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
        )
        assert json.loads(out.stdout) == [here, here]


def test_one_leaf_under_each_maps_as_the_matrices_would():
    """A pair of nodes with one leaf child each (a link's text, a heading's) is scored without
    opening its frame: the same scores and pairs as the Python reference, whether the leaves
    match by label, differ by label, or differ by detail."""
    if stm_module._kernel is None:
        pytest.skip("compiled kernel not built")
    rng = random.Random(5)
    items = ["li(a(t))", "li(a(x))", "li(p(t))", "li(a(t),t)", "li(t)", "li(x)", "li(a)"]
    for _ in range(40):
        a = tree(f"ul({','.join(rng.choice(items) for _ in range(rng.randint(1, 12)))})")
        b = tree(f"ul({','.join(rng.choice(items) for _ in range(rng.randint(1, 12)))})")
        da = [rng.choice((0, 1, 2)) for _ in a.labels]
        db = [rng.choice((0, 1, 2)) for _ in b.labels]
        compiled = _measures(a, b, da, db)
        with pytest.MonkeyPatch.context() as mp:
            python_kernels(mp)
            assert _measures(a, b, da, db) == compiled


def test_label_codes_stay_in_their_process():
    """STM reads labels as codes numbered in the order one process meets them: a tree or a
    layout signature sent to another process (a template built in a worker, a signature to
    the labelling) must come without this one's codes, which there would name other
    labels."""
    from visdup.templates.layout import make_layout

    tree = page_tree(b"<html><body><div class='x'><p>a</p><p>b</p></div></body></html>")
    layout = make_layout(["body", "div", "p", "p"], [4, 3, 1, 1])
    assert stm(tree, tree) == tree.nodes and stm(layout, layout) == 4
    assert tree._arrays is not None and layout._arrays is not None  # kept once made
    for sent in (pickle.loads(pickle.dumps(tree)), pickle.loads(pickle.dumps(layout))):
        assert sent._arrays is None
    back = pickle.loads(pickle.dumps(tree))
    assert back == tree and (back.hints, back.texts, back.truncated) == (
        tree.hints,
        tree.texts,
        tree.truncated,
    )
    assert stm(back, tree) == tree.nodes


def test_new_labels_get_new_codes_in_order_of_meeting():
    before = dict(stm_module._CODES)
    fresh = [f"label-{len(before)}-{i}" for i in range(3)]
    known = next(iter(before), None)
    labels = [fresh[0], fresh[1], fresh[0], *([known] if known is not None else []), fresh[2]]
    codes = list(stm_module._codes(labels))
    n = len(before)
    assert codes[:3] == [n + 1, n + 2, n + 1] and codes[-1] == n + 3
    if known is not None:
        assert codes[3] == before[known]


def _python_label_paths(tree, n):
    """label_paths's loop as Python runs it."""
    out: dict[int, int] = {}
    stack: list[tuple[int, int]] = []
    for i in range(n):
        while stack and stack[-1][0] <= i:
            stack.pop()
        h = hash((stack[-1][1] if stack else 0, tree.labels[i]))
        out[h] = out.get(h, 0) + 1
        stack.append((i + tree.sizes[i], h))
    return out


def test_compiled_label_paths_are_pythons_on_random_and_real_trees(monkeypatch):
    """The kernel hashes each path as Python's tuple hash does: a histogram made either way
    meets one made the other way, and the bounds between them hold."""
    rng = random.Random(11)
    trees = [random_tree(rng, rng.randint(1, 80), "abcé") for _ in range(400)]
    trees += [
        page_tree(b"<html><body>" + b"<div><p>x</p><ul><li>a</li><li>b</li></ul></div>" * k)
        for k in (1, 5, 40)
    ]
    chain = FlatTree([str(i) for i in range(3000)], list(range(3000, 0, -1)))  # deep paths
    trees.append(chain)
    trees.append(FlatTree(["a", "b", "c"], [3.0, 1, 2**70]))  # no int, past a tree: Python's
    caps = [None, 1, 7, 2000]
    compiled = [[label_paths(t, c) if c else label_paths(t) for c in caps] for t in trees]
    python_kernels(monkeypatch)
    for tree, made in zip(trees, compiled, strict=True):
        for cap, found in zip(caps, made, strict=True):
            n = min(tree.nodes, cap or stm_module.DEFAULT_MAX_NODES)
            expected = _python_label_paths(tree, n)
            assert found == expected and list(found) == list(expected)
            assert (label_paths(tree, cap) if cap else label_paths(tree)) == expected
