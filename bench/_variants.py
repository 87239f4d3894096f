"""Generated pages for the recall bench's size bands: small pages, and near-copies of pages.

A real set rarely has thirty near-duplicate pairs in every size band (the Python manual has one
page under 50 nodes). :func:`small_site` makes the pages of a site of small pages (forms,
notices, short listings in one chrome), and :func:`mutate` a copy of a page with one edit
(an element removed, wrapped, inserted or given another tag), so a band is filled with
pairs that sit just above or below the threshold, the case where a few nodes move many
SimHash bits. Seeded: the same arguments give the same pages.
"""

from __future__ import annotations

import random

import lxml.html

WORDS = "harbour lantern orchard meadow granite willow copper falcon ember quiet silver".split()
TAGS = ("div", "p", "section", "span", "table", "ul", "li", "h3", "form")


def _words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def _block(rng: random.Random) -> str:
    kind = rng.randrange(7)
    if kind == 0:
        return f"<p>{_words(rng, 8)}</p>"
    if kind == 1:
        items = "".join(f"<li><a href='#'>{_words(rng, 2)}</a></li>" for _ in range(3))
        return f"<ul>{items}</ul>"
    if kind == 2:
        cells = "".join(
            f"<tr><td>{_words(rng, 1)}</td><td>{_words(rng, 2)}</td></tr>" for _ in range(2)
        )
        return f"<table>{cells}</table>"
    if kind == 3:
        return (
            f"<form><label>{_words(rng, 1)}</label><input name=q>"
            f"<button>{_words(rng, 1)}</button></form>"
        )
    if kind == 4:
        return f"<div class=note><h3>{_words(rng, 2)}</h3><p>{_words(rng, 6)}</p></div>"
    if kind == 5:
        return f"<div><span>{_words(rng, 1)}</span><b>{_words(rng, 1)}</b></div>"
    return f"<h2>{_words(rng, 3)}</h2>"


def small_site(seed: int, pages: int) -> list[tuple[str, bytes]]:
    """``pages`` small pages of one generated site: one chrome, one to five blocks each."""
    rng = random.Random(seed)
    nav = "".join(f"<a href='/s{i}.html'>{_words(rng, 1)}</a>" for i in range(rng.randint(2, 5)))
    out = []
    for n in range(pages):
        blocks = "".join(_block(rng) for _ in range(rng.randint(1, 5)))
        html = (
            f"<html><head><title>{_words(rng, 2)}</title></head><body>"
            f"<div class=top><b>Site {seed}</b><nav>{nav}</nav></div>"
            f"<main>{blocks}</main><div class=foot><p>{_words(rng, 4)}</p></div></body></html>"
        )
        out.append((f"generated://small-{seed}/{n}.html", html.encode()))
    return out


def mutate(body: bytes, rng: random.Random, edits: int = 1) -> bytes:
    """The page with ``edits`` random edits of its elements under ``<body>``."""
    root = lxml.html.fromstring(body)
    for _ in range(edits):
        body_el = root.find("body")
        scope = body_el if body_el is not None else root
        elements = [e for e in scope.iter() if isinstance(e.tag, str) and e is not scope]
        if not elements:
            break
        target = rng.choice(elements)
        parent = target.getparent()
        kind = rng.randrange(4)
        if kind == 0 and parent is not None:
            parent.remove(target)
        elif kind == 1 and parent is not None:
            wrapper = lxml.html.Element("div")
            parent.replace(target, wrapper)
            wrapper.append(target)
        elif kind == 2:
            new = lxml.html.fromstring(_block(rng))
            target.addnext(new)
            new.tail = None
        else:
            target.tag = rng.choice([t for t in TAGS if t != target.tag])
    out: bytes = lxml.html.tostring(root, encoding="utf-8")
    return out
