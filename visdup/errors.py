"""Exceptions that cross module boundaries."""

from __future__ import annotations

#: Exit status for bad input (files, options, settings, URLs).
BAD_INPUT = 2


class VisdupError(Exception):
    """Base of every error visdup raises on purpose."""


class InputError(VisdupError):
    """The input cannot be used: the command line reports it in one line and exits 2."""


class ConfigError(InputError):
    """A setting or option has a value visdup cannot use; the message names it."""


class StoreError(InputError):
    """The store cannot be opened as asked (URL, driver, server, path, schema, another writer).

    The message names the problem and never the password.
    """
