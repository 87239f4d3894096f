"""A marked term, flat in preorder, and its text form (ALGORITHMS.md §1).

A term is an ordered tree over the visual classes whose nodes carry a repetition mark: ``[3]row``
stands for three rows alike. Terms are stored flat in preorder (labels, marks, subtree sizes):
equality, hashing, printing and the distance kernels then never recurse, which matters for trees
thousands of levels deep. The text form is ``[r]label(child,...)``, a mark of 1 left out.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from hashlib import blake2b
from typing import Any

from visdup._native import kernel
from visdup.errors import InputError

_LABEL = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_MARK = re.compile(r"\s*([0-9]{1,40})\s*")
#: Largest repetition mark, and largest weighted size (sum of marks), a term in text form may
#: have: 2**53. Sizes and distances are summed in 64-bit integers and similarities divided in
#: doubles; bounded here, neither overflows nor rounds, however many nodes a term has.
MAX_MARK = 2**53

_kernel = kernel("_term")


class TermSyntaxError(InputError, ValueError):
    """Term text that does not follow the ``[r]label(child,...)`` notation."""


def _revive(
    labels: tuple[str, ...],
    marks: tuple[int, ...],
    sizes: tuple[int, ...],
    shape: int | None,
    text: str | None = None,
) -> Term:
    term = Term(labels, marks, sizes)
    term._shape = shape
    term._text = text
    return term


class Term:
    """An immutable marked term, flat in preorder.

    ``sizes[i]`` is the node count of the subtree rooted at ``i``; the children of ``i`` are
    ``i + 1``, then ``j + sizes[j]`` while below ``i + sizes[i]``.
    """

    __slots__ = ("_digest", "_hash", "_shape", "_text", "labels", "marks", "sizes")

    labels: tuple[str, ...]
    marks: tuple[int, ...]
    sizes: tuple[int, ...]

    def __init__(self, labels: Sequence[str], marks: Sequence[int], sizes: Sequence[int]):
        self.labels = tuple(labels)
        self.marks = tuple(marks)
        self.sizes = tuple(sizes)
        self._hash: int | None = None
        #: Its shape SimHash, once computed (:func:`visdup.structure.fingerprint.shape_simhash`).
        self._shape: int | None = None
        #: Its text form, once printed: the analysis prints every term it stores, and the
        #: labelling's term keys read the same text again.
        self._text: str | None = None
        #: Its identity in 16 bytes, once asked for (:meth:`digest`).
        self._digest: bytes | None = None

    def __reduce__(self) -> tuple[Any, ...]:
        # The shape SimHash and the text travel (an analysis worker computes them, the
        # labelling, one serial process, reads them); the hash does not: hash() of strings is
        # salted per process.
        return (_revive, (self.labels, self.marks, self.sizes, self._shape, self._text))

    @classmethod
    def from_arrays(cls, labels: Sequence[str], marks: Sequence[int], sizes: Sequence[int]) -> Term:
        n = len(labels)
        if not (len(marks) == n == len(sizes)):
            raise ValueError("labels, marks and sizes differ in length")
        if n and sizes[0] != n:
            raise ValueError("the root's subtree size must be the node count")
        if any(m < 1 for m in marks):
            raise ValueError("repetition marks are positive")
        return cls(labels, marks, sizes)

    @classmethod
    def parse(cls, text: str) -> Term:
        return _parse(text)

    @property
    def size(self) -> int:
        """Weighted size |t| = sum of marks: what the similarity is normalised by."""
        return sum(self.marks)

    @property
    def nodes(self) -> int:
        return len(self.labels)

    @property
    def depth(self) -> int:
        best = 0
        ends: list[int] = []
        for i, s in enumerate(self.sizes):
            while ends and ends[-1] <= i:
                ends.pop()
            ends.append(i + s)
            best = max(best, len(ends))
        return best

    def children(self, i: int = 0) -> Iterator[int]:
        j, end = i + 1, i + self.sizes[i]
        while j < end:
            yield j
            j += self.sizes[j]

    def subterm(self, i: int) -> Term:
        end = i + self.sizes[i]
        return Term(self.labels[i:end], self.marks[i:end], self.sizes[i:end])

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Term):
            return NotImplemented
        return (
            self.labels == other.labels and self.marks == other.marks and self.sizes == other.sizes
        )

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash((self.labels, self.marks, self.sizes))
        return self._hash

    def __str__(self) -> str:
        text = self._text
        if text is None:
            text = self._text = self._print()
        return text

    def digest(self) -> bytes:
        """The term's identity in 16 bytes (BLAKE2b of its text): equal terms, and only
        they, share it. Pages of one term are one candidate; measures are remembered by it."""
        digest = self._digest
        if digest is None:
            digest = self._digest = blake2b(str(self).encode(), digest_size=16).digest()
        return digest

    def _print(self) -> str:
        if _kernel is not None:
            text: str | None = _kernel.print_term(self.labels, self.marks, self.sizes)
            if text is not None:
                return text
        return self._print_python()

    def _print_python(self) -> str:
        """The text form, in Python: the reference the compiled printer is held to, and the
        printer of what it leaves to Python (labels that are no strings, marks past 64 bits)."""
        out: list[str] = []
        ends: list[int] = []
        opened = False  # a node's children just opened: its first child takes no comma
        for i, label in enumerate(self.labels):
            while ends and ends[-1] == i:
                out.append(")")
                ends.pop()
                opened = False
            if i and not opened:
                out.append(",")
            mark = self.marks[i]
            out.append(f"[{mark}]{label}" if mark != 1 else label)
            opened = self.sizes[i] > 1
            if opened:
                out.append("(")
                ends.append(i + self.sizes[i])
        out.extend(")" * len(ends))
        return "".join(out)

    def __repr__(self) -> str:
        text = str(self)
        return f"Term({text if len(text) < 200 else text[:197] + '...'!r})"


def _parse(text: str) -> Term:
    labels: list[str] = []
    marks: list[int] = []
    parents: list[int] = []
    open_nodes: list[int] = []
    pos, n = 0, len(text)
    expect_node = True
    while True:
        while pos < n and text[pos].isspace():
            pos += 1
        if expect_node:
            mark = 1
            if pos < n and text[pos] == "[":
                close = text.find("]", pos)
                digits = _MARK.fullmatch(text, pos + 1, close) if close > 0 else None
                if digits is None:  # ASCII digits only: "²".isdigit() is true, int("²") fails
                    raise TermSyntaxError(f"bad repetition mark at offset {pos}")
                mark = int(digits.group(1))
                if mark < 1:
                    raise TermSyntaxError(f"repetition mark below 1 at offset {pos}")
                if mark > MAX_MARK:
                    raise TermSyntaxError(
                        f"repetition mark above the maximum {MAX_MARK} at offset {pos}"
                    )
                pos = close + 1
            m = _LABEL.match(text, pos)
            if not m:
                raise TermSyntaxError(f"expected a label at offset {pos}")
            labels.append(m.group())
            marks.append(mark)
            parents.append(open_nodes[-1] if open_nodes else -1)
            if len(labels) > 1 and not open_nodes:
                raise TermSyntaxError(f"text after the root term at offset {pos}")
            pos = m.end()
            while pos < n and text[pos].isspace():
                pos += 1
            if pos < n and text[pos] == "(":
                open_nodes.append(len(labels) - 1)
                pos += 1
                while pos < n and text[pos].isspace():
                    pos += 1
                if pos < n and text[pos] == ")":  # "grp()" is a leaf
                    open_nodes.pop()
                    pos += 1
                    expect_node = False
                    continue
                continue
            expect_node = False
            continue
        if pos >= n:
            break
        ch = text[pos]
        if ch == "," and open_nodes:
            pos += 1
            expect_node = True
        elif ch == ")" and open_nodes:
            open_nodes.pop()
            pos += 1
        else:
            raise TermSyntaxError(f"unexpected {ch!r} at offset {pos}")
    if open_nodes:
        raise TermSyntaxError("unbalanced parentheses: missing ')'")
    if not labels:
        raise TermSyntaxError("empty term")
    if sum(marks) > MAX_MARK:
        raise TermSyntaxError(f"the marks sum to more than the maximum {MAX_MARK}")
    sizes = [1] * len(labels)
    for i in range(len(labels) - 1, 0, -1):
        sizes[parents[i]] += sizes[i]
    return Term(labels, marks, sizes)
