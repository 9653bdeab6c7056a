"""Command-line options made from config dataclasses: a setting's help text lives once, in its field.

``settings_of(TrainConfig, "train")`` lists a dataclass's fields as :class:`Setting` s. A command
made with ``cls=settings_command(factory)`` gets one ``--flag`` per setting (all defaulting to "not
given"), built only when that command is parsed or its help shown, so the rest of the CLI starts
without importing the models; the command reads the values given with :func:`given_settings`. The
same settings check the keys and values of a ``--config`` JSON file, so the file and the flags accept
exactly the same things.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Annotated, Any

import typer
from typer.core import TyperCommand

from sieveqa.errors import ConfigError
from sieveqa.fields import FieldType, field_types

_VARIES = object()


@dataclass(frozen=True)
class Setting:
    """One option: a dataclass field's name, type, help, default, and the groups it belongs to."""

    name: str
    type: FieldType
    help: str
    default: Any
    owners: frozenset[str]
    panel: str = "Settings"

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    def parameter(self) -> inspect.Parameter:
        says = self.default is _VARIES or "(default:" in self.help  # its help already says it
        shown = "" if says else f" (default: {_show(self.default)})"
        kind = self.type.kind
        text = self.help + (", comma-separated" if kind is list else "") + shown
        flags = f"{self.flag}/--no-{self.flag[2:]}" if kind is bool else self.flag
        option = typer.Option(flags, help=text, show_default=False, rich_help_panel=self.panel)
        annotation: Any = Annotated[(str if kind is list else kind) | None, option]
        return inspect.Parameter(
            self.name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=annotation
        )

    def coerce(self, value: Any, where: str) -> Any:
        """``value`` (from a flag or a JSON file) as this setting's type, or a ConfigError."""
        return self.type.coerce(value, where)


def _show(value: Any) -> str:
    return "none" if value is None else str(value).lower() if isinstance(value, bool) else str(value)


def settings_of(
    cls: type, owner: str, defaults: Any = None, exclude: Iterable[str] = (), panel: str = "Settings"
) -> list[Setting]:
    """The fields of dataclass ``cls`` as settings of ``owner`` (shown under ``panel`` in the help);
    ``defaults`` (an instance) may give other defaults than the class's."""
    types_ = field_types(cls)
    return [
        Setting(
            f.name,
            types_[f.name],
            f.metadata.get("help", ""),
            getattr(defaults, f.name) if defaults is not None else _field_default(f),
            frozenset({owner}),
            panel,
        )
        for f in dataclasses.fields(cls)
        if f.name not in exclude
    ]


def _field_default(f: dataclasses.Field[Any]) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return _VARIES


def merge(settings: Iterable[Setting]) -> dict[str, Setting]:
    """One setting per name: the owners of same-named fields joined; a default that differs between
    owners is shown as varying."""
    out: dict[str, Setting] = {}
    for s in settings:
        if s.name in out:
            prev = out[s.name]
            default = prev.default if prev.default == s.default else _VARIES
            s = dataclasses.replace(prev, owners=prev.owners | s.owners, default=default)
        out[s.name] = s
    return out


_SETTINGS_KEY = "sieveqa.settings"


class SettingsCommand(TyperCommand):
    """A command with options derived from settings, built on first use by ``settings()``."""

    @staticmethod
    def settings() -> dict[str, Setting]:
        raise NotImplementedError

    def get_params(self, ctx: Any) -> list[Any]:
        if not getattr(self, "_derived", False):
            self.params.extend(click_options(self.settings().values()))
            self._derived = True
        return super().get_params(ctx)

    def invoke(self, ctx: Any) -> Any:
        settings = self.settings()
        ctx.meta[_SETTINGS_KEY] = {
            name: settings[name].coerce(ctx.params.pop(name), settings[name].flag)
            for name in list(ctx.params)
            if name in settings and ctx.params[name] is not None
        }
        for name in settings:
            ctx.params.pop(name, None)
        return super().invoke(ctx)


def settings_command(factory: Callable[[], dict[str, Setting]]) -> type[SettingsCommand]:
    """A command class whose options are the settings ``factory`` returns (called lazily, when the
    command is parsed; the factory caches what it builds)."""
    return type("SettingsCommand", (SettingsCommand,), {"settings": staticmethod(factory)})


def was_given(ctx: typer.Context, name: str) -> bool:
    """Whether option ``name`` was given (command line or environment), not left at its default."""
    source = ctx.get_parameter_source(name)  # Typer's own (vendored) click enum: compare by name
    return source is not None and source.name != "DEFAULT"


def given_settings(ctx: typer.Context) -> dict[str, Any]:
    """The settings typed on the command line of a ``settings_command`` (typed, lists parsed)."""
    return dict(ctx.meta.get(_SETTINGS_KEY, {}))


def click_options(settings: Iterable[Setting]) -> list[Any]:
    """The click options Typer makes for the settings (built through a throwaway one-command app)."""
    params = [s.parameter() for s in settings]

    def options(**_: Any) -> None:
        """Unused: only its signature matters."""

    options.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    options.__annotations__ = {p.name: p.annotation for p in params}
    holder = typer.Typer(add_completion=False)
    holder.command()(options)
    return list(typer.main.get_command(holder).params)


def read_settings(
    data: dict[str, Any], settings: dict[str, Setting], where: str, extra: Iterable[str] = ()
) -> dict[str, Any]:
    """The values of a ``--config`` JSON object, checked against ``settings`` (plus ``extra`` keys,
    passed through); an unknown key or a wrong type is an error naming it."""
    allowed = set(settings) | set(extra)
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {unknown}; valid keys: {', '.join(sorted(allowed))}")
    return {
        k: v if k not in settings else settings[k].coerce(v, f"{where}: key {k!r}") for k, v in data.items()
    }
