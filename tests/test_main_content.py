"""Main content beyond news articles: short pages, data in lists and tables, compound
furniture names, a chapter whose table of contents costs it."""

from __future__ import annotations

from visdup.content import extract

ARTICLE = " ".join(
    f"This is sentence number {i} of the article, which says a thing." for i in range(12)
)


def test_a_page_without_prose_keeps_what_it_shows_but_not_its_furniture() -> None:
    found = extract(
        "<html><head><title>T</title></head><body><article><h2>Test Case 1</h2><img src='a.png'>"
        "<h2>Test Case 2</h2></article></body></html>"
    )
    assert found.text == "Test Case 1\n\nTest Case 2"
    found = extract(
        "<html><body><nav><a href='/a'>Home</a> <a href='/b'>News</a></nav>"
        "<p>Opening hours</p><footer><p>Copyright 2024</p></footer></body></html>"
    )
    assert found.text == "Opening hours"


def test_a_table_and_a_list_with_some_links_stay_in_the_content() -> None:
    rows = "".join(
        f"<tr><td><a href='/f{i}'>Film</a> number {i}</td><td>{1990 + i}</td></tr>"
        for i in range(6)
    )
    items = "".join(
        f"<li><a href='/u{i}'>someone</a> fixed bug {i} in the parser</li>" for i in range(5)
    )
    related = "".join(f"<li><a href='/r{i}'>Another story, number {i}</a></li>" for i in range(5))
    found = extract(
        f"<html><body><div class='post'><p>{ARTICLE}</p><table>{rows}</table><ul>{items}</ul>"
        f"<p>{ARTICLE}</p><p>{ARTICLE}</p><ul>{related}</ul></div></body></html>"
    )
    assert "Film number 5" in found.text and "fixed bug 4" in found.text
    assert "Another story" not in found.text  # a list of links alone is furniture


def test_a_furniture_word_glued_to_another_in_a_class_name() -> None:
    teasers = " ".join(f"Another article summarised here in sentence {i}." for i in range(5))
    found = extract(
        f"<html><body><div class='entry'><p>{ARTICLE}</p><div class='jp-relatedposts'>"
        f"<p>{teasers}</p></div></div></body></html>"
    )
    assert "sentence number 11" in found.text and "summarised" not in found.text


def test_a_chapter_is_not_its_longest_paragraph() -> None:
    toc = "".join(
        f"<li><a href='/s{i}'>Section {i} of the chapter on things</a></li>" for i in range(100)
    )
    paragraphs = "".join(
        f"<p>Paragraph {i} of the chapter says what it is about.</p>" for i in range(40)
    )
    found = extract(
        f"<html><body><div role='main'><section><h1>Chapter</h1><ul>{toc}</ul>"
        f"<p>{ARTICLE}</p>{paragraphs}</section></div></body></html>"
    )
    assert "Paragraph 39 of the chapter" in found.text and "sentence number 11" in found.text


def _comments(tag: str, bodies: list[str]) -> str:
    return "".join(
        f"<{tag} class='comment'><div class='comment-author'>someone {i}</div>"
        f"<div class='comment-meta'>March {i}, 2023</div><div class='comment-content'>"
        f"<p>{body}</p></div><div class='reply'><a href='?r={i}'>Reply</a></div></{tag}>"
        for i, body in enumerate(bodies)
    )


POSTS = [
    f"Post {i} of the thread says what its author thinks about the printer, at length. " * n
    for i, n in enumerate((6, 2, 1, 3, 1, 2))
]


def test_a_thread_of_comment_named_posts_keeps_every_post() -> None:
    for tag in ("li", "article"):
        page = (
            f"<html><body><div id='content'><h1>Printer stops</h1><ol class='commentlist'>"
            f"{_comments(tag, POSTS)}</ol></div><div class='sidebar'><p>Who is online</p></div>"
            f"</body></html>"
        )
        found = extract(page)
        for i in range(len(POSTS)):
            assert f"Post {i} of the thread" in found.text, (tag, i)
        assert "someone" not in found.text and "March" not in found.text


def test_a_blog_article_stays_the_content_of_a_page_with_comments() -> None:
    page = (
        f"<html><body><main><article class='post'><h1>A title</h1><div class='entry-content'>"
        f"<p>{ARTICLE}</p></div></article><div id='comments' class='comments-area'>"
        f"<ol class='comment-list'>{_comments('li', POSTS)}</ol></div></main></body></html>"
    )
    found = extract(page)
    assert "sentence number 11" in found.text and "Post 0 of the thread" not in found.text


def test_link_only_cells_of_a_kept_table_stay() -> None:
    rows = "".join(
        f"<tr><td><a href='/f{i}'>Film title {i}</a></td><td>{1990 + i}</td>"
        f"<td>Directed by someone, shot in {1989 + i}</td></tr>"
        for i in range(8)
    )
    found = extract(
        f"<html><body><div class='post'><p>{ARTICLE}</p><table>{rows}</table>"
        f"<p>{ARTICLE}</p></div></body></html>"
    )
    assert "Film title 0" in found.text and "Film title 7" in found.text


def test_rows_that_each_link_and_say_a_line_are_a_listing_a_menu_is_not() -> None:
    """A home page's table of articles holds a shorter list's rows whole: both are listings,
    so neither is called a copy of the other by containment."""
    from tests.crawling import listing
    from visdup.content.main import extract

    arts = [f"/a/{w}.html" for w in ("alpha", "beta", "gamma", "delta", "epsilon", "zeta")]
    long = extract(listing("Home", [(u, u) for u in arts] + [("/x.html", "x")]).encode())
    short = extract(listing("List", [(u, u) for u in arts[:4]]).encode())
    assert long.listing and short.listing
    menu = "".join(f"<li><a href='{u}'>{u}</a></li>" for u in arts)
    prose = "<p>" + "A sentence of the page's own that says something at length. " * 8 + "</p>"
    page = f"<html><body><ul class=menu>{menu}</ul><main>{prose}</main></body></html>"
    assert not extract(page.encode()).listing


def test_the_article_body_itemprop_outweighs_a_widget_id_on_the_same_element() -> None:
    captions = " ".join(f"Caption {i} tells of another picture in the gallery." for i in range(17))
    found = extract(
        f"<html><body><div id='share-buttons-2' itemprop='articleBody'><p>{ARTICLE}</p></div>"
        f"<div class='scroller'><p>{captions}</p></div></body></html>"
    )
    assert "sentence number 11" in found.text and "Caption" not in found.text


def test_more_is_furniture_beside_read_not_as_a_section_slug() -> None:
    found = extract(
        f"<html><body><div class='body'><section id='lists'><p>{ARTICLE}</p></section>"
        "<section id='more-on-lists'><h2>More on lists</h2><p>The list type has some more"
        " methods, told in this short section.</p></section><div class='read-more'>"
        "<a href='/other'>Another story told elsewhere on this site today</a></div>"
        "</div></body></html>"
    )
    assert "some more methods" in found.text and "Another story" not in found.text


def test_a_named_part_of_a_sentence_stays_where_a_bylines_goes() -> None:
    sentence = (
        "The government plans to lift trade sanctions on <a class='related-topic' "
        "href='/topics/sudan'>Sudan</a> after twenty years, <span class='date'>late on "
        "Thursday</span> officials said."
    )
    found = extract(
        f"<html><body><div class='entry'><p>By <span class='author'>Jane Doe</span></p>"
        f"<p>{ARTICLE}</p><p>{sentence}</p><p>{ARTICLE}</p></div></body></html>"
    )
    assert "sanctions on Sudan after twenty years, late on Thursday officials said." in found.text
    assert "Jane Doe" not in found.text  # a byline is no sentence: its author's name goes


def test_a_formula_stays_whatever_its_renderer_calls_its_wrapper() -> None:
    def formula(name: str) -> str:
        return (
            "<mjx-container class='MathJax CtxtMenu_Attached_0'><mjx-math aria-hidden='true'>"
            f"</mjx-math><mjx-assistive-mml><math><mi>{name}</mi><mo>=</mo><mi>m</mi>"
            "<msup><mi>c</mi><mn>2</mn></msup></math></mjx-assistive-mml></mjx-container>"
        )

    found = extract(
        f"<html><body><div class='entry'><p>{ARTICLE}</p><h2>Energy</h2>{formula('E')}"
        f"<p>The energy {formula('F')} of a body at rest, as the article says here.</p>"
        f"<p>{ARTICLE}</p></div></body></html>"
    )
    assert "E=mc2" in found.text  # a formula of its own between a heading and a paragraph
    assert "The energy F=mc2 of a body" in found.text


def test_an_article_in_parts_around_an_advert_is_all_of_its_parts() -> None:
    first = " ".join(f"The first part says thing {i} about the deal." for i in range(6))
    second = " ".join(f"The second part says thing {i} at length, as it goes." for i in range(20))
    advert = "<div class='supplemental'><p>Sponsored: buy our product today, it is good.</p></div>"
    menu = "".join(f"<li><a href='/s{i}'>Section {i}</a></li>" for i in range(30))
    found = extract(
        f"<html><body><article><h1>The deal</h1><ul class='sections'>{menu}</ul>"
        f"<div class='wrap'><div class='story-body story-body-1'><p>{first}</p></div>{advert}</div>"
        f"<div class='wrap'><div class='story-body story-body-2'><p>{second}</p></div></div>"
        "</article></body></html>"
    )
    assert "first part says thing 5" in found.text and "second part says thing 19" in found.text
    assert "Section 3" not in found.text
