"""Text from pages made safe for where visdup writes it: terminals and CSV files.

Titles, paths, URLs and field values come from the pages crawled, which anyone can write.
On a terminal a raw ``ESC ] 0 ; ... BEL`` retitles the window and other sequences clear it;
in a spreadsheet a cell starting with ``=`` runs as a formula (CSV injection). JSON output
needs neither: ``json.dumps`` escapes control characters, and JSON is not opened as a sheet.
"""

from __future__ import annotations

import re
from typing import Any

#: C0 controls but tab and newline, DEL, and the C1 controls (8-bit CSI, OSC...); plus the
#: Unicode line and paragraph separators and bidirectional overrides that reorder what is shown.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\r": "\\r", "\x1b": "\\e"}

#: First characters that make a spreadsheet evaluate a cell (OWASP, "CSV Injection").
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _escape(match: re.Match[str]) -> str:
    ch = match.group()
    named = _NAMED.get(ch)
    if named is not None:
        return named
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal(text: object) -> str:
    """``text`` with every control character shown as an escape, so a terminal only prints it.

    Tabs and newlines stay (text output is made of lines); a lone newline inside a value is
    the caller's business (``one_line``).
    """
    return _UNSAFE.sub(_escape, str(text))


def one_line(text: object) -> str:
    """Like :func:`terminal`, and newlines and tabs escaped too: for values shown on one line."""
    return terminal(text).replace("\n", "\\n").replace("\t", "\\t")


def csv_cell(value: Any) -> Any:
    """A CSV cell a spreadsheet shows as text: a leading ``=``, ``+``, ``-``, ``@``, tab or CR
    gets a ``'`` in front (OWASP's advice), which spreadsheets hide and never evaluate; and
    control characters are escaped as for a terminal, since a CSV file is also read with
    ``cat`` and ``less``.

    Tabs and line breaks stay (the CSV quotes them). Numbers stay numbers (``-3`` is data,
    not a formula); only text is changed.
    """
    if not isinstance(value, str):
        return value
    if value.startswith(_FORMULA_START):
        value = "'" + value
    return terminal(value)


def print_error(message: object) -> None:
    """Print one ``visdup: error:`` line on stderr, escaped so that a terminal only shows it."""
    import sys

    print(f"visdup: error: {one_line(message)}", file=sys.stderr, flush=True)
