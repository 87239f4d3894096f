"""Template clusters: fixture sites, order independence, online assignment and its state."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from tests.partition import adjusted_rand_index, purity
from visdup.templates.cluster import (
    DEFAULT_MAX_NODES,
    OnlineClusterer,
    _Pages,
    cluster_trees,
    medoid,
)
from visdup.templates.stm import FlatTree, page_tree

FIXTURES = Path(__file__).parent / "fixtures" / "templates"
REPO = Path(__file__).resolve().parent.parent


def fixture_trees() -> dict[str, FlatTree]:
    return {p.name: page_tree(p.read_bytes()) for p in sorted(FIXTURES.glob("*.html"))}


def kind(name: str) -> str:
    return name.split("-", 1)[0]


def test_fixture_sites_cluster_by_template():
    clusters = cluster_trees(fixture_trees().items())
    groups = sorted(sorted(c.members) for c in clusters)
    assert [{kind(m) for m in g} for g in groups] == [{"article"}, {"listing"}, {"product"}]
    assert sorted(c.size for c in clusters) == [3, 3, 5]
    product = next(c for c in clusters if kind(c.members[0]) == "product")
    assert product.representative in product.members
    assert product.id == 0  # largest first


def test_order_does_not_matter():
    items = list(fixture_trees().items())
    expected = [c.to_dict() for c in cluster_trees(items)]
    rng = random.Random(5)
    for _ in range(5):
        rng.shuffle(items)
        assert [c.to_dict() for c in cluster_trees(items)] == expected


def test_threshold_zero_keeps_pages_apart():
    clusters = cluster_trees(fixture_trees().items(), threshold=0.0)
    assert len(clusters) == 11


def test_outliers_and_empty_pages_stay_alone():
    trees = fixture_trees()
    trees["empty"] = page_tree(b"")
    trees["odd"] = page_tree(b"<html><body><form><input><input></form></body></html>")
    clusters = cluster_trees(trees.items())
    singles = sorted(c.members[0] for c in clusters if c.size == 1)
    assert singles == ["empty", "odd"]


def test_duplicate_key_is_counted_once():
    trees = list(fixture_trees().items())
    clusters = cluster_trees([*trees, trees[0]])
    assert sum(c.size for c in clusters) == len(trees)


def _all_pairs_medoid(trees: list[FlatTree], candidates: list[int]) -> int:
    pages = _Pages(trees, DEFAULT_MAX_NODES)
    return min(candidates, key=lambda c: (sum(pages.exact(c, o) for o in candidates), c))


def _random_tree(rng: random.Random, n: int, labels: str) -> FlatTree:
    """A tree of ``n`` nodes in preorder: each node's parent drawn among those before it."""
    if n == 0:
        return FlatTree((), [])
    children: list[list[int]] = [[] for _ in range(n)]
    for i in range(1, n):
        children[rng.randrange(i)].append(i)
    order: list[int] = []
    sizes = [1] * n
    stack = [(0, False)]
    while stack:
        node, done = stack.pop()
        if done:
            sizes[node] += sum(sizes[k] for k in children[node])
            continue
        order.append(node)
        stack.append((node, True))
        stack.extend((k, False) for k in reversed(children[node]))
    return FlatTree(tuple(rng.choice(labels) for _ in order), [sizes[v] for v in order])


def test_medoid_is_the_least_total_distance_first_on_a_tie():
    """The pruned search gives what summing every pair gives, ties and empty pages included,
    on fixture pages of three templates and on random trees."""
    fixtures = list(fixture_trees().values())
    trees = [*fixtures, fixtures[2], fixtures[2], page_tree(b"")]
    pages = _Pages(trees, DEFAULT_MAX_NODES)
    assert pages.medoid(range(len(trees))) == _all_pairs_medoid(trees, list(range(len(trees))))
    assert pages.stm_calls < len(trees) * (len(trees) - 1) // 2  # the bounds spared some
    rng = random.Random(11)
    for _ in range(300):
        shared = _random_tree(rng, rng.randint(1, 25), "abc")
        trees = [
            shared if rng.random() < 0.3 else _random_tree(rng, rng.randint(0, 25), "abcd")
            for _ in range(rng.randint(1, 10))
        ]
        everyone = list(range(len(trees)))
        assert medoid(trees) == _all_pairs_medoid(trees, everyone)
        some = sorted(rng.sample(everyone, rng.randint(1, len(trees))))
        assert _Pages(trees, DEFAULT_MAX_NODES).medoid(some) == _all_pairs_medoid(trees, some)


def test_online_matches_batch_and_survives_state():
    trees = fixture_trees()
    online = OnlineClusterer()
    ids = {key: online.assign(key, tree) for key, tree in sorted(trees.items())}
    assert len(set(ids.values())) == 3
    for key, cid in ids.items():
        same = {k for k, c in ids.items() if c == cid}
        assert {kind(k) for k in same} == {kind(key)}
    restored = OnlineClusterer()
    for cid in online.clusters:
        restored.load_cluster(json.loads(json.dumps(online.cluster_state(cid))))
    assert restored.clusters == online.clusters
    extra = page_tree((FIXTURES / "product-p2.html").read_bytes())
    assert restored.assign("again", extra) == ids["product-p2.html"]
    new = page_tree(b"<html><body><form><input><input></form></body></html>")
    assert restored.assign("new", new) not in ids.values()


def test_online_representatives_are_capped():
    online = OnlineClusterer(representatives=2, threshold=0.9)
    for key, tree in sorted(fixture_trees().items()):
        online.assign(key, tree)
    for cid in online.clusters:
        assert len(online.representatives_of(cid)) <= 2


def test_adjusted_rand_index_and_purity():
    assert adjusted_rand_index([1, 1, 2, 2], ["a", "a", "b", "b"]) == 1.0
    assert adjusted_rand_index([1, 1, 2, 2], ["a", "b", "a", "b"]) == pytest.approx(-0.5)
    # Worked example: contingency [[1,1],[0,2]] -> ARI = (1 - 2*3/6) / (2.5 - 1) = 0
    assert adjusted_rand_index([0, 0, 1, 1], [0, 1, 1, 1]) == pytest.approx(0.0)
    assert purity(["x", "x", "y", "y"], [1, 1, 1, 2]) == 0.75


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "visdup", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )


def test_cluster_command_json():
    result = run_cli("cluster", str(FIXTURES), "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert sorted(c["size"] for c in data["clusters"]) == [3, 3, 5]
    assert set(data["clusters"][0]) == {"id", "size", "representative", "members"}


def test_cluster_command_bad_input(tmp_path):
    result = run_cli("cluster", str(tmp_path / "missing"))
    assert result.returncode == 2
    assert result.stderr.startswith("visdup: error:")
    assert "Traceback" not in result.stderr
    (tmp_path / "blob.html").write_bytes(b"\x00\xff" * 500)
    (tmp_path / "empty.html").write_bytes(b"")
    result = run_cli("cluster", str(tmp_path))  # every file bad: each says why, status 2
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "blob.html" in result.stderr and "empty.html" in result.stderr
    result = run_cli("cluster", str(FIXTURES), "--threshold", "2")
    assert result.returncode == 2


# Layout signatures and their order-independent clusters.


def _blog_page(rng: random.Random, n: int) -> bytes:
    nav = "".join(f"<li><a href='/c{k}'>Cat {k}</a></li>" for k in range(rng.randrange(3, 9)))
    paras = "".join(
        f"<p>Post {n} paragraph {k} " + "words " * rng.randrange(20, 80) + "</p>"
        for k in range(rng.randrange(2, 30))
    )
    extra = "<div class='share'><a>share</a></div>" if rng.random() < 0.5 else ""
    return (
        f"<html><head><title>Post {n}</title></head><body><header><h1>Blog</h1>"
        f"<nav><ul>{nav}</ul></nav></header><div class='wrap'><article><h2>Post {n}</h2>"
        f"{paras}{extra}</article><aside><h3>Archive</h3><ul><li><a>May</a></li>"
        f"<li><a>June</a></li></ul></aside></div><footer><p>(c) blog</p></footer></body></html>"
    ).encode()


def _shop_page(rng: random.Random, n: int) -> bytes:
    rows = "".join(
        f"<tr><th>Spec {k}</th><td>value {k} of item {n}</td></tr>"
        for k in range(rng.randrange(3, 15))
    )
    reviews = "".join(
        f"<li><p>Review {k}: " + "good " * rng.randrange(5, 40) + "</p></li>"
        for k in range(rng.randrange(0, 12))
    )
    return (
        f"<html><body><div id='top'><form><input name='q'><button>Go</button></form>"
        f"<a href='/cart'>Cart</a></div><table class='grid'><tr><td><img src='x.png'></td>"
        f"<td><h1>Item {n}</h1><table class='specs'>{rows}</table>"
        f"<button>Buy</button></td></tr></table><div><h2>Reviews</h2><ul>{reviews}</ul></div>"
        f"<div id='bottom'><span>Shop</span></div></body></html>"
    ).encode()


def _layout_site() -> dict[str, tuple[str, bytes]]:
    rng = random.Random(11)
    pages = {f"blog/{n}": ("blog", _blog_page(rng, n)) for n in range(30)}
    pages.update({f"shop/{n}": ("shop", _shop_page(rng, n)) for n in range(30)})
    return pages


def test_layout_signature_is_bounded_and_ignores_repeats_and_content():
    from visdup.page.parse import parse_html
    from visdup.templates.signature import MAIN, layout_signature, page_layout

    short = page_layout(_blog_page(random.Random(1), 1))
    assert MAIN in short.labels
    assert short.sizes[0] == short.nodes
    # Rows of a list collapse: 3 or 8 menu entries, 2 or 29 paragraphs give one signature.
    a = _blog_page(random.Random(5), 1).replace(b"<div class='share'><a>share</a></div>", b"")
    b = _blog_page(random.Random(6), 2).replace(b"<div class='share'><a>share</a></div>", b"")
    assert page_layout(a).key == page_layout(b).key
    # Depth and size are capped; a page thousands of levels deep is read without recursion.
    deep = b"<html><body>" + b"<div>" * 5000 + b"x" + b"</div>" * 5000 + b"</body></html>"
    sig = page_layout(deep)
    assert 0 < sig.nodes <= 10
    wide = "".join(f"<div><{t}>x</{t}></div>" for t in ("p", "span", "b") * 400)
    doc = parse_html(f"<html><body>{wide}</body></html>".encode())
    assert layout_signature(doc.root, max_nodes=50).nodes == 50
    # The page is only read.
    before = len(list(doc.root.iter()))
    layout_signature(doc.root)
    assert len(list(doc.root.iter())) == before


def test_layout_clusters_do_not_depend_on_page_order():
    from visdup.templates.layouts import LayoutClusterer, cluster_layouts
    from visdup.templates.signature import page_layout

    site = _layout_site()
    layouts = {key: page_layout(body) for key, (_kind, body) in site.items()}
    keys = sorted(layouts)
    first = cluster_layouts((k, layouts[k]) for k in keys)
    truth = [site[k][0] for k in keys]
    # Shop pages with few reviews have their specs table as main content, the others their
    # reviews: those few pages form a cluster of their own (README, "Template signatures").
    assert adjusted_rand_index(truth, [first[k] for k in keys]) >= 0.85
    assert not {first[k] for k in keys if k.startswith("blog")} & {
        first[k] for k in keys if k.startswith("shop")
    }
    for seed in range(5):
        order = keys[:]
        random.Random(seed).shuffle(order)
        online = LayoutClusterer()
        got = {k: online.add(layouts[k]) for k in order}
        # Ids are those of the clusters at the end (merges may rename a page's early id).
        final = {k: online.cluster_of(layouts[k].key) for k in order}
        assert final == first  # the same partition and the same ids, whatever the order
        assert set(got.values()) >= set(first.values())
        assert online.stats.exact <= online.stats.pages  # ≤ 1 exact comparison per page
        assert sum(online.sizes().values()) == len(keys)


def test_converging_layouts_merge():
    from visdup.templates.layouts import LayoutClusterer
    from visdup.templates.signature import make_layout

    def chain(extra: int) -> object:
        labels = ["body", "header", "nav", "#main", "footer"] + ["div"] * extra
        return make_layout(labels, [len(labels), 2, 1, 1, 1] + [1] * extra)

    a, b, bridge = chain(0), chain(4), chain(2)
    online = LayoutClusterer(threshold=0.8)
    ca, cb = online.add(a), online.add(b)
    assert ca != cb  # too far apart on their own
    joined = online.add(bridge)
    assert online.cluster_of(a.key) == online.cluster_of(b.key) == joined
    assert online.stats.merges >= 2


def _random_layout(rng: random.Random, base: list, marks: frozenset[str], outline: tuple):
    """A variant of ``base`` (nested ``[label, children]``): a few leaves dropped, added or
    renamed, so that variants of one base sit on both sides of the threshold."""
    from visdup.templates.signature import make_layout

    def copy(node: list) -> list:
        label, children = node
        kept = [copy(c) for c in children if c[1] or rng.random() > 0.15]
        for i, child in enumerate(kept):
            if not child[1] and rng.random() < 0.1:
                kept[i] = [rng.choice(["p", "ul", "table", "aside"]), []]
        if rng.random() < 0.15:
            kept.insert(rng.randrange(len(kept) + 1), [rng.choice(["div", "span", "form"]), []])
        return [label, kept]

    labels: list[str] = []
    sizes: list[int] = []

    def flat(node: list) -> int:
        at = len(labels)
        labels.append(node[0])
        sizes.append(0)
        sizes[at] = 1 + sum(flat(c) for c in node[1])
        return sizes[at]

    flat(copy(base))
    return make_layout(labels, sizes, marks, outline)


def _linked_components(layouts: list, threshold: float) -> dict[int, int]:
    """Atom key → smallest key of its connected group, every pair measured (no index)."""
    from visdup.templates.signature import may_link, similarity

    atoms = {layout.key: layout for layout in layouts}
    keys = sorted(atoms)
    parent = {k: k for k in keys}

    def find(k: int) -> int:
        while parent[k] != k:
            k = parent[k]
        return k

    for i, a in enumerate(keys):
        for b in keys[i + 1 :]:
            if may_link(atoms[a], atoms[b]) and similarity(atoms[a], atoms[b]) >= threshold:
                ra, rb = find(a), find(b)
                parent[max(ra, rb)] = min(ra, rb)
    return {k: find(k) for k in keys}


@pytest.mark.parametrize("hubs", [1, 8])
def test_layout_clusters_are_the_linked_components_whatever_the_hubs_and_the_order(hubs):
    from visdup.templates.layouts import LayoutClusterer, cluster_id

    rng = random.Random(7)

    def tree(depth: int) -> list:
        width = rng.randint(2, 5) if depth else 0
        return [
            rng.choice(["div", "section", "nav", "header"]),
            [tree(depth - 1) for _ in range(width)],
        ]

    bases = [["body", [tree(2), tree(2), ["#main", []], tree(1)]] for _ in range(4)]
    kinds = [(frozenset(), ()), (frozenset({"post"}), (1, 2)), (frozenset({"post"}), (2, 1))]
    pages = []
    for _ in range(260):
        marks, outline = rng.choice(kinds)
        pages.append(_random_layout(rng, rng.choice(bases), marks, outline))
    pages += rng.sample(pages, 60)  # pages met again: key hits
    threshold = 0.75  # variants of one base fall on both sides of it
    truth = _linked_components(pages, threshold)
    sizes = sorted(Counter(truth.values()).values())
    assert sizes[-8] >= 15 and sizes[0] == 1  # clusters of many atoms, and lone atoms
    counts: dict[int, int] = {}
    for layout in pages:
        counts[layout.key] = counts.get(layout.key, 0) + 1
    for seed in range(4):
        order = pages[:]
        random.Random(seed).shuffle(order)
        clusterer = LayoutClusterer(threshold=threshold)
        clusterer.HUBS = hubs
        for layout in order:
            clusterer.add(layout)
        assert {k: clusterer.cluster_of(k) for k in truth} == {
            k: cluster_id(root) for k, root in truth.items()
        }
        members: dict[int, list[int]] = {}
        for k, root in truth.items():
            members.setdefault(cluster_id(root), []).append(k)
        assert clusterer.sizes() == {c: sum(counts[k] for k in ks) for c, ks in members.items()}
        assert clusterer.clusters() == {c: sorted(ks) for c, ks in members.items()}
        for cid, ks in members.items():  # the most common atom, the smallest key on a tie
            assert clusterer.core(cid).key == min(ks, key=lambda k: (-counts[k], k))
