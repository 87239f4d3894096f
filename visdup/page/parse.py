"""Bytes to an lxml tree, saying honestly what the parser could not read.

lxml silently drops elements nested deeper than its limit and huge text nodes; a lying
charset header turns UTF-8 into mojibake. Every caller needs to know when that happened,
so the parse result carries it instead of pretending the page was read whole.
"""

from __future__ import annotations

import codecs
import functools
from dataclasses import dataclass, field

import lxml.etree
from w3lib.encoding import (
    html_body_declared_encoding,
    http_content_type_encoding,
    resolve_encoding,
    to_unicode,
)

#: Share of control characters above which a body is taken for binary junk.
BINARY_CONTROL_SHARE = 0.10
#: libxml2's depth limit with huge_tree: deeper elements are dropped.
HUGE_DEPTH_LIMIT = 2048

_CONTROL = frozenset(range(0, 32)) - {9, 10, 12, 13}
_CONTROL_BYTES = bytes(sorted(_CONTROL))


@dataclass
class Document:
    """A parsed page, or the reason it could not be parsed (``problem``)."""

    root: lxml.etree._Element | None
    encoding: str | None = None
    truncated: bool = False
    replacement_ratio: float = 0.0
    problem: str | None = None
    notes: list[str] = field(default_factory=list)
    #: Set once invisible and floating nodes are removed (the tree was changed in place).
    denoised: bool = False
    #: The title, read before denoising removed the <head>.
    title: str | None = None
    #: The canonical link, absolute, when denoising read it too (``visdup.dedup.steps.clean``).
    canonical: str | None = None

    @property
    def ok(self) -> bool:
        return self.root is not None and self.problem is None


#: Byte order marks, longest first (the UTF-32 LE mark begins with the UTF-16 LE one).
_BOMS = (
    (b"\x00\x00\xfe\xff", "utf-32-be"),
    (b"\xff\xfe\x00\x00", "utf-32-le"),
    (b"\xef\xbb\xbf", "utf-8"),
    (b"\xfe\xff", "utf-16-be"),
    (b"\xff\xfe", "utf-16-le"),
)


def bom_encoding(data: bytes) -> tuple[str, int] | None:
    """(encoding, length of the mark) when ``data`` starts with a byte order mark."""
    for mark, encoding in _BOMS:
        if data.startswith(mark):
            return encoding, len(mark)
    return None


def _looks_binary(data: bytes) -> bool:
    """Many control characters, or a NUL: junk, unless a BOM says the text is UTF-16/32.

    With a BOM the controls are counted on the decoded text, since UTF-16 spends a NUL on
    every ASCII character.
    """
    sample = data[:4096]
    bom = bom_encoding(sample)
    if bom is not None:
        encoding, skip = bom
        codes = [ord(c) for c in sample[skip:].decode(encoding, "replace")]
        if 0 in codes:
            return True
        n, controls = len(codes), sum(1 for b in codes if b in _CONTROL)
    else:
        if b"\x00" in sample:
            return True
        # the controls counted in C: what deleting them takes off the sample
        n, controls = len(sample), len(sample) - len(sample.translate(None, _CONTROL_BYTES))
    return n > 0 and controls / n > BINARY_CONTROL_SHARE


def _is_html_content_type(content_type: str | None) -> bool:
    if not content_type:
        return True
    mime = content_type.split(";", 1)[0].strip().lower()
    return mime in {"text/html", "application/xhtml+xml", "text/plain", ""} or mime.endswith(
        "+html"
    )


def decode(
    data: bytes, content_type: str | None = None, fallback: str | None = None
) -> tuple[str, str]:
    """Decode like a browser would rather than like w3lib: a body's BOM or <meta> beats a header.

    w3lib lets a lying HTTP charset win (UTF-8 shown as mojibake); browsers trust the BOM first.
    When the header's charset cannot decode the body but UTF-8 can, UTF-8 is taken. A body
    that declares nothing is read as ``fallback`` (a Scrapy response's own reading: UTF-8 if
    it decodes, else cp1252), else as UTF-8.
    """
    bom = bom_encoding(data)
    if bom is not None:
        encoding, skip = bom
        return encoding, data[skip:].decode(encoding, "replace")
    header_enc = None
    if content_type and "charset=" in content_type.lower():
        raw = content_type.lower().split("charset=", 1)[1].split(";")[0].strip().strip("\"'")
        header_enc = resolve_encoding(raw)
    if header_enc and header_enc not in {"utf-8", "utf8"}:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        if text is not None and any(ord(c) > 127 for c in text[:65536]):
            # Valid UTF-8 with non-ASCII content is almost never a single-byte charset.
            return "utf-8", text
    if header_enc is None:
        declared = html_body_declared_encoding(data[:65536])
        if declared:
            content_type = f"text/html; charset={declared}"
    default = (fallback and resolve_encoding(fallback)) or "utf8"
    # what w3lib's html_to_unicode() does given a default encoding, which w3lib 2.6 deprecates
    # (without one it guesses as a browser does, and a page would read otherwise by version)
    encoding = (
        http_content_type_encoding(content_type) or html_body_declared_encoding(data) or default
    )
    return encoding, to_unicode(data, encoding)


def screen(data: bytes, content_type: str | None = None) -> str | None:
    """Why these bytes are no page (empty, not HTML, binary), or None: cheap, before parsing."""
    if not data or data.isspace():  # what strip() would leave empty, without its copy
        return "empty body"
    if not _is_html_content_type(content_type):
        return f"not HTML ({(content_type or '').split(';')[0].strip()})"
    if _looks_binary(data):
        return "binary content"
    return None


def elements_over(data: bytes | str, cap: int) -> int | None:
    """The page's start tags when they are more than ``cap`` (0: no cap), else None.

    Counted in the bytes, before anything is decoded or parsed: lxml builds the whole tree
    before its elements can be counted, and a 30 MB page of ten million ``<p>`` takes about
    4 GB to parse and analyse. Every ``<`` that opens neither an end tag, a comment, a
    doctype nor a processing instruction is taken for a start tag (on the Python manual the
    count is the parsed tree's, to the element). Each element takes at least two characters
    (``<`` and a name), so a body under twice the cap is not scanned: an ordinary page costs a
    comparison, and a 30 MB body about 90 ms.
    """
    if cap <= 0 or len(data) <= 2 * cap:
        return None
    if isinstance(data, str):
        opened = data.count("<")
        if opened <= cap:  # fewer ``<`` than the cap: fewer start tags too
            return None
        tags = opened - data.count("</") - data.count("<!") - data.count("<?")
    else:
        opened = data.count(b"<")
        if opened <= cap:
            return None
        tags = opened - data.count(b"</") - data.count(b"<!") - data.count(b"<?")
    return tags if tags > cap else None


def parse_html(
    data: bytes | str,
    *,
    content_type: str | None = None,
    url: str | None = None,
    fallback_encoding: str | None = None,
) -> Document:
    """Parse a page; never raises on bad input, ``problem`` says why a page is unusable.

    ``fallback_encoding``: how to read bytes that declare no charset (see :func:`decode`).
    """
    utf8: bytes | None = None
    if isinstance(data, bytes):
        problem = screen(data, content_type)
        if problem:
            return Document(None, problem=problem)
        encoding, text = decode(data, content_type, fallback_encoding)
    else:
        if not data.strip():
            return Document(None, problem="empty body")
        encoding, text = None, data
    replaced = text.count("\ufffd") if "\ufffd" in text else 0  # the search is the faster
    replacement_ratio = replaced / max(1, len(text))
    if isinstance(data, bytes) and not replaced and encoding and _is_utf8(encoding):
        # read as UTF-8 with nothing replaced: the bytes are the text's UTF-8 already, and
        # encoding it again would copy a page of non-Latin-1 text character by character
        utf8 = data[len(codecs.BOM_UTF8) :] if data.startswith(codecs.BOM_UTF8) else data
    # lxml.etree's parser, not lxml.html's: the latter finds every element's Python class
    # through a Python callback (lxml.html's class lookup), a call per element each time the
    # analysis reads it; nothing here needs lxml.html's element methods
    parser = lxml.etree.HTMLParser(
        encoding="utf-8", huge_tree=True, remove_comments=True, remove_pis=True
    )
    try:
        if utf8 is None:
            utf8 = text.encode("utf-8", "surrogatepass")
        root = lxml.etree.fromstring(utf8, parser=parser, base_url=url)
        if root is None:
            raise lxml.etree.ParserError("Document is empty")
    except (lxml.etree.ParserError, ValueError, UnicodeError) as exc:
        return Document(None, encoding=encoding, problem=f"unparseable: {exc}")
    except lxml.etree.XMLSyntaxError:
        _out_of_memory(parser)
        raise
    _out_of_memory(parser)
    truncated = any(
        e.type_name == "ERR_RESOURCE_LIMIT" or "Excessive depth" in e.message
        for e in parser.error_log
    )
    doc = Document(
        root, encoding=encoding, truncated=truncated, replacement_ratio=replacement_ratio
    )
    if truncated:
        doc.notes.append("parser limit reached: deep or huge content was dropped")
    return doc


@functools.lru_cache(maxsize=64)
def _is_utf8(encoding: str) -> bool:
    """Whether an encoding's name (as :func:`decode` gives it) is UTF-8's."""
    try:
        return codecs.lookup(encoding).name == "utf-8"
    except LookupError:
        return False


def _out_of_memory(parser: lxml.etree.HTMLParser) -> None:
    """MemoryError where libxml2 could not allocate: it says so only in its error log (an
    "unknown error", or a tree cut short), and the page's memory is what is wrong."""
    if any(e.type_name == "ERR_NO_MEMORY" for e in parser.error_log):
        raise MemoryError("the HTML parser ran out of memory")


def from_tree(root: lxml.etree._Element, *, encoding: str | None = None) -> Document:
    """Wrap a tree someone else parsed (a Scrapy response's selector), so a crawl parses once.

    Whether the parser dropped deep content shows in the term's walk (``document_term``
    marks the Document), so no extra walk is made here.
    """
    return Document(root, encoding=encoding)
