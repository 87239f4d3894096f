"""The declaration of every setting: complete, self-consistent, and the source of its reference.

visdup/settings_declared.py declares each ``VISDUP_*`` setting once (a field of ``Options``);
the package's defaults, checks, the detection of misspelt names and docs/settings.md are
derived from it. These tests keep the
declaration and the code that reads settings from drifting apart.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from scrapy.settings import Settings

from tests.conftest import REPO
from visdup import config
from visdup.errors import ConfigError, InputError

PACKAGE = REPO / "visdup"
QUOTED = re.compile(r"""["'](VISDUP_[A-Z0-9_]+)["']""")

#: Declared settings the crawl never reads from its settings: only their default is used.
#: VISDUP_CLUSTER_REPRESENTATIVES is the default of the whole-DOM clusterer the benchmarks
#: compare with. A name leaves this set as soon as some component reads it.
DEFAULT_ONLY = {"VISDUP_CLUSTER_REPRESENTATIVES"}

ENVIRONMENT = {name for name, _doc in config.ENVIRONMENT}


def _quoted_names() -> dict[str, set[str]]:
    """Each quoted ``VISDUP_*`` literal in the package outside the declaration and config.py,
    with its files."""
    found: dict[str, set[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if path in (PACKAGE / "config.py", PACKAGE / "settings_declared.py"):
            continue
        for name in QUOTED.findall(path.read_text(encoding="utf-8")):
            found.setdefault(name, set()).add(str(path.relative_to(REPO)))
    return found


def test_every_name_the_package_reads_is_declared():
    undeclared = {
        name: files
        for name, files in _quoted_names().items()
        if name not in config.BY_NAME and name not in ENVIRONMENT
    }
    assert not undeclared, f"declare these in visdup/config.py SETTINGS: {undeclared}"


#: A setting read from an :class:`visdup.config.Options` (``opts.similarity_threshold``).
ATTRIBUTE = re.compile(r"(?:opts|config|settings)\.([a-z0-9_]+)\b")


def _read_attributes() -> set[str]:
    """The settings read as attributes of an options object, by their ``VISDUP_*`` names."""
    found = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        if path in (PACKAGE / "config.py", PACKAGE / "settings_declared.py"):
            continue
        found.update(config.PREFIX + a.upper() for a in ATTRIBUTE.findall(path.read_text()))
    return found & set(config.BY_NAME)


def test_every_declared_setting_is_read_somewhere():
    read = set(_quoted_names()) | _read_attributes()
    unread = sorted(set(config.BY_NAME) - read - DEFAULT_ONLY)
    assert not unread, f"declared but read nowhere in visdup/: {unread}"
    assert not (DEFAULT_ONLY & read), "now read as a setting: take it out of DEFAULT_ONLY"
    sources = "".join(p.read_text(encoding="utf-8") for p in PACKAGE.rglob("*.py"))
    for name in DEFAULT_ONLY:
        assert f"config.{name}" in sources, f"{name}'s default is used nowhere either"
    assert ENVIRONMENT.issubset(read), "an environment variable read nowhere"


def test_the_declaration_is_one_entry_per_setting_in_a_known_group():
    names = [s.name for s in config.SETTINGS]
    assert len(names) == len(set(names))
    assert all(re.fullmatch(r"VISDUP_[A-Z0-9_]+", n) for n in names)
    assert list(config.BY_NAME) == sorted(names)
    groups = [key for key, _title, _intro in config.GROUPS]
    assert len(groups) == len(set(groups))
    assert {s.group for s in config.SETTINGS} == set(groups), "a group without settings, or none"


@pytest.mark.parametrize("setting", config.SETTINGS, ids=lambda s: s.name)
def test_a_setting_is_documented_and_its_default_satisfies_its_own_range(setting):
    assert setting.doc.strip() and "\n\n" not in setting.doc
    assert setting.kind in (bool, int, float, str, dict)
    assert type(setting.default) is setting.kind
    assert config.check(setting.name, setting.default) == setting.default
    if setting.low is not None:
        assert setting.kind in (int, float) and setting.default >= setting.low
    if setting.high is not None:
        assert setting.kind in (int, float) and setting.default <= setting.high
    if setting.choices is not None and setting.kind is str:
        assert setting.default in setting.choices
    if setting.empty:
        assert setting.kind is str


@pytest.mark.parametrize("setting", config.SETTINGS, ids=lambda s: s.name)
def test_a_value_of_the_wrong_kind_is_refused_naming_the_setting(setting):
    wrong = {bool: "maybe", int: "many", float: "much", dict: "[1]", str: 3}[setting.kind]
    if setting.kind is str and setting.choices is not None:
        wrong = "none of them"
    with pytest.raises(ConfigError, match=setting.name) as caught:
        config.check(setting.name, wrong)
    assert "\n" not in str(caught.value)


def test_the_defaults_resolve_and_are_the_module_attributes():
    values = config.resolve()
    assert values == config.defaults()
    for name, default in config.defaults().items():
        assert getattr(config, name) == default
    assert config.SPECS["VISDUP_DUPLICATE_POLICY"] == (config.POLICIES, None, None)
    assert config.SPECS["VISDUP_CRAWL_ID"] == (str, 0, None)
    assert config.SPECS["VISDUP_DATABASE_URL"] == (str, None, None)


def test_read_gives_the_checked_value_or_the_default():
    settings = Settings({"VISDUP_SIMILARITY_THRESHOLD": "0.9", "VISDUP_RESUME": "off"})
    assert config.read(settings, "VISDUP_SIMILARITY_THRESHOLD") == 0.9
    assert config.read(settings, "VISDUP_RESUME") is False
    assert config.read(settings, "VISDUP_HAMMING_K") == config.VISDUP_HAMMING_K
    assert config.read(None, "VISDUP_DUPLICATE_POLICY") == "label"
    assert config.read({"VISDUP_DUPLICATE_POLICY": " Drop "}, "VISDUP_DUPLICATE_POLICY") == "drop"
    assert config.read(lambda _name: None, "VISDUP_CANDIDATES") == 64
    with pytest.raises(ConfigError, match="VISDUP_HAMMING_K"):
        config.read({"VISDUP_HAMMING_K": 99}, "VISDUP_HAMMING_K")
    with pytest.raises(KeyError, match="did you mean VISDUP_HAMMING_K"):
        config.read(None, "VISDUP_HAMING_K")


def test_a_misspelt_setting_names_the_nearest_one():
    names = Settings(
        {
            "BOT_NAME": "x",
            "VISDUP_ENABLED": True,
            "VISDUP_SIMILARITY_TRESHOLD": 0.9,
            "VISDUP_TED_MAX_CELL": 10,
            "VISDUP_NOTHING_LIKE_IT": 1,
        }
    )
    found = dict(config.unknown_settings(names))
    assert found == {
        "VISDUP_SIMILARITY_TRESHOLD": "VISDUP_SIMILARITY_THRESHOLD",
        "VISDUP_TED_MAX_CELL": "VISDUP_TED_MAX_CELLS",
        "VISDUP_NOTHING_LIKE_IT": None,
    }
    message = config.unknown_setting_error(
        "VISDUP_SIMILARITY_TRESHOLD", found["VISDUP_SIMILARITY_TRESHOLD"]
    )
    assert message == (
        "unknown setting VISDUP_SIMILARITY_TRESHOLD: did you mean VISDUP_SIMILARITY_THRESHOLD?"
    )
    assert "docs/settings.md" in config.unknown_setting_error("VISDUP_NOTHING_LIKE_IT", None)
    assert "\n" not in config.unknown_setting_error("VISDUP_NOTHING_LIKE_IT", None)


def test_unknown_names_come_once_in_order_and_known_ones_pass():
    given = ["VISDUP_CLUSTER_TRESHOLD", "VISDUP_ENABLE", "VISDUP_CLUSTER_TRESHOLD", "LOG_LEVEL"]
    assert config.unknown_settings(given) == [
        ("VISDUP_CLUSTER_TRESHOLD", "VISDUP_CLUSTER_THRESHOLD"),
        ("VISDUP_ENABLE", "VISDUP_ENABLED"),
    ]
    assert config.unknown_settings(config.defaults()) == []
    assert config.unknown_settings(Settings()) == []


def test_an_environment_variable_given_as_a_setting_is_named_as_such():
    [(name, nearest)] = config.unknown_settings(["VISDUP_PURE_PYTHON"])
    assert "environment variable" in config.unknown_setting_error(name, nearest)


def test_a_misspelt_module_attribute_names_the_nearest_setting():
    with pytest.raises(AttributeError, match="did you mean VISDUP_SIMILARITY_THRESHOLD"):
        _ = config.VISDUP_SIMILARITY_TRESHOLD
    with pytest.raises(AttributeError):
        _ = config.no_such_thing
    assert "VISDUP_HAMMING_K" in dir(config)


def test_the_settings_reference_is_generated_from_the_declaration():
    reference = (REPO / "docs" / "settings.md").read_text(encoding="utf-8")
    assert reference == config.markdown(), f"docs/settings.md is stale: {config.MARKDOWN_COMMAND}"
    assert config.MARKDOWN_COMMAND in reference
    for s in config.SETTINGS:
        assert reference.count(f"### {s.name}\n") == 1
    for name in ENVIRONMENT:
        assert f"### {name}\n" in reference


def test_the_command_writes_the_reference():
    out = subprocess.run(
        [sys.executable, "-m", "visdup.config", "--markdown"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout == config.markdown() and not out.stderr


def test_check_known_refuses_the_first_unknown_name_with_the_nearest(tmp_path):
    """What ``scrapy crawl`` and ``visdup crawl`` run before a crawl: a misspelt name in a
    project's settings.py (read as Scrapy reads it), in ``-s`` or in a plain mapping."""
    import importlib.util

    module_file = tmp_path / "typo_settings.py"
    module_file.write_text(
        'BOT_NAME = "shop"\nVISDUP_ENABLED = True\nVISDUP_SIMILARITY_TRESHOLD = 0.9\n'
    )
    spec = importlib.util.spec_from_file_location("typo_settings", module_file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    settings = Settings()
    settings.setmodule(module, priority="project")
    with pytest.raises(ConfigError) as raised:
        config.check_known(settings)
    assert str(raised.value) == (
        "unknown setting VISDUP_SIMILARITY_TRESHOLD: did you mean VISDUP_SIMILARITY_THRESHOLD?"
    )
    assert isinstance(raised.value, InputError)
    with pytest.raises(ConfigError, match="did you mean VISDUP_ENABLED"):
        config.check_known({"LOG_LEVEL": "INFO", "visdup_enabled": "0"})
    with pytest.raises(ConfigError, match="environment variable"):
        config.check_known(["VISDUP_PURE_PYTHON"])
    config.check_known(Settings({"VISDUP_ENABLED": False, "BOT_NAME": "x", "OTHER_NAME": 1}))
    config.check_known(config.defaults())
    config.check_known({})
