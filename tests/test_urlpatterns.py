"""A template's URL patterns are read from its pages: what varies is ``*``, what they share
stays, and session ids and query values never name a page type."""

from __future__ import annotations

import random

from visdup.page.urlpatterns import main_pattern, url_patterns, url_shape

H = "http://shop.example"


def test_a_directory_that_varies_is_one_pattern_and_a_shared_file_name_stays() -> None:
    prints = [f"{H}/articles/{slug}/print.html" for slug in ("a-b", "c", "winter-tips")]
    assert url_patterns(prints) == ["/articles/*/print.html (3)"]
    assert main_pattern(prints) == "/articles/*/print.html"


def test_session_ids_and_query_values_are_stars_and_the_name_leaves_them_out() -> None:
    urls = [
        f"{H}/shop/products/bike.html;jsessionid=8F2C41A09B7E",
        f"{H}/shop/products/lamp.html;jsessionid=8F2C41A09B7E",
        f"{H}/shop/products/lock.html",
        f"{H}/shop/products/bell.html",
        f"{H}/shop/products/pump.html?utm_source=home&utm_medium=x",
    ]
    assert url_patterns(urls) == [
        "/shop/products/*.html (2)",
        "/shop/products/*.html;jsessionid=* (2)",
        "/shop/products/pump.html?utm_medium=*&utm_source=* (1)",
    ]
    assert main_pattern(urls) == "/shop/products/*.html"


def test_two_sections_stay_two_patterns_and_one_page_is_its_own_path() -> None:
    urls = [f"{H}/articles/{s}.html" for s in "abc"] + [f"{H}/shop/{s}.html" for s in "xy"]
    urls += [f"{H}/about.html", f"{H}/"]
    assert url_patterns(urls) == [
        "/articles/*.html (3)",
        "/shop/*.html (2)",
        "/ (1)",
        "/about.html (1)",
    ]
    assert main_pattern([f"{H}/"]) == "/"
    assert main_pattern([f"{H}/blog/2023/a.html", f"{H}/blog/2024/b.html"]) == "/blog/*/*.html"


def test_the_patterns_do_not_depend_on_the_order_of_the_pages() -> None:
    urls = [f"{H}/help/{s}.html?sid={n}" for n, s in enumerate("abcdef")]
    urls += [f"{H}/help/{s}.html" for s in "abcdef"] + [f"{H}/help/"]
    first = url_patterns(urls)
    for seed in range(5):
        random.Random(seed).shuffle(urls)
        assert url_patterns(urls) == first
    assert first == ["/help/*.html (6)", "/help/*.html?sid=* (6)", "/help/ (1)"]


def test_one_page_s_shape_is_unchanged() -> None:
    # crawl budgets and drift snapshots key on it: it must read as it always has
    assert url_shape(f"{H}/blog/2024/post.html?b=1&a=2") == "/blog/N/*.html?a=*&b=*"
