"""What a template is: a generalised page, as stored and as extraction reads it.

A :class:`Template` is its cluster's medoid tree with a role for each node (required,
optional, a field) and its named fields (:class:`Field`); a field named after a label keeps
the :class:`Anchor` that finds its value from that label on pages where STM aligned the rows
otherwise. :mod:`visdup.templates.template` builds templates; while it does, each sample page
comes with where the medoid's nodes map onto it (:data:`Mapped`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from visdup.templates.flat_tree import FlatTree, match_codes


@dataclass(frozen=True)
class Anchor:
    """Where a labelled field's value stands from its label: the label's text node in the
    template (``label``), up ``up`` levels to the label's element, then its next sibling and
    down ``path`` (child positions) to the value.

    STM aligns rows by how many nodes they share, and a row with another label shares all but
    its label's text: a book without an ISBN-10 row had its ISBN-13 read where the template's
    ISBN-10 row stood. A page's value is read from its own label when the template's label
    did not map onto the same text (:func:`visdup.templates.extract.match_template`).
    """

    label: int
    up: int
    path: tuple[int, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"label": self.label, "up": self.up, "path": list(self.path)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Anchor:
        return cls(int(data["label"]), int(data["up"]), tuple(int(i) for i in data["path"]))


@dataclass
class Field:
    name: str
    node: int
    anchor: Anchor | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "node": self.node}
        if self.anchor is not None:
            out["anchor"] = self.anchor.to_dict()
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Field:
        anchor = data.get("anchor")
        return cls(data["name"], int(data["node"]), Anchor.from_dict(anchor) if anchor else None)


@dataclass
class Template:
    """A generalised page: ``tree`` (the medoid), per-node roles and the named fields."""

    tree: FlatTree
    required: list[bool]
    fixed: list[bool]
    fields: list[Field]
    pages: int
    cluster: int | str | None = None
    representative: str | None = None

    @property
    def field_names(self) -> list[str]:
        return [f.name for f in self.fields]

    def details(self) -> list[int]:
        """Match codes: fixed texts must be met by the same text, everything else by structure."""
        return match_codes(self.tree.texts, self.fixed)

    def roles(self) -> list[str]:
        field_nodes = {f.node for f in self.fields}
        return [
            "field" if i in field_nodes else ("required" if req else "optional")
            for i, req in enumerate(self.required)
        ]

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": 1,
            "cluster": self.cluster,
            "representative": self.representative,
            "pages": self.pages,
            "tree": self.tree.to_dict(),
            "required": [i for i, r in enumerate(self.required) if r],
            "fixed": [i for i, f in enumerate(self.fixed) if f],
            "fields": [f.to_dict() for f in self.fields],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Template:
        if data.get("version") != 1:
            raise ValueError(f"unknown template version {data.get('version')!r}")
        tree = FlatTree.from_dict(data["tree"])
        n = tree.nodes
        required = [False] * n
        for i in data["required"]:
            required[i] = True
        fixed = [False] * n
        for i in data["fixed"]:
            fixed[i] = True
        return cls(
            tree=tree,
            required=required,
            fixed=fixed,
            fields=[Field.from_dict(f) for f in data["fields"]],
            pages=int(data["pages"]),
            cluster=data.get("cluster"),
            representative=data.get("representative"),
        )


#: A sample page and where the base page's nodes map onto it (None: it is the base).
Mapped = tuple[FlatTree, dict[int, int] | None]


def onto(mapping: dict[int, int] | None, node: int) -> int | None:
    """The page's node that the base's ``node`` maps onto (the base: itself), or None."""
    return node if mapping is None else mapping.get(node)
