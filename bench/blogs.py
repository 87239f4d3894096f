"""Deterministic WordPress blogs, a development set for template clustering (bench_cluster).

A WordPress blog has two page types that matter here, single posts and day archives
(/2021/03/14/), and the theme's markup around them varies with the content: post length and
composition, comments (threaded, closed, absent), tags, featured images, "more" teasers,
pagination. Clustering is judged on real blogs later, so the markup follows what the Twenty
Twenty-One and Twenty Seventeen themes print under WordPress 6.x with classic widgets.

``Blog.start`` is the home page "/" (kind "home", paginated at /page/N/, also "home"): its pages
list every post, every page's sidebar calendar links the days of its month that have posts (a
post's calendar shows the post's month, as WordPress does for date permalinks), and a day
archive links its later pages, so following <a href> links from "/" reaches every page.

As on a real blog many links lead outside ``pages``: author, category, tag and month archives,
the menu's pages, feeds, other sites, and the comment reply links (``?replytocom=N#respond``,
which WordPress answers with the post itself). Links within the blog are root-relative paths,
so the pages can be served from any host. The content depends on (posts, seed) only; the theme
only renders it.
"""

from __future__ import annotations

import html
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta

__all__ = ["THEMES", "Blog", "make_blog"]

THEMES = ("twentytwentyone", "twentyseventeen")

#: WordPress's default "Blog pages show at most", for the home page and the day archives.
PER_PAGE = 10


@dataclass(frozen=True)
class Blog:
    """A generated blog: each page's HTML, its page type, and the page a crawl starts from."""

    pages: dict[str, str]  # path -> HTML document
    kinds: dict[str, str]  # path -> "home", "post" or "day"
    start: str  # "/", the home page, from which links reach every page


# --------------------------------------------------------------------------- vocabulary

_MONTHS = (
    "January", "February", "March", "April", "May", "June", "July", "August", "September",
    "October", "November", "December",
)  # fmt: skip
_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")

_GENERAL_NOUNS = (
    "afternoon", "answer", "bag", "batch", "book", "box", "bucket", "budget", "cafe", "chair",
    "corner", "cousin", "cup", "day", "deadline", "detail", "door", "drawer", "draft", "evening",
    "fence", "field", "friend", "habit", "hill", "holiday", "hour", "idea", "jar", "job",
    "journey", "kettle", "kitchen", "label", "ladder", "lesson", "letter", "list", "map",
    "market", "minute", "mistake", "month", "morning", "neighbour", "note", "notebook", "parcel",
    "path", "photo", "plan", "podcast", "price", "problem", "question", "radio", "rain", "reason",
    "result", "river", "road", "roof", "room", "routine", "sample", "season", "shelf", "shop",
    "shortcut", "sketch", "spreadsheet", "step", "story", "street", "string", "summer",
    "surprise", "table", "ticket", "torch", "town", "village", "visitor", "wall", "weather",
    "weekend", "wind", "window", "winter", "year", "colleague", "newsletter", "sister", "garage",
)  # fmt: skip
_ADJECTIVES = (
    "awkward", "borrowed", "bright", "broken", "busy", "careful", "cheap", "clever", "cold",
    "crooked", "damp", "early", "easy", "empty", "enormous", "familiar", "fragile", "fresh",
    "frozen", "gentle", "green", "grey", "handy", "heavy", "homemade", "hopeful", "huge", "late",
    "lazy", "little", "loud", "lucky", "messy", "modest", "muddy", "narrow", "neat", "new",
    "noisy", "odd", "old", "patient", "plain", "quick", "quiet", "rare", "rough", "rusty",
    "second-hand", "secret", "sharp", "short", "simple", "slow", "small", "smart", "soft",
    "sticky", "strange", "stubborn", "sudden", "tall", "tidy", "tiny", "tired", "tricky",
    "unexpected", "useful", "warm", "wet", "wild", "windy", "wonky", "yellow",
)  # fmt: skip
_VERBS = (
    ("borrow", "borrowed", "borrowing"), ("build", "built", "building"),
    ("buy", "bought", "buying"), ("carry", "carried", "carrying"),
    ("change", "changed", "changing"), ("check", "checked", "checking"),
    ("clean", "cleaned", "cleaning"), ("compare", "compared", "comparing"),
    ("cut", "cut", "cutting"), ("drop", "dropped", "dropping"), ("find", "found", "finding"),
    ("finish", "finished", "finishing"), ("fix", "fixed", "fixing"),
    ("follow", "followed", "following"), ("forget", "forgot", "forgetting"),
    ("ignore", "ignored", "ignoring"), ("keep", "kept", "keeping"), ("lose", "lost", "losing"),
    ("make", "made", "making"), ("measure", "measured", "measuring"),
    ("miss", "missed", "missing"), ("move", "moved", "moving"),
    ("notice", "noticed", "noticing"), ("open", "opened", "opening"),
    ("order", "ordered", "ordering"), ("pack", "packed", "packing"),
    ("paint", "painted", "painting"), ("photograph", "photographed", "photographing"),
    ("plan", "planned", "planning"), ("rebuild", "rebuilt", "rebuilding"),
    ("replace", "replaced", "replacing"), ("rescue", "rescued", "rescuing"),
    ("sell", "sold", "selling"), ("share", "shared", "sharing"), ("sort", "sorted", "sorting"),
    ("start", "started", "starting"), ("test", "tested", "testing"),
    ("tidy", "tidied", "tidying"), ("try", "tried", "trying"), ("use", "used", "using"),
    ("visit", "visited", "visiting"), ("wash", "washed", "washing"),
    ("watch", "watched", "watching"), ("wrap", "wrapped", "wrapping"),
    ("write", "wrote", "writing"),
)  # fmt: skip
_ADVERBS = (
    "finally", "quickly", "slowly", "carefully", "barely", "nearly", "suddenly", "quietly",
    "happily", "reluctantly", "eventually", "already", "almost", "really", "probably", "gently",
    "badly", "proudly", "secretly", "honestly",
)  # fmt: skip
_PREPOSITIONS = (
    "in", "on", "under", "behind", "near", "beside", "after", "before", "during", "without",
    "with", "from", "across", "around", "past", "into", "for",
)  # fmt: skip
_OPENERS = (
    "In the end", "After a while", "By Tuesday", "Last spring", "To be honest", "As usual",
    "For once", "Eventually", "Later that week", "At first", "Of course", "Meanwhile",
    "On Saturday morning", "Looking back", "Before long", "Oddly enough", "This time",
    "Since then", "In hindsight", "Once again",
)  # fmt: skip
_JOINERS = (
    ", and", ", but", " because", " so", " while", ", which meant", " until", " when",
    ", although", " and then",
)  # fmt: skip
_ASIDES = (
    "more on that later", "of course", "again", "I know", "see below", "sort of", "long story",
    "thanks, Dad", "who knew",
)  # fmt: skip
_SUBJECTS = (
    "I", "I", "we", "you", "they", "she", "he", "my neighbour", "my brother", "nobody",
    "everyone", "a friend", "my partner",
)  # fmt: skip
_MODALS = (
    "could", "should", "would", "might", "had to", "wanted to", "decided to", "forgot to",
    "tried to", "managed to", "meant to", "used to",
)  # fmt: skip
_DET_SINGULAR = (
    "the", "the", "the", "a", "a", "this", "that", "my", "our", "every", "one", "another",
    "her", "his",
)  # fmt: skip
_DET_PLURAL = (
    "", "", "the", "some", "these", "my", "our", "a few", "most", "two", "three", "several",
    "all the", "those",
)  # fmt: skip
_IRREGULAR = {"leaf": "leaves", "knife": "knives", "shelf": "shelves", "potato": "potatoes",
              "tomato": "tomatoes", "loaf": "loaves"}  # fmt: skip

_FIRST = (
    "Alice", "Ben", "Chloe", "Dan", "Elena", "Farid", "Grace", "Hugo", "Isla", "Jamal", "Kate",
    "Liam", "Maya", "Noah", "Olga", "Priya", "Quentin", "Rosa", "Sam", "Tariq", "Uma", "Victor",
    "Wen", "Yara", "Zoe", "Marek", "Ines", "Tom", "Ruth", "Owen", "Lena", "Kofi", "Hannah",
    "Pete", "Sofia", "Arjun", "Bridget", "Callum",
)  # fmt: skip
_LAST = (
    "Abbott", "Baker", "Carter", "Dalton", "Evans", "Fischer", "Garcia", "Hughes", "Iqbal",
    "Jensen", "Kowalski", "Lopez", "Murphy", "Novak", "Okafor", "Patel", "Quinn", "Reid",
    "Silva", "Turner", "Usman", "Varga", "Walsh", "Young", "Zimmer",
)  # fmt: skip

_TOPICS: dict[str, dict[str, tuple[str, ...]]] = {
    "garden": {
        "names": ("The Potting Shed", "Muddy Boots", "Plot Twenty-Nine", "Slugs and Sunflowers"),
        "taglines": ("Notes from a small allotment", "Growing food badly, then better",
                     "A year on heavy clay"),
        "nouns": ("tomato", "seedling", "compost heap", "raised bed", "greenhouse", "cane",
                  "bean", "courgette", "onion", "potato", "slug", "hedge", "pond", "lawn", "rose",
                  "shed", "trowel", "spade", "mulch", "seed tray", "leaf", "root", "frost",
                  "border", "apple tree", "raspberry", "weed", "wheelbarrow", "hose", "cloche"),
        "categories": ("Vegetables", "Fruit", "Flowers", "Wildlife", "Tools", "Plot Diary"),
        "tags": ("tomatoes", "compost", "frost", "seed swap", "no dig", "greenhouse", "slugs",
                 "beans", "pruning", "harvest", "mulch", "pond", "bees", "watering", "clay"),
    },
    "kitchen": {
        "names": ("Flour on the Counter", "Second Helpings", "The Slow Pan", "Crumb and Crust"),
        "taglines": ("Weeknight cooking for tired people", "Bread, soup and the occasional cake",
                     "Recipes that survived my kitchen"),
        "nouns": ("loaf", "dough", "oven", "frying pan", "sauce", "garlic", "butter", "flour",
                  "recipe", "knife", "cake", "soup", "stew", "lemon", "pastry", "wooden spoon",
                  "sourdough starter", "crust", "mixing bowl", "pie", "stock", "spice jar",
                  "rice", "noodle", "pickle", "jam", "biscuit", "baking tray", "chutney", "oat"),
        "categories": ("Bread", "Baking", "Soups and Stews", "Preserves", "Weeknight", "Kit"),
        "tags": ("sourdough", "vegetarian", "freezer", "batch cooking", "cake", "pastry",
                 "budget", "one pot", "leftovers", "spices", "jam", "quick", "rye", "soup"),
    },
    "cycling": {
        "names": ("Two Wheels North", "Chain Reaction Notes", "The Long Way Round", "Headwind"),
        "taglines": ("Riding, fixing and getting lost", "Audax, commuting and cake stops",
                     "One puncture at a time"),
        "nouns": ("bike", "wheel", "chain", "saddle", "climb", "descent", "tyre", "route", "ride",
                  "gear", "brake", "puncture", "pannier", "frame", "helmet", "lane", "pedal",
                  "cafe stop", "headwind", "sportive", "commute", "water bottle", "rain jacket",
                  "club run", "valley", "mountain pass", "derailleur", "spoke", "cassette", "hub"),
        "categories": ("Rides", "Maintenance", "Kit Reviews", "Touring", "Commuting", "Racing"),
        "tags": ("audax", "gravel", "winter riding", "tubeless", "bikepacking", "climbing",
                 "wheel building", "commute", "rain", "lights", "strava", "club", "maps"),
    },
    "software": {
        "names": ("Segfaults and Sourdough", "Yak Shaving Daily", "Off By One", "Works On My Box"),
        "taglines": ("Notes from a small ops team", "Things I had to look up twice",
                     "Mostly Python, occasionally regret"),
        "nouns": ("server", "script", "database", "bug", "build", "release", "test suite",
                  "library", "function", "query", "deploy", "container", "branch", "commit",
                  "log file", "config", "cache", "terminal", "editor", "keyboard", "laptop",
                  "framework", "compiler", "patch", "backup", "cluster", "queue", "parser",
                  "dashboard", "cron job"),
        "categories": ("Python", "Ops", "Databases", "Tools", "Notes", "Talks"),
        "tags": ("postgres", "python", "linux", "docker", "testing", "performance", "git",
                 "bash", "debugging", "packaging", "security", "vim", "monitoring", "backups"),
    },
    "photo": {
        "names": ("Half Stop", "Grain and Light", "Contact Sheet", "The Slow Shutter"),
        "taglines": ("Film, darkrooms and long walks", "Photographs from the edges of town",
                     "Learning to see, one roll at a time"),
        "nouns": ("lens", "camera", "film roll", "print", "shutter", "tripod", "negative",
                  "darkroom", "portrait", "landscape", "exposure", "flash", "sensor", "scanner",
                  "camera bag", "filter", "sunset", "shadow", "highlight", "contact sheet",
                  "zoom", "aperture", "album", "studio", "subject", "light meter", "enlarger",
                  "developer", "rangefinder", "viewfinder"),
        "categories": ("Film", "Darkroom", "Street", "Landscape", "Gear", "Portraits"),
        "tags": ("35mm", "medium format", "black and white", "colour", "scanning", "portra",
                 "hp5", "night", "fog", "coast", "printing", "old lenses", "city"),
    },
    "travel": {
        "names": ("Slow Road Home", "Platform Nine", "Window Seat", "Borders and Buses"),
        "taglines": ("Overland, mostly by train", "Small places, long journeys",
                     "Travelling light and badly"),
        "nouns": ("train", "station", "ferry", "hostel", "backpack", "passport", "border",
                  "harbour", "market", "museum", "guidebook", "ticket office", "island", "coast",
                  "beach", "mountain", "night bus", "airport", "suitcase", "hotel", "bridge",
                  "cathedral", "square", "festival", "trail", "guide", "postcard", "timetable",
                  "sleeper train", "old town"),
        "categories": ("Europe", "Asia", "By Train", "On Foot", "Planning", "Food"),
        "tags": ("interrail", "budget", "hostels", "night trains", "hiking", "islands", "visa",
                 "packing", "museums", "street food", "ferries", "winter", "solo travel"),
    },
}  # fmt: skip

_EXTERNAL = (
    "https://en.wikipedia.org/wiki/{W}", "https://www.bbc.co.uk/news/{w}",
    "https://www.theguardian.com/lifeandstyle/{w}", "https://github.com/{w}/{w2}",
    "https://forum.{w}.org/t/{w2}/{n}", "https://www.reddit.com/r/{w}/",
    "https://archive.org/details/{w}-{n}",
)  # fmt: skip
_CODE_LINES = (
    "$ sudo apt install {w}-{w2}", "$ git clone https://github.com/{w}/{w2}.git",
    "$ cd {w2} && make", "{w}_{w2} = {n}", 'export {W}_{W2}="{w}"', "def {w}_{w2}({w}):",
    "    return {w}.{w2}()", "$ tail -f /var/log/{w}.log | grep {w2}", "[{w}]",
    "timeout = {n}", "SELECT {w}, count(*) FROM {w2} GROUP BY {w};", "# {w} first, then {w2}",
    "for {w} in $(ls {w2}/); do echo $" + "{w}; done", "{w2}: {w} <= {n}",
)  # fmt: skip
_COMMENT_OPENERS = (
    "Great post!", "Thanks for writing this up.", "Brilliant.", "Ha, this made me laugh.",
    "I had exactly the same problem last year.", "Interesting.", "Lovely photos.",
    "Really useful, thank you.", "Late to this one, but", "Love this.", "Hmm.",
)  # fmt: skip

_ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"


# --------------------------------------------------------------------------- small helpers


def _plural(noun: str) -> str:
    head, _, last = noun.rpartition(" ")
    if last in _IRREGULAR:
        word = _IRREGULAR[last]
    elif last.endswith(("s", "sh", "ch", "x", "z")):
        word = last + "es"
    elif last.endswith("y") and last[-2:-1] not in ("a", "e", "o", "u"):
        word = last[:-1] + "ies"
    else:
        word = last + "s"
    return f"{head} {word}" if head else word


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def _slug(text: str) -> str:
    """WordPress's sanitize_title, enough for generated titles."""
    text = text.lower().replace("'", "").replace("&", "")
    return re.sub(r"[^a-z0-9]+", "-", text).strip("-")


def _tx(text: str) -> str:
    """Escape plain text and curl its quotes, dashes and ellipses, as wptexturize does."""
    out = html.escape(text, quote=False).replace(" - ", " &#8211; ").replace("...", "&#8230;")
    parts = out.split('"')
    curled = parts[0]
    for i, part in enumerate(parts[1:]):
        curled += ("&#8220;" if i % 2 == 0 else "&#8221;") + part
    return curled.replace("'", "&#8217;")


def _at(text: str) -> str:
    return html.escape(text, quote=True)


def _date_text(day: date) -> str:
    return f"{_MONTHS[day.month - 1]} {day.day}, {day.year}"


def _time_text(when: datetime) -> str:
    return f"{when.hour % 12 or 12}:{when.minute:02d} {'am' if when.hour < 12 else 'pm'}"


def _iso(when: datetime) -> str:
    return when.isoformat() + "+00:00"


def _day_path(day: date) -> str:
    return f"/{day.year:04d}/{day.month:02d}/{day.day:02d}/"


def _month_path(year: int, month: int) -> str:
    return f"/{year:04d}/{month:02d}/"


def _page_path(base: str, n: int) -> str:
    return base if n == 1 else f"{base}page/{n}/"


def _avatar(digest: str, size: int) -> str:
    src = f"https://secure.gravatar.com/avatar/{digest}?s={size}&#038;d=mm&#038;r=g"
    src2 = f"https://secure.gravatar.com/avatar/{digest}?s={size * 2}&#038;d=mm&#038;r=g"
    return (
        f"<img alt='' src='{src}' srcset='{src2} 2x' class='avatar avatar-{size} photo' "
        f"height='{size}' width='{size}' loading='lazy' decoding='async'/>"
    )


# --------------------------------------------------------------------------- the blog's data


@dataclass
class _Term:
    name: str
    slug: str
    id: int


@dataclass
class _Person:
    name: str
    url: str
    avatar: str
    nicename: str = ""
    bio: str = ""


@dataclass
class _MenuItem:
    id: int
    label: str
    href: str
    kind: str  # "home", "page" or "category"
    term: _Term | None = None
    children: list[_MenuItem] = field(default_factory=list)


@dataclass
class _Comment:
    when: datetime
    who: _Person
    text: list[str]  # paragraphs, as HTML
    by_author: bool = False
    ping: bool = False
    depth: int = 1
    children: list[_Comment] = field(default_factory=list)
    id: int = 0


@dataclass
class _Image:
    id: int
    base: str  # upload path without the size suffix and ".jpg"
    ratio: tuple[int, int]
    alt: str


@dataclass
class _Post:
    id: int
    title: str  # plain text
    slug: str
    when: datetime
    author: _Person
    categories: list[_Term]
    tags: list[_Term]
    blocks: list[str]
    more_at: int | None  # the number of blocks before the <!--more--> tag
    open: bool  # comments open
    thumb: _Image | None
    comments: list[_Comment] = field(default_factory=list)  # top level
    count: int = 0

    @property
    def path(self) -> str:
        return f"{_day_path(self.when.date())}{self.slug}/"


@dataclass
class _Site:
    name: str
    tagline: str
    topic: str
    nouns: tuple[str, ...]
    version: str
    authors: list[_Person]
    categories: list[_Term]
    tags: list[_Term]
    commenters: list[_Person]
    menu: list[_MenuItem]
    header_image: str
    footer_widgets: bool
    next_id: int = 1

    def take_id(self, rng: random.Random, gap: int = 1) -> int:
        """Ids as WordPress hands them out: shared by posts, revisions and uploads, so gappy."""
        self.next_id += rng.randint(1, gap)
        return self.next_id

    @property
    def modern(self) -> bool:
        """WordPress 6.6 started printing class="wp-block-list" on lists."""
        return self.version >= "6.6"


# --------------------------------------------------------------------------- text


class _Writer:
    """English-looking text from a small grammar, so that no two posts share their text."""

    def __init__(self, rng: random.Random, nouns: Sequence[str]) -> None:
        self.rng = rng
        self.nouns = nouns

    def noun(self) -> str:
        return self.rng.choice(self.nouns if self.rng.random() < 0.55 else _GENERAL_NOUNS)

    def phrase(self) -> tuple[str, bool]:
        """A noun phrase, and whether it is plural."""
        r = self.rng
        adj = f"{r.choice(_ADJECTIVES)} " if r.random() < 0.35 else ""
        if r.random() < 0.35:
            det = r.choice(_DET_PLURAL)
            words = adj + _plural(self.noun())
            return (f"{det} {words}" if det else words), True
        det = r.choice(_DET_SINGULAR)
        words = adj + self.noun()
        if det == "a" and words[0] in "aeiou":
            det = "an"
        return f"{det} {words}", False

    def np(self) -> str:
        return self.phrase()[0]

    def tail(self) -> str:
        r = self.rng
        return f" {r.choice(_PREPOSITIONS)} {self.np()}" if r.random() < 0.45 else ""

    def clause(self) -> str:
        r = self.rng
        subject, verb, form = r.choice(_SUBJECTS), r.choice(_VERBS), r.randrange(8)
        if form == 0:
            return f"{subject} {verb[1]} {self.np()}{self.tail()}"
        if form == 1:
            np, plural = self.phrase()
            adv = f"{r.choice(_ADVERBS)} " if r.random() < 0.3 else ""
            return f"{np} {'were' if plural else 'was'} {adv}{r.choice(_ADJECTIVES)}"
        if form == 2:
            np, plural = self.phrase()
            where = f"{r.choice(_PREPOSITIONS)} {self.np()}"
            return f"there {'were' if plural else 'was'} {np} {where}"
        if form == 3:
            return f"{subject} {r.choice(_MODALS)} {verb[0]} {self.np()}{self.tail()}"
        if form == 4:
            return f"{subject} {r.choice(_ADVERBS)} {verb[1]} {self.np()}"
        if form == 5:
            feel = r.choice(("was", "felt", "seemed", "is"))
            return f"it {feel} {r.choice(_ADJECTIVES)} to {verb[0]} {self.np()}"
        if form == 6:
            return f"{self.np()} {verb[1]} {self.np()}{self.tail()}"
        return f"{subject} kept {verb[2]} {self.np()}{self.tail()}"

    def sentence(self) -> str:
        r = self.rng
        roll = r.random()
        if roll < 0.04:
            ask = r.choice(("does anyone else", "should I", "why do we", "how do you"))
            text = f"{ask} {r.choice(_VERBS)[0]} {self.np()}?"
        elif roll < 0.06:
            text = f"what about {self.np()}?"
        else:
            text = self.clause()
            if r.random() < 0.18:
                text = f"{r.choice(_OPENERS)}, {text}"
            if r.random() < 0.33:
                text = f"{text}{r.choice(_JOINERS)} {self.clause()}"
            if r.random() < 0.05:
                text = f"{text} ({r.choice(_ASIDES)})"
            text += "!" if r.random() < 0.04 else "."
        return _cap(text)

    def paragraph(self, low: int, high: int) -> str:
        return " ".join(self.sentence() for _ in range(self.rng.randint(low, high)))

    def fill(self, form: str, when: date | None = None) -> str:
        """Fill a title-like pattern; only the fields it names draw randomness."""
        r = self.rng
        values: dict[str, object] = {}
        for name in re.findall(r"{(\w+)}", form):
            key = name.lower()
            if key in values:
                continue
            if key.startswith("adj"):
                value: object = r.choice(_ADJECTIVES)
            elif key.startswith("ns"):
                value = _plural(self.noun())
            elif key.startswith("n") and key != "num":
                value = self.noun()
            elif key == "num":
                value = r.randint(2, 48)
            elif key == "small":
                value = r.choice(("Three", "Five", "Seven", "Ten", "Two", "Twelve"))
            elif key.startswith("v_past"):
                value = r.choice(_VERBS)[1]
            elif key.startswith("v_ing"):
                value = r.choice(_VERBS)[2]
            elif key.startswith("v"):
                value = r.choice(_VERBS)[0]
            elif key == "a_n":
                np, _ = self.phrase()
                value = np
            elif key == "month":
                value = _MONTHS[(when or date(2020, 1, 1)).month - 1]
            elif key == "the":
                value = r.choice(("the", "a", "my", "our"))
            elif key == "k":
                value = r.randint(1, 6)
            else:
                value = self.noun()
            values[key] = value
        for name in set(re.findall(r"{(\w+)}", form)):
            if name != name.lower():
                values[name] = _cap(str(values[name.lower()]))
        return _cap(form.format(**values))


_TITLES = (
    "{N}", "Update", "Notes on {the} {n}", "Week {num}: {adj} {ns} and {adj2} {ns2}",
    "How to {v} {a_n}", "Why my {n} {v_past} (and what I did about it)",
    "The {n} that {v_past} everything", "{Month} round-up", "{Small} things I learned about {ns}",
    "{Adj} {n} in {Month}", "Is it worth {v_ing} your own {n}?",
    "{Adj}, {adj2} and slightly {adj3}", "On {v_ing} {ns}", "Quick one: the {adj} {n}",
    "What the {n} taught me about {ns2}", "Things I wish I'd known before {v_ing} {a_n}",
    "{Ns} & {ns2}", "Some thoughts on {adj} {ns}, {adj2} {ns2} and the {adj3} {n} at the end of "
    "the {n2}", "{V_ing} the {n2} again", "A {adj} weekend", "The great {n} experiment, part {k}",
    "Ten minutes with {a_n}", '"{Adj} enough" - a {n} story', "Back from the {n2}",
    "{Ns}, {ns2}, {ns3}...", "Finally: {a_n}",
)  # fmt: skip
_HEADINGS = (
    "The {n}", "{Adj} {ns}", "What went wrong", "Step {k}: {v} the {n}", "Results",
    "Final thoughts", "Update", "Getting started", "{N} and {n2}", "Why {ns} matter",
    "A note on {ns}", "{V_ing} the {n}", "Before you start", "What I would do differently",
    "Costs", "The {adj} part", "Day {k}", "Things I got wrong about the {n}",
)  # fmt: skip


# --------------------------------------------------------------------------- generation


def _person(rng: random.Random, urls: float) -> _Person:
    first, last = rng.choice(_FIRST), rng.choice(_LAST)
    name = rng.choice(
        (
            first,
            f"{first} {last}",
            f"{first} {last}",
            f"{first.lower()}_{last[0]}",
            f"{first} {last[0]}.",
        )
    )
    handle = _slug(f"{first}{last}")
    url = ""
    if rng.random() < urls:
        url = rng.choice(
            (
                f"https://{handle}.wordpress.com/",
                f"https://www.{handle}.net/",
                f"https://{handle}.blog/",
                f"https://{handle}.substack.com/",
            )
        )
    return _Person(name, url, f"{rng.getrandbits(128):032x}")


def _make_site(rng: random.Random) -> _Site:
    topic = rng.choice(sorted(_TOPICS))
    spec = _TOPICS[topic]
    authors = []
    for i in range(rng.choice((1, 1, 2, 3))):
        first, last = rng.choice(_FIRST), rng.choice(_LAST)
        bio = ""
        if rng.random() < 0.4:
            things = _plural(spec["nouns"][i])
            bio = f"{first} writes about {topic} from a small flat with too many {things}."
        authors.append(
            _Person(
                f"{first} {last}",
                "",
                f"{rng.getrandbits(128):032x}",
                _slug(first if i == 0 else f"{first}{last}"),
                bio,
            )
        )
    names = rng.sample(spec["categories"], rng.randint(4, len(spec["categories"])))
    categories = [_Term("Uncategorized", "uncategorized", 1)]
    next_term = 1
    for name in names:
        next_term += rng.randint(1, 3)
        categories.append(_Term(name, _slug(name), next_term))
    tags = []
    for name in rng.sample(spec["tags"], rng.randint(8, len(spec["tags"]))):
        next_term += rng.randint(1, 2)
        tags.append(_Term(name, _slug(name), next_term))
    commenters = [_person(rng, 0.45) for _ in range(rng.randint(12, 30))]
    menu_id = rng.randint(5, 40)
    menu = [_MenuItem(menu_id, "Home", "/", "home")]
    about = _MenuItem(menu_id + 1, "About", "/about/", "page")
    if rng.random() < 0.6:
        about.children = [_MenuItem(menu_id + 2, "Contact", "/about/contact/", "page")]
        if rng.random() < 0.4:
            about.children.append(_MenuItem(menu_id + 3, "Now", "/about/now/", "page"))
    menu.append(about)
    for k, term in enumerate(rng.sample(categories[1:], rng.randint(1, 3))):
        menu.append(
            _MenuItem(menu_id + 4 + k, term.name, f"/category/{term.slug}/", "category", term)
        )
    header_image = rng.choice(
        (
            "/wp-content/themes/twentyseventeen/assets/images/header.jpg",
            f"/wp-content/uploads/2019/0{rng.randint(1, 9)}/cropped-IMG_"
            f"{rng.randint(1000, 9999)}.jpg",
        )
    )
    return _Site(
        name=rng.choice(spec["names"]),
        tagline=rng.choice(spec["taglines"]),
        topic=topic,
        nouns=spec["nouns"],
        version=rng.choice(("6.1.1", "6.4.3", "6.6.2")),
        authors=authors,
        categories=categories,
        tags=tags,
        commenters=commenters,
        menu=menu,
        header_image=header_image,
        footer_widgets=rng.random() < 0.5,
        next_id=rng.randint(1, 40),
    )


def _schedule(rng: random.Random, posts: int) -> list[datetime]:
    """Publication times, oldest first: days of 1 to ~12 posts, one of them long enough to page."""
    sizes: list[int] = []
    left = posts
    big = min(posts, rng.randint(11, 13)) if posts >= 20 else 0
    left -= big
    while left > 0:
        n = min(left, rng.choices((1, 2, 3, 4, 5, 6, 8), weights=(34, 26, 14, 8, 5, 3, 2))[0])
        sizes.append(n)
        left -= n
    if big:
        sizes.insert(rng.randint(0, len(sizes)), big)
    day = date(rng.randint(2015, 2022), rng.randint(1, 12), 1) + timedelta(rng.randrange(28))
    times = []
    for n in sizes:
        day += timedelta(
            days=rng.choices(
                (1, 2, 3, 4, 5, 7, 10, 14, 21, 35), weights=(20, 16, 12, 10, 8, 8, 6, 5, 3, 2)
            )[0]
        )
        seconds = sorted(rng.sample(range(6 * 3600, 24 * 3600), n))
        times += [datetime.combine(day, time()) + timedelta(seconds=s) for s in seconds]
    return times


_STYLES: dict[str, dict[str, float]] = {
    "essay": {"p": 12, "h2": 1.2, "quote": 0.8, "img": 1, "list": 0.8, "hr": 0.2},
    "howto": {"p": 7, "h2": 1.5, "h3": 1.2, "list": 2.5, "code": 1.2, "img": 1},
    "photo": {"p": 5, "img": 5, "gallery": 0.8, "h2": 0.4},
    "listicle": {"p": 6, "h3": 2.5, "img": 1.2, "list": 0.8, "quote": 0.3},
    "diary": {"p": 12, "list": 0.6, "img": 0.8, "hr": 0.4, "h2": 0.3},
}


class _BodyMaker:
    """Gutenberg-rendered post bodies whose length and composition vary as real posts do."""

    def __init__(self, rng: random.Random, w: _Writer, site: _Site, width: int) -> None:
        self.rng, self.w, self.site, self.width = rng, w, site, width

    def decorate(self, text: str, older: Sequence[_Post]) -> str:
        """Texturize a paragraph and sometimes put a link or emphasis on a few of its words."""
        r = self.rng
        words = _tx(text).split(" ")
        roll = r.random()
        if len(words) < 5 or roll > 0.24:
            return " ".join(words)
        i = r.randrange(1, len(words) - 2)
        j = min(len(words) - 1, i + r.randint(1, 3))
        if roll < 0.15:
            if older and r.random() < 0.55:
                opening = f'<a href="{r.choice(older[-30:]).path}">'
            else:
                noun = self.w.noun().replace(" ", "_")
                url = r.choice(_EXTERNAL).format(
                    W=_cap(noun), w=_slug(noun), w2=_slug(self.w.noun()), n=r.randint(10, 9999)
                )
                blank = ' target="_blank" rel="noreferrer noopener"' if r.random() < 0.3 else ""
                opening = f'<a href="{url}"{blank}>'
            closing = "</a>"
        else:
            tag = r.choice(
                ("strong", "em", "em", "code" if self.site.topic == "software" else "em")
            )
            opening, closing = f"<{tag}>", f"</{tag}>"
        words[i] = opening + words[i]
        words[j - 1] += closing
        return " ".join(words)

    def image(self, when: datetime, *, lazy: bool, caption: bool = True) -> str:
        r = self.rng
        img = self.upload(when)
        lw, lh = _fit(img.ratio, 1024)
        mw, mh = _fit(img.ratio, 300)
        src = f"{img.base}-{lw}x{lh}.jpg"
        srcset = f"{src} {lw}w, {img.base}-{mw}x{mh}.jpg {mw}w"
        if img.ratio[0] >= img.ratio[1]:
            srcset += f", {img.base}-768x{round(768 * img.ratio[1] / img.ratio[0])}.jpg 768w"
        align = r.choice(("", "", "", " aligncenter", " alignwide"))
        loading = 'loading="lazy" ' if lazy else ""
        cap = ""
        if caption and r.random() < 0.6:
            cls = ' class="wp-element-caption"' if self.site.version >= "6.1" else ""
            cap = f"<figcaption{cls}>{_tx(self.w.sentence())}</figcaption>"
        return (
            f'<figure class="wp-block-image{align} size-large"><img {loading}decoding="async" '
            f'width="{lw}" height="{lh}" src="{src}" alt="{_at(img.alt)}" class="wp-image-{img.id}"'
            f' srcset="{srcset}" sizes="(max-width: {lw}px) 100vw, {lw}px" />{cap}</figure>'
        )

    def upload(self, when: datetime) -> _Image:
        r = self.rng
        name = r.choice(
            (
                f"IMG_{r.randint(1000, 9999)}",
                f"DSC{r.randint(0, 99999):05d}",
                f"{_slug(self.w.noun())}-{r.randint(1, 9)}",
                f"PXL_{when:%Y%m%d}_{r.randint(100000, 999999)}",
            )
        )
        ratio = r.choice(((4, 3), (4, 3), (3, 2), (16, 9), (3, 4), (2, 3), (1, 1)))
        alt = "" if r.random() < 0.4 else _cap(self.w.np())
        base = f"/wp-content/uploads/{when.year}/{when.month:02d}/{name}"
        return _Image(self.site.take_id(r), base, ratio, alt)

    def listing(self) -> str:
        r = self.rng
        tag = "ol" if r.random() < 0.35 else "ul"
        items = []
        for _ in range(r.randint(2, 9)):
            if r.random() < 0.5:
                items.append(_tx(self.w.sentence()))
            else:
                np = self.w.np()
                items.append(_tx(_cap(np) if r.random() < 0.6 else f"{r.randint(2, 12)} x {np}"))
        cls = ' class="wp-block-list"' if self.site.modern else ""
        body = "\n".join(f"<li>{item}</li>" for item in items)
        return f"<{tag}{cls}>\n{body}\n</{tag}>"

    def quote(self) -> str:
        r = self.rng
        cls = "wp-block-quote"
        if self.site.version >= "6.4":
            cls += " is-layout-flow wp-block-quote-is-layout-flow"
        paras = "\n\n\n\n".join(
            f"<p>{_tx(self.w.paragraph(1, 3))}</p>" for _ in range(r.randint(1, 2))
        )
        cite = f"<cite>{r.choice(_FIRST)} {r.choice(_LAST)}</cite>" if r.random() < 0.5 else ""
        return f'<blockquote class="{cls}">\n{paras}\n{cite}</blockquote>'

    def code(self) -> str:
        r = self.rng
        lines = []
        for _ in range(r.randint(2, 12)):
            w1, w2 = _slug(self.w.noun()).replace("-", "_"), _slug(self.w.noun()).replace("-", "_")
            line = r.choice(_CODE_LINES).format(
                w=w1, w2=w2, W=w1.upper(), W2=w2.upper(), n=r.randint(1, 900)
            )
            lines.append(html.escape(line, quote=False))
        return '<pre class="wp-block-code"><code>' + "\n".join(lines) + "</code></pre>"

    def table(self) -> str:
        r = self.rng
        heads = r.sample(
            (
                "Item",
                "When",
                "Cost",
                "Notes",
                "Quantity",
                "Result",
                "Day",
                "Time",
                "Distance",
                "Rating",
            ),
            r.randint(2, 5),
        )
        rows = []
        for _ in range(r.randint(2, 9)):
            cells = []
            for head in heads:
                if head in ("Cost", "Quantity", "Distance", "Time", "Rating"):
                    cells.append(f"{r.randint(1, 250)}{r.choice(('', '.5', ' kg', ' min', '%'))}")
                elif head in ("When", "Day"):
                    cells.append(f"{r.choice(_WEEKDAYS)} {r.randint(1, 28)}")
                else:
                    cells.append(_tx(_cap(self.w.np())))
            rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
        thead = "<thead><tr>" + "".join(f"<th>{h}</th>" for h in heads) + "</tr></thead>"
        fixed = ' class="has-fixed-layout"' if r.random() < 0.5 else ""
        cap = ""
        if r.random() < 0.4:
            cap = f'<figcaption class="wp-element-caption">{_tx(self.w.sentence())}</figcaption>'
        return (
            f'<figure class="wp-block-table"><table{fixed}>{thead}<tbody>{"".join(rows)}'
            f"</tbody></table>{cap}</figure>"
        )

    def video(self) -> str:
        r = self.rng
        title = _at(self.w.fill(r.choice(_TITLES)))
        height = round(self.width * 9 / 16)
        if r.random() < 0.7:
            vid = "".join(r.choice(_ALNUM) for _ in range(11))
            return (
                '<figure class="wp-block-embed is-type-video is-provider-youtube '
                'wp-block-embed-youtube wp-embed-aspect-16-9 wp-has-aspect-ratio">'
                '<div class="wp-block-embed__wrapper">\n<iframe loading="lazy" '
                f'title="{title}" width="{self.width}" height="{height}" '
                f'src="https://www.youtube.com/embed/{vid}?feature=oembed" frameborder="0" '
                'allow="accelerometer; autoplay; clipboard-write; encrypted-media; gyroscope; '
                'picture-in-picture; web-share" referrerpolicy="strict-origin-when-cross-origin" '
                "allowfullscreen></iframe>\n</div></figure>"
            )
        return (
            '<figure class="wp-block-embed is-type-video is-provider-vimeo wp-block-embed-vimeo '
            'wp-embed-aspect-16-9 wp-has-aspect-ratio"><div class="wp-block-embed__wrapper">\n'
            f'<iframe loading="lazy" title="{title}" src="https://player.vimeo.com/video/'
            f'{r.randint(100000000, 999999999)}?dnt=1&amp;app_id=122963" width="{self.width}" '
            f'height="{height}" frameborder="0" allow="autoplay; fullscreen; picture-in-picture; '
            'clipboard-write"></iframe>\n</div></figure>'
        )

    def gallery(self, when: datetime) -> str:
        n = self.rng.randint(2, 6)
        inner = "\n\n".join(self.image(when, lazy=True, caption=False) for _ in range(n))
        cls = "wp-block-gallery has-nested-images columns-default is-cropped"
        if self.site.version >= "6.4":
            cls += " is-layout-flex wp-block-gallery-is-layout-flex"
        return f'<figure class="{cls}">\n{inner}\n</figure>'

    def body(self, when: datetime, older: Sequence[_Post], target: int) -> list[str]:
        r, w = self.rng, self.w
        if target < 40:  # one short paragraph, ~150 characters
            text, limit = w.sentence(), r.randint(110, 190)
            while len(text) < limit:
                text += " " + w.sentence()
            return [f"<p>{self.decorate(text, older)}</p>"]
        style = r.choice(
            tuple(_STYLES) if target < 1200 else ("essay", "howto", "listicle", "diary")
        )
        weights = dict(_STYLES[style])
        if "code" in weights and self.site.topic != "software":
            weights["code"] *= 0.15
        kinds, odds = list(weights), list(weights.values())
        low, high = {"essay": (2, 7), "diary": (2, 6), "howto": (1, 4)}.get(style, (1, 3))
        hclass = "" if self.site.version < "6.2" else ' class="wp-block-heading"'
        blocks: list[str] = []
        words, last, number, figures = 0, "", 0, 0
        while words < target or last in ("h2", "h3"):
            kind = r.choices(kinds, odds)[0] if blocks else "p"
            if kind in ("img", "gallery"):
                figures += 1
                if figures > 24:
                    kind = "p"
            if (last in ("h2", "h3", "hr") and kind in ("h2", "h3", "hr")) or words >= target:
                kind = "p"
            if kind == "p":
                text = w.paragraph(low, high)
                words += len(text.split())
                blocks.append(f"<p>{self.decorate(text, older)}</p>")
            elif kind == "h2":
                blocks.append(f"<h2{hclass}>{_tx(w.fill(r.choice(_HEADINGS)))}</h2>")
            elif kind == "h3":
                number += 1
                prefix = f"{number}. " if style == "listicle" else ""
                blocks.append(f"<h3{hclass}>{prefix}{_tx(w.fill(r.choice(_HEADINGS)))}</h3>")
            elif kind == "list":
                blocks.append(self.listing())
                words += len(blocks[-1].split())
            elif kind == "quote":
                blocks.append(self.quote())
                words += len(blocks[-1].split())
            elif kind == "img":
                blocks.append(self.image(when, lazy=len(blocks) > 1))
            elif kind == "gallery":
                blocks.append(self.gallery(when))
            elif kind == "code":
                blocks.append(self.code())
            else:
                blocks.append('<hr class="wp-block-separator has-alpha-channel-opacity"/>')
            last = kind
        if r.random() < (0.3 if style == "howto" else 0.04):
            blocks.insert(r.randint(1, len(blocks)), self.table())
        if r.random() < 0.08:
            blocks.insert(r.randint(1, len(blocks)), self.video())
        return blocks


def _fit(ratio: tuple[int, int], longest: int) -> tuple[int, int]:
    wide, high = ratio
    if wide >= high:
        return longest, round(longest * high / wide)
    return round(longest * wide / high), longest


def _targets(rng: random.Random, n: int) -> list[int]:
    """Body lengths in words: from one short paragraph to 3,000+ words, both always present."""
    bands = ((20, 30), (60, 250), (250, 900), (900, 2000), (2000, 3600))
    out = [rng.randint(*rng.choices(bands, weights=(10, 25, 35, 22, 8))[0]) for _ in range(n)]
    if n >= 5:
        short, long = rng.sample(range(n), 2)
        out[short], out[long] = 25, rng.randint(3000, 3600)
    return out


def _make_posts(
    rng: random.Random, site: _Site, w: _Writer, times: list[datetime], width: int
) -> list[_Post]:
    maker = _BodyMaker(rng, w, site, width)
    posts: list[_Post] = []
    slugs: set[str] = set()
    author_weights = [6, 2, 1][: len(site.authors)]
    for when, target in zip(times, _targets(rng, len(times)), strict=True):
        pid = site.take_id(rng, 6)
        title = w.fill(rng.choice(_TITLES), when.date())
        slug = _slug(title)
        if slug in slugs:
            k = 2
            while f"{slug}-{k}" in slugs:
                k += 1
            slug = f"{slug}-{k}"
        slugs.add(slug)
        author = rng.choices(site.authors, author_weights)[0]
        cats = [site.categories[0]] if rng.random() < 0.15 else [rng.choice(site.categories[1:])]
        if rng.random() < 0.2:
            extra = rng.choice(site.categories[1:])
            if extra not in cats:
                cats.append(extra)
        tags = rng.sample(site.tags, rng.randint(1, 5)) if rng.random() < 0.55 else []
        thumb = maker.upload(when) if rng.random() < 0.3 else None
        blocks = maker.body(when, posts, target)
        more_at = None
        if len(blocks) >= 4 and rng.random() < 0.4:
            more_at = 1 if rng.random() < 0.7 else 2
        posts.append(
            _Post(
                pid,
                title,
                slug,
                when,
                author,
                sorted(cats, key=lambda t: t.name),
                sorted(tags, key=lambda t: t.name),
                blocks,
                more_at,
                rng.random() >= 0.2,
                thumb,
            )
        )
    return posts


def _make_comments(
    rng: random.Random, site: _Site, w: _Writer, posts: list[_Post], now: datetime
) -> list[_Comment]:
    """0 to 15 comments a post, some threaded, some by the post's author, a few pingbacks."""
    everything: list[_Comment] = []
    for i, post in enumerate(posts):
        n = rng.choices(
            (0, rng.randint(1, 3), rng.randint(4, 8), rng.randint(9, 15)), weights=(38, 32, 20, 10)
        )[0]
        at = post.when
        made: list[_Comment] = []
        for _ in range(n):
            at += timedelta(minutes=rng.randint(7, 60 * 24 * rng.choice((1, 1, 2, 4))))
            if at > now:
                break
            newer = [p for p in posts[i + 1 :] if p.when < at]
            if newer and rng.random() < 0.07:
                source = rng.choice(newer)
                who = _Person(f"{source.title} - {site.name}", source.path, "")
                comment = _Comment(at, who, [], ping=True)
                post.comments.append(comment)
                made.append(comment)
                continue
            parents = [c for c in made if c.depth < 3 and not c.ping]
            parent = rng.choice(parents) if parents and rng.random() < 0.38 else None
            by_author = parent is not None and rng.random() < 0.45
            who = post.author if by_author else rng.choice(site.commenters)
            paras = [w.paragraph(1, 4) for _ in range(rng.choice((1, 1, 1, 2, 3)))]
            if by_author and parent is not None:
                paras[0] = f"Thanks {parent.who.name.split()[0].split('_')[0]}! {paras[0]}"
            elif rng.random() < 0.35:
                paras[0] = f"{rng.choice(_COMMENT_OPENERS)} {paras[0]}"
            comment = _Comment(at, who, [_tx(p) for p in paras], by_author)
            if parent is None:
                post.comments.append(comment)
            else:
                comment.depth = parent.depth + 1
                parent.children.append(comment)
            made.append(comment)
        post.count = len(made)
        everything += made
    everything.sort(key=lambda c: c.when)
    cid = rng.randint(1, 30)
    for comment in everything:
        comment.id = cid
        cid += rng.choice((1, 1, 1, 2, 3))
    return everything


# --------------------------------------------------------------------------- rendering


@dataclass
class _Ctx:
    """What the page being rendered is, for the parts of the frame that depend on it."""

    kind: str  # "home", "post" or "day"
    page: int = 1
    post: _Post | None = None
    month: tuple[int, int] = (2020, 1)  # the calendar's
    day: date | None = None


class _Theme:
    """What both themes share: core's widgets, comment list and form, and pagination."""

    avatar = 60
    reply = "Reply"
    reply_title = '<h2 id="reply-title" class="comment-reply-title">Leave a comment'
    reply_close = "</h2>"
    #: the_posts_pagination()'s mid_size, prev_text, next_text and before_page_number
    paging: tuple[int, str, str, str] = (2, "&laquo; Previous", "Next &raquo;", "")

    def __init__(
        self, site: _Site, posts: list[_Post], comments: list[_Comment], now: datetime
    ) -> None:
        self.site, self.posts, self.now = site, posts, now
        self.days: dict[date, list[_Post]] = {}
        for post in posts:
            self.days.setdefault(post.when.date(), []).append(post)
        self.months = sorted({(d.year, d.month) for d in self.days}, reverse=True)
        self.recent = [c for c in comments if not c.ping][-5:][::-1]
        self.post_of = {id(c): p for p in posts for c in _walk(p.comments)}

    # ------------------------------------------------------------------ pages

    def render(self) -> tuple[dict[str, str], dict[str, str]]:
        pages: dict[str, str] = {}
        kinds: dict[str, str] = {}
        newest = self.posts[::-1]
        now_month = (self.now.year, self.now.month)
        total = -(-len(newest) // PER_PAGE)
        for n in range(1, total + 1):
            path = _page_path("/", n)
            ctx = _Ctx("home", n, None, now_month)
            pages[path] = self.listing(ctx, newest[(n - 1) * PER_PAGE : n * PER_PAGE], total, "/")
            kinds[path] = "home"
        for i, post in enumerate(self.posts):
            prev = self.posts[i - 1] if i else None
            nxt = self.posts[i + 1] if i + 1 < len(self.posts) else None
            ctx = _Ctx("post", 1, post, (post.when.year, post.when.month))
            pages[post.path] = self.single(ctx, post, prev, nxt)
            kinds[post.path] = "post"
        for day, day_posts in self.days.items():
            listed = day_posts[::-1]
            total = -(-len(listed) // PER_PAGE)
            for n in range(1, total + 1):
                path = _page_path(_day_path(day), n)
                ctx = _Ctx("day", n, None, (day.year, day.month), day)
                chunk = listed[(n - 1) * PER_PAGE : n * PER_PAGE]
                pages[path] = self.listing(ctx, chunk, total, _day_path(day))
                kinds[path] = "day"
        return pages, kinds

    def listing(self, ctx: _Ctx, posts: list[_Post], total: int, base: str) -> str:
        raise NotImplementedError

    def single(self, ctx: _Ctx, post: _Post, prev: _Post | None, nxt: _Post | None) -> str:
        raise NotImplementedError

    def doc_title(self, ctx: _Ctx) -> str:
        sep = " &#8211; "
        page = f"{sep}Page {ctx.page}" if ctx.page > 1 else ""
        if ctx.kind == "home":
            return f"{_tx(self.site.name)}{page}{sep}{_tx(self.site.tagline)}"
        if ctx.post is not None:
            return f"{_tx(ctx.post.title)}{sep}{_tx(self.site.name)}"
        assert ctx.day is not None
        return f"{_date_text(ctx.day)}{page}{sep}{_tx(self.site.name)}"

    # ------------------------------------------------------------------ post parts

    def content(self, post: _Post, *, teaser: bool) -> str:
        if post.more_at is None:
            return "\n\n\n\n".join(post.blocks)
        before = "\n\n\n\n".join(post.blocks[: post.more_at])
        after = "\n\n\n\n".join(post.blocks[post.more_at :])
        if teaser:
            return before + "\n" + self.more_link(post)
        return f'{before}\n\n\n\n<span id="more-{post.id}"></span>\n\n\n\n{after}'

    def more_link(self, post: _Post) -> str:
        raise NotImplementedError

    def post_class(self, post: _Post) -> str:
        cls = [f"post-{post.id}", "post", "type-post", "status-publish", "format-standard"]
        if post.thumb is not None:
            cls.append("has-post-thumbnail")
        cls.append("hentry")
        cls += [f"category-{c.slug}" for c in post.categories]
        cls += [f"tag-{t.slug}" for t in post.tags]
        return " ".join(cls)

    @staticmethod
    def cat_links(post: _Post, sep: str = ", ") -> str:
        return sep.join(
            f'<a href="/category/{c.slug}/" rel="category tag">{_tx(c.name)}</a>'
            for c in post.categories
        )

    @staticmethod
    def tag_links(post: _Post, sep: str = ", ") -> str:
        return sep.join(f'<a href="/tag/{t.slug}/" rel="tag">{_tx(t.name)}</a>' for t in post.tags)

    @staticmethod
    def time_tag(post: _Post, cls: str = "entry-date published updated") -> str:
        return f'<time class="{cls}" datetime="{_iso(post.when)}">{_date_text(post.when)}</time>'

    # ------------------------------------------------------------------ comments

    def comments_title(self, post: _Post) -> str:
        raise NotImplementedError

    def comments_area(self, post: _Post, cls: str) -> str:
        """comments.php, printed when comments are open or the post has some."""
        parts = [f'<div id="comments" class="{cls}">\n']
        if post.count:
            counters = [0, 0]
            items = "".join(self.comment(post, c, counters) for c in post.comments)
            parts.append(
                f'\t{self.comments_title(post)}\n\n\t<ol class="comment-list">\n'
                f"{items}\t</ol><!-- .comment-list -->\n\n"
            )
            if not post.open:
                parts.append('\t<p class="no-comments">Comments are closed.</p>\n')
        if post.open:
            parts.append(self.comment_form(post))
        parts.append("</div><!-- #comments -->\n")
        return "".join(parts)

    def comment(self, post: _Post, c: _Comment, counters: list[int]) -> str:
        """Walker_Comment's html5 markup, with its even/odd and thread classes."""
        alt = ["odd", "alt"] if counters[0] % 2 else ["even"]
        counters[0] += 1
        if c.depth == 1:
            alt += ["thread-odd", "thread-alt"] if counters[1] % 2 else ["thread-even"]
            counters[1] += 1
        if c.ping:
            cls = " ".join(["pingback", *alt, f"depth-{c.depth}"])
            return (
                f'\t\t<li id="comment-{c.id}" class="{cls}">\n\t\t\t<div class="comment-body">\n'
                f"\t\t\t\tPingback: <a href='{c.who.url}' rel='external nofollow ugc' "
                f"class='url'>{_tx(c.who.name)}</a> \t\t\t</div>\n\n\t\t</li><!-- #comment-## -->\n"
            )
        cls_list = ["comment"]
        if c.by_author:
            cls_list += ["byuser", f"comment-author-{post.author.nicename}", "bypostauthor"]
        cls_list += [*alt, f"depth-{c.depth}"]
        if c.children:
            cls_list.append("parent")
        name = _tx(c.who.name)
        if c.who.url:
            name = f'<a href="{c.who.url}" class="url" rel="ugc external nofollow">{name}</a>'
        stamp = f"{_date_text(c.when.date())} at {_time_text(c.when)}"
        reply = ""
        if post.open and c.depth < 5:
            label = _at(f"Reply to {c.who.name}")
            reply = (
                f'\n\t\t\t\t<div class="reply"><a rel="nofollow" class="comment-reply-link" '
                f'href="{post.path}?replytocom={c.id}#respond" data-commentid="{c.id}" '
                f'data-postid="{post.id}" data-belowelement="div-comment-{c.id}" '
                f'data-respondelement="respond" data-replyto="{label}" aria-label="{label}">'
                f"{self.reply}</a></div>"
            )
        text = "\n".join(f"<p>{p}</p>" for p in c.text)
        children = ""
        if c.children:
            inner = "".join(self.comment(post, k, counters) for k in c.children)
            children = f'<ol class="children">\n{inner}</ol><!-- .children -->\n'
        return (
            f'\t\t<li id="comment-{c.id}" class="{" ".join(cls_list)}">\n'
            f'\t\t\t<article id="div-comment-{c.id}" class="comment-body">\n'
            '\t\t\t\t<footer class="comment-meta">\n'
            '\t\t\t\t\t<div class="comment-author vcard">\n'
            f'\t\t\t\t\t\t{_avatar(c.who.avatar, self.avatar)}\t\t\t\t\t\t<b class="fn">{name}'
            '</b> <span class="says">says:</span>\t\t\t\t\t</div><!-- .comment-author -->\n\n'
            '\t\t\t\t\t<div class="comment-metadata">\n'
            f'\t\t\t\t\t\t<a href="{post.path}#comment-{c.id}"><time datetime="{_iso(c.when)}">'
            f"{stamp}</time></a>\t\t\t\t\t</div><!-- .comment-metadata -->\n\n"
            "\t\t\t\t\t\t\t\t\t</footer><!-- .comment-meta -->\n\n"
            f'\t\t\t\t<div class="comment-content">\n\t\t\t\t\t{text}\n'
            f"\t\t\t\t</div><!-- .comment-content -->\n{reply}"
            "\t\t\t</article><!-- .comment-body -->\n"
            f"{children}\t\t</li><!-- #comment-## -->\n"
        )

    def comment_form(self, post: _Post) -> str:
        req = '<span class="required">*</span>'
        return (
            '\t<div id="respond" class="comment-respond">\n'
            f'\t\t{self.reply_title} <small><a rel="nofollow" id="cancel-comment-reply-link" '
            f'href="{post.path}#respond" style="display:none;">Cancel reply</a></small>'
            f"{self.reply_close}"
            '<form action="/wp-comments-post.php" method="post" id="commentform" '
            'class="comment-form" novalidate>'
            '<p class="comment-notes"><span id="email-notes">Your email address will not be '
            'published.</span> <span class="required-field-message">Required fields are marked '
            f"{req}</span></p>"
            f'<p class="comment-form-comment"><label for="comment">Comment {req}</label> '
            '<textarea id="comment" name="comment" cols="45" rows="8" maxlength="65525" required>'
            "</textarea></p>"
            f'<p class="comment-form-author"><label for="author">Name {req}</label> '
            '<input id="author" name="author" type="text" value="" size="30" maxlength="245" '
            'autocomplete="name" required /></p>\n'
            f'<p class="comment-form-email"><label for="email">Email {req}</label> '
            '<input id="email" name="email" type="email" value="" size="30" maxlength="100" '
            'aria-describedby="email-notes" autocomplete="email" required /></p>\n'
            '<p class="comment-form-url"><label for="url">Website</label> <input id="url" '
            'name="url" type="url" value="" size="30" maxlength="200" autocomplete="url" /></p>\n'
            '<p class="comment-form-cookies-consent"><input id="wp-comment-cookies-consent" '
            'name="wp-comment-cookies-consent" type="checkbox" value="yes" /> '
            '<label for="wp-comment-cookies-consent">Save my name, email, and website in this '
            "browser for the next time I comment.</label></p>\n"
            '<p class="form-submit"><input name="submit" type="submit" id="submit" class="submit" '
            "value=\"Post Comment\" /> <input type='hidden' name='comment_post_ID' "
            f"value='{post.id}' id='comment_post_ID' />\n<input type='hidden' "
            "name='comment_parent' id='comment_parent' value='0' />\n</p></form>"
            "\t</div><!-- #respond -->\n\t"
        )

    # ------------------------------------------------------------------ navigation

    @staticmethod
    def nav(cls: str, heading: str, links: str) -> str:
        return (
            f'\n\t<nav class="navigation {cls}" aria-label="Posts">\n'
            f'\t\t<h2 class="screen-reader-text">{heading}</h2>\n'
            f'\t\t<div class="nav-links">{links}</div>\n\t</nav>'
        )

    def pagination(self, base: str, current: int, total: int) -> str:
        """paginate_links() as the_posts_pagination() calls it, or nothing for one page."""
        if total < 2:
            return ""
        mid, prev_text, next_text, before = self.paging
        out = []
        if current > 1:
            href = _page_path(base, current - 1)
            out.append(f'<a class="prev page-numbers" href="{href}">{prev_text}</a>')
        dots = False
        for n in range(1, total + 1):
            if n == current:
                out.append(
                    f'<span aria-current="page" class="page-numbers current">{before}{n}</span>'
                )
                dots = True
            elif n <= 1 or current - mid <= n <= current + mid or n > total - 1:
                href = _page_path(base, n)
                out.append(f'<a class="page-numbers" href="{href}">{before}{n}</a>')
                dots = True
            elif dots:
                out.append('<span class="page-numbers dots">&hellip;</span>')
                dots = False
        if current < total:
            href = _page_path(base, current + 1)
            out.append(f'<a class="next page-numbers" href="{href}">{next_text}</a>')
        return self.nav("pagination", "Posts navigation", "\n".join(out))

    # ------------------------------------------------------------------ menus and widgets

    def menu_items(self, ctx: _Ctx, items: list[_MenuItem], depth: int = 0) -> str:
        kinds = {
            "home": "menu-item-type-custom menu-item-object-custom",
            "page": "menu-item-type-post_type menu-item-object-page",
            "category": "menu-item-type-taxonomy menu-item-object-category",
        }
        out = []
        indent = "\t" * depth
        for item in items:
            cls = ["menu-item", kinds[item.kind]]
            current = ""
            if item.kind == "home":
                if ctx.kind == "home" and ctx.page == 1:
                    cls += ["current-menu-item", "current_page_item"]
                    current = ' aria-current="page"'
                cls.append("menu-item-home")
            if item.kind == "category" and ctx.post and item.term in ctx.post.categories:
                cls += ["current-post-ancestor", "current-menu-parent", "current-post-parent"]
            if item.children:
                cls.append("menu-item-has-children")
            cls.append(f"menu-item-{item.id}")
            label, after = self.menu_label(item)
            sub = ""
            if item.children:
                inner = self.menu_items(ctx, item.children, depth + 1)
                sub = f'\n{indent}<ul class="sub-menu">\n{inner}{indent}</ul>\n{indent}'
            out.append(
                f'{indent}<li id="menu-item-{item.id}" class="{" ".join(cls)}"><a href='
                f'"{item.href}"{current}>{label}</a>{after}{sub}</li>\n'
            )
        return "".join(out)

    def menu_label(self, item: _MenuItem) -> tuple[str, str]:
        return _tx(item.label), ""

    def search_form(self) -> str:
        raise NotImplementedError

    def calendar(self, year: int, month: int) -> str:
        """get_calendar(): one month, Monday first, its days with posts linked."""
        first = date(year, month, 1)
        days = (date(year + month // 12, month % 12 + 1, 1) - first).days
        linked = {d.day for d in self.days if (d.year, d.month) == (year, month)}
        out = [
            '<table id="wp-calendar" class="wp-calendar-table">\n'
            f"\t<caption>{_MONTHS[month - 1]} {year}</caption>\n\t<thead>\n\t<tr>"
        ]
        for name in _WEEKDAYS:
            out.append(f'\n\t\t<th scope="col" aria-label="{name}">{name[0]}</th>')
        out.append("\n\t</tr>\n\t</thead>\n\t<tbody>\n\t<tr>")
        if first.weekday():
            out.append(f'\n\t\t<td colspan="{first.weekday()}" class="pad">&nbsp;</td>')
        for n in range(1, days + 1):
            day = date(year, month, n)
            if n > 1 and day.weekday() == 0:
                out.append("\n\t</tr>\n\t<tr>\n\t\t")
            out.append('<td id="today">' if day == self.now.date() else "<td>")
            if n in linked:
                label = f"Posts published on {_date_text(day)}"
                out.append(f'<a href="{_day_path(day)}" aria-label="{label}">{n}</a>')
            else:
                out.append(str(n))
            out.append("</td>")
        pad = 6 - date(year, month, days).weekday()
        if pad:
            out.append(f'\n\t\t<td class="pad" colspan="{pad}">&nbsp;</td>')
        out.append("\n\t</tr>\n\t</tbody>\n\t</table>")
        earlier = [m for m in self.months if m < (year, month)]
        later = [m for m in self.months if m > (year, month)]
        prev = next_ = "&nbsp;"
        if earlier:
            y, m = earlier[0]
            prev = f'<a href="{_month_path(y, m)}">&laquo; {_MONTHS[m - 1][:3]}</a>'
        if later:
            y, m = later[-1]
            next_ = f'<a href="{_month_path(y, m)}">{_MONTHS[m - 1][:3]} &raquo;</a>'
        out.append(
            '<nav aria-label="Previous and next months" class="wp-calendar-nav">\n'
            f'\t\t<span class="wp-calendar-nav-prev">{prev}</span>\n'
            '\t\t<span class="pad">&nbsp;</span>\n'
            f'\t\t<span class="wp-calendar-nav-next">{next_}</span>\n\t</nav>'
        )
        return "".join(out)

    def widgets(self, ctx: _Ctx) -> str:
        """The classic default widgets plus a calendar, the same on every page but for the
        calendar's month and the current post's mark in Recent Posts."""
        recent = []
        for post in self.posts[::-1][:5]:
            current = ' aria-current="page"' if ctx.post is post else ""
            recent.append(
                f'\t\t\t\t\t\t\t\t\t<li>\n\t\t\t\t<a href="{post.path}"{current}>'
                f"{_tx(post.title)}</a>\n\t\t\t\t\t\t</li>\n"
            )
        comments = []
        for c in self.recent:
            who = _tx(c.who.name)
            if c.who.url:
                who = f'<a href="{c.who.url}" class="url" rel="ugc external nofollow">{who}</a>'
            post = self.post_of[id(c)]
            comments.append(
                f'<li class="recentcomments"><span class="comment-author-link">{who}</span> on '
                f'<a href="{post.path}#comment-{c.id}">{_tx(post.title)}</a></li>'
            )
        months = "".join(
            f"\t\t\t\t\t<li><a href='{_month_path(y, m)}'>{_MONTHS[m - 1]} {y}</a></li>\n"
            for y, m in self.months
        )
        used = {t.id for p in self.posts for t in p.categories}
        cats = "".join(
            f'\t\t\t\t\t<li class="cat-item cat-item-{t.id}"><a href="/category/{t.slug}/">'
            f"{_tx(t.name)}</a>\n</li>\n"
            for t in sorted(self.site.categories, key=lambda t: t.name)
            if t.id in used
        )
        year, month = ctx.month
        return (
            f'<section id="search-2" class="widget widget_search">{self.search_form()}</section>'
            '\n\t\t<section id="recent-posts-2" class="widget widget_recent_entries">\n'
            '\t\t<h2 class="widget-title">Recent Posts</h2><nav aria-label="Recent Posts">\n'
            f"\t\t<ul>\n{''.join(recent)}\t\t\t\t\t</ul>\n\n\t\t</nav></section>"
            '<section id="recent-comments-2" class="widget widget_recent_comments">'
            '<h2 class="widget-title">Recent Comments</h2><nav aria-label="Recent Comments">'
            f'<ul id="recentcomments">{"".join(comments)}</ul></nav></section>'
            '<section id="calendar-2" class="widget widget_calendar">'
            '<h2 class="widget-title">Calendar</h2><div id="calendar_wrap" class="calendar_wrap">'
            f"{self.calendar(year, month)}</div></section>"
            '<section id="archives-2" class="widget widget_archive"><h2 class="widget-title">'
            'Archives</h2><nav aria-label="Archives">\n\n\t\t\t<ul>\n'
            f"{months}\t\t\t</ul>\n\n\t\t\t</nav></section>"
            '<section id="categories-2" class="widget widget_categories"><h2 class="widget-title">'
            'Categories</h2><nav aria-label="Categories">\n\n\t\t\t<ul>\n'
            f"{cats}\t\t\t</ul>\n\n\t\t\t</nav></section>"
            '<section id="meta-2" class="widget widget_meta"><h2 class="widget-title">Meta</h2>'
            '<nav aria-label="Meta">\n\t\t<ul>\n\t\t\t\t\t\t<li><a href="/wp-login.php">Log in</a>'
            '</li>\n\t\t\t<li><a href="/feed/">Entries feed</a></li>\n\t\t\t<li><a href="/comments'
            '/feed/">Comments feed</a></li>\n\n\t\t\t<li><a href="https://wordpress.org/">'
            "WordPress.org</a></li>\n\t\t</ul>\n\n\t\t</nav></section>"
        )

    def head_links(self, ctx: _Ctx) -> str:
        """wp_head()'s links, shared by the themes."""
        site = _tx(self.site.name)
        out = [
            "<meta name='robots' content='max-image-preview:large' />\n",
            f'<link rel="alternate" type="application/rss+xml" title="{site} &raquo; Feed" '
            'href="/feed/" />\n',
            f'<link rel="alternate" type="application/rss+xml" title="{site} &raquo; Comments Feed"'
            ' href="/comments/feed/" />\n',
        ]
        if ctx.post is not None:
            title = _tx(ctx.post.title)
            out.append(
                f'<link rel="alternate" type="application/rss+xml" title="{site} &raquo; '
                f'{title} Comments Feed" href="{ctx.post.path}feed/" />\n'
            )
        out.append(
            "<link rel='stylesheet' id='wp-block-library-css' href='/wp-includes/css/dist/"
            f"block-library/style.min.css?ver={self.site.version}' media='all' />\n"
            "<style id='classic-theme-styles-inline-css'>\n/*! This file is auto-generated */\n"
            ".wp-block-button__link{color:#fff;background-color:#32373c;border-radius:9999px;"
            "box-shadow:none;text-decoration:none;padding:calc(.667em + 2px) calc(1.333em + 2px);"
            "font-size:1.125em}.wp-block-file__button{background:#32373c;color:#fff;"
            "text-decoration:none}\n</style>\n"
        )
        return "".join(out)

    def head_tail(self, ctx: _Ctx) -> str:
        out = ['<link rel="https://api.w.org/" href="/wp-json/" />']
        if ctx.post is not None:
            out.append(
                f'<link rel="alternate" type="application/json" '
                f'href="/wp-json/wp/v2/posts/{ctx.post.id}" />'
            )
        out.append(
            '<link rel="EditURI" type="application/rsd+xml" title="RSD" '
            'href="/xmlrpc.php?rsd" />\n'
            f'<meta name="generator" content="WordPress {self.site.version}" />'
        )
        if ctx.post is not None:
            out.append(
                f'<link rel="canonical" href="{ctx.post.path}" />\n'
                f"<link rel='shortlink' href='/?p={ctx.post.id}' />"
            )
        out.append(
            "<style>.recentcomments a{display:inline !important;padding:0 !important;"
            "margin:0 !important;}</style>"
        )
        return "\n".join(out) + "\n"


def _walk(comments: list[_Comment]) -> list[_Comment]:
    out = []
    for c in comments:
        out.append(c)
        out += _walk(c.children)
    return out


# --------------------------------------------------------------------------- Twenty Twenty-One

_TT1_SVG = (
    '<svg class="svg-icon" width="24" height="24" aria-hidden="true" role="img" '
    'focusable="false" viewBox="0 0 24 24" fill="none" xmlns="http://www.w3.org/2000/svg">'
    '<path fill-rule="evenodd" clip-rule="evenodd" d="{d}" fill="currentColor"/></svg>'
)
_TT1_PATHS = {
    "menu": "M4.5 6H19.5V7.5H4.5V6ZM4.5 12H19.5V13.5H4.5V12ZM19.5 18H4.5V19.5H19.5V18Z",
    "close": "M12 10.9394L5.53033 4.46973L4.46967 5.53039L10.9393 12.0001L4.46967 18.4697L5.53033"
    " 19.5304L12 13.0607L18.4697 19.5304L19.5303 18.4697L13.0607 12.0001L19.5303 5.53039L18.4697"
    " 4.46973L12 10.9394Z",
    "left": "m4.91421 11 4.79289-4.79289-1.41421-1.41422-7.20711 7.20711 7.20711 7.20711 "
    "1.41421-1.41422-4.79289-4.79289h17.08579v-2z",
    "right": "m18.0858 13-4.7929 4.7929 1.4142 1.4142 7.2071-7.2071-7.2071-7.20712-1.4142 1.41422 "
    "4.7929 4.7929h-17.0858v2z",
    "plus": "M18 11.2h-5.2V6h-1.6v5.2H6v1.6h5.2V18h1.6v-5.2H18z",
    "minus": "M6 11h12v2H6z",
}


def _tt1_icon(name: str, size: int = 24) -> str:
    svg = _TT1_SVG.format(d=_TT1_PATHS[name])
    return svg.replace('width="24" height="24"', f'width="{size}" height="{size}"')


class _TwentyTwentyOne(_Theme):
    """Twenty Twenty-One 2.x, "full post" display on archives (its Customizer option)."""

    avatar = 60
    paging = (
        0,
        f'{_tt1_icon("left")} <span class="nav-prev-text">Newer <span class="nav-short">posts'
        "</span></span>",
        '<span class="nav-next-text">Older <span class="nav-short">posts</span></span> '
        f"{_tt1_icon('right')}",
        "Page ",
    )

    def more_link(self, post: _Post) -> str:
        return (
            f'<div class="more-link-container"><a class="more-link" href="{post.path}#more-'
            f'{post.id}">Continue reading <span class="screen-reader-text">{_tx(post.title)}'
            "</span></a></div>"
        )

    def comments_title(self, post: _Post) -> str:
        words = "1 comment" if post.count == 1 else f"{post.count} comments"
        return (
            f'<h2 class="comments-title">\n\t\t\t\t\t{words}\t\t\t\t\t</h2><!-- .comments-title -->'
        )

    def search_form(self) -> str:
        return (
            '<form role="search"  method="get" class="search-form" action="/">\n'
            '\t<label for="search-form-1">Search&hellip;</label>\n'
            '\t<input type="search" id="search-form-1" class="search-field" value="" name="s" />\n'
            '\t<input type="submit" class="search-submit" value="Search" />\n</form>\n'
        )

    def menu_label(self, item: _MenuItem) -> tuple[str, str]:
        if not item.children:
            return _tx(item.label), ""
        return _tx(item.label), (
            '<button class="sub-menu-toggle" aria-expanded="false" onClick="twentytwentyone'
            f'ExpandSubMenu(this)"><span class="icon-plus">{_tt1_icon("plus", 18)}</span>'
            f'<span class="icon-minus">{_tt1_icon("minus", 18)}</span><span class="screen-reader'
            '-text">Open menu</span></button>'
        )

    def thumb(self, post: _Post, *, link: bool) -> str:
        if post.thumb is None:
            return ""
        img = post.thumb
        w, h = _fit(img.ratio, 1568)
        mw, mh = _fit(img.ratio, 300)
        tag = (
            f'<img width="{w}" height="{h}" src="{img.base}-{w}x{h}.jpg" class="attachment-post-'
            f'thumbnail size-post-thumbnail wp-post-image" alt="{_at(img.alt)}" decoding="async" '
            f'srcset="{img.base}-{w}x{h}.jpg {w}w, {img.base}-{mw}x{mh}.jpg {mw}w" '
            f'sizes="(max-width: {w}px) 100vw, {w}px" style="width:100%;height:'
            f'{round(100 * h / w, 2)}%;max-width:{w}px;" />'
        )
        if link:
            tag = (
                f'<a class="post-thumbnail-inner alignwide" href="{post.path}" '
                f'aria-hidden="true" tabindex="-1">\n\t\t\t\t{tag}\t\t\t</a>'
            )
        return f'\n\t\t\n\t\t\t<figure class="post-thumbnail">\n\t\t\t\t{tag}\n\t\t\t</figure>'

    def taxonomies(self, post: _Post) -> str:
        if not post.categories and not post.tags:
            return ""
        out = '<div class="post-taxonomies">'
        out += f'<span class="cat-links">Categorized as {self.cat_links(post)} </span>'
        if post.tags:
            out += f'<span class="tags-links">Tagged {self.tag_links(post)}</span>'
        return out + "</div>"

    def posted_on(self, post: _Post) -> str:
        return f'<span class="posted-on">Published {self.time_tag(post)}</span>'

    def entry(self, post: _Post) -> str:
        return (
            f'\n<article id="post-{post.id}" class="{self.post_class(post)} entry">\n\n'
            '\t<header class="entry-header">\n'
            f'\t\t<h2 class="entry-title default-max-width"><a href="{post.path}">'
            f"{_tx(post.title)}</a></h2>{self.thumb(post, link=True)}\n"
            "\t</header><!-- .entry-header -->\n\n"
            f'\t<div class="entry-content">\n\t\t{self.content(post, teaser=True)}\n'
            "\t</div><!-- .entry-content -->\n\n"
            '\t<footer class="entry-footer default-max-width">\n'
            f"\t\t{self.posted_on(post)}{self.taxonomies(post)}\t</footer><!-- .entry-footer -->\n"
            f"</article><!-- #post-{post.id} -->\n"
        )

    def listing(self, ctx: _Ctx, posts: list[_Post], total: int, base: str) -> str:
        header = ""
        if ctx.day is not None:
            header = (
                '\n\t<header class="page-header alignwide">\n'
                f'\t\t<h1 class="page-title">Day: <span>{_date_text(ctx.day)}</span></h1>\t'
                "</header><!-- .page-header -->\n"
            )
        main = header + "".join(self.entry(p) for p in posts)
        main += self.pagination(base, ctx.page, total)
        paged = f" paged paged-{ctx.page}" if ctx.page > 1 else ""
        if ctx.kind == "home":
            body = f"home blog{paged}"
        else:
            body = "archive date" + (f"{paged} date-paged-{ctx.page}" if paged else "")
        body += " wp-embed-responsive is-light-theme no-js hfeed has-main-navigation"
        return self.document(ctx, body, main)

    def single(self, ctx: _Ctx, post: _Post, prev: _Post | None, nxt: _Post | None) -> str:
        author = post.author
        if author.bio:
            byline = ""
            bio = (
                f'<div class="author-bio show-avatars">\n\t{_avatar(author.avatar, 85)}\t'
                '<div class="author-bio-content">\n'
                f'\t\t<h2 class="author-title">By {_tx(author.name)}</h2><!-- .author-title -->\n'
                f'\t\t<p class="author-description"> {_tx(author.bio)}</p><!-- .author-'
                "description -->\n"
                f'\t\t<a class="author-link" href="/author/{author.nicename}/" rel="author">View '
                f"all of {_tx(author.name)}&#039;s posts.</a>\t</div><!-- .author-bio-content -->"
                "\n</div><!-- .author-bio -->\n"
            )
        else:
            bio = ""
            byline = (
                f'<span class="byline">By <a href="/author/{author.nicename}/" '
                f'rel="author">{_tx(author.name)}</a></span>'
            )
        article = (
            f'\n<article id="post-{post.id}" class="{self.post_class(post)} entry">\n\n'
            '\t<header class="entry-header alignwide">\n'
            f'\t\t<h1 class="entry-title">{_tx(post.title)}</h1>{self.thumb(post, link=False)}'
            "\n\t</header><!-- .entry-header -->\n\n"
            f'\t<div class="entry-content">\n\t\t{self.content(post, teaser=False)}\n'
            "\t</div><!-- .entry-content -->\n\n"
            '\t<footer class="entry-footer default-max-width">\n'
            f'\t\t<div class="posted-by">{self.posted_on(post)}{byline}</div>'
            f"{self.taxonomies(post)}\t</footer><!-- .entry-footer -->\n\n"
            f"\t\t\t\t{bio}\n</article><!-- #post-{post.id} -->\n"
        )
        comments = ""
        if post.open or post.count:
            comments = self.comments_area(post, "comments-area default-max-width show-avatars")
        links = ""
        if prev is not None:
            links += (
                f'<div class="nav-previous"><a href="{prev.path}" rel="prev"><p class="meta-nav">'
                f'{_tt1_icon("left")}Previous post</p><p class="post-title">{_tx(prev.title)}</p>'
                "</a></div>"
            )
        if nxt is not None:
            links += (
                f'<div class="nav-next"><a href="{nxt.path}" rel="next"><p class="meta-nav">Next '
                f'post{_tt1_icon("right")}</p><p class="post-title">{_tx(nxt.title)}</p></a></div>'
            )
        nav = self.nav("post-navigation", "Post navigation", links) if links else ""
        body = (
            f"post-template-default single single-post postid-{post.id} single-format-standard "
            "wp-embed-responsive is-light-theme no-js singular has-main-navigation"
        )
        return self.document(ctx, body, article + comments + nav)

    def document(self, ctx: _Ctx, body: str, main: str) -> str:
        site, version = self.site, "2.1"
        name = _tx(site.name)
        if ctx.kind == "home" and ctx.page == 1:
            title = f'<h1 class="site-title">{name}</h1>'
        else:
            title = f'<p class="site-title"><a href="/" rel="home">{name}</a></p>'
        reply_js = ""
        if ctx.post is not None and ctx.post.open:
            reply_js = (
                f"<script src='/wp-includes/js/comment-reply.min.js?ver={site.version}'"
                " id='comment-reply-js' async data-wp-strategy='async'></script>\n"
            )
        return (
            '<!doctype html>\n<html lang="en-US" >\n<head>\n\t<meta charset="UTF-8" />\n'
            '\t<meta name="viewport" content="width=device-width, initial-scale=1.0" />\n'
            f"\t<title>{self.doc_title(ctx)}</title>\n{self.head_links(ctx)}"
            "<style id='global-styles-inline-css'>\nbody{--wp--preset--color--black: #000000;"
            "--wp--preset--color--dark-gray: #28303D;--wp--preset--color--gray: #39414D;"
            "--wp--preset--color--green: #D1E4DD;--wp--preset--color--blue: #D1DFE4;"
            "--wp--preset--color--purple: #D1D1E4;--wp--preset--color--red: #E4D1D1;"
            "--wp--preset--color--orange: #E4DAD1;--wp--preset--color--yellow: #EEEADD;"
            "--wp--preset--color--white: #FFFFFF;--wp--preset--font-size--small: 13px;"
            "--wp--preset--font-size--medium: 20px;--wp--preset--font-size--large: 36px;}\n"
            "</style>\n"
            "<link rel='stylesheet' id='twenty-twenty-one-style-css' href='/wp-content/themes/"
            f"twentytwentyone/style.css?ver={version}' media='all' />\n"
            "<link rel='stylesheet' id='twenty-twenty-one-print-style-css' href='/wp-content/"
            f"themes/twentytwentyone/assets/css/print.css?ver={version}' media='print' />\n"
            f"{self.head_tail(ctx)}</head>\n\n"
            f'<body class="{body}">\n<div id="page" class="site">\n'
            '\t<a class="skip-link screen-reader-text" href="#content">Skip to content</a>\n\n'
            '\t\n<header id="masthead" class="site-header has-title-and-tagline has-menu">'
            "\n\n\t\n\n"
            f'<div class="site-branding">\n\n\t\n\t\t\t\t\t{title}\n\t\t\n\t\t\t'
            f'<p class="site-description">\n\t\t\t{_tx(site.tagline)}\t\t</p>\n\t'
            "</div><!-- .site-branding -->\n\t\n"
            '\t<nav id="site-navigation" class="primary-navigation" aria-label="Primary menu">\n'
            '\t\t<div class="menu-button-container">\n'
            '\t\t\t<button id="primary-mobile-menu" class="button" aria-controls="primary-menu-'
            'list" aria-expanded="false">\n'
            f'\t\t\t\t<span class="dropdown-icon open">Menu\t\t\t\t\t{_tt1_icon("menu")}'
            "\t\t\t\t</span>\n"
            f'\t\t\t\t<span class="dropdown-icon close">Close\t\t\t\t\t{_tt1_icon("close")}'
            "\t\t\t\t</span>\n\t\t\t</button><!-- #primary-mobile-menu -->\n"
            "\t\t</div><!-- .menu-button-container -->\n"
            '\t\t<div class="primary-menu-container"><ul id="primary-menu-list" '
            f'class="menu-wrapper">{self.menu_items(ctx, site.menu)}</ul></div>'
            "\t</nav><!-- #site-navigation -->\n\t\n</header><!-- #masthead -->\n\n"
            '\t<div id="content" class="site-content">\n'
            '\t\t<div id="primary" class="content-area">\n'
            f'\t\t\t<main id="main" class="site-main">\n{main}\n'
            "\t\t\t</main><!-- #main -->\n\t\t</div><!-- #primary -->\n"
            "\t</div><!-- #content -->\n\n\t\n"
            f'\t<aside class="widget-area">\n\t\t{self.widgets(ctx)}\t'
            "</aside><!-- .widget-area -->\n\n\t\n"
            '\t<footer id="colophon" class="site-footer">\n\n\t\t\t\t<div class="site-info">\n'
            f'\t\t\t<div class="site-name">\n\t\t\t\t\t\t\t\t\t\t\t<a href="/">{name}</a>\n'
            "\t\t\t\t\t\t\t\t\t\t\t\t</div><!-- .site-name -->\n\n"
            '\t\t\t\t\t\t\t<div class="privacy-policy"><a class="privacy-policy-link" '
            'href="/privacy-policy/" rel="privacy-policy">Privacy Policy</a></div>\n'
            '\t\t\t\n\t\t\t<div class="powered-by">\n\t\t\t\tProudly powered by '
            '<a href="https://wordpress.org/">WordPress</a>.\t\t\t</div><!-- .powered-by -->\n\n'
            "\t\t</div><!-- .site-info -->\n\t</footer><!-- #colophon -->\n\n"
            "</div><!-- #page -->\n\n"
            '<script>document.body.classList.remove("no-js");</script>\t<script>\n'
            "\tif ( -1 !== navigator.userAgent.indexOf( 'MSIE' ) || -1 !== navigator.appVersion"
            ".indexOf( 'Trident/' ) ) {\n\t\tdocument.body.classList.add( 'is-IE' );\n\t}\n"
            f"\t</script>\n\t{reply_js}"
            "<script src='/wp-content/themes/twentytwentyone/assets/js/primary-navigation.js"
            f"?ver={version}' id='twenty-twenty-one-primary-navigation-script-js'></script>\n"
            "<script src='/wp-content/themes/twentytwentyone/assets/js/responsive-embeds.js"
            f"?ver={version}' id='twenty-twenty-one-responsive-embeds-script-js'></script>\n"
            "\n</body>\n</html>\n"
        )


# --------------------------------------------------------------------------- Twenty Seventeen


def _tt17_icon(name: str) -> str:
    return (
        f'<svg class="icon icon-{name}" aria-hidden="true" role="img"> '
        f'<use href="#icon-{name}" xlink:href="#icon-{name}"></use> </svg>'
    )


_TT17_SYMBOLS = (
    (
        "arrow-left",
        "25 27",
        (
            "M25.143 13.714v2.286q0 0.946-0.58 1.616t-1.509 0.67h-12.571l5.232 5.25q0"
            ".679 0.643 0.679 1.607t-0.679 1.607l-1.339 1.357q-0.661 0.661-1.607 0.66"
            "1-0.929 0-1.625-0.661l-11.625-11.643q-0.661-0.661-0.661-1.607 0-0.929 0."
            "661-1.625l11.625-11.607q0.679-0.679 1.625-0.679 0.929 0 1.607 0.679l1.33"
            "9 1.321q0.679 0.679 0.679 1.625t-0.679 1.625l-5.232 5.232h12.571q0.929 0"
            " 1.509 0.67t0.58 1.616z"
        ),
    ),
    (
        "arrow-right",
        "25 27",
        (
            "M24 14.857q0 0.964-0.661 1.625l-11.625 11.625q-0.696 0.661-1.625 0.661-0"
            ".911 0-1.607-0.661l-1.339-1.339q-0.679-0.679-0.679-1.625t0.679-1.625l5.2"
            "32-5.232h-12.571q-0.929 0-1.509-0.67t-0.58-1.616v-2.286q0-0.946 0.58-1.6"
            "16t1.509-0.67h12.571l-5.232-5.25q-0.679-0.643-0.679-1.607t0.679-1.607l1."
            "339-1.339q0.679-0.679 1.607-0.679 0.946 0 1.625 0.679l11.625 11.625q0.66"
            "1 0.625 0.661 1.607z"
        ),
    ),
    (
        "angle-down",
        "16 27",
        (
            "M16 11.429q0 0.232-0.179 0.411l-8.321 8.321q-0.179 0.179-0.411 0.179t-0."
            "411-0.179l-8.321-8.321q-0.179-0.179-0.179-0.411t0.179-0.411l0.893-0.893q"
            "0.179-0.179 0.411-0.179t0.411 0.179l7.018 7.018 7.018-7.018q0.179-0.179 "
            "0.411-0.179t0.411 0.179l0.893 0.893q0.179 0.179 0.179 0.411z"
        ),
    ),
    (
        "folder-open",
        "34 32",
        (
            "M33.554 17q0 0.554-0.554 1.179l-6 7.071q-0.768 0.911-2.152 1.545t-2.563 "
            "0.634h-19.429q-0.607 0-1.080-0.232t-0.473-0.768q0-0.554 0.554-1.179l6-7."
            "071q0.768-0.911 2.152-1.545t2.563-0.634h19.429q0.607 0 1.080 0.232t0.473"
            " 0.768z"
        ),
    ),
    (
        "hashtag",
        "26 32",
        (
            "M15.339 18.286l1.143-4.571h-4.536l-1.143 4.571h4.536zM29.054 9.286l-1 4q"
            "-0.125 0.429-0.554 0.429h-5.839l-1.143 4.571h5.554q0.268 0 0.446 0.214 0"
            ".179 0.25 0.107 0.5l-1 4q-0.089 0.429-0.554 0.429h-5.839l-1.446 5.857z"
        ),
    ),
    (
        "mail-reply",
        "28 28",
        (
            "M28 17.5c0 3.5-2.687 8.453-3.5 10.172-0.094 0.187-0.219 0.438-0.438 0.43"
            "8-0.313 0-0.438-0.25-0.438-0.5 0-0.078 0.016-0.156 0.031-0.234 0.063-0.5"
            "47 0.094-1.094 0.094-1.656 0-6.516-3.859-7.719-9.75-7.719h-3.5v4q0 0.406"
            "-0.297 0.703t-0.703 0.297-0.703-0.297l-8-8q-0.297-0.297-0.297-0.703t0.29"
            "7-0.703l8-8q0.297-0.297 0.703-0.297t0.703 0.297 0.297 0.703v4h3.5c5.125 "
            "0 11.5 0.906 13.672 6.297 0.656 1.656 0.828 3.453 0.828 5.203z"
        ),
    ),
    (
        "search",
        "30 32",
        (
            "M20.571 14.857q0-3.304-2.348-5.652t-5.652-2.348-5.652 2.348-2.348 5.652 "
            "2.348 5.652 5.652 2.348 5.652-2.348 2.348-5.652zM29.714 29.714q0 0.929-0"
            ".679 1.607t-1.607 0.679q-0.964 0-1.607-0.679l-6.125-6.107q-3.196 2.214-7"
            ".125 2.214-2.554 0-4.884-0.991t-4.018-2.679-2.679-4.018-0.991-4.884 0.99"
            "1-4.884 2.679-4.018 4.018-2.679 4.884-0.991 4.884 0.991 4.018 2.679 2.67"
            "9 4.018 0.991 4.884q0 3.929-2.214 7.125l6.125 6.125q0.661 0.661 0.661 1."
            "607z"
        ),
    ),
    (
        "bars",
        "27 32",
        (
            "M27.429 24v2.286q0 0.464-0.339 0.804t-0.804 0.339h-25.143q-0.464 0-0.804"
            "-0.339t-0.339-0.804v-2.286q0-0.464 0.339-0.804t0.804-0.339h25.143q0.464 "
            "0 0.804 0.339t0.339 0.804z"
        ),
    ),
    (
        "close",
        "25 32",
        (
            "M23.179 23.607q0 0.714-0.5 1.214l-2.429 2.429q-0.5 0.5-1.214 0.5t-1.214-"
            "0.5l-5.25-5.25-5.25 5.25q-0.5 0.5-1.214 0.5t-1.214-0.5l-2.429-2.429q-0.5"
            "-0.5-0.5-1.214t0.5-1.214l5.25-5.25-5.25-5.25q-0.5-0.5-0.5-1.214t0.5-1.21"
            "4z"
        ),
    ),
)
_TT17_SPRITE = (
    '<svg style="position: absolute; width: 0; height: 0; overflow: hidden;" version="1.1" '
    'xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink">\n<defs>\n'
    + "".join(
        f'<symbol id="icon-{name}" viewBox="0 0 {box}">\n<path class="path1" d="{d}"></path>\n'
        "</symbol>\n"
        for name, box, d in _TT17_SYMBOLS
    )
    + "</defs>\n</svg>\n"
)


class _TwentySeventeen(_Theme):
    """Twenty Seventeen 3.x with its blog sidebar and, on some sites, the footer widgets."""

    avatar = 100
    reply = f"{_tt17_icon('mail-reply')}Reply"
    reply_title = '<h3 id="reply-title" class="comment-reply-title">Leave a Reply'
    reply_close = "</h3>"
    paging = (
        2,
        f'{_tt17_icon("arrow-left")}<span class="screen-reader-text">Previous page</span>',
        f'<span class="screen-reader-text">Next page</span>{_tt17_icon("arrow-right")}',
        '<span class="meta-nav screen-reader-text">Page </span>',
    )

    def more_link(self, post: _Post) -> str:
        return (
            f' <a href="{post.path}#more-{post.id}" class="more-link">Continue reading'
            f'<span class="screen-reader-text"> "{_tx(post.title)}"</span></a>'
        )

    def comments_title(self, post: _Post) -> str:
        title = _tx(post.title)
        if post.count == 1:
            words = f"One Reply to &ldquo;{title}&rdquo;"
        else:
            words = f"{post.count} Replies to &ldquo;{title}&rdquo;"
        return f'<h2 class="comments-title">\n\t\t\t{words}\t\t</h2>'

    def search_form(self) -> str:
        return (
            '\n\n<form role="search" method="get" class="search-form" action="/">\n'
            '\t<label for="search-form-1">\n\t\t<span class="screen-reader-text">\n\t\t\tSearch '
            "for:\t\t</span>\n\t</label>\n"
            '\t<input type="search" id="search-form-1" class="search-field" placeholder="Search '
            '&hellip;" value="" name="s" />\n'
            f'\t<button type="submit" class="search-submit">{_tt17_icon("search")}<span '
            'class="screen-reader-text">\n\t\tSearch\t</span></button>\n</form>\n'
        )

    def menu_label(self, item: _MenuItem) -> tuple[str, str]:
        if item.children:
            return _tx(item.label) + _tt17_icon("angle-down"), ""
        return _tx(item.label), ""

    def time_link(self, post: _Post) -> str:
        return (
            f'<span class="screen-reader-text">Posted on</span> <a href="{post.path}" '
            f'rel="bookmark">{self.time_tag(post)}</a>'
        )

    def entry(self, ctx: _Ctx, post: _Post) -> str:
        htag = "h3" if ctx.kind == "home" else "h2"
        thumb = ""
        if post.thumb is not None:
            img = post.thumb
            w, h = _fit(img.ratio, 2000)
            thumb = (
                f'\n\t\t<div class="post-thumbnail">\n\t\t\t<a href="{post.path}">\n\t\t\t\t'
                f'<img width="{w}" height="{h}" src="{img.base}-{w}x{h}.jpg" class="attachment-'
                "twentyseventeen-featured-image size-twentyseventeen-featured-image wp-post-image"
                f'" alt="{_at(img.alt)}" decoding="async" loading="lazy" sizes="100vw" />'
                "\t\t\t</a>\n\t\t</div><!-- .post-thumbnail -->\n\t"
            )
        return (
            f'\n<article id="post-{post.id}" class="{self.post_class(post)}">\n'
            '\t\t<header class="entry-header">\n'
            f'\t\t<div class="entry-meta">{self.time_link(post)}</div><!-- .entry-meta -->'
            f'<{htag} class="entry-title"><a href="{post.path}" rel="bookmark">{_tx(post.title)}'
            f"</a></{htag}>\t</header><!-- .entry-header -->\n\n\t{thumb}\n"
            f'\t<div class="entry-content">\n\t\t{self.content(post, teaser=True)}\n'
            "\t</div><!-- .entry-content -->\n\n\t\n</article><!-- #post-" + f"{post.id} -->\n"
        )

    def listing(self, ctx: _Ctx, posts: list[_Post], total: int, base: str) -> str:
        if ctx.day is not None:
            header = (
                '\n\t\t<header class="page-header">\n'
                f'\t\t\t<h1 class="page-title">Day: <span>{_date_text(ctx.day)}</span></h1>'
                "\t\t</header><!-- .page-header -->\n\t"
            )
        else:
            header = (
                '\n\t\t<header class="page-header">\n'
                '\t\t\t<h2 class="page-title">Posts</h2>\n\t\t</header>\n\t'
            )
        main = "".join(self.entry(ctx, p) for p in posts) + self.pagination(base, ctx.page, total)
        paged = f" paged paged-{ctx.page}" if ctx.page > 1 else ""
        if ctx.kind == "home":
            body = f"home blog{paged}"
        else:
            body = "archive date" + (f"{paged} date-paged-{ctx.page}" if paged else "")
        body += " wp-embed-responsive hfeed has-header-image has-sidebar colors-light"
        return self.document(ctx, body, main, header)

    def single(self, ctx: _Ctx, post: _Post, prev: _Post | None, nxt: _Post | None) -> str:
        author = post.author
        byline = (
            f'<span class="byline"> by <span class="author vcard"><a class="url fn n" '
            f'href="/author/{author.nicename}/">{_tx(author.name)}</a></span></span>'
        )
        footer = ""
        if post.categories or post.tags:
            cats = (
                f'<span class="cat-links">{_tt17_icon("folder-open")}<span class="screen-reader-'
                f'text">Categories</span>{self.cat_links(post)}</span>'
            )
            tags = ""
            if post.tags:
                tags = (
                    f'<span class="tags-links">{_tt17_icon("hashtag")}<span class="screen-reader'
                    f'-text">Tags</span>{self.tag_links(post)}</span>'
                )
            footer = (
                f'\n\t<footer class="entry-footer"><span class="cat-tags-links">{cats}'
                f"{tags}</span></footer> <!-- .entry-footer -->"
            )
        article = (
            f'\n<article id="post-{post.id}" class="{self.post_class(post)}">\n'
            '\t\t<header class="entry-header">\n'
            f'\t\t<div class="entry-meta"><span class="posted-on">{self.time_link(post)}</span>'
            f'{byline}</div><!-- .entry-meta --><h1 class="entry-title">{_tx(post.title)}</h1>'
            "\t</header><!-- .entry-header -->\n\n\t\n"
            f'\t<div class="entry-content">\n\t\t{self.content(post, teaser=False)}\n'
            f"\t</div><!-- .entry-content -->\n{footer}\n</article><!-- #post-{post.id} -->\n"
        )
        comments = ""
        if post.open or post.count:
            comments = "\n" + self.comments_area(post, "comments-area")
        links = ""
        if prev is not None:
            links += (
                f'<div class="nav-previous"><a href="{prev.path}" rel="prev"><span class="screen'
                '-reader-text">Previous Post</span><span aria-hidden="true" class="nav-subtitle">'
                'Previous</span> <span class="nav-title"><span class="nav-title-icon-wrapper">'
                f"{_tt17_icon('arrow-left')}</span>{_tx(prev.title)}</span></a></div>"
            )
        if nxt is not None:
            links += (
                f'<div class="nav-next"><a href="{nxt.path}" rel="next"><span class="screen-'
                'reader-text">Next Post</span><span aria-hidden="true" class="nav-subtitle">Next'
                f'</span> <span class="nav-title">{_tx(nxt.title)}<span class="nav-title-icon-'
                f'wrapper">{_tt17_icon("arrow-right")}</span></span></a></div>'
            )
        nav = self.nav("post-navigation", "Post navigation", links) if links else ""
        before = ""
        if post.thumb is not None:
            img = post.thumb
            w, h = _fit(img.ratio, 2000)
            before = (
                f'<div class="single-featured-image-header"><img width="{w}" height="{h}" '
                f'src="{img.base}-{w}x{h}.jpg" class="attachment-twentyseventeen-featured-image '
                f'size-twentyseventeen-featured-image wp-post-image" alt="{_at(img.alt)}" '
                'decoding="async" fetchpriority="high" sizes="100vw" /></div>'
                "<!-- .single-featured-image-header -->\n\n\t"
            )
        body = (
            f"post-template-default single single-post postid-{post.id} single-format-standard "
            "wp-embed-responsive has-header-image has-sidebar colors-light"
        )
        return self.document(ctx, body, article + comments + nav, "", before)

    def document(self, ctx: _Ctx, body: str, main: str, header: str = "", before: str = "") -> str:
        site = self.site
        name = _tx(site.name)
        home = ctx.kind == "home"
        link = f'<a href="/" rel="home">{name}</a>'
        title = (
            f'<h1 class="site-title">{link}</h1>' if home else f'<p class="site-title">{link}</p>'
        )
        scroll = ""
        if home:
            arrow = _tt17_icon("arrow-right")
            scroll = (
                f'\n\t\t\t<a href="#content" class="menu-scroll-down">{arrow}'
                '<span class="screen-reader-text">Scroll down to content</span></a>'
            )
        footer_widgets = ""
        if site.footer_widgets:
            footer_widgets = (
                '\n\n<aside class="widget-area" aria-label="Footer">\n'
                '\t\t\t<div class="widget-column footer-widget-1">\n'
                '\t\t\t<section id="text-2" class="widget widget_text"><h2 class="widget-title">'
                'About This Site</h2>\t\t\t<div class="textwidget"><p>'
                f"{_tx(site.tagline)}. Written by {_tx(site.authors[0].name)}, mostly at weekends."
                "</p>\n</div>\n\t\t</section>\t\t</div>\n"
                '\t\t\t\t<div class="widget-column footer-widget-2">\n'
                '\t\t\t<section id="text-3" class="widget widget_text"><h2 class="widget-title">'
                'Find Us</h2>\t\t\t<div class="textwidget"><p><strong>Address</strong><br />\n123 '
                "Main Street<br />\nNew York, NY 10001</p>\n<p><strong>Hours</strong><br />\n"
                "Monday&ndash;Friday: 9:00AM&ndash;5:00PM<br />\nSaturday &amp; Sunday: 11:00AM"
                "&ndash;3:00PM</p>\n</div>\n\t\t</section>\t\t</div>\n\t\t</aside><!-- .widget-"
                "area -->\n\n"
            )
        reply_js = ""
        if ctx.post is not None and ctx.post.open:
            reply_js = (
                f"<script src='/wp-includes/js/comment-reply.min.js?ver={site.version}'"
                " id='comment-reply-js' async data-wp-strategy='async'></script>\n"
            )
        header_src = site.header_image
        return (
            '<!DOCTYPE html>\n<html lang="en-US" class="no-js no-svg">\n<head>\n'
            '<meta charset="UTF-8">\n'
            '<meta name="viewport" content="width=device-width, initial-scale=1.0">\n'
            '<link rel="profile" href="https://gmpg.org/xfn/11">\n\n'
            "<script>\n(function(html){html.className = html.className.replace(/\\bno-js\\b/,'js')"
            "})(document.documentElement);\n</script>\n"
            f"<title>{self.doc_title(ctx)}</title>\n{self.head_links(ctx)}"
            "<link rel='stylesheet' id='twentyseventeen-fonts-css' href='/wp-content/themes/"
            "twentyseventeen/assets/fonts/font-libre-franklin.css?ver=20230328' media='all' />\n"
            "<link rel='stylesheet' id='twentyseventeen-style-css' href='/wp-content/themes/"
            "twentyseventeen/style.css?ver=20240402' media='all' />\n"
            "<link rel='stylesheet' id='twentyseventeen-block-style-css' href='/wp-content/themes/"
            "twentyseventeen/assets/css/blocks.css?ver=20220912' media='all' />\n"
            "<script src='/wp-includes/js/jquery/jquery.min.js?ver=3.7.1' id='jquery-core-js'>"
            "</script>\n<script src='/wp-includes/js/jquery/jquery-migrate.min.js?ver=3.4.1' "
            "id='jquery-migrate-js'></script>\n"
            f"{self.head_tail(ctx)}</head>\n\n"
            f'<body class="{body}">\n<div id="page" class="site">\n'
            '\t<a class="skip-link screen-reader-text" href="#content">Skip to content</a>\n\n'
            '\t<header id="masthead" class="site-header">\n\n\t\t<div class="custom-header">\n\n'
            '\t\t<div class="custom-header-media">\n'
            f'\t\t\t<div id="wp-custom-header" class="wp-custom-header"><img src="{header_src}" '
            'width="2000" height="1200" alt="" decoding="async" fetchpriority="high" /></div>'
            "\t\t</div>\n\n"
            '\t<div class="site-branding">\n\t<div class="wrap">\n\n\t\t\n\t\t'
            f'<div class="site-branding-text">\n\t\t\t\t\t\t\t{title}\n\t\t\t\n'
            f'\t\t\t\t\t\t\t<p class="site-description">{_tx(site.tagline)}</p>\n'
            "\t\t\t\t\t</div><!-- .site-branding-text -->\n\n\t\t\n\t</div><!-- .wrap -->\n"
            "</div><!-- .site-branding -->\n\n</div><!-- .custom-header -->\n\n"
            '\t\t\t\t\t<div class="navigation-top">\n\t\t\t\t<div class="wrap">\n'
            '\t\t\t\t\t<nav id="site-navigation" class="main-navigation" aria-label="Top Menu">\n'
            '\t<button class="menu-toggle" aria-controls="top-menu" aria-expanded="false">\n'
            f"\t\t{_tt17_icon('bars')}{_tt17_icon('close')}Menu\t</button>\n\n"
            '\t<div class="menu-main-container"><ul id="top-menu" class="menu">'
            f"{self.menu_items(ctx, site.menu)}</ul></div>{scroll}\n"
            "\t</nav><!-- #site-navigation -->\n\t\t\t\t</div><!-- .wrap -->\n"
            "\t\t\t</div><!-- .navigation-top -->\n\t\t\n\t</header><!-- #masthead -->\n\n\t"
            f'{before}<div class="site-content-contain">\n'
            '\t\t<div id="content" class="site-content">\n\n<div class="wrap">'
            f"{header}\n"
            '\t<div id="primary" class="content-area">\n\t\t<main id="main" class="site-main">\n'
            f"{main}\n"
            "\t\t</main><!-- #main -->\n\t</div><!-- #primary -->\n\t\n"
            '<aside id="secondary" class="widget-area" aria-label="Blog Sidebar">\n\t'
            f"{self.widgets(ctx)}</aside><!-- #secondary -->\n</div><!-- .wrap -->\n\n\n"
            "\t\t</div><!-- #content -->\n\n"
            '\t\t<footer id="colophon" class="site-footer">\n\t\t\t<div class="wrap">\n'
            f"\t\t\t\t{footer_widgets}"
            '<div class="site-info">\n\t\t<a class="privacy-policy-link" href="/privacy-policy/" '
            'rel="privacy-policy">Privacy Policy</a><span role="separator" aria-hidden="true">'
            '</span>\t<a href="https://wordpress.org/" class="imprint">\n\t\tProudly powered by '
            "WordPress\t</a>\n</div><!-- .site-info -->\n"
            "\t\t\t</div><!-- .wrap -->\n\t\t</footer><!-- #colophon -->\n"
            "\t</div><!-- .site-content-contain -->\n</div><!-- #page -->\n"
            f"{reply_js}"
            "<script src='/wp-content/themes/twentyseventeen/assets/js/skip-link-focus-fix.js"
            "?ver=20161114' id='twentyseventeen-skip-link-focus-fix-js'></script>\n"
            "<script src='/wp-content/themes/twentyseventeen/assets/js/navigation.js?ver=20210122'"
            " id='twentyseventeen-navigation-js'></script>\n"
            "<script src='/wp-content/themes/twentyseventeen/assets/js/global.js?ver=20211130' "
            "id='twentyseventeen-global-js'></script>\n"
            "<script src='/wp-content/themes/twentyseventeen/assets/js/jquery.scrollTo.js"
            "?ver=2.1.3' id='jquery-scrollto-js'></script>\n"
            f"{_TT17_SPRITE}\n</body>\n</html>\n"
        )


# --------------------------------------------------------------------------- entry point


def make_blog(theme: str = "twentytwentyone", *, posts: int = 60, seed: int = 0) -> Blog:
    """A WordPress blog of ``posts`` posts in ``theme``, the same for the same arguments."""
    if theme not in THEMES:
        raise ValueError(f"unknown theme {theme!r}; expected one of {THEMES}")
    if posts < 1:
        raise ValueError("a blog needs at least one post")
    rng = random.Random(seed)
    site = _make_site(rng)
    writer = _Writer(rng, site.nouns)
    times = _schedule(rng, posts)
    width = 750 if theme == "twentytwentyone" else 525
    made = _make_posts(rng, site, writer, times, width)
    now = made[-1].when + timedelta(days=rng.randint(0, 9), hours=rng.randint(1, 20))
    comments = _make_comments(rng, site, writer, made, now)
    renderer = _TwentyTwentyOne if theme == "twentytwentyone" else _TwentySeventeen
    pages, kinds = renderer(site, made, comments, now).render()
    return Blog(pages, kinds, "/")
