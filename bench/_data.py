"""Where benchmarks find their real data (never shipped with the project)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared" / "data"


def debian_docs(which: str = "python") -> Path:
    """The Python 3.11 or PostgreSQL 15 manual unpacked by ../shared/data/get-debian-docs.sh."""
    base = Path(os.environ.get("VISDUP_DEBIAN_DOCS", REPO / "debian-docs"))
    sub = {
        "python": "usr/share/doc/python3.11/html",
        "postgres": "usr/share/doc/postgresql-doc-15/html",
    }[which]
    path = base / sub
    if not path.is_dir():
        sys.exit(
            f"{path} is absent: run `bash {SHARED / 'get-debian-docs.sh'} {base}` first "
            "(or set VISDUP_DEBIAN_DOCS)"
        )
    return path


def html_files(root: Path, limit: int | None = None) -> list[Path]:
    files = sorted(p for p in root.rglob("*.html") if p.is_file())
    return files[:limit] if limit else files
