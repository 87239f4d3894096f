"""Deterministic discussion pages with known post bodies: a development set for main content.

No public set scores forum threads, so these are generated, in the markup that common forum
and blog software prints (phpBB's prosilver, vBulletin 4, Discourse's crawler view, a
question-and-answer site, a Reddit-like nested thread, a guestbook of ``li.comment`` items,
a thread whose posts are ``article.comment`` elements), each page with the site's header,
breadcrumbs, sidebar, pagination, "similar threads" and footer around the posts.

What a page's main content is:

- a thread (every post the same kind of element, side by side, the first post among them):
  every post's body, in order, without the author's name, join date, post count, date,
  signature or buttons;
- a blog article with a comments section (``blog`` pages): the article alone; its comments
  are the readers', not the page's.

``pages()`` gives ``(name, html, truth)``; the content depends on the seed only.
"""

from __future__ import annotations

import html
import random
from collections.abc import Callable

__all__ = ["STYLES", "pages"]

_WORDS = (
    "the", "a", "this", "that", "my", "your", "our", "every", "one", "some", "driver",
    "kernel", "update", "printer", "router", "garden", "engine", "recipe", "bike", "camera",
    "battery", "screen", "setting", "config", "file", "folder", "server", "client", "version",
    "problem", "fix", "patch", "tomato", "soil", "chain", "brake", "lens", "shutter", "flour",
    "oven", "works", "fails", "starts", "stops", "breaks", "helps", "changes", "needs", "shows",
    "keeps", "after", "before", "when", "because", "although", "with", "without", "under",
    "over", "again", "still", "never", "always", "quickly", "slowly", "really", "probably",
    "new", "old", "broken", "clean", "strange", "simple", "whole", "second", "last", "first",
    "and", "but", "so", "then", "also", "maybe", "exactly", "same", "other", "different",
)  # fmt: skip
_NAMES = (
    "mike_r", "Anna K.", "tux4life", "gardener77", "Jonas", "pixelpusher", "old_timer",
    "K. Nakamura", "leafy", "sysadmin_bob", "Marta", "quietfox", "r2d2fan", "Lena B",
)  # fmt: skip
_TOPICS = (
    "Printer stops after the update", "Tomatoes split before they ripen",
    "Rear brake squeals in the rain", "Server refuses connections after reboot",
    "Bread does not rise in the new oven", "Camera battery drains overnight",
    "Router drops the connection every hour", "Which lens for indoor portraits",
)  # fmt: skip


def _sentence(rng: random.Random) -> str:
    words = [rng.choice(_WORDS) for _ in range(rng.randint(6, 18))]
    return words[0].capitalize() + " " + " ".join(words[1:]) + rng.choice(".....?!")


def _paragraphs(rng: random.Random, short: bool = False) -> list[str]:
    if short and rng.random() < 0.5:
        return [_sentence(rng)]
    return [
        " ".join(_sentence(rng) for _ in range(rng.randint(1, 5)))
        for _ in range(rng.randint(1, 1 if short else 4))
    ]


def _date(rng: random.Random, i: int) -> str:
    day = 1 + (i + rng.randint(0, 2)) % 28
    return f"Mar {day}, 2023, {rng.randint(1, 12)}:{rng.randint(10, 59)} pm"


Post = tuple[str, str, list[str]]  # author, date, paragraphs


def _thread(rng: random.Random) -> list[Post]:
    count = rng.randint(3, 14)
    return [
        (rng.choice(_NAMES), _date(rng, i), _paragraphs(rng, short=i > 0 and rng.random() < 0.4))
        for i in range(count)
    ]


def _p(paragraphs: list[str], sep: str = "p") -> str:
    if sep == "br":
        return "<br><br>".join(html.escape(t) for t in paragraphs)
    return "".join(f"<p>{html.escape(t)}</p>" for t in paragraphs)


def _chrome(title: str, body: str, rng: random.Random, site: str) -> str:
    """The page around the posts: header, menu, breadcrumbs, sidebar, similar, footer."""
    menu = "".join(
        f"<li><a href='/{w.lower()}'>{w}</a></li>"
        for w in ("Home", "Forums", "Members", "Search", "Help", "Register", "Log in")
    )
    similar = "".join(
        f"<li><a href='/t/{i}'>{html.escape(rng.choice(_TOPICS))}</a> <span>{rng.randint(2, 40)} "
        "replies</span></li>"
        for i in range(rng.randint(3, 8))
    )
    online = ", ".join(rng.sample(_NAMES, 5))
    return (
        f"<!DOCTYPE html><html><head><title>{html.escape(title)} - {site}</title></head><body>"
        f"<div id='header'><a href='/' class='logo'>{site}</a><ul class='menu'>{menu}</ul>"
        f"<form class='search'><input name='q' placeholder='Search'></form></div>"
        f"<div class='breadcrumbs'><a href='/'>{site}</a> » <a href='/f/2'>General</a> » "
        f"<a href='/f/7'>Help and support</a></div>"
        f"<div id='wrap'><div id='page-body'>{body}</div>"
        f"<div id='sidebar'><h3>Who is online</h3><p>Users browsing: {online}</p>"
        f"<h3>Similar threads</h3><ul>{similar}</ul></div></div>"
        f"<div id='footer'><p>Powered by forum software © 2000-2023. All times are UTC.</p>"
        "<a href='/terms'>Terms</a> <a href='/privacy'>Privacy</a> <a href='/contact'>Contact "
        "us</a></div>"
        f"</body></html>"
    )


def _pager(rng: random.Random) -> str:
    n = rng.randint(2, 6)
    links = " ".join(f"<a href='?page={i}'>{i}</a>" for i in range(2, n + 1))
    return (
        f"<div class='pagination'>Page 1 of {n} <strong>1</strong> {links} "
        "<a href='?page=2'>Next</a></div>"
    )


def phpbb(rng: random.Random, title: str, posts: list[Post]) -> str:
    out = []
    for i, (who, when, body) in enumerate(posts):
        sig = (
            f"<div id='sig{i}' class='signature'>{html.escape(_sentence(rng))}</div>"
            if rng.random() < 0.4
            else ""
        )
        out.append(
            f"<div id='p{100 + i}' class='post has-profile bg{1 + i % 2}'><div class='inner'>"
            f"<dl class='postprofile'><dt><a href='/u/{i}' class='username'>{html.escape(who)}"
            "</a></dt>"
            "<dd class='profile-rank'>Registered User</dd><dd class='profile-posts'><strong>"
            "Posts:</strong> "
            f"<a href='/s?author={i}'>{rng.randint(1, 3000)}</a></dd><dd class='profile-joined'>"
            "<strong>Joined:</strong> Jan 2019</dd></dl><div class='postbody'><div "
            f"id='post_content{i}'>"
            f"<h3><a href='#p{100 + i}'>{'Re: ' if i else ''}{html.escape(title)}</a></h3>"
            f"<ul class='post-buttons'><li><a href='/quote/{i}' class='button'>Quote</a></li></ul>"
            f"<p class='author'><a href='#p{100 + i}'>by</a> <strong><a href='/u/{i}'>"
            f"{html.escape(who)}"
            f"</a></strong> » {when}</p><div class='content'>{_p(body, 'br')}</div>{sig}</div>"
            "</div>"
            f"<div class='back2top'><a href='#top' class='top'>Top</a></div></div></div>"
            f"<hr class='divider'>"
        )
    return (
        f"<h2 class='topic-title'><a href='/t/1'>{html.escape(title)}</a></h2>"
        f"{_pager(rng)}{''.join(out)}{_pager(rng)}"
    )


def vbulletin(rng: random.Random, title: str, posts: list[Post]) -> str:
    out = []
    for i, (who, when, body) in enumerate(posts):
        out.append(
            f"<li class='postbitlegacy postbitim postcontainer old' id='post_{i}'>"
            f"<div class='posthead'><span class='postdate old'><span class='date'>{when}</span>"
            "</span>"
            f"<span class='nodecontrols'><a name='post{i}' href='#post{i}' class='postcounter'>"
            f"#{i + 1}</a></span></div>"
            f"<div class='postdetails'><div class='userinfo'><div class='username_container'>"
            f"<a class='username offline popupctrl' href='/member/{i}'><strong>"
            f"{html.escape(who)}</strong></a></div>"
            "<span class='usertitle'>Junior Member</span><dl class='userinfo_extra'><dt>Join "
            "Date</dt>"
            f"<dd>Mar 2010</dd><dt>Posts</dt><dd>{rng.randint(1, 900)}</dd></dl></div>"
            "<div class='postbody'><div class='postrow'><div class='content'><div "
            f"id='post_message_{i}'>"
            f"<blockquote class='postcontent restore'>{_p(body, 'br')}</blockquote></div></div>"
            "</div>"
            "</div></div><div class='postfoot'><span class='postcontrols'><a "
            f"href='/reply?p={i}'>Reply</a> "
            f"<a href='/quote?p={i}' class='quote'>Reply With Quote</a></span></div></li>"
        )
    return (
        "<div id='pagetitle'><h1>Thread: <span class='threadtitle'><a href='/t/1'>"
        f"{html.escape(title)}</a>"
        f"</span></h1></div>{_pager(rng)}<div id='postlist' class='postlist restrain'>"
        f"<ol id='posts' class='posts'>{''.join(out)}</ol></div>{_pager(rng)}"
    )


def discourse(rng: random.Random, title: str, posts: list[Post]) -> str:
    out = []
    for i, (who, when, body) in enumerate(posts):
        likes = (
            f"<span class='post-likes'>{rng.randint(1, 9)} Likes</span>"
            if rng.random() < 0.5
            else ""
        )
        out.append(
            f"<div id='post_{i + 1}' itemscope itemtype='http://schema.org/DiscussionForumPosting' "
            f"class='topic-body crawler-post'><div class='crawler-post-meta'><span class='creator' "
            f"itemprop='author'><a itemprop='url' href='/u/{i}'><span itemprop='name'>"
            f"{html.escape(who)}"
            f"</span></a></span><span class='crawler-post-infos'><time itemprop='datePublished' "
            f"class='post-time'>{when}</time><meta itemprop='position' content='{i + 1}'></span>"
            "</div>"
            f"<div class='post' itemprop='text'>{_p(body)}</div><div "
            "itemprop='interactionStatistic'>"
            f"{likes}</div></div>"
        )
    return (
        f"<div id='main-outlet' class='wrap' role='main'><div id='topic-title'><h1>"
        f"<a href='/t/1'>{html.escape(title)}</a></h1><div class='topic-category'>"
        f"<a href='/c/help'>Help</a></div></div>{''.join(out)}</div>"
    )


def qa(rng: random.Random, title: str, posts: list[Post]) -> str:
    def votes(i: int) -> str:
        return (
            f"<div class='votecell'><button class='vote-up'>Up vote</button>"
            f"<div class='vote-count'>{rng.randint(0, 40)}</div><button class='vote-down'>Down "
            "vote</button></div>"
        )

    def signature(who: str, when: str) -> str:
        return (
            f"<div class='post-signature'><div class='user-action-time'>answered {when}</div>"
            f"<div class='user-details'><a href='/users/1'>{html.escape(who)}</a>"
            f"<span class='reputation-score'>{rng.randint(1, 99999)}</span></div></div>"
        )

    who, when, body = posts[0]
    question = (
        f"<div id='question' class='question'>{votes(0)}<div class='postcell'>"
        f"<div class='s-prose js-post-body' itemprop='text'>{_p(body)}</div>"
        f"<div class='post-taglist'><a class='post-tag' href='/tags/a'>help</a></div>"
        f"{signature(who, when)}</div></div>"
    )
    answers = "".join(
        f"<div id='answer-{i}' class='answer'>{votes(i)}<div class='answercell'>"
        f"<div class='s-prose js-post-body' itemprop='text'>{_p(b)}</div>{signature(w, d)}"
        f"</div></div>"
        for i, (w, d, b) in enumerate(posts[1:], 1)
    )
    return (
        f"<div id='question-header'><h1 itemprop='name'><a href='/q/1' class='question-hyperlink'>"
        f"{html.escape(title)}</a></h1></div><div id='mainbar'>{question}"
        f"<div id='answers'><div id='answers-header'><h2>{len(posts) - 1} Answers</h2>"
        "<div class='sort'>Sorted by: <a href='?sort=votes'>Highest score</a></div></div>"
        f"{answers}</div></div>"
    )


def _comment_items(rng: random.Random, posts: list[Post], tag: str, nest: bool) -> str:
    out = []
    depth = 0
    for i, (who, when, body) in enumerate(posts):
        item = (
            f"<{tag} id='comment-{i}' class='comment {'even' if i % 2 else 'odd'} "
            f"depth-{depth + 1}'>"
            f"<div class='comment-author vcard'><img class='avatar' src='/a/{i}.png' alt=''>"
            f"<b class='fn'><a href='/u/{i}'>{html.escape(who)}</a></b> <span class='says'>says:"
            "</span></div>"
            f"<div class='comment-meta commentmetadata'><a href='#comment-{i}'><time>{when}"
            "</time></a></div>"
            f"<div class='comment-content'>{_p(body)}</div>"
            f"<div class='reply'><a class='comment-reply-link' href='?replytocom={i}#respond'>"
            "Reply</a></div>"
        )
        if nest and rng.random() < 0.3 and depth < 3:
            out.append(item + "<ul class='children'>")
            depth += 1
        else:
            out.append(item + f"</{tag}>")
            while depth and rng.random() < 0.5:
                out.append(f"</ul></{tag}>")
                depth -= 1
    out.extend(f"</ul></{tag}>" for _ in range(depth))
    return "".join(out)


def guestbook(rng: random.Random, title: str, posts: list[Post]) -> str:
    """A discussion page whose every post, the first too, is an ``li.comment``."""
    return (
        f"<div id='content'><h1>{html.escape(title)}</h1><ol class='commentlist'>"
        f"{_comment_items(rng, posts, 'li', nest=True)}</ol>{_pager(rng)}</div>"
    )


def comment_thread(rng: random.Random, title: str, posts: list[Post]) -> str:
    """A thread whose posts are ``article.comment`` elements (a forum theme built on them)."""
    items = "".join(
        f"<article class='comment post-{i}' id='c{i}'><header class='comment-header'>"
        f"<span class='comment-author'>{html.escape(w)}</span> <time class='comment-date'>{d}"
        "</time>"
        f"</header><div class='comment-body'>{_p(b)}</div><footer class='comment-footer'>"
        f"<a href='#c{i}'>Permalink</a> <a href='?reply={i}'>Reply</a> <a href='?flag={i}'>"
        "Report</a>"
        f"</footer></article>"
        for i, (w, d, b) in enumerate(posts)
    )
    return (
        f"<main id='thread'><h1>{html.escape(title)}</h1><div class='thread-meta'>"
        f"{len(posts)} posts</div><section class='comments'>{items}</section>{_pager(rng)}</main>"
    )


def reddit(rng: random.Random, title: str, posts: list[Post]) -> str:
    """A nested thread: the opening post's text, then ``div.thing.comment`` replies."""
    who, when, body = posts[0]
    op = (
        f"<div class='thing link self' id='t3_1'><p class='title'><a class='title' href='/r/x/1'>"
        f"{html.escape(title)}</a></p><p class='tagline'>submitted {when} by <a class='author'>"
        f"{html.escape(who)}</a></p><div class='expando'><form class='usertext'><div "
        "class='usertext-body'>"
        f"<div class='md'>{_p(body)}</div></div></form></div><ul class='flat-list buttons'>"
        f"<li><a href='/r/x/1'>{len(posts) - 1} comments</a></li><li><a>share</a></li><li><a>"
        "save</a></li></ul></div>"
    )
    out, depth = [], 0
    for i, (w, d, b) in enumerate(posts[1:], 1):
        out.append(
            f"<div class='thing comment' id='t1_{i}'><div class='entry'><p class='tagline'>"
            f"<a class='author' href='/u/{i}'>{html.escape(w)}</a> <span class='score'>"
            f"{rng.randint(1, 99)} points</span>"
            f" <time>{d}</time></p><form class='usertext'><div class='usertext-body'><div "
            f"class='md'>{_p(b)}</div>"
            "</div></form><ul class='flat-list buttons'><li><a>permalink</a></li><li><a>reply"
            "</a></li></ul>"
            f"</div><div class='child'>"
        )
        if rng.random() < 0.4 and depth < 4:
            depth += 1
            out.append("<div class='sitetable listing'>")
            continue
        out.append("</div></div>")
        while depth and rng.random() < 0.5:
            out.append("</div></div></div>")
            depth -= 1
    out.extend("</div></div></div>" for _ in range(depth))
    return (
        f"{op}<div class='commentarea'><div class='sitetable nestedlisting'>"
        f"{''.join(out)}</div></div>"
    )


def blog(rng: random.Random, title: str, posts: list[Post]) -> str:
    """A WordPress article with its comments: the article is the content."""
    article = [p for _ in range(rng.randint(1, 3)) for p in _paragraphs(rng)]
    return (
        f"<main id='main' class='site-main'><article class='post type-post hentry'>"
        f"<header class='entry-header'><h1 class='entry-title'>{html.escape(title)}</h1>"
        f"<div class='entry-meta'>Posted on <time>{posts[0][1]}</time> by "
        f"<a href='/author/x'>{html.escape(posts[0][0])}</a></div></header>"
        f"<div class='entry-content'>{_p(article)}</div><footer class='entry-footer'>"
        f"<a href='/category/x' rel='tag'>Garden</a></footer></article>"
        f"<div id='comments' class='comments-area'><h2 class='comments-title'>{len(posts)} "
        "thoughts on "
        f"“{html.escape(title)}”</h2><ol class='comment-list'>"
        f"{_comment_items(rng, posts, 'li', nest=True)}"
        "</ol><div id='respond' class='comment-respond'><h3>Leave a Reply</h3><form><textarea>"
        "</textarea>"
        f"<input type='submit' value='Post Comment'></form></div></div></main>"
    ), "\n\n".join(article)  # type: ignore[return-value]


STYLES: dict[str, Callable[..., object]] = {
    "phpbb": phpbb, "vbulletin": vbulletin, "discourse": discourse, "qa": qa,
    "guestbook": guestbook, "comment-thread": comment_thread, "reddit": reddit, "blog": blog,
}  # fmt: skip


def pages(per_style: int = 6, seed: int = 49) -> list[tuple[str, str, str]]:
    """``per_style`` pages of every style: (name, html, the text of the main content)."""
    out = []
    for style, render in STYLES.items():
        for k in range(per_style):
            rng = random.Random(f"{seed}:{style}:{k}")
            title = rng.choice(_TOPICS)
            posts = _thread(rng)
            made = render(rng, title, posts)
            if isinstance(made, tuple):
                body, truth = made
            else:
                body = made
                truth = "\n\n".join(t for _, _, b in posts for t in b)
            out.append((f"{style}-{k}", _chrome(title, str(body), rng, "Example Forums"), truth))
    return out
