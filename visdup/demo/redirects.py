"""Moved pages of a served directory: what a site keeps after it renames pages, for the demo
server to answer with a redirect."""

from __future__ import annotations

from pathlib import Path

#: The served directory's moved pages, one ``PATH STATUS TARGET`` a line (``#`` comments),
#: answered with that redirect: what a site keeps after it renames pages.
REDIRECTS_FILE = "_redirects"


def read_redirects(root: Path) -> dict[str, tuple[int, str]]:
    """The redirects of ``root``'s REDIRECTS_FILE (none where it is absent)."""
    found: dict[str, tuple[int, str]] = {}
    path = root / REDIRECTS_FILE
    if not path.is_file():
        return found
    for line in path.read_text(encoding="utf-8").splitlines():
        words = line.split("#", 1)[0].split()
        if len(words) == 3 and words[1].isdigit():
            found[words[0]] = (int(words[1]), words[2])
    return found
