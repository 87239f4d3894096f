"""The report's templates section: a card per template cluster, with its layout's picture.

A template is named by what it is to the site, its pages' most common URL pattern
(``/shop/products/*.html``); its id, which only visdup knows, comes second.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

from visdup.report.audit import template_names
from visdup.report.data import StoreData
from visdup.report.html_format import link
from visdup.report.markup import Safe, esc, tag
from visdup.report.summary import Group
from visdup.report.svg import LAYOUT_CLASSES, layout, legend
from visdup.structure.term import Term


def templates_html(
    templates: list[dict[str, Any]],
    data: StoreData,
    groups: list[Group],
    id_of: Mapping[str, int],
    terms: Mapping[int, Term],
    short: Callable[[str], str] = str,
) -> Safe:
    total = len(data.pages) or 1
    cluster_of = {p.id: p.cluster_id for p in data.pages}
    groups_in = Counter(cluster_of.get(g.original_id) for g in groups)
    names = template_names(data)
    items = []
    for t in templates:
        term = terms.get(id_of.get(t["representative"], -1))
        picture = (
            layout(
                term,
                label=f"layout of template {t['id']}",
                attrs={"data-template-id": t["id"]},
            )
            if term is not None
            else tag("p", {"class": "muted", "data-template-id": t["id"]}, "no stored term")
        )
        share = t["size"] / total
        items.append(
            tag(
                "div",
                {"class": "template", "id": f"template-{t['id']}"},
                tag(
                    "div",
                    None,
                    tag(
                        "h3",
                        {"data-template": names.get(t["id"], ""), "class": "url"},
                        names.get(t["id"], ""),
                        tag("small", None, f" template #{t['id']}"),
                    ),
                    tag("div", None, f"{t['size']} pages · {share:.1%} of the crawl"),
                    tag("div", {"class": "share"}, tag("i", {"style": f"width:{share:.1%}"})),
                    # a definition list without the end tags HTML lets go: 200 cards add up
                    Safe("<dl><dt>representative<dd>"),
                    link(t["representative"], short),
                    Safe('<dt>URL patterns<dd><ul class="url">'),
                    [Safe("<li>" + esc(p)) for p in t["url_patterns"]],
                    Safe("</ul><dt>duplicate groups inside<dd>"),
                    groups_in.get(t["id"], 0),
                    Safe("<dt>fields<dd>" + esc(", ".join(t["fields"][:12])))
                    if t.get("fields")
                    else "",
                    Safe("</dl>"),
                ),
                tag("div", None, picture),
            )
        )
    keys = legend([(cls, name) for name, cls in LAYOUT_CLASSES.items()])
    return tag(
        "section",
        {"id": "templates"},
        tag("h2", None, f"Templates ({len(templates)})"),
        tag("p", {"class": "muted"}, "largest first; pictures: ", keys),
        items or tag("p", {"class": "muted"}, "no templates stored"),
    )
