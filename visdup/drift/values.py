"""The kind of value a field holds, so a field whose dates turned into numbers is noticed."""

from __future__ import annotations

import re

#: Value types, in the order of every histogram stored (visdup.drift.aggregate).
TYPES = ("empty", "number", "price", "date", "url", "short", "long")
#: Characters up to which a text is short (a name, a label's value), beyond which it is long.
SHORT_CHARS = 80

_URL = re.compile(r"^(?:https?://|www\.)\S+$", re.I)
_MONTH = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?"
_DATES = (
    re.compile(r"^\d{4}-\d{1,2}(?:-\d{1,2})?(?:[ T]\d{1,2}:\d{2}(?::\d{2})?\S*)?$"),
    re.compile(r"^\d{1,2}[/.-]\d{1,2}[/.-](?:\d{4}|\d{2})$"),
    re.compile(r"^\d{4}/\d{1,2}/\d{1,2}$"),
    re.compile(rf"^(?:[a-z]+,?\s+)?{_MONTH}\s+(?:\d{{1,2}}(?:st|nd|rd|th)?,?\s+)?\d{{4}}$", re.I),
    re.compile(rf"^(?:[a-z]+,?\s+)?\d{{1,2}}(?:st|nd|rd|th)?\.?\s+{_MONTH},?\s+\d{{4}}$", re.I),
)
_CURRENCY = r"(?:[$€£¥₹]|\b(?:USD|EUR|GBP|JPY|CHF|CAD|AUD)\b)"
_PRICE = re.compile(rf"{_CURRENCY}\s?\d|\d(?:[\d.,]*\d)?\s?{_CURRENCY}", re.I)
_NUMBER = re.compile(r"^[+-]?\(?\d[\d,.\s]*\)?%?$")
#: Longest text still read as a date or a price (longer ones are sentences that mention one).
_SHORT_VALUE = 40


def value_type(value: str | None) -> str:
    """One of :data:`TYPES` for an extracted value (None and blank are ``empty``)."""
    if value is None:
        return "empty"
    text = value.strip()
    if not text:
        return "empty"
    if _URL.match(text):
        return "url"
    if len(text) <= _SHORT_VALUE:
        if any(p.match(text) for p in _DATES):
            return "date"
        if _PRICE.search(text):
            return "price"
        if _NUMBER.match(text):
            return "number"
    return "short" if len(text) <= SHORT_CHARS else "long"
