"""The report's verdicts section: pages per verdict, and the similarities of compared pages.

A threshold drawn in a valley of its histogram separates two populations; one drawn on a
slope cuts through pages that are alike for the same reason: the pictures show which.
"""

from __future__ import annotations

from typing import Any

from visdup.report.data import Similarities, StoreData, thresholds
from visdup.report.markup import Safe, tag
from visdup.report.svg import bars, histogram, legend

#: The verdicts in the order their bars are drawn (any other the store holds comes after).
VERDICT_ORDER = ("original", "duplicate", "moved", "same_template", "novel")


def verdicts_html(data: StoreData, report: dict[str, Any], sims: Similarities) -> Safe:
    counts = report.get("verdicts", {})
    ordered = {k: counts.get(k, 0) for k in VERDICT_ORDER}
    ordered.update({k: v for k, v in counts.items() if k not in ordered})
    theta, template_theta, content_theta = thresholds(data.settings)
    keys = legend([("h-acc", "confirmed"), ("h-rej", "rejected")])
    complete = "complete" if sims.complete else "incomplete"
    return tag(
        "section",
        {"id": "verdicts"},
        tag("h2", None, "Verdicts and similarities"),
        tag(
            "div",
            {"class": "grid"},
            tag("div", None, tag("h3", None, "Verdicts"), bars(ordered, label="pages per verdict")),
            tag(
                "div",
                None,
                tag("h3", None, "Structure: tree edit similarity"),
                tag(
                    "p",
                    {"class": "muted", "data-complete": str(sims.complete).lower()},
                    f"histograms {complete}: {sims.source}; ",
                    keys,
                ),
                histogram(
                    sims.structure_accepted,
                    sims.structure_rejected,
                    {"near-duplicate": theta, "template": template_theta},
                    label="structural similarity of compared pages",
                    attrs=_counted("structure", sims.structure_accepted, sims.structure_rejected),
                ),
                tag("h3", None, "Content: shared long sentences"),
                histogram(
                    sims.content_accepted,
                    sims.content_rejected,
                    {"content": content_theta},
                    label="content similarity of compared pages",
                    attrs=_counted("content", sims.content_accepted, sims.content_rejected),
                ),
            ),
        ),
    )


def _counted(channel: str, accepted: list[float], rejected: list[float]) -> dict[str, object]:
    """What a histogram counts, for a reader that cannot see the bars."""
    return {
        "data-channel": channel,
        "data-compared": len(accepted) + len(rejected),
        "data-confirmed": len(accepted),
    }
