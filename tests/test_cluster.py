"""Template clusters: fixture sites, order independence, online assignment and its state."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from visdup.templates.cluster import (
    OnlineClusterer,
    adjusted_rand_index,
    cluster_trees,
    medoid,
    purity,
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


def test_medoid_is_most_central():
    trees = [page_tree(p.read_bytes()) for p in sorted(FIXTURES.glob("product-*.html"))]
    m = medoid(trees)
    assert 0 <= m < len(trees)


def test_online_matches_batch_and_survives_state():
    trees = fixture_trees()
    online = OnlineClusterer()
    ids = {key: online.assign(key, tree) for key, tree in sorted(trees.items())}
    assert len(set(ids.values())) == 3
    for key, cid in ids.items():
        same = {k for k, c in ids.items() if c == cid}
        assert {kind(k) for k in same} == {kind(key)}
    state = json.loads(json.dumps(online.to_state()))
    restored = OnlineClusterer.from_state(state)
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
    result = run_cli("cluster", str(tmp_path))
    assert result.returncode == 0, result.stderr
    result = run_cli("cluster", str(FIXTURES), "--threshold", "2")
    assert result.returncode == 2
