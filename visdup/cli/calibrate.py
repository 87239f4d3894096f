"""visdup calibrate --pairs FILE.csv: thresholds from labelled page pairs."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from visdup.dedup.calibrate import (
    CHANNELS,
    Calibration,
    calibrate,
    page_features,
    read_pairs,
    score_pairs,
)
from visdup.errors import InputError
from visdup.page.files import read_page

HELP = "precision/recall by threshold from labelled pairs (a,b,same): pick a threshold that holds"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--pairs",
        required=True,
        metavar="FILE.csv",
        help="rows a,b,same: page files (relative to the CSV's folder) or stored URLs with --db",
    )
    parser.add_argument("--channel", choices=CHANNELS, default="structure")
    parser.add_argument(
        "--precision", type=float, metavar="P", help="also the threshold reaching precision P"
    )
    parser.add_argument("--db", metavar="URL", help="read pages named by URL from this store")
    parser.add_argument("--json", action="store_true", help="machine-readable output")


def _stored_loader(db: str, channel: str) -> Any:
    from visdup.storage.store import Store

    store = Store.from_url(db, create=False, migrate=False)
    ids = {row.url: row.id for row in store.rows("id", "url")}
    column = "term" if channel == "structure" else "content_print"

    def load(url: str) -> Any:
        if url not in ids:
            raise InputError(f"{url}: not in the store")
        text = store.values(column, [ids[url]]).get(ids[url])
        if not text:
            raise InputError(f"{url}: the store holds no {column} for it")
        if channel == "structure":
            from visdup.structure.term import Term

            return Term.parse(text)
        from visdup.content.textprint import ContentPrint

        return ContentPrint.from_json(text)

    return load


def _file_loader(base: Path, channel: str) -> Any:
    def load(name: str) -> Any:
        path = Path(name)
        if not path.is_absolute():
            path = base / path
        return page_features(read_page(path), channel, url=path.as_uri())

    return load


def run(args: argparse.Namespace) -> int:
    if args.precision is not None and not 0.0 < args.precision <= 1.0:
        raise InputError(f"--precision must be in (0, 1], not {args.precision}")
    pairs = read_pairs(args.pairs)
    load = (
        _stored_loader(args.db, args.channel)
        if args.db
        else _file_loader(Path(args.pairs).resolve().parent, args.channel)
    )
    result = calibrate(
        score_pairs(pairs, args.channel, load),
        pairs,
        channel=args.channel,
        precision=args.precision,
    )
    if args.json:
        print(json.dumps(result.to_json(), indent=2))
    else:
        print(render(result))
    return 0


def render(c: Calibration) -> str:
    lines = [
        f"{c.pairs} pairs ({c.positives} same), {c.sites} sites, channel {c.channel}",
        f"best F1 {c.f1:.4f} at threshold {c.threshold:.4f} "
        f"(precision {c.precision:.4f}, recall {c.recall:.4f})",
        f"valley: any threshold in ({c.valley[0]:.4f}, {c.valley[1]:.4f}] gives the same verdicts;"
        f" {c.overlap} pairs on the wrong side",
    ]
    if c.target_precision is not None:
        if c.target_threshold is None:
            lines.append(f"no threshold reaches precision {c.target_precision}")
        else:
            lines.append(
                f"precision >= {c.target_precision}: threshold {c.target_threshold:.4f}, "
                f"recall {c.target_recall:.4f}"
            )
    if c.split_threshold is not None and c.split_f1 is not None and c.split_loss is not None:
        lo, mid, hi = c.split_threshold
        lines.append(
            f"split by site (choose on one half, score on the other): threshold {mid:.4f} "
            f"[{lo:.4f}, {hi:.4f}], held-out F1 {c.split_f1[1]:.4f} "
            f"[{c.split_f1[0]:.4f}, {c.split_f1[2]:.4f}], F1 lost {c.split_loss[1]:.4f} "
            f"(95 %: {c.split_loss[2]:.4f})"
        )
    else:
        lines.append("one site only: no interval from a split by site")
    lines.append("")
    lines.append("threshold     tp    fp    fn    tn  precision  recall      f1")
    for r in c.table:
        if r.threshold < 0.5 and r.threshold != c.threshold:
            continue
        mark = "  <" if r.threshold == c.threshold else ""
        lines.append(
            f"{r.threshold:9.4f} {r.tp:6d}{r.fp:6d}{r.fn:6d}{r.tn:6d}  {r.precision:9.4f}"
            f"  {r.recall:6.4f}  {r.f1:6.4f}{mark}"
        )
    return "\n".join(lines)
