"""Templates and records: exact columns on the fixture sites, misfits, writers, the command."""

from __future__ import annotations

import csv
import dataclasses
import json
import subprocess
import sys
from pathlib import Path

from visdup.templates.extract import (
    best_template,
    extract_pages,
    extract_record,
    match_template,
    write_dataset,
)
from visdup.templates.stm import page_tree
from visdup.templates.template import Template, build_template, clean_value, slug

FIXTURES = Path(__file__).parent / "fixtures" / "templates"
REPO = Path(__file__).resolve().parent.parent


def pages(prefix: str = "") -> list[tuple[str, bytes]]:
    return [(p.name, p.read_bytes()) for p in sorted(FIXTURES.glob(f"{prefix}*.html"))]


def product_template() -> Template:
    return build_template([page_tree(data) for _, data in pages("product-")], cluster=7)


def test_product_template_fields():
    template = product_template()
    names = template.field_names
    for name in ("title", "author", "price", "isbn_13", "publisher"):
        assert name in names
    # Fixed texts (labels, navigation) are no fields.
    assert "format" not in names
    roles = template.roles()
    isbn = next(f.node for f in template.fields if f.name == "isbn_13")
    assert roles[isbn] == "field"
    fixed_texts = {template.tree.texts[i] for i, fix in enumerate(template.fixed) if fix}
    assert {"ISBN-13", "Publisher", "Add to cart", ": Paperback"} <= fixed_texts


def test_template_json_roundtrip():
    template = product_template()
    data = json.loads(json.dumps(template.to_dict()))
    again = Template.from_dict(data)
    assert again.field_names == template.field_names
    assert again.required == template.required
    tree = page_tree((FIXTURES / "product-p3.html").read_bytes())
    assert extract_record(again, "p3", tree) == extract_record(template, "p3", tree)


def test_records_have_exact_values():
    dataset = extract_pages(pages(), min_cluster_size=2)  # clusters of 3 pages here
    by_url = {r["url"]: r for r in dataset.records}
    p1 = by_url["product-p1.html"]
    assert p1["fits"] is True
    assert (p1["title"], p1["author"], p1["price"], p1["isbn_13"], p1["publisher"]) == (
        "The Silent River",
        "Ana Lopez",
        "$12.99",
        "9780000000011",
        "Harbor Press",
    )
    p4 = by_url["product-p4.html"]
    assert (p4["title"], p4["isbn_13"], p4["publisher"]) == (
        "Iron Orchard",
        "9780000000042",
        "Northwind",
    )
    # The reviews are part of the main text, not a column of their own (the first review of
    # one book, none of another): p4 has none, and no neighbour's review either.
    assert "review" not in dataset.columns
    assert "Gripping." in p1["main_text"] and "Gripping." not in p4["main_text"]
    a2 = by_url["article-a2.html"]
    # The headline reads as the page's own <title>: a reader calls it the title.
    assert (a2["title"], a2["posted"], a2["byline"]) == (
        "A quiet harbour",
        "2024-04-12",
        "Tom Reyes",
    )
    assert len({r["cluster"] for r in dataset.records}) == 3
    assert len(dataset.templates) == 3


def test_missing_row_leaves_its_column_empty():
    # p5 has no Publisher row: matching by structure alone reads its Format row there.
    template = product_template()
    p5 = page_tree((FIXTURES / "product-p5.html").read_bytes())
    record = extract_record(template, "p5", p5)
    assert record["fits"] is True
    assert (record["isbn_13"], record["publisher"]) == ("9780000000059", None)
    assert (record["title"], record["author"], record["price"]) == (
        "Glass Harbor",
        "Eli Grant",
        "$9.99",
    )
    unfixed = dataclasses.replace(template, fixed=[False] * len(template.fixed))
    structure_only = dataclasses.replace(
        unfixed, fields=[dataclasses.replace(f, anchor=None) for f in template.fields]
    )
    assert match_template(structure_only, p5).values["publisher"] == "Paperback"
    # read from its own label, a row the page lacks stays empty whatever STM aligned
    assert match_template(unfixed, p5).values["publisher"] is None


def test_page_that_fits_no_template():
    template = product_template()
    article = page_tree((FIXTURES / "article-a1.html").read_bytes())
    record = extract_record(template, "a1", article)
    assert record["fits"] is False
    assert all(record[name] is None for name in template.field_names)
    assert best_template([template], article) is None
    product = page_tree((FIXTURES / "product-p2.html").read_bytes())
    assert best_template([template], product) is template


def test_bad_pages_become_empty_records():
    data = [
        *pages("product-"),
        ("empty.html", b""),
        ("binary.html", b"\x00\x01\xff" * 300),
        ("deep.html", b"<html><body>" + b"<div>" * 3000 + b"x" + b"</div>" * 3000),
    ]
    dataset = extract_pages(data)
    by_url = {r["url"]: r for r in dataset.records}
    assert by_url["empty.html"] == {"url": "empty.html", "cluster": None, "fits": False}
    assert by_url["binary.html"]["fits"] is False
    assert by_url["deep.html"]["fits"] is False
    assert by_url["product-p1.html"]["isbn_13"] == "9780000000011"


def test_writers(tmp_path):
    dataset = extract_pages(pages(), min_cluster_size=2)  # clusters of 3 pages here
    out = tmp_path / "rows.jsonl"
    assert write_dataset(dataset, out) == 11
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert rows == dataset.records
    out_csv = tmp_path / "rows.csv"
    write_dataset(dataset, out_csv)
    with out_csv.open(newline="") as fh:
        table = list(csv.DictReader(fh))
    assert list(table[0])[:3] == ["url", "cluster", "fits"]
    p1 = next(r for r in table if r["url"] == "product-p1.html")
    assert p1["isbn_13"] == "9780000000011" and p1["posted"] == ""


def test_helpers():
    assert slug("ISBN-13") == "isbn_13"
    assert slug("  Author: ") == "author"
    assert clean_value(": 9780316125581") == "9780316125581"
    assert clean_value(None) is None


def test_extract_command(tmp_path):
    out = tmp_path / "data.csv"
    result = subprocess.run(
        [sys.executable, "-m", "visdup", "extract", str(FIXTURES), "--out", str(out)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    with out.open(newline="") as fh:
        assert len(list(csv.DictReader(fh))) == 11
    bad = subprocess.run(
        [
            sys.executable,
            "-m",
            "visdup",
            "extract",
            str(FIXTURES),
            "--out",
            str(tmp_path / "x.txt"),
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert bad.returncode == 2 and bad.stderr.startswith("visdup: error:")


def _labelled_pages(label: str) -> list[bytes]:
    return [
        (
            f"<html><body><h1>Part {n}</h1><table><tr><th>{label}</th><td>model {n % 3}</td></tr>"
            f"<tr><th>Maker:</th><td>maker {n}</td></tr></table></body></html>"
        ).encode()
        for n in range(6)
    ]


def test_a_field_never_takes_a_record_column():
    for label in ("Fits:", "URL:", "Cluster:", "Path:"):
        trees = [page_tree(b) for b in _labelled_pages(label)]
        template = build_template(trees, cluster=3)
        assert not set(template.field_names) & {"url", "path", "cluster", "fits", "key"}
        record = extract_record(template, "u", trees[1])
        assert record["fits"] is True  # the record's own boolean, not the page's text
        assert record["url"] == "u" and record["cluster"] == 3
        assert record["maker"] == "maker 1"
        own = label.rstrip(":").lower()
        assert record[f"{own}_field"] == "model 1"
    # A template stored before names were reserved still cannot overwrite a column.
    stored = template.to_dict()
    stored["fields"] = [
        {**f, "name": "fits"} if f["name"] == "path_field" else f for f in stored["fields"]
    ]
    record = extract_record(Template.from_dict(stored), "u", trees[1])
    assert record["fits"] is True and record["fits_field"] == "model 1"


def test_fit_uses_its_own_min_fit():
    template = product_template()
    tree = page_tree((FIXTURES / "product-p3.html").read_bytes())
    loose = match_template(template, tree, min_fit=0.0)
    strict = match_template(template, tree, min_fit=1.01)
    assert loose.share == strict.share
    assert loose.fits and not strict.fits
    assert extract_record(template, "p3", tree, min_fit=1.01)["fits"] is False


def test_fields_are_not_named_after_ids_generated_from_the_page():
    trees = [
        page_tree(
            (
                f"<html><body><div class='nav'><a>Home</a></div><div id='post-{n}' "
                f"class='post-{n} entry'><p>Story number {n} of the blog</p></div>"
                f"<section id='s-release-{n}-0'><p>Note {n}</p></section></body></html>"
            ).encode()
        )
        for n in range(6)
    ]
    names = build_template(trees).field_names
    assert "entry" in names
    assert not any(ch.isdigit() for name in names for ch in name)


def _archive_page(month: int, posts: int) -> bytes:
    items = "".join(
        f"<article class='post'><h2 class='post-title'>Post {month}-{k} title</h2>"
        f"<p class='excerpt'>Excerpt of post {month}-{k} with its own words.</p></article>"
        for k in range(posts)
    )
    return (
        "<html><head><title>Archive</title></head><body><div id='top'><a href='/'>Blog</a></div>"
        f"<div id='main'><h1 class='archive-title'>Archive of month {month}</h1>{items}</div>"
        "<div id='foot'><p>Blog footer</p></div></body></html>"
    ).encode()


def test_a_listing_never_mixes_two_records():
    # Archive pages list 3 to 6 posts: a post's title is a value of one of several records on
    # the page, so no page-level column may carry it (it would be a neighbour's on another page).
    pages = [(f"archive-{m}.html", _archive_page(m, 3 + m % 4)) for m in range(8)]
    dataset = extract_pages(pages)
    assert len(dataset.templates) == 1
    posts = {f"Post {m}-{k} title" for m in range(8) for k in range(7)}
    for record in dataset.records:
        values = {v for k, v in record.items() if k != "main_text" and isinstance(v, str)}
        assert not values & posts, record
    heading = [r for r in dataset.records if any("Archive of month" in str(v) for v in r.values())]
    assert len(heading) == 8, "the page's own heading stays a field"


def test_the_pages_main_heading_is_its_title() -> None:
    """A book's name in an unlabelled ``<h2>`` inside ``div.module`` came out as ``module``;
    the highest heading is the title, a lower one keeps its own name, a label still wins."""
    trees = [
        page_tree(
            (
                "<html><body><div class='top'><a>Shop</a></div><div class='module details'>"
                f"<h2>Book number {n} <span class='subtitle'>(edition {n % 3})</span></h2>"
                f"<h3 class='byline'>Writer {n}</h3><table><tr><th>Title:</th><td>Series {n}"
                "</td></tr></table></div></body></html>"
            ).encode()
        )
        for n in range(6)
    ]
    template = build_template(trees, cluster=5)
    record = extract_record(template, "u", trees[2])
    assert record["title"] == "Book number 2"
    assert record["subtitle"] == "(edition 2)" and record["byline"] == "Writer 2"
    assert record["title_2"] == "Series 2"  # "Title:" names its own value
    assert "module" not in template.field_names


def _detail_page(n: int) -> bytes:
    """A book page whose details are "Caption: value" texts, rows missing on some pages, and
    a carousel of other books, each with its own "Club Price:"."""
    rows = [f"<li>ISBN-13: 97800000{n:05d}</li>"]
    if n % 3:
        rows.insert(0, f"<li>ISBN-10: 00000{n:05d}</li>")
    rows.append(f"<li>Publisher: House {n}</li>")
    if n % 4:
        rows.append(f"<li>Pages: {100 + n}</li>")
    others = "".join(
        f"<dl class='product'><dt><a href='/b{n}-{k}'>Other book {n}-{k}</a></dt>"
        f"<dd>Club Price: ${k + n}.99</dd></dl>"
        for k in range(4)
    )
    # a list of links whose titles hold a colon on some items only: still a list
    related = "".join(
        f"<li><a href='/r{n}-{k}'>{f'Guide {n}-{k}: part {k}' if k % 2 else f'Guide {n}-{k}'}</a>"
        "</li>"
        for k in range(3)
    )
    return (
        "<html><body><div id='top'><a href='/'>Shop</a></div><div class='book'>"
        f"<h1>Book {n}: a novel</h1><table><tr><td>Retail Price: ${20 + n}.00</td></tr>"
        f"<tr><td>Club Price: ${10 + n}.50</td></tr></table>"
        f"<ul class='details'>{''.join(rows)}</ul></div>"
        f"<div class='carousel'>{others}</div><ul class='related'>{related}</ul></body></html>"
    ).encode()


def test_a_text_that_opens_with_its_caption_is_a_field_named_by_it() -> None:
    """ "ISBN-13: 978..." in one text: the whole text differs on every page, so it was never a
    label, rows that shift (a book without an ISBN-10) were matched by position, and the rows
    of the list gave no field at all."""
    from visdup.templates.stm import inline_label

    assert inline_label("ISBN-13: 9780316125581") == ("ISBN-13:", "9780316125581")
    assert inline_label("Publisher: Little, Brown") == ("Publisher:", "Little, Brown")
    assert inline_label("Dimensions: 9.2 x 6.1 x 1.2 inches") is not None
    for whole in ("Opens at 10:30", "see http://x.org", "Price:", "a b c d e f: g", "x" * 300):
        assert inline_label(whole) is None
    # prose that opens with a phrase and a colon: a sentence goes on after the value
    assert inline_label("Start slightly cold: in ten minutes you are warm. A thin coat") is None
    trees = [page_tree(_detail_page(n)) for n in range(12)]
    template = build_template(trees, cluster=4)
    for name in ("title", "isbn_10", "isbn_13", "publisher", "pages", "club_price"):
        assert name in template.field_names, template.field_names
    for n in (0, 1, 5, 8):
        record = extract_record(template, "u", trees[n])
        assert record["title"] == f"Book {n}: a novel"  # a heading's colon is the title's
        assert record["isbn_13"] == f"97800000{n:05d}"
        assert record["isbn_10"] == (f"00000{n:05d}" if n % 3 else None)
        assert record["publisher"] == f"House {n}"
        assert record["pages"] == (str(100 + n) if n % 4 else None)
        assert record["retail_price"] == f"${20 + n}.00"
        # the page's own price: every book of the carousel repeats the caption, which says
        # which row a value is but not which book
        assert record["club_price"] == f"${10 + n}.50"
    values = {v for v in extract_record(template, "u", trees[5]).values() if isinstance(v, str)}
    assert not any(v.startswith("$") and v.endswith(".99") for v in values), values
    assert not any(v.startswith("Guide") or v.startswith("part") for v in values), values


def _shop_page(n: int, rows: list[str]) -> bytes:
    items = "".join(f"<li><b>{caption}:</b> {value}</li>" for caption, value in rows)
    return (
        "<html><body><div id='nav'><a href='/'>Books</a></div><div id='main'>"
        f"<h1 class='parseasinTitle'><span id='btAsinTitle'>Book {n}</span></h1>"
        f"<div class='buying'>by <a href='/a{n}'>Author {n}</a></div><table><tr>"
        "<td class='bucket'><h2>Product Details</h2>"
        f"<div class='content'><ul>{items}</ul></div></td></tr></table></div></body></html>"
    ).encode()


def test_a_labelled_value_is_read_from_its_own_label_when_rows_shift() -> None:
    """Rows of one label and one value each, some absent on some pages: STM aligns rows by
    the nodes they share, and a row under another label shares all but its label, so a book
    without an ISBN-10 had its ISBN-13 read from the ISBN-10 row (24 of 30 right)."""
    import random

    rng = random.Random(3)
    pages, truth = [], []
    for n in range(30):
        rows = [(rng.choice(["Hardcover", "Paperback"]), f"{100 + n} pages")]
        if rng.random() < 0.8:
            rows.append(("Publisher", f"House {n}"))
        rows.append(("Language", "English"))
        ten = rng.random() < 0.7
        if ten:
            rows.append(("ISBN-10", f"00000{n:05d}"))
        rows.append(("ISBN-13", f"978-00000{n:05d}"))
        if rng.random() < 0.5:
            rows.append(("Product Dimensions", f"{n} x 6 x 1 inches"))
        pages.append(page_tree(_shop_page(n, rows)))
        truth.append((f"978-00000{n:05d}", f"00000{n:05d}" if ten else None))
    template = build_template(pages, cluster=2)
    assert {"title", "isbn_10", "isbn_13", "publisher"} <= set(template.field_names)
    stored = Template.from_dict(json.loads(json.dumps(template.to_dict())))
    for tree, (isbn_13, isbn_10) in zip(pages, truth, strict=True):
        for t in (template, stored):
            record = extract_record(t, "u", tree)
            assert (record["isbn_13"], record["isbn_10"]) == (isbn_13, isbn_10)


def _manual(style: str) -> list[tuple[str, bytes]]:
    """Pages of a generated manual: each names itself in its <title>, has its own sections
    (ids made from their headings, as Sphinx and DocBook write them) and a sidebar or header
    that links the pages before and after it."""
    import random

    rng = random.Random(3)
    words = "alpha beta gamma delta epsilon zeta theta kappa lambda sigma omega".split()
    names = [f"{rng.choice(words).title()} {rng.choice(words)} {k}" for k in range(14)]
    out = []
    for k, name in enumerate(names):
        sections = []
        for _s in range(rng.randint(1, 4)):
            heading = " ".join(rng.sample(words, 2)).title()
            slug_ = heading.lower().replace(" ", "-")
            paras = "".join(
                f"<p>{' '.join(rng.choices(words, k=12))}.</p>" for _ in range(rng.randint(1, 3))
            )
            code = f"<pre>{rng.choice(words)}()</pre>" if rng.random() < 0.4 else ""
            sections.append(
                f'<div class="section" id="s-{slug_}"><h2>{heading}</h2>{paras}{code}</div>'
            )
        before, after = names[k - 1] if k else "Index", names[(k + 1) % len(names)]
        # the way down to this page: one to three levels
        trail = "".join(
            f'<li><a href="c{rng.randrange(99)}.html">{" ".join(rng.sample(words, 2))}</a></li>'
            for _ in range(rng.randint(1, 3))
        )
        if style == "sphinx":
            body = (
                f'<div id="bd"><div class="body"><h1>{name}</h1>{"".join(sections)}</div>'
                '<div class="sidebar"><h3>Contents</h3><ul><li><a href="index.html">Home</a></li>'
                '</ul><div><h4>Previous topic</h4><p class="topless">'
                f'<a href="p{k - 1}.html">{before}</a></p></div><div><h4>Next topic</h4>'
                f'<p class="topless"><a href="p{k + 1}.html">{after}</a></p></div>'
                f'<ul class="trail">{trail}</ul></div></div>'
            )
            title = f"{name} | Manual"
        else:  # DocBook: the page names itself in its header row, its own heading varies
            heading = f"<h1>{name}</h1>" if k % 3 == 0 else f"<h2>{name.upper()}</h2>"
            body = (
                '<div class="navheader"><table><tr><th colspan="3">'
                f"{name}</th></tr><tr><td><a href='p{k - 1}.html'>Prev</a></td><td>"
                f"<a href='index.html'>Up</a></td><td><a href='p{k + 1}.html'>Next</a>"
                f'</td></tr></table></div><div class="chapter" id="{name.split()[0].upper()}'
                f'-{k}">{heading}{"".join(sections)}</div>'
            )
            title = name
        html = f"<html><head><title>{title}</title></head><body>{body}</body></html>"
        out.append((f"p{k}.html", html.encode()))
    return out


def test_a_manuals_columns_are_its_slots_and_its_text_one_field():
    """Fields named from labels and the page's own title; the article's own sections, code
    and page-made ids stay in ``main_text``: no column holds one page's third section and
    another's first paragraph, nor one page's second level of its trail and another's third."""
    for style, columns in (
        # every page's trail has its first level; the second and third are there on some
        ("sphinx", ["title", "previous_topic", "next_topic", "trail"]),
        # the chapter's own heading (an h1 on some pages, an h2 on others) is a slot too
        ("docbook", ["title", "chapter"]),
    ):
        pages_ = _manual(style)
        dataset = extract_pages(pages_, min_cluster_size=2)
        assert len(dataset.templates) == 1
        assert dataset.templates[0].field_names == columns, style
        by_url = {r["url"]: r for r in dataset.records}
        for k, (url, html) in enumerate(pages_):
            record = by_url[url]
            own = html.decode().split("<title>")[1].split("</title>")[0].split(" | ")[0]
            assert record["title"] == own
            assert record["fits"] is True
            first_paragraph = html.decode().split("<p>")[1].split("</p>")[0]
            assert first_paragraph in record["main_text"]
            if style == "sphinx":
                nxt = pages_[(k + 1) % len(pages_)][1].decode()
                assert record["next_topic"] == nxt.split("<h1>")[1].split("</h1>")[0]
                trail = html.decode().split('<ul class="trail">')[1]
                assert record["trail"] == trail.split('">', 2)[1].split("</a>")[0]


def _built_elsewhere(trees: list) -> Template:
    """A template built as a worker process builds one: a process that numbered other labels
    before (its earlier pages) gives these other STM codes."""
    from visdup.templates import stm

    stm._codes([f"seen-before-{i}" for i in range(50)])
    return build_template(trees, cluster=7)


def test_a_template_built_in_another_process_extracts_the_same_records():
    import multiprocessing

    trees = [page_tree(data) for _, data in pages("product-")]
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        there = pool.apply(_built_elsewhere, (trees,))
    here = build_template([page_tree(data) for _, data in pages("product-")], cluster=7)
    assert there.field_names == here.field_names
    for name, data in pages("product-"):
        tree = page_tree(data)
        record = extract_record(there, name, tree)
        assert record["fits"] and record == extract_record(here, name, tree)
