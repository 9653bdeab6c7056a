"""Exceptions raised by sieveqa; each names the file, field or value that is wrong.

Every error a user can cause is a :class:`SieveQAError`: the command line prints it in one line and
exits with code 2. Anything else escaping is a bug and keeps its traceback.
"""

from __future__ import annotations

from typing import Any


class SieveQAError(Exception):
    """Base class of every error sieveqa raises on purpose."""


class ConfigError(SieveQAError, ValueError):
    """A setting, option or configuration file has a bad value (the message names the field)."""


class DataFormatError(SieveQAError, ValueError):
    """A data file or record is malformed (the message names file, line and field)."""


class DatasetNotFoundError(SieveQAError, LookupError):
    """A dataset name or split does not exist, or its files are missing."""


class BackboneError(SieveQAError, LookupError):
    """A backbone name is unknown, or its weights are missing or corrupt."""


class ModelFormatError(SieveQAError, ValueError):
    """A saved model folder is incomplete, corrupt, or does not match the code reading it."""


class MissingExtraError(SieveQAError, ImportError):
    """An optional dependency is needed; the message names the extra that installs it."""


class StoreError(SieveQAError, ValueError):
    """An answer store is corrupt, of another version, or was built by another model."""


class BusyError(SieveQAError, RuntimeError):
    """Another process is writing the same output (a training run, an index build)."""


class DeviceError(SieveQAError, RuntimeError):
    """The device or precision asked for is not available on this machine."""


def shorten(value: Any, limit: int = 120) -> str:
    """``repr``-like text of ``value`` cut to ``limit`` characters, for messages and the console.

    Strings are shown as they are (not quoted); anything longer ends in ``…`` and says how long it
    was, so a megabyte-long field never floods a terminal.
    """
    text = value if isinstance(value, str) else repr(value)
    if len(text) <= limit:
        return text
    return f"{text[: max(limit - 1, 1)]}… ({len(text):,} characters)"


def require_extra(module: str, extra: str, purpose: str) -> Any:
    """Import an optional dependency, or raise MissingExtraError naming the extra that installs it."""
    import importlib

    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as err:
        # Only the package itself being absent means "install the extra"; a module missing deeper
        # down is a broken install or a bug, and keeps its own error.
        if err.name is None or not (module == err.name or module.startswith(err.name + ".")):
            raise
        raise MissingExtraError(
            f"{purpose} needs {module.split('.')[0]!r}: pip install 'sieveqa[{extra}]'"
        ) from err
