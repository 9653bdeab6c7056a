"""Typed values for the config dataclasses: the one check of a value from JSON or a flag against the
type of the field it is meant for (``int``, ``float``, ``str``, ``bool``, ``list[int]``, ``list[float]``,
a ``Literal``, each possibly ``None``). Model folders, ``--config`` files and the command line all go
through it.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass
from typing import Any

from sieveqa.errors import ConfigError, SieveQAError, shorten


@dataclass(frozen=True)
class FieldType:
    """What a field accepts: a base kind (``list``: a list of ``item``), None or not, fixed choices."""

    kind: type
    optional: bool = False
    choices: tuple[Any, ...] = ()
    item: type = int

    @classmethod
    def of(cls, annotation: Any) -> FieldType:
        origin, args = typing.get_origin(annotation), typing.get_args(annotation)
        if origin in (typing.Union, types.UnionType):
            inner = cls.of(next(a for a in args if a is not type(None)))
            return dataclasses.replace(inner, optional=type(None) in args)
        if origin is list:
            return cls(list, item=args[0] if args else int)
        if origin is dict:  # an object, taken as it is
            return cls(dict)
        if origin is typing.Literal:
            return cls(type(args[0]), choices=args)
        return cls(annotation)

    def coerce(self, value: Any, where: str, error: type[SieveQAError] = ConfigError) -> Any:
        """``value`` as this type (ints accepted for floats, ``"2,3"`` or one number for lists), or
        ``error``."""
        if value is None and self.optional:
            return None
        if self.kind is list:
            numbers = int | float if self.item is float else int
            if isinstance(value, str):
                try:
                    return [self.item(x) for x in value.split(",") if x.strip()]
                except ValueError:
                    raise error(f"{where}: expected comma-separated {self._items}, got {value!r}") from None
            if self.item is float and isinstance(value, int | float) and not isinstance(value, bool):
                return [float(value)]  # one number: a list of one
            if isinstance(value, tuple):
                value = list(value)
            if isinstance(value, list) and all(
                isinstance(x, numbers) and not isinstance(x, bool) for x in value
            ):
                return [self.item(x) for x in value]
        elif self.kind is float and isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        elif isinstance(value, self.kind) and not (self.kind is int and isinstance(value, bool)):
            if self.choices and value not in self.choices:
                raise error(f"{where}: must be one of {', '.join(map(str, self.choices))}, got {value!r}")
            return value
        expected = f"a list of {self._items}" if self.kind is list else self.kind.__name__
        raise error(f"{where}: expected {expected}, got {shorten(repr(value), 60)}")

    @property
    def _items(self) -> str:
        return "numbers" if self.item is float else "integers"


def field_types(cls: type) -> dict[str, FieldType]:
    """The type of every field of dataclass ``cls``."""
    hints = typing.get_type_hints(cls)
    return {f.name: FieldType.of(hints[f.name]) for f in dataclasses.fields(cls)}


def typed(
    cls: type, data: dict[str, Any], where: str, error: type[SieveQAError] = ConfigError
) -> dict[str, Any]:
    """``data`` checked key by key against dataclass ``cls``: unknown keys and wrong types are
    ``error`` s naming the key."""
    types_ = field_types(cls)
    unknown = sorted(set(data) - set(types_))
    if unknown:
        raise error(f"{where}: unknown field(s) {unknown}; known: {', '.join(types_)}")
    return {k: types_[k].coerce(v, f"{where}: field {k!r}", error) for k, v in data.items()}
