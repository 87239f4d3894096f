"""Template clusters cut again at another layout-signature threshold, from the stored pages.

A crawl places each page by its layout signature at ``VISDUP_CLUSTER_THRESHOLD``; an auditor
who finds a site's page types merged (or one type split) tries another threshold without
crawling again: each stored page's signature is read again from its stored body, as
``visdup cluster --db`` does, and the batch clusterer (the crawl's code, so the partition does
not depend on page order) cuts them at the new threshold. The report then shows the new
clusters; ``--save`` stores them in place of the crawl's (their signatures too, so a later
crawl goes on from them).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from visdup.errors import InputError
from visdup.report.data import ClusterRow, StoreData
from visdup.storage.store import Store
from visdup.templates.cluster import Cluster
from visdup.templates.extract import page_inputs
from visdup.templates.layout import layout_key
from visdup.templates.layouts import layout_clusters
from visdup.templates.signature import TemplateInput


def stored_items(
    clusters: Iterable[Cluster], inputs: Mapping[str, TemplateInput], ids: Mapping[str, int]
) -> list[dict[str, Any]]:
    """What :meth:`Store.save_clusters` stores for batch clusters of pages keyed by URL
    (``ids``: URL → stored page id): members, representative and signatures."""
    return [
        {
            "id": c.id,
            "size": c.size,
            "representative": c.representative,
            "members": [ids[m] for m in c.members if m in ids],
            # its signatures: a later crawl warms its clusters from these
            "layouts": list(
                {inputs[m].layout.key: inputs[m].layout for m in c.members if m in inputs}.values()
            ),
        }
        for c in clusters
    ]


def recut(
    store: Store, data: StoreData, threshold: float, *, save: bool = False
) -> tuple[StoreData, int]:
    """``data`` with its pages' template clusters cut at ``threshold``, and the number of
    pages whose body was read; with ``save`` the new clusters replace the stored ones.

    Pages without a stored body (redirects, errors, bodies not kept) keep no cluster: the
    batch cannot place what it cannot read, as ``visdup cluster --db`` cannot.
    """
    if data.bodies is None:
        return data, 0
    by_id = {p.id: p for p in data.pages}
    bodies = data.bodies(sorted(by_id))
    pages = [(by_id[i].url, body) for i, body in sorted(bodies.items()) if body]
    if data.pages and not pages:
        raise InputError(
            "--cluster-threshold reads the stored pages again: this store kept no bodies"
            " (VISDUP_STORE_BODY)"
        )
    inputs = page_inputs(pages)
    clusters = layout_clusters(
        ((url, found.layout) for url, found in inputs.items()), threshold=threshold
    )
    cluster_of = {url: c.id for c in clusters for url in c.members}
    # a cluster the re-cut leaves as it was keeps its template's fields; others have no
    # template until a crawl or `visdup extract` builds one
    before: dict[int, set[str]] = {}
    for p in data.pages:
        if p.cluster_id is not None:
            before.setdefault(p.cluster_id, set()).add(p.url)
    old_fields = {c.id: c.fields for c in data.clusters}
    rows = [
        ClusterRow(
            c.id,
            c.representative,
            old_fields.get(c.id, []) if before.get(c.id) == set(c.members) else [],
        )
        for c in clusters
    ]
    moved = [replace(p, cluster_id=cluster_of.get(p.url)) for p in data.pages]
    if save:
        ids = {p.url: p.id for p in data.pages}
        store.save_clusters(stored_items(clusters, inputs, ids), current_key=layout_key)
    settings = {**data.settings, "VISDUP_CLUSTER_THRESHOLD": threshold}
    what = "saved to the store" if save else "stored clusters unchanged"
    source = f"{data.source}; templates re-cut at {threshold:.2f} ({what})"
    return replace(data, pages=moved, clusters=rows, settings=settings, source=source), len(pages)
