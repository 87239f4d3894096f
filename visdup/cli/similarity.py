"""The ``--threshold`` option of the clustering commands: a similarity, as in the settings."""

from __future__ import annotations

import argparse

from visdup import config
from visdup.errors import InputError


def add_threshold_argument(parser: argparse.ArgumentParser) -> None:
    default = config.VISDUP_CLUSTER_THRESHOLD
    parser.add_argument(
        "--threshold",
        type=float,
        default=default,
        help=(
            "Simple Tree Matching similarity a page needs to join a cluster, 0..1 "
            f"(default {default:.2f}, as VISDUP_CLUSTER_THRESHOLD; higher: tighter clusters)"
        ),
    )


def cluster_distance(args: argparse.Namespace) -> float:
    """The largest STM distance within a cluster that ``--threshold`` (a similarity) allows."""
    value = args.threshold
    if not 0.0 <= value <= 1.0:  # NaN fails too
        raise InputError(f"--threshold is a similarity from 0 to 1, not {value}")
    return round(1.0 - value, 12)
