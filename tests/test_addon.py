"""The add-on, the settings module and the VISDUP_ENABLED switch."""

from __future__ import annotations

import pytest
from scrapy.exceptions import NotConfigured
from scrapy.utils.test import get_crawler

from tests.conftest import REPO
from visdup import config as visdup_settings
from visdup.addon import PIPELINES, SPIDER_MIDDLEWARES
from visdup.middlewares import NoFollowDuplicatesMiddleware
from visdup.pipelines import ClusterPipeline, ContentPipeline, LabelPipeline, TermPipeline
from visdup.spiders.site import SiteSpider


def crawler(**settings):
    base = {"ADDONS": {"visdup.Addon": 100}}
    base.update(settings)
    c = get_crawler(SiteSpider, base)
    c._apply_settings()
    return c


def test_addon_wires_pipelines_middleware_and_defaults():
    c = crawler()
    pipelines = c.settings.getdict("ITEM_PIPELINES")
    for name, priority in PIPELINES.items():
        assert pipelines[name] == priority
    for name in SPIDER_MIDDLEWARES:
        assert name in c.settings.getdict("SPIDER_MIDDLEWARES")
    assert c.settings.get("VISDUP_SIMILARITY_THRESHOLD") == 0.95
    assert c.settings.getint("DOWNLOAD_MAXSIZE") == 32 * 1024 * 1024


def test_project_settings_override_the_addon_defaults():
    c = crawler(VISDUP_SIMILARITY_THRESHOLD=0.5, DOWNLOAD_MAXSIZE=1000)
    assert c.settings.getfloat("VISDUP_SIMILARITY_THRESHOLD") == 0.5
    assert c.settings.getint("DOWNLOAD_MAXSIZE") == 1000


@pytest.mark.parametrize(
    "component", [TermPipeline, ClusterPipeline, ContentPipeline, LabelPipeline]
)
def test_visdup_enabled_false_switches_every_component_off(component):
    with pytest.raises(NotConfigured):
        component.from_crawler(crawler(VISDUP_ENABLED=False))


def test_middleware_only_acts_for_nofollow_policies():
    with pytest.raises(NotConfigured):
        NoFollowDuplicatesMiddleware.from_crawler(crawler())
    assert NoFollowDuplicatesMiddleware.from_crawler(crawler(VISDUP_DUPLICATE_POLICY="nofollow"))


def test_a_wrong_policy_is_refused():
    with pytest.raises(ValueError, match="VISDUP_DUPLICATE_POLICY"):
        TermPipeline.from_crawler(crawler(VISDUP_DUPLICATE_POLICY="delete"))


def test_settings_are_alphabetised_and_documented_in_the_readme():
    names = list(visdup_settings.defaults())
    assert names == sorted(names)
    readme = (REPO / "README.md").read_text()
    missing = [n for n in names if f"`{n}`" not in readme]
    assert not missing, f"settings missing from README: {missing}"
