"""The add-on, the settings module and the VISDUP_ENABLED switch."""

from __future__ import annotations

import logging

import pytest
from scrapy.exceptions import NotConfigured
from scrapy.utils.conf import build_component_list
from scrapy.utils.misc import load_object
from scrapy.utils.test import get_crawler

from tests.conftest import REPO
from visdup import config as visdup_settings
from visdup.addon import DOWNLOADER_MIDDLEWARES, EXTENSIONS, PIPELINES, SPIDER_MIDDLEWARES
from visdup.context import CrawlContext
from visdup.errors import ConfigError
from visdup.middlewares import NoFollowDuplicatesMiddleware, RecordsMiddleware
from visdup.pipelines import ClusterPipeline, ContentPipeline, LabelPipeline, TermPipeline
from visdup.spiders.site import SiteSpider

#: Every component the add-on installs, by the setting that lists it.
INSTALLED = {
    "ITEM_PIPELINES": PIPELINES,
    "SPIDER_MIDDLEWARES": SPIDER_MIDDLEWARES,
    "DOWNLOADER_MIDDLEWARES": DOWNLOADER_MIDDLEWARES,
    "EXTENSIONS": EXTENSIONS,
}
COMPONENTS = [(setting, path) for setting, paths in INSTALLED.items() for path in paths]


@pytest.fixture
def db(tmp_path):
    return f"sqlite:///{tmp_path / 'v.sqlite3'}"


def crawler(db_url: str, **settings):
    base = {"ADDONS": {"visdup.Addon": 100}, "VISDUP_DATABASE_URL": db_url}
    base.update(settings)
    c = get_crawler(SiteSpider, base)
    c._apply_settings()
    return c


def enabled(c, setting: str) -> dict[str, int]:
    """The components Scrapy will build for ``setting``, by dotted path, with priorities."""
    merged = c.settings.getwithbase(setting)
    out = {}
    for comp in build_component_list(merged):
        cls = load_object(comp) if isinstance(comp, str) else comp
        out[f"{cls.__module__}.{cls.__qualname__}"] = next(
            v for k, v in merged.items() if (load_object(k) if isinstance(k, str) else k) is cls
        )
    return out


def test_addon_wires_pipelines_middleware_and_defaults(db):
    c = crawler(db)
    for setting, components in INSTALLED.items():
        on = enabled(c, setting)
        for name, priority in components.items():
            assert on[name] == priority, (setting, name)
    assert c.settings.get("VISDUP_SIMILARITY_THRESHOLD") == 0.95
    assert c.settings.getint("DOWNLOAD_MAXSIZE") == 32 * 1024 * 1024
    assert c.settings.getint("CONCURRENT_ITEMS") == 8


def test_project_settings_override_the_addon_defaults(db):
    c = crawler(db, VISDUP_SIMILARITY_THRESHOLD=0.5, DOWNLOAD_MAXSIZE=1000, CONCURRENT_ITEMS=50)
    assert c.settings.getfloat("VISDUP_SIMILARITY_THRESHOLD") == 0.5
    assert c.settings.getint("DOWNLOAD_MAXSIZE") == 1000
    assert c.settings.getint("CONCURRENT_ITEMS") == 50


def test_switched_off_the_addon_leaves_item_concurrency_alone(db):
    c = crawler(db, VISDUP_ENABLED=False)
    assert c.settings.getint("CONCURRENT_ITEMS") == 100  # Scrapy's own default


@pytest.mark.parametrize(("setting", "path"), COMPONENTS)
@pytest.mark.parametrize("as_class", [False, True])
def test_a_component_the_project_switches_off_stays_off(db, setting, path, as_class):
    key = load_object(path) if as_class else path
    c = crawler(db, **{setting: {key: None}})
    on = enabled(c, setting)
    assert path not in on
    assert set(INSTALLED[setting]) - {path} <= set(on), "the add-on still installs the others"


@pytest.mark.parametrize(("setting", "path"), COMPONENTS)
def test_the_project_priority_of_a_component_wins(db, setting, path):
    c = crawler(db, **{setting: {path: 777}})
    assert enabled(c, setting)[path] == 777


def test_switching_a_step_pipeline_off_switches_its_step_off(db, tmp_path):
    on = CrawlContext.of(crawler(db)).options
    assert on.content and on.template
    off = CrawlContext.of(
        crawler(
            f"sqlite:///{tmp_path / 'other.sqlite3'}",
            ITEM_PIPELINES={
                "visdup.pipelines.ContentPipeline": None,
                "visdup.pipelines.ClusterPipeline": None,
            },
        )
    ).options
    assert not off.content and not off.template


@pytest.mark.parametrize(
    "component",
    [
        TermPipeline,
        ClusterPipeline,
        ContentPipeline,
        LabelPipeline,
        NoFollowDuplicatesMiddleware,
        RecordsMiddleware,
    ],
)
def test_visdup_enabled_false_switches_every_component_off(db, component):
    c = crawler(db, VISDUP_ENABLED=False)
    with pytest.raises(NotConfigured):
        component.from_crawler(c)
    assert not set(enabled(c, "ITEM_PIPELINES")) & set(PIPELINES)


def test_middlewares_act_only_when_their_settings_ask(tmp_path):
    def db(name: str) -> str:  # one store each: a SQLite store takes one writer
        return f"sqlite:///{tmp_path / name}.sqlite3"

    with pytest.raises(NotConfigured):
        NoFollowDuplicatesMiddleware.from_crawler(crawler(db("a")))
    assert NoFollowDuplicatesMiddleware.from_crawler(
        crawler(db("b"), VISDUP_DUPLICATE_POLICY="nofollow")
    )
    with pytest.raises(NotConfigured):
        RecordsMiddleware.from_crawler(crawler(db("c")))
    assert RecordsMiddleware.from_crawler(crawler(db("d"), VISDUP_EXTRACT_ITEMS=True))


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("VISDUP_DUPLICATE_POLICY", "delete"),
        ("VISDUP_SIMILARITY_THRESHOLD", "abc"),
        ("VISDUP_HAMMING_K", 99),
        # a misspelt name: refused with the nearest, not ignored for its default
        ("VISDUP_SIMILARITY_TRESHOLD", 0.9),
    ],
)
def test_a_bad_setting_is_refused_in_one_error_line(db, caplog, name, value):
    caplog.set_level(logging.ERROR)
    with pytest.raises(ConfigError, match=name):
        TermPipeline.from_crawler(crawler(db, **{name: value}))
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and name in errors[0].getMessage()
    assert "\n" not in errors[0].getMessage() and errors[0].exc_info is None
    if "TRESHOLD" in name:
        assert "did you mean VISDUP_SIMILARITY_THRESHOLD?" in errors[0].getMessage()


def test_setting_returns_the_checked_value(db):
    from visdup.context import setting

    c = crawler(db, VISDUP_SIMILARITY_THRESHOLD="0.9", VISDUP_RESUME="off")
    assert setting(c, "VISDUP_SIMILARITY_THRESHOLD") == 0.9
    assert setting(c, "VISDUP_RESUME") is False


def test_settings_are_alphabetised_and_documented_in_the_settings_reference():
    names = list(visdup_settings.defaults())
    assert names == sorted(names)
    reference = (REPO / "docs" / "settings.md").read_text()
    missing = [n for n in names if f"### {n}\n" not in reference]
    assert not missing, f"settings missing from docs/settings.md: {missing}"


def test_stats_counted_from_many_threads_stay_exact(db):
    from concurrent.futures import ThreadPoolExecutor

    ctx = CrawlContext.of(crawler(db))

    def count(_n: int) -> None:
        for _ in range(20_000):
            ctx.inc("visdup/test")

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(count, range(8)))
    assert ctx.stats.get_value("visdup/test") == 8 * 20_000
