"""Generated pages: small pages and near-copies for the recall bench's size bands, and sites
captured twice for the captures bench.

A real set rarely has thirty near-duplicate pairs in every size band (the Python manual has one
page under 50 nodes). :func:`small_site` makes the pages of a site of small pages (forms,
notices, short listings in one chrome), and :func:`mutate` a copy of a page with one edit
(an element removed, wrapped, inserted or given another tag), so a band is filled with
pairs that sit just above or below the threshold, the case where a few nodes move many
SimHash bits. :func:`captured_site` makes a site's front page at two times and its listing at
two lengths, and :func:`recapture` a real page's second capture. Seeded: the same arguments
give the same pages.
"""

from __future__ import annotations

import copy
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


# ------------------------------------------------------------ sites captured twice
# A site is a frame (header, sidebars, wrappers, footer: each drawn from many pieces, nested at
# random) and story kinds of its own; its front page is captured at two times, with other
# stories and two to eight times as many, and its listing at two lengths.


def _piece(rng: random.Random, depth: int = 0) -> str:
    """One block of a frame: a widget, or a box of two or three blocks when ``depth`` allows."""
    kind = rng.randrange(11 if depth < 2 else 8)
    if kind == 0:
        items = "".join(f"<li><a href='#'>{_words(rng, 1)}</a></li>" for _ in range(5))
        return f"<ul>{items}</ul>"
    if kind == 1:
        return "<div class=logo><a href='/'><img src=l.png></a></div>"
    if kind == 2:
        return f"<form><input name=q><button>{_words(rng, 1)}</button></form>"
    if kind == 3:
        links = "".join(f"<a href='#'>{_words(rng, 1)}</a>" for _ in range(rng.randint(2, 5)))
        return f"<div>{links}</div>"
    if kind == 4:
        level = rng.randint(1, 4)
        return f"<h{level}>{_words(rng, 2)}</h{level}>"
    if kind == 5:
        return f"<p>{_words(rng, 6)}</p>"
    if kind == 6:
        cells = "".join(f"<td>{_words(rng, 1)}</td>" for _ in range(rng.randint(2, 4)))
        return f"<table><tr>{cells}</tr></table>"
    if kind == 7:
        return "<iframe src=ad></iframe>"
    box = rng.choice(("div", "section", "aside", "nav", "ul"))
    kids = [_piece(rng, depth + 1) for _ in range(rng.randint(2, 3))]
    if box == "ul":
        return f"<ul>{''.join(f'<li>{k}</li>' for k in kids)}</ul>"
    return f"<{box}>{''.join(kids)}</{box}>"


def _story_kind(rng: random.Random) -> list[str]:
    """A site's kind of story: the parts of one, in order (a picture, a heading, a summary...)."""
    parts = ["h3"]
    for extra in ("img", "meta", "p", "related", "wrap"):
        if rng.random() < 0.45:
            parts.append(extra)
    rng.shuffle(parts)
    return parts


def _story(rng: random.Random, kind: list[str]) -> str:
    out = []
    for part in kind:
        if part == "h3":
            out.append(f"<h3><a href='#'>{_words(rng, 5)}</a></h3>")
        elif part == "img":
            out.append("<a href='#'><img src=s.jpg></a>")
        elif part == "meta":
            out.append(f"<div><span>{_words(rng, 1)}</span> <time>{_words(rng, 1)}</time></div>")
        elif part == "p":
            out.append(f"<p>{_words(rng, 15)}</p>")
        elif part == "related":
            rel = "".join(f"<li><a href='#'>{_words(rng, 3)}</a></li>" for _ in range(3))
            out.append(f"<ul>{rel}</ul>")
        else:
            out.append(f"<div><p>{_words(rng, 4)}</p></div>")
    return f"<article>{''.join(out)}</article>"


def _frame(rng: random.Random) -> tuple[str, str, str, list[str], str]:
    """A site's header, left and right columns, wrappers of its main column, footer."""
    tag = rng.choice(("header", "div"))
    header = f"<{tag}>{''.join(_piece(rng) for _ in range(rng.randint(2, 4)))}</{tag}>"
    left = "".join(_piece(rng) for _ in range(rng.randint(1, 3))) if rng.random() < 0.4 else ""
    right = "".join(_piece(rng) for _ in range(rng.randint(1, 3))) if rng.random() < 0.6 else ""
    wrappers = [rng.choice(("div", "section", "main", "table")) for _ in range(rng.randint(0, 3))]
    cols = "".join(f"<div>{_piece(rng, 1)}</div>" for _ in range(rng.randint(1, 4)))
    footer = f"<footer>{cols}<p>{_words(rng, 3)}</p></footer>"
    return header, left, right, wrappers, footer


def _page(frame: tuple[str, str, str, list[str], str], main: str) -> bytes:
    header, left, right, wrappers, footer = frame
    for tag in reversed(wrappers):
        wrap = f"<{tag}>{main}</{tag}>"
        main = f"<table><tr><td>{main}</td></tr></table>" if tag == "table" else wrap
    side_l = f"<div class=left>{left}</div>" if left else ""
    side_r = f"<aside>{right}</aside>" if right else ""
    body = f"{header}<div class=body>{side_l}<div class=main>{main}</div>{side_r}</div>{footer}"
    return f"<html><head><title>t</title></head><body>{body}</body></html>".encode()


def _front(rng: random.Random, kinds: list[list[str]], sections: int, stories: int) -> str:
    """A front page's story area: ``sections`` headed sections of about ``stories`` stories."""
    out = []
    for _ in range(sections):
        n = max(1, stories + rng.randint(-2, 2))
        items = "".join(_story(rng, rng.choice(kinds)) for _ in range(n))
        out.append(f"<section><h2>{_words(rng, 2)}</h2><div>{items}</div></section>")
    return "".join(out)


def captured_site(seed: int) -> list[tuple[str, bytes]]:
    """(page, body): a site's front page captured twice and its listing at two lengths."""
    rng = random.Random(seed)
    frame = _frame(rng)
    kinds = [_story_kind(rng) for _ in range(rng.randint(2, 4))]
    sections, stories = rng.randint(1, 3), rng.randint(2, 5)
    grow = rng.randint(2, 8)
    out = []
    for s, n in ((sections, stories), (sections * rng.randint(1, 3), stories * grow)):
        out.append(("front", _page(frame, _front(rng, kinds, s, n))))
    row = kinds[:2]
    for length in (rng.randint(2, 8), rng.randint(15, 60)):
        items = "".join(f"<li>{_story(rng, rng.choice(row))}</li>" for _ in range(length))
        out.append(("list", _page(frame, f"<ul class=list>{items}</ul>")))
    return out


def _largest_run(root: lxml.html.HtmlElement) -> list[lxml.html.HtmlElement]:
    """The siblings of one tag and class, three or more, with the most elements under them."""
    best: list[lxml.html.HtmlElement] = []
    weight = 0
    for parent in root.iter():
        if not isinstance(parent.tag, str) or parent.tag in ("html", "head", "tr"):
            continue
        runs: dict[tuple[str, str], list[lxml.html.HtmlElement]] = {}
        for kid in parent:
            if isinstance(kid.tag, str):
                runs.setdefault((kid.tag, kid.get("class") or ""), []).append(kid)
        for run in runs.values():
            w = sum(1 for k in run for _ in k.iter()) if len(run) >= 3 else 0
            if w > weight:
                best, weight = run, w
    return best


def recapture(body: bytes, rng: random.Random) -> bytes:
    """The page captured at another time: its largest repeated run (the story area, not a
    menu) redrawn from its own members, a quarter to four times as long."""
    root = lxml.html.fromstring(body)
    run = _largest_run(root)
    if run:
        factor = rng.uniform(1.5, 4.0)
        n = max(1, round(len(run) * (factor if rng.random() < 0.5 else 1 / factor)))
        copies = [copy.deepcopy(rng.choice(run)) for _ in range(n)]
        for c in copies:
            run[0].addprevious(c)
        for k in run:
            parent = k.getparent()
            if parent is not None:
                parent.remove(k)
    out: bytes = lxml.html.tostring(root, encoding="utf-8")
    return out
