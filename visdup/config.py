"""Every visdup setting, declared once: its name, type, default, allowed values and meaning.

``SETTINGS`` (:mod:`visdup.settings_declared`) is the one place a setting is declared.
Everything else is derived from it: the defaults (``defaults()`` and the module attributes
``VISDUP_*``), the checks (``check``, ``resolve``, ``read``, ``SPECS``), the detection of
misspelt names (``unknown_settings``) and the reference page docs/settings.md (``python -m
visdup.config --markdown``), so a setting added, changed or documented there is so everywhere
at once.

The add-on installs the defaults at add-on priority, so a project's settings or ``-s``
override them; components read them through ``visdup.context.setting``, which falls back to
these defaults when a component is used without the add-on.
"""

from __future__ import annotations

import difflib
import json
import sys
import textwrap
from collections.abc import Iterable, Mapping
from dataclasses import fields
from typing import Any

from visdup.errors import ConfigError
from visdup.settings_declared import (
    ENVIRONMENT,
    GROUPS,
    INDEX_LAYOUTS,
    POLICIES,
    SCRAPY_DEFAULTS,
    SCRAPY_DEFAULTS_ON,
    SETTINGS,
    Options,
    Setting,
)

#: What every setting's name begins with.
PREFIX = "VISDUP_"

__all__ = [
    "BY_NAME",
    "ENVIRONMENT",
    "GROUPS",
    "INDEX_LAYOUTS",
    "MARKDOWN_COMMAND",
    "POLICIES",
    "PREFIX",
    "SCRAPY_DEFAULTS",
    "SCRAPY_DEFAULTS_ON",
    "SETTINGS",
    "SPECS",
    "Options",
    "Setting",
    "check",
    "check_known",
    "defaults",
    "flag",
    "markdown",
    "named",
    "options",
    "read",
    "resolve",
    "unknown_setting_error",
    "unknown_settings",
]

#: The command that writes docs/settings.md from ``SETTINGS``.
MARKDOWN_COMMAND = ".venv/bin/python -m visdup.config --markdown > docs/settings.md"


#: Each setting by name, in alphabetical order (the order ``defaults`` and ``resolve`` use).
BY_NAME: dict[str, Setting] = {s.name: s for s in sorted(SETTINGS, key=lambda s: s.name)}

_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off", ""})


def __getattr__(name: str) -> Any:
    """``config.VISDUP_X`` is the default of ``VISDUP_X``; a misspelt name says the nearest."""
    setting = BY_NAME.get(name)
    if setting is not None:
        return setting.default
    if name.startswith("VISDUP_"):
        raise AttributeError(unknown_setting_error(name, _nearest(name)))
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *BY_NAME])


def defaults() -> dict[str, object]:
    """Every VISDUP_ setting with its documented default, in alphabetical order."""
    return {name: s.default for name, s in BY_NAME.items()}


def flag(value: object) -> bool:
    """A boolean from a setting given as bool, int or text ("1", "true", "yes", "on")."""
    if isinstance(value, str):
        return value.strip().lower() in _TRUE
    return bool(value)


# ------------------------------------------------------------------------------ unknown names


def _nearest(name: str) -> str | None:
    # Every name shares the prefix, which would make any two look alike: compare the rest.
    rest = {n.removeprefix("VISDUP_"): n for n in BY_NAME}
    close = difflib.get_close_matches(name.removeprefix("VISDUP_"), rest, n=1, cutoff=0.6)
    return rest[close[0]] if close else None


def unknown_settings(names: Iterable[str]) -> list[tuple[str, str | None]]:
    """Each ``VISDUP_*`` name in ``names`` that is no setting, with the nearest setting's name.

    ``names`` may be Scrapy ``Settings`` (it iterates over its names) or any iterable of
    names; names without the ``VISDUP_`` prefix are other components' and pass. A misspelt
    setting is otherwise silently ignored and its default used, which is why a crawl checks.
    The prefix in lower case counts too (``-s visdup_enabled=0`` sets a name nothing reads).
    Each unknown name comes once, in the order given; the nearest is None when no setting is
    close.
    """
    unknown: dict[str, str | None] = {}
    for name in names:
        if not isinstance(name, str) or name in BY_NAME or name in unknown:
            continue
        if name.upper().startswith("VISDUP_"):
            unknown[name] = _nearest(name.upper())
    return list(unknown.items())


def check_known(settings: Any) -> None:
    """Refuse a ``VISDUP_*`` name that is no setting: ConfigError naming the first one met and
    the nearest setting (``did you mean VISDUP_SIMILARITY_THRESHOLD?``).

    ``settings`` is Scrapy ``Settings`` (every name set at any priority: a project's
    settings.py, ``-s``, a spider's ``custom_settings``), a mapping or any iterable of names.
    A misspelt name is otherwise taken as some other component's and its setting keeps its
    default without a word, which is why a crawl checks before it fetches anything.
    """
    found = unknown_settings(settings)
    if found:
        raise ConfigError(unknown_setting_error(*found[0]))


def unknown_setting_error(name: str, nearest: str | None) -> str:
    """The one-line message for an unknown setting ``name`` (``nearest`` from unknown_settings)."""
    if any(name == variable for variable, _doc in ENVIRONMENT):
        return f"unknown setting {name}: it is an environment variable, not a Scrapy setting"
    if nearest is None:
        return f"unknown setting {name}: docs/settings.md lists every visdup setting"
    return f"unknown setting {name}: did you mean {nearest}?"


# ------------------------------------------------------------------------ typed, validated view


def _bool(name: str, value: object) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    raise ConfigError(f"{name} must be true or false, not {value!r}")


def _number(name: str, value: object, kind: type, lo: float | None, hi: float | None) -> Any:
    try:
        if isinstance(value, bool):
            raise ValueError
        number = kind(value.strip() if isinstance(value, str) else value)
    except (TypeError, ValueError):
        what = "a whole number" if kind is int else "a number"
        raise ConfigError(f"{name} must be {what}, not {value!r}") from None
    if kind is float and number != number:  # NaN passes every comparison
        raise ConfigError(f"{name} must be a number, not {value!r}")
    if (lo is not None and number < lo) or (hi is not None and number > hi):
        bounds = f"from {lo} to {hi}" if hi is not None else f"at least {lo}"
        raise ConfigError(f"{name} must be {bounds}, not {value!r}")
    return number


def _spec(s: Setting) -> tuple[Any, float | None, float | None]:
    if s.kind is str and s.choices is not None:
        return s.choices, None, None
    if s.kind is str:
        return str, (0 if s.empty else None), None
    return s.kind, s.low, s.high


#: Type and allowed range of each setting, derived from ``SETTINGS``: (kind, low, high); kinds
#: bool, int, float, str, dict, or a tuple of allowed words (str with low 0 may be empty).
SPECS: dict[str, tuple[Any, float | None, float | None]] = {
    name: _spec(s) for name, s in BY_NAME.items()
}


def check(name: str, value: object) -> Any:
    """``value`` as the type ``name`` takes; ConfigError (one clear line) when it cannot be.

    A name that is no setting is accepted as given.
    """
    s = BY_NAME.get(name)
    if s is None:
        return value
    if s.kind is bool:
        return _bool(name, value)
    if s.kind in (int, float):
        return _number(name, value, s.kind, s.low, s.high)
    if s.kind is str and s.choices is not None:
        word = str(value).strip().lower()
        if word not in s.choices:
            raise ConfigError(f"{name} must be one of {', '.join(s.choices)}, not {value!r}")
        return word
    if s.kind is dict:
        if isinstance(value, str):
            try:
                value = json.loads(value) if value.strip() else {}
            except ValueError:
                raise ConfigError(f"{name} must be a JSON object, not {value!r}") from None
        if not isinstance(value, Mapping):
            raise ConfigError(f"{name} must be a mapping, not {value!r}")
        if s.choices is not None:
            for key, mapped in value.items():
                if mapped is not None and mapped not in s.choices:
                    raise ConfigError(
                        f"{name}: {key!r} maps to {mapped!r}; use {', '.join(s.choices)} or None"
                    )
        return dict(value)
    if not isinstance(value, str) or (not s.empty and not value.strip()):
        what = "a text" if s.empty else "a non-empty text"
        raise ConfigError(f"{name} must be {what}, not {value!r}")
    return value.strip()


def _raw(source: Any, name: str) -> Any:
    """A setting's value from Scrapy settings, a mapping or a callable (None when absent)."""
    if callable(source) and not isinstance(source, Mapping):
        return source(name)
    getter = getattr(source, "get", None)
    return getter(name) if getter is not None else None


def read(source: Any, name: str) -> Any:
    """One VISDUP_ setting, typed and checked: the value in ``source``, else its default.

    ``source`` is Scrapy ``Settings``, a plain mapping, a ``name -> value`` callable or None.
    Raises :class:`ConfigError` for a bad value and KeyError for a name that is no setting.
    """
    s = BY_NAME.get(name)
    if s is None:
        raise KeyError(unknown_setting_error(name, _nearest(name)))
    value = None if source is None else _raw(source, name)
    return check(name, s.default if value is None else value)


def resolve(source: Any = None) -> dict[str, Any]:
    """Every VISDUP_ setting, typed and checked: the project's value, else the default.

    ``source`` is Scrapy ``Settings``, a plain mapping, or a ``name -> value`` callable.
    Raises :class:`ConfigError` naming the first bad setting (in alphabetical order).
    """
    values = {name: read(source, name) for name in BY_NAME}
    if values["VISDUP_TEMPLATE_MIN_PAGES"] > values["VISDUP_TEMPLATE_MAX_PAGES"]:
        raise ConfigError(
            "VISDUP_TEMPLATE_MIN_PAGES must not exceed VISDUP_TEMPLATE_MAX_PAGES "
            f"({values['VISDUP_TEMPLATE_MIN_PAGES']} > {values['VISDUP_TEMPLATE_MAX_PAGES']})"
        )
    return values


def options(source: Any = None) -> Options:
    """Every VISDUP_ setting, typed and checked (:func:`resolve`), as the object the code
    past Scrapy's settings reads: ``options(settings).similarity_threshold``."""
    if isinstance(source, Options):
        return source
    values = resolve(source)
    return Options(**{name[len(PREFIX) :].lower(): value for name, value in values.items()})


def named(opts: Options) -> dict[str, Any]:
    """The settings of ``opts`` by their ``VISDUP_*`` names (for stats and stored runs)."""
    return {PREFIX + f.name.upper(): getattr(opts, f.name) for f in fields(Options)}


# ------------------------------------------------------------------------------- the reference


def _shown(value: object) -> str:
    """A default as it would be written in a Scrapy settings file."""
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, int) and abs(value) >= 10_000:
        return f"{value:_}"
    if isinstance(value, str | dict):
        return json.dumps(value)
    return repr(value)


def _paragraph(text: str) -> str:
    return textwrap.fill(
        " ".join(text.split()), width=100, break_long_words=False, break_on_hyphens=False
    )


def _anchor(title: str) -> str:
    """The anchor GitHub gives a heading."""
    kept = "".join(c for c in title.lower() if c.isalnum() or c in " -_")
    return kept.replace(" ", "-")


def markdown() -> str:
    """docs/settings.md: every setting by group, from ``SETTINGS`` (``MARKDOWN_COMMAND``)."""
    lines = [
        "# Settings",
        "",
        "<!-- Generated from the declarations in visdup/config.py by",
        f"     {MARKDOWN_COMMAND}",
        "     Edit them there and run it again: a test fails when this file is stale. -->",
        "",
        _paragraph(
            "Every visdup setting is a Scrapy setting: put it in the project's `settings.py`, "
            "pass it with `-s NAME=VALUE` (to `scrapy crawl` or `visdup crawl`), or set it in a "
            "spider's `custom_settings`. The add-on installs the defaults below at add-on "
            "priority, so any of these overrides them. A bad value stops the crawl before it "
            "fetches anything, with one line naming the setting. Booleans also take `1`/`0`, "
            "`yes`/`no`, `on`/`off`; numbers and mappings may be given as text (a mapping as a "
            "JSON object)."
        ),
        "",
        "| setting | group | type | default | allowed |",
        "|---|---|---|---|---|",
    ]
    for key, title, _intro in GROUPS:
        group = f"[{title}](#{_anchor(title)})"
        for s in sorted((s for s in SETTINGS if s.group == key), key=lambda s: s.name):
            link = f"[`{s.name}`](#{_anchor(s.name)})"
            kind, default = s.kind.__name__, _shown(s.default)
            lines.append(f"| {link} | {group} | {kind} | `{default}` | {s.allowed()} |")
    for key, title, intro in GROUPS:
        lines += ["", f"## {title}", "", _paragraph(intro)]
        for s in sorted((s for s in SETTINGS if s.group == key), key=lambda s: s.name):
            lines += [
                "",
                f"### {s.name}",
                "",
                f"{s.kind.__name__}, {s.allowed()}; default `{_shown(s.default)}`.",
                "",
                _paragraph(s.doc),
            ]
    lines += ["", "## Environment variables", ""]
    lines.append(_paragraph("Read from the environment of the process, not from Scrapy settings."))
    for name, doc in ENVIRONMENT:
        lines += ["", f"### {name}", "", _paragraph(doc)]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """``python -m visdup.config --markdown``: write docs/settings.md's text to stdout."""
    args = sys.argv[1:] if argv is None else argv
    if args != ["--markdown"]:
        print(f"usage: python -m visdup.config --markdown  ({MARKDOWN_COMMAND})", file=sys.stderr)
        return 2
    sys.stdout.write(markdown())
    return 0


if __name__ == "__main__":
    sys.exit(main())
