"""A cluster's template: its medoid page generalised against the members (seed 003 §2.4).

Two STM passes. The first maps the medoid onto every member by structure alone and finds the
*fixed* texts (labels such as "ISBN-13" that read the same wherever they are mapped). The
second pass makes those fixed texts part of matching, so a row labelled "Publisher" can only
map to a row labelled "Publisher": structure alone would happily align the third row of one
page with the third row of another when a row is missing. The second pass decides:

- required nodes: mapped in (nearly) every member;
- optional nodes: the rest;
- fields: text leaves that are not fixed (their text varies) and are present often enough,
  but for the article's own text (it is the record's ``main_text``,
  :mod:`visdup.templates.main_text`) and one item of a list of other records
  (:mod:`visdup.templates.record_lists`).

Fields are named after what a reader would call them (:mod:`visdup.templates.field_names`).
What a template is, as stored and read, is :mod:`visdup.templates.template_model`'s; its
names, and the naming rules' that extraction uses, are imported from here.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from visdup import config
from visdup.templates.field_names import (
    RECORD_COLUMNS,
    RESERVED_NAMES,
    by_heading,
    clean_value,
    field_names,
    own_title_field,
    slug,
    stable_names,
    title_field,
)
from visdup.templates.flat_tree import match_codes
from visdup.templates.main_text import in_main_text
from visdup.templates.record_lists import RecordLists
from visdup.templates.stm import (
    DEFAULT_MAX_NODES,
    FlatTree,
    PackedTree,
    stm_mapping,
    unpacked,
)
from visdup.templates.template_model import Anchor, Field, Mapped, Template

__all__ = [
    "DEFAULT_FIELD_SUPPORT",
    "DEFAULT_MAX_PAGES",
    "DEFAULT_REQUIRED_SHARE",
    "RECORD_COLUMNS",
    "RESERVED_NAMES",
    "Anchor",
    "Field",
    "Template",
    "build_template",
    "clean_value",
    "slug",
]

logger = logging.getLogger(__name__)

#: Members a template is generalised against at most (spread evenly over the cluster).
DEFAULT_MAX_PAGES = config.VISDUP_TEMPLATE_MAX_PAGES
#: Share of pages a node must be mapped in to be required.
DEFAULT_REQUIRED_SHARE = 1.0
#: Share of pages a varying text must be present in to become a field.
DEFAULT_FIELD_SUPPORT = 0.2


def _spread(count: int, limit: int) -> list[int]:
    if count <= limit:
        return list(range(count))
    return sorted({round(k * (count - 1) / (limit - 1)) for k in range(limit)})


def build_template(
    sample: Sequence[FlatTree | PackedTree],
    *,
    medoid: int | None = None,
    cluster: int | str | None = None,
    representative: str | None = None,
    keys: Sequence[str] | None = None,
    max_pages: int = DEFAULT_MAX_PAGES,
    required_share: float = DEFAULT_REQUIRED_SHARE,
    field_support: float = DEFAULT_FIELD_SUPPORT,
    max_nodes: int = DEFAULT_MAX_NODES,
    main_texts: Sequence[str | None] | None = None,
    titles: Sequence[str | None] | None = None,
) -> Template:
    """Generalise a cluster's pages into a template (``medoid``: index of the initial template).

    Pages may come packed (the crawl keeps its samples so): they are unpacked here, in the
    process that builds. ``main_texts``: each page's main content as text (its record's
    ``main_text``); an unlabelled text that is part of it on nearly every page is no field of
    its own (:func:`visdup.templates.main_text.in_main_text`). ``titles``: each page's own
    title (``<title>``); a field that reads the same on most pages is the template's
    ``title`` (:func:`visdup.templates.field_names.own_title_field`).
    ``keys``: each page's URL or name; without ``representative``, the template's is the
    medoid's, found here when ``medoid`` is not given.
    """
    if not sample:
        raise ValueError("a template needs at least one page")
    trees = [unpacked(t) or FlatTree((), ()) for t in sample]
    picked = _spread(len(trees), max_pages)
    if medoid is None:
        from visdup.templates.cluster import medoid as find_medoid

        medoid = picked[find_medoid([trees[i] for i in picked], max_nodes)]
    if representative is None and keys is not None:
        representative = keys[medoid]
    base = _capped(trees[medoid], max_nodes)
    others = [trees[i] for i in picked if i != medoid]
    fixed, mappings = _fixed_and_mappings(base, others, max_nodes)
    pages = len(others) + 1
    required, field_nodes = _roles(
        base, others, mappings, fixed, required_share=required_share, field_support=field_support
    )
    # each page with where the base's nodes map onto it (None: the base itself)
    onto: list[Mapped] = [
        (base, None),
        *((o, dict(pairs)) for o, pairs in zip(others, mappings, strict=True)),
    ]
    order = [medoid, *(i for i in picked if i != medoid)]
    fields = _fields(base, fixed, field_nodes, onto, order, main_texts, titles)
    logger.debug(
        "Template over %d pages: %d nodes, %d required, %d fields",
        pages,
        base.nodes,
        sum(required),
        len(fields),
    )
    return Template(
        tree=base,
        required=required,
        fixed=fixed,
        fields=fields,
        pages=pages,
        cluster=cluster,
        representative=representative,
    )


def _capped(tree: FlatTree, max_nodes: int) -> FlatTree:
    """The tree's first ``max_nodes`` nodes, as a tree of their own (truncated)."""
    if tree.nodes <= max_nodes:
        return tree
    return FlatTree(
        tree.labels[:max_nodes],
        [min(s, max_nodes - i) for i, s in enumerate(tree.sizes[:max_nodes])],
        tree.texts[:max_nodes],
        tree.hints[:max_nodes],
        truncated=True,
    )


def _fixed_and_mappings(
    base: FlatTree, others: Sequence[FlatTree], max_nodes: int
) -> tuple[list[bool], list[list[tuple[int, int]]]]:
    """The base's fixed texts, and the mapping of each other page that decides the rest."""
    texts = base.texts
    their_details = [other.text_details() for other in others]
    # Pass 1: structure only. A missing row shifts its neighbours onto the wrong labels, so a
    # text is a candidate label when it reads the same in most pages it is mapped in.
    fixed, _ = _fixed_texts(base, others, None, None, max_nodes, majority=True)
    # Pass 2: candidates take part in matching; a label must now read the same everywhere.
    candidates = match_codes(texts, fixed)
    fixed, mappings = _fixed_texts(
        base, others, candidates, their_details, max_nodes, majority=False
    )
    # Pass 3: the final mapping decides required nodes and fields. When pass 2 kept every
    # candidate, the matching it ran is that mapping already (same trees, same details).
    details = match_codes(texts, fixed)
    if details != candidates:
        mappings = [
            stm_mapping(base, other, details_a=details, details_b=d, max_nodes=max_nodes, keep=True)
            for other, d in zip(others, their_details, strict=True)
        ]
    return fixed, mappings


def _roles(
    base: FlatTree,
    others: Sequence[FlatTree],
    mappings: Sequence[list[tuple[int, int]]],
    fixed: list[bool],
    *,
    required_share: float,
    field_support: float,
) -> tuple[list[bool], list[int]]:
    """Which of the base's nodes are required, and which text leaves may be fields: those
    not fixed that vary or are missing somewhere, on enough pages (every text of a
    template of one page). A field is a value: the page fits without it."""
    n = base.nodes
    texts = base.texts
    mapped = [1] * n  # the medoid maps onto itself
    varies = [False] * n
    for other, pairs in zip(others, mappings, strict=True):
        for i, j in pairs:
            mapped[i] += 1
            if texts[i] is not None and other.texts[j] != texts[i]:
                varies[i] = True
    pages = len(others) + 1
    need = max(1, int(required_share * pages + 1e-9))
    required = [m >= need for m in mapped]
    if others:
        field_nodes = [
            i
            for i, t in enumerate(texts)
            if t is not None
            and not fixed[i]
            and (varies[i] or mapped[i] < pages)
            and mapped[i] >= field_support * pages
        ]
    else:
        # One page shows no variation: every text may be a value.
        field_nodes = [i for i, t in enumerate(texts) if t is not None]
    for i in field_nodes:
        required[i] = False
    return required, field_nodes


def _fields(
    base: FlatTree,
    fixed: list[bool],
    field_nodes: list[int],
    onto: list[Mapped],
    order: list[int],
    main_texts: Sequence[str | None] | None,
    titles: Sequence[str | None] | None,
) -> list[Field]:
    """The template's fields, named: the candidate ``field_nodes`` less those in one item of
    a list of other records and, given the pages' ``main_texts`` (in ``order``, the medoid
    first), those that are part of the article's own text."""
    labelled: dict[int, tuple[str, Anchor]] = {}
    parents = base.parents()
    others = len(onto) > 1
    stable = stable_names(onto[1:]) if others else None
    own_title = (
        own_title_field(onto, field_nodes, [titles[i] for i in order])
        if titles is not None
        else None
    )
    field_names(base, fixed, field_nodes, labelled, parents, stable)  # the captions
    lists = RecordLists(base, fixed, parents)
    field_nodes = [
        i for i in field_nodes if lists.one_record(i, labelled[i][0] if i in labelled else None)
    ]
    if main_texts is not None and others:
        field_nodes = _outside_main_text(
            base, field_nodes, labelled, parents, onto, [main_texts[i] for i in order], own_title
        )
    # Named once the fields are known: a dropped one leaves no gap in the numbering.
    labelled = {}
    names = field_names(base, fixed, field_nodes, labelled, parents, stable, own_title)
    return [
        Field(name, i, labelled[i][1] if i in labelled else None)
        for name, i in zip(names, field_nodes, strict=True)
    ]


def _outside_main_text(
    base: FlatTree,
    field_nodes: list[int],
    labelled: dict[int, tuple[str, Anchor]],
    parents: list[int],
    onto: list[Mapped],
    main_texts: list[str | None],
    own_title: int | None,
) -> list[int]:
    """The fields that are no part of the pages' main text: a caption other than a heading
    names them, they are the title (the main heading's or the page's own), or their values
    do not lie inside the main text (:func:`visdup.templates.main_text.in_main_text`)."""
    title = title_field(base, field_nodes, parents)
    captioned = {i for i, (_c, anchor) in labelled.items() if not by_heading(base, anchor, parents)}
    flow = in_main_text(
        onto,
        [i for i in field_nodes if i not in captioned],
        main_texts,
        headed=set(labelled) - captioned,
    )
    return [
        i
        for i in field_nodes
        if i in captioned
        or (title is not None and i == title[0])
        or i == own_title
        or i not in flow
    ]


def _fixed_texts(
    base: FlatTree,
    others: Sequence[FlatTree],
    details: list[int] | None,
    their_details: Sequence[Any] | None,
    max_nodes: int,
    *,
    majority: bool,
) -> tuple[list[bool], list[list[tuple[int, int]]]]:
    """Text leaves of ``base`` that read the same in the pages they are mapped in, and the
    mapping of each page (``their_details``: each page's text details, when ``details``)."""
    n = base.nodes
    texts = base.texts
    if not others:
        return [False] * n, []
    same = [0] * n
    differ = [0] * n
    mappings = []
    for k, other in enumerate(others):
        pairs = stm_mapping(
            base,
            other,
            details_a=details,
            details_b=their_details[k] if details is not None and their_details else None,
            max_nodes=max_nodes,
            keep=details is not None,  # the final mappings when no candidate drops out
        )
        mappings.append(pairs)
        for i, j in pairs:
            if texts[i] is not None:
                if other.texts[j] == texts[i]:
                    same[i] += 1
                else:
                    differ[i] += 1
    if majority:
        return [t is not None and same[i] > differ[i] for i, t in enumerate(texts)], mappings
    fixed = [t is not None and same[i] > 0 and differ[i] == 0 for i, t in enumerate(texts)]
    return fixed, mappings
