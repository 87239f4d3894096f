"""Records from pages: map a page onto its cluster's template and read the field nodes.

A page fits a template when STM maps every required node of the template (seed 003 §2.5);
each field then yields the text of the page node it maps to, None where the page has none.
The input is an iterable of ``(key, html bytes)`` so files, a crawl or a database can feed it.
"""

from __future__ import annotations

import csv
import json
import logging
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import IO, Any, Literal

from visdup import config
from visdup.engine import Engine, LocalEngine
from visdup.errors import InputError
from visdup.escape import csv_cell
from visdup.templates.cluster import Cluster
from visdup.templates.layouts import DEFAULT_LAYOUT_THRESHOLD, layout_clusters
from visdup.templates.sample import choose_sample, sample_order, starting_page
from visdup.templates.signature import TemplateInput, page_input
from visdup.templates.stm import DEFAULT_MAX_NODES, FlatTree, page_tree, stm_mapping, unpacked
from visdup.templates.template import (
    DEFAULT_MAX_PAGES,
    RESERVED_NAMES,
    Anchor,
    Template,
    build_template,
    clean_value,
)

logger = logging.getLogger(__name__)

#: Share of a template's required nodes a page must map to fit it (the setting's default).
#: Required nodes are estimated from a sample of the cluster, so a page may miss one of them
#: and still fit.
DEFAULT_MIN_FIT = config.VISDUP_EXTRACT_MIN_FIT


@dataclass
class Fit:
    """How a page maps onto a template: the share of required nodes mapped and the values."""

    share: float
    values: dict[str, str | None]
    min_fit: float = DEFAULT_MIN_FIT

    @property
    def fits(self) -> bool:
        return self.share >= self.min_fit


def match_template(
    template: Template,
    tree: FlatTree,
    *,
    min_fit: float = DEFAULT_MIN_FIT,
    max_nodes: int = DEFAULT_MAX_NODES,
) -> Fit:
    mapping = stm_mapping(
        template.tree,
        tree,
        details_a=template.details(),
        details_b=tree.text_details(),
        max_nodes=max_nodes,
    )
    image = dict(mapping)
    required = [i for i, r in enumerate(template.required) if r]
    share = (sum(1 for i in required if i in image) / len(required)) if required else 1.0
    values: dict[str, str | None] = {}
    parents: list[int] | None = None
    places: dict[str, list[int]] = {}  # text -> its nodes in the page, read once when needed
    for item in template.fields:
        j = image.get(item.node)
        anchor = item.anchor
        if anchor is not None:
            caption = template.tree.texts[anchor.label]
            mapped = image.get(anchor.label)
            if j is None or mapped is None or tree.texts[mapped] != caption:
                # the row STM chose carries another label, or none: read the page's own
                if parents is None:
                    parents = tree.parents()
                    for i, text in enumerate(tree.texts):
                        if text is not None:
                            places.setdefault(text, []).append(i)
                found = _anchored(tree, places.get(caption or "", []), anchor, parents)
                if found is not False:
                    j = found
        values[_column(item.name)] = clean_value(tree.texts[j]) if j is not None else None
    return Fit(share, values, min_fit)


def _anchored(
    tree: FlatTree, labels: list[int], anchor: Anchor, parents: list[int]
) -> int | Literal[False] | None:
    """The value the page's own label (its nodes ``labels``, those reading as the template's
    caption) stands for, the way the template's does
    (:class:`visdup.templates.template.Anchor`): its node, None when the page has no such
    label (the row is absent), False when it has several."""
    found: int | None = None
    for i in labels:
        k = i
        for _ in range(anchor.up):
            k = parents[k]
            if k < 0:
                break
        if k <= 0:
            continue
        siblings = tree.children(parents[k])
        at = siblings.index(k)
        if at + 1 >= len(siblings):
            continue
        k = siblings[at + 1]
        for position in anchor.path:
            kids = tree.children(k)
            if position >= len(kids):
                k = -1
                break
            k = kids[position]
        if k < 0 or tree.texts[k] is None:
            continue
        if found is not None:
            return False  # the label stands more than once: which is meant is not known
        found = k
    return found


#: Characters of a page's main text kept in its record.
MAIN_TEXT_CHARS = 100_000


def _column(name: str) -> str:
    """A field's column: templates stored before names were reserved may still use one."""
    return f"{name}_field" if name in RESERVED_NAMES else name


def extract_record(
    template: Template | None,
    key: str,
    tree: FlatTree,
    *,
    min_fit: float = DEFAULT_MIN_FIT,
    max_nodes: int = DEFAULT_MAX_NODES,
    text: str | None = None,
) -> dict[str, Any]:
    """One row: ``url``, ``cluster``, ``fits``, one key per field (None when absent), then
    ``main_text``: the page's main content as one field (when ``text`` is given)."""
    record: dict[str, Any] = {"url": key, "cluster": None, "fits": False}
    if template is not None and tree.nodes != 0:
        fit = match_template(template, tree, min_fit=min_fit, max_nodes=max_nodes)
        record["cluster"] = template.cluster
        record["fits"] = fit.fits
        if fit.fits:
            record.update(fit.values)
        else:
            record.update(dict.fromkeys(fit.values))
    if text is not None:
        record["main_text"] = text[:MAIN_TEXT_CHARS]
    return record


def best_template(
    templates: Sequence[Template],
    tree: FlatTree,
    *,
    min_fit: float = DEFAULT_MIN_FIT,
    max_nodes: int = DEFAULT_MAX_NODES,
) -> Template | None:
    """The template a page fits best (most of its required nodes mapped), if it fits any."""
    best: tuple[float, int, Template] | None = None
    for k, template in enumerate(templates):
        fit = match_template(template, tree, min_fit=min_fit, max_nodes=max_nodes)
        if fit.fits and (best is None or (fit.share, -k) > (best[0], -best[1])):
            best = (fit.share, k, template)
    return best[2] if best else None


@dataclass
class Dataset:
    """Extraction result: templates per cluster and one record per page."""

    templates: list[Template]
    records: list[dict[str, Any]]
    #: Every page's layout cluster (key → id), those without a template of their own included.
    clusters: dict[str, int] = field(default_factory=dict)
    #: Cluster id → the page that stands for it (its cleanest key).
    representatives: dict[int, str] = field(default_factory=dict)
    #: What names a row: "url" for crawled pages, "path" for page files.
    key: str = "url"

    @property
    def columns(self) -> list[str]:
        cols = [self.key, "cluster", "fits"]
        seen = set(cols)
        for template in self.templates:
            for name in map(_column, template.field_names):
                if name not in seen:
                    seen.add(name)
                    cols.append(name)
        if any("main_text" in r for r in self.records):
            cols.append("main_text")
        return cols


def _tree_item(max_nodes: int, item: tuple[str, bytes]) -> FlatTree:
    key, data = item
    return page_tree(data, url=key, max_nodes=max_nodes)


def page_trees(
    pages: Iterable[tuple[str, bytes]],
    *,
    max_nodes: int = DEFAULT_MAX_NODES,
    engine: Engine | None = None,
) -> dict[str, FlatTree]:
    """Every page's DOM tree, parsed on ``engine`` (default: here), keyed in input order."""
    items = list(pages)
    build = partial(_tree_item, max_nodes)
    made = (engine or LocalEngine()).map(build, items)
    return {key: tree for (key, _data), tree in zip(items, made, strict=True)}


def _input_item(item: tuple[str, bytes]) -> TemplateInput:
    key, data = item
    return page_input(data, url=key)


def page_inputs(
    pages: Iterable[tuple[str, bytes]], *, engine: Engine | None = None
) -> dict[str, TemplateInput]:
    """Every page's layout signature and DOM tree, computed on ``engine``, in input order."""
    items = list(pages)
    made = (engine or LocalEngine()).map(_input_item, items)
    return {key: found for (key, _data), found in zip(items, made, strict=True)}


def extract_pages(
    pages: Iterable[tuple[str, bytes]],
    *,
    threshold: float = DEFAULT_LAYOUT_THRESHOLD,
    min_cluster_size: int = config.VISDUP_TEMPLATE_MIN_PAGES,
    min_fit: float = DEFAULT_MIN_FIT,
    max_nodes: int = DEFAULT_MAX_NODES,
    max_pages: int = DEFAULT_MAX_PAGES,
    engine: Engine | None = None,
) -> Dataset:
    """Cluster the pages by layout (as a crawl does), build one template per cluster, extract
    one record per page. ``threshold``: the layout-signature similarity of one template.

    Clusters smaller than ``min_cluster_size`` get no template: their pages are recorded with
    ``cluster`` None and no values. A template is built from the sample a crawl of the same
    pages keeps (``max_pages`` pages: :mod:`visdup.templates.sample`), from the same page,
    so the two give the same fields.
    """
    inputs = page_inputs(pages, engine=engine)
    empty = FlatTree((), ())
    trees = {key: unpacked(found.tree) or empty for key, found in inputs.items()}
    clusters = layout_clusters(
        ((key, found.layout) for key, found in inputs.items()), threshold=threshold
    )
    templates: list[Template] = []
    by_key: dict[str, Template | None] = dict.fromkeys(trees)
    for cluster in clusters:
        if cluster.size < min_cluster_size:
            continue
        sample, medoid = _template_sample(cluster, inputs, max_pages)
        if not sample or not trees[sample[medoid or 0]].nodes:
            continue
        template = build_template(
            [trees[k] for k in sample],
            main_texts=[inputs[k].text for k in sample],
            titles=[inputs[k].title for k in sample],
            medoid=medoid,
            cluster=cluster.id,
            keys=sample,
            max_pages=max_pages,
            max_nodes=max_nodes,
        )
        templates.append(template)
        for key in cluster.members:
            by_key[key] = template
    # A page left in a small cluster may still fit a template (a product page with many reviews).
    for key, found in by_key.items():
        if found is None and templates and trees[key].nodes:
            by_key[key] = best_template(templates, trees[key], min_fit=min_fit, max_nodes=max_nodes)
    records = [
        extract_record(
            by_key[key],
            key,
            trees[key],
            min_fit=min_fit,
            max_nodes=max_nodes,
            text=inputs[key].text,
        )
        for key in sorted(trees)
    ]
    return Dataset(
        templates,
        records,
        clusters={key: c.id for c in clusters for key in c.members},
        representatives={c.id: c.representative for c in clusters},
    )


def _template_sample(
    cluster: Cluster, inputs: dict[str, TemplateInput], size: int
) -> tuple[list[str], int | None]:
    """The keys of the pages a cluster's template is built from, as a crawl keeps them
    (:func:`visdup.templates.sample.choose_sample` over its pages that have a tree), and the
    one it starts from, as a crawl's (:func:`visdup.templates.sample.starting_page`; None:
    none has the cluster's most common signature, and the template finds its medoid)."""
    kept = choose_sample(
        ((sample_order(k), k) for k in cluster.members if inputs[k].tree is not None), size
    )
    keys = [k for _order, k in kept]
    shapes = []
    for k in keys:
        tree = inputs[k].tree
        shapes.append((inputs[k].layout.key, tree.nodes if tree is not None else 0))
    return keys, starting_page(shapes, cluster.core)


def write_jsonl(records: Iterable[dict[str, Any]], out: IO[str]) -> int:
    count = 0
    for record in records:
        out.write(json.dumps(record, ensure_ascii=False, sort_keys=False) + "\n")
        count += 1
    return count


def write_csv(records: Iterable[dict[str, Any]], out: IO[str], columns: Sequence[str]) -> int:
    writer = csv.DictWriter(out, fieldnames=list(columns), extrasaction="ignore")
    writer.writeheader()
    count = 0
    for record in records:
        writer.writerow({c: "" if record.get(c) is None else csv_cell(record[c]) for c in columns})
        count += 1
    return count


def write_dataset(dataset: Dataset, path: str | os.PathLike[str]) -> int:
    """Write records as .jsonl or .csv, chosen by the file name."""
    target = Path(path)
    suffix = target.suffix.lower()
    if suffix not in {".jsonl", ".csv"}:
        raise InputError(f"--out must end in .jsonl or .csv, not {target.name!r}")
    with target.open("w", encoding="utf-8", newline="") as out:
        if suffix == ".jsonl":
            return write_jsonl(dataset.records, out)
        return write_csv(dataset.records, out, dataset.columns)
