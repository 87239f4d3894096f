"""What differs between the text of two near-duplicates, in words an editor reads.

Two copies of a content group share most sentences; what an auditor wants to see is the one
that changed. The pages' main text (the article, without navigation: :mod:`visdup.content`) is
split into sentences and aligned; a sentence replaced by one much like it is diffed word by
word, so a one-word edit shows as that word in ``<del>`` and ``<ins>``. Only the changed
sentences are kept, with a sentence of context, and both sides are cut at :data:`MAX_CHARS`:
a group's difference stays a few hundred bytes whatever the pages' length.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from visdup.content.main import extract
from visdup.content.textprint import split_sentences

#: Characters of each side of a text difference (changed sentences and their context).
MAX_CHARS = 600
#: Sentences on either side of a page's main text that are compared (the start of long pages).
MAX_SENTENCES = 400
#: Below this similarity two aligned sentences are shown whole, not word by word.
WORD_DIFF_RATIO = 0.5

#: (text, how): how is "" (the same on both sides), "del" (only in the original) or "ins".
Run = tuple[str, str]


@dataclass
class TextDiff:
    """The original's side and the copy's, each a list of runs; ``same`` when no word differs."""

    left: list[Run]
    right: list[Run]
    same: bool = False


def sentences(body: bytes | None) -> list[str]:
    """The main text's sentences, in order (none for a page without a body)."""
    if not body:
        return []
    text = extract(body).text
    out: list[str] = []
    for paragraph in text.split("\n"):
        out.extend(split_sentences(paragraph))
        if len(out) >= MAX_SENTENCES:
            break
    return out[:MAX_SENTENCES]


def text_diff(a: list[str], b: list[str]) -> TextDiff:
    """The sentences that differ between ``a`` (the original's) and ``b`` (the copy's)."""
    left: list[Run] = []
    right: list[Run] = []
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    codes = matcher.get_opcodes()
    if all(op == "equal" for op, *_ in codes):
        return TextDiff([], [], same=True)
    for n, (op, i1, i2, j1, j2) in enumerate(codes):
        if op == "equal":
            _context(left, right, a[i1:i2], first=n == 0, last=n == len(codes) - 1)
        elif op == "replace" and i2 - i1 == j2 - j1:
            for x, y in zip(a[i1:i2], b[j1:j2], strict=True):
                _words(left, right, x, y)
        else:
            if i2 > i1:
                left.append((" ".join(a[i1:i2]) + " ", "del"))
            if j2 > j1:
                right.append((" ".join(b[j1:j2]) + " ", "ins"))
        if _length(left) > MAX_CHARS and _length(right) > MAX_CHARS:
            break
    return TextDiff(_cut(left), _cut(right))


def _context(left: list[Run], right: list[Run], same: list[str], first: bool, last: bool) -> None:
    """A sentence of context on each side of a change; the rest of an equal run is elided."""
    if len(same) <= 2:
        keep = " ".join(same) + " "
    elif first:
        keep = "… " + same[-1] + " "
    elif last:
        keep = same[0] + " …"
    else:
        keep = same[0] + " … " + same[-1] + " "
    left.append((keep, ""))
    right.append((keep, ""))


def _words(left: list[Run], right: list[Run], x: str, y: str) -> None:
    """Two aligned sentences: word by word when they are alike, else whole."""
    wa, wb = x.split(" "), y.split(" ")
    matcher = difflib.SequenceMatcher(None, wa, wb, autojunk=False)
    if matcher.ratio() < WORD_DIFF_RATIO:
        left.append((x + " ", "del"))
        right.append((y + " ", "ins"))
        return
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            text = " ".join(wa[i1:i2]) + " "
            left.append((text, ""))
            right.append((text, ""))
            continue
        if i2 > i1:
            left.append((" ".join(wa[i1:i2]), "del"))
            left.append((" ", ""))
        if j2 > j1:
            right.append((" ".join(wb[j1:j2]), "ins"))
            right.append((" ", ""))


def _length(runs: list[Run]) -> int:
    return sum(len(t) for t, _ in runs)


def _cut(runs: list[Run]) -> list[Run]:
    """The runs up to :data:`MAX_CHARS` characters, the last one cut with an ellipsis."""
    out: list[Run] = []
    size = 0
    for text, how in runs:
        if size + len(text) > MAX_CHARS:
            out.append((text[: max(0, MAX_CHARS - size)] + "…", how))
            break
        out.append((text, how))
        size += len(text)
    return out
