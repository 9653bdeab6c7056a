"""Exceptions raised by sieveqa; each names the file, field or value that is wrong."""

from __future__ import annotations


class SieveQAError(Exception):
    """Base class of every error sieveqa raises on purpose."""


class DataFormatError(SieveQAError, ValueError):
    """A data file or record is malformed (the message names file, line and field)."""


class DatasetNotFoundError(SieveQAError, LookupError):
    """A dataset name or split does not exist, or its files are missing."""


class BackboneError(SieveQAError, LookupError):
    """A backbone name is unknown, or its weights are missing or corrupt."""


class ModelFormatError(SieveQAError, ValueError):
    """A saved model folder is incomplete or does not match the code reading it."""


class MissingExtraError(SieveQAError, ImportError):
    """An optional dependency is needed; the message names the extra that installs it."""


class StoreError(SieveQAError, ValueError):
    """An answer store is corrupt, of another version, or was built by another model."""
