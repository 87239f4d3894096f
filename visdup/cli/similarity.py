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
            "layout-signature similarity at which two pages share a template, 0..1 "
            f"(default {default:.2f}, as VISDUP_CLUSTER_THRESHOLD; higher: tighter clusters)"
        ),
    )


def cluster_similarity(args: argparse.Namespace) -> float:
    """``--threshold``, checked: a similarity from 0 to 1."""
    value = args.threshold
    if not 0.0 <= value <= 1.0:  # NaN fails too
        raise InputError(f"--threshold is a similarity from 0 to 1, not {value}")
    return float(value)
