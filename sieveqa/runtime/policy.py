"""Runtime policies, and ``load_ranker``: a saved model, ready to rank, with its policy applied.

A policy holds the question-time settings of a technique (a cascade's drop ratios, a budget).

A policy is a frozen dataclass, saved as ``policy.json`` beside the model it was tuned for, and read
back by the runtime that applies it (``load_ranker``). It is never written into the installed
package: a policy tuned for a shipped model is saved in the tuning run's own folder and passed with
``--policy FILE``.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, ClassVar, Self

from sieveqa import registry
from sieveqa.errors import ConfigError
from sieveqa.io import atomic_write_json, read_json_object
from sieveqa.models._saving import read_policy, write_policy
from sieveqa.models.base import Ranker
from sieveqa.models.encoder_model import EncoderModel
from sieveqa.models.pair_model import PairModel
from sieveqa.models.zoo import is_shipped, load_model
from sieveqa.runtime.ensemble import EnsembleRanker, is_ensemble

#: Keys a policy file may hold besides the policy's own fields.
_META_KEYS = ("policy", "tuning")


@dataclass(frozen=True)
class Policy:
    """Base of the runtime policies; ``kind`` names the policy in its file."""

    kind: ClassVar[str]

    def to_dict(self, tuning: dict[str, Any] | None = None) -> dict[str, Any]:
        """The policy as saved: its kind, its fields (lists for tuples) and how it was chosen."""
        data = {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}
        return {"policy": self.kind, **data, **({"tuning": tuning} if tuning else {})}

    @classmethod
    def from_dict(cls, data: dict[str, Any], where: str) -> Self:
        """Read a saved policy; a wrong kind or an unknown key is an error naming ``where``."""
        kind = data.get("policy", cls.kind)
        if kind != cls.kind:
            raise ConfigError(f"{where}: holds a {kind!r} policy, expected {cls.kind!r}")
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - names - set(_META_KEYS))
        if unknown:
            raise ConfigError(
                f"{where}: unknown {cls.kind} policy field(s) {unknown}; known: {sorted(names)}"
            )
        values = {k: tuple(v) if isinstance(v, list) else v for k, v in data.items() if k in names}
        try:
            return cls(**values)
        except ConfigError as err:
            raise ConfigError(f"{where}: {err}") from None

    @classmethod
    def read(cls, path: str | Path) -> Self:
        """A policy from a JSON file (``--policy FILE``)."""
        return cls.from_dict(read_json_object(path), str(path))

    @classmethod
    def saved(cls, model: EncoderModel) -> Self | None:
        """The policy saved beside ``model`` (None when it has none)."""
        if model.path is None:
            return None
        data = read_policy(model.path, model.meta)
        return None if data is None else cls.from_dict(data, f"{model.path}/policy.json")

    def write(self, path: str | Path, tuning: dict[str, Any] | None = None) -> Path:
        """Save as a policy file at ``path``."""
        atomic_write_json(path, self.to_dict(tuning))
        return Path(path)

    def save_beside(self, model: EncoderModel, tuning: dict[str, Any] | None = None) -> Path:
        """Save as ``policy.json`` in the folder ``model`` was loaded from (never a shipped one)."""
        if model.path is None:
            raise ConfigError("the model was not loaded from a folder; save the policy to a file instead")
        if is_shipped(model.path):
            raise ConfigError(
                f"{model.path} is a model shipped inside the installed package, which is never written "
                "to; save the policy to a file and pass it with --policy"
            )
        return write_policy(model.path, self.to_dict(tuning))


def load_ranker(
    model: str | Path,
    device: str = "auto",
    precision: str = "auto",
    batch_size: int | None = None,
    policy: str | Path | None = None,
    backend: str = "torch",
    **overrides: Any,
) -> Ranker:
    """Load a shipped model by name (``default``, ``default-cascade``) or a saved folder, on
    ``device`` at ``precision`` (``auto``: CUDA if present; bf16 where the hardware has it natively),
    its layers on ``backend`` (torch, onnx, openvino).

    A technique with a runtime policy (a cascade's drop ratios) applies the one saved beside the
    model, or the one in the ``policy`` file; ``overrides`` replace single settings of it
    (``drop_ratios=0.3``). A model without one ranks by itself; an ensemble folder loads its members.
    """
    given = sorted(k for k, v in overrides.items() if v is not None)
    if is_ensemble(model):
        if policy is not None or given:
            raise ConfigError(f"{model} is an ensemble, which takes no runtime policy")
        return EnsembleRanker.load(
            model, device=device, precision=precision, batch_size=batch_size, backend=backend
        )
    loaded = load_model(model).configure(
        device=device, precision=precision, batch_size=batch_size, backend=backend
    )
    return ranker_of(loaded, policy, name=str(model), **overrides)


def ranker_of(
    loaded: EncoderModel, policy: str | Path | None = None, name: str = "", **overrides: Any
) -> Ranker:
    """A loaded model as a ranker: wrapped by its technique's runtime (a cascade with its saved drop
    ratios, or ``overrides`` of them) where it has one, else itself."""
    given = sorted(k for k, v in overrides.items() if v is not None)
    name = name or str(loaded.path or loaded.kind)
    ranker_class = registry.technique(loaded.kind).ranker_class()
    if ranker_class is None:
        if not isinstance(loaded, Ranker):
            raise ConfigError(f"{name} is a {loaded.kind} model, not a ranker of (question, candidate) pairs")
        if policy is not None or given:
            what = ", ".join(given) or "a policy"
            raise ConfigError(f"{name} is a {loaded.kind} model, which takes no runtime policy ({what})")
        return loaded
    return ranker_class.from_model(loaded, policy=policy, **overrides)


def pair_model(ranker: Ranker) -> PairModel | None:
    """The model whose tokenizer measures a ranker's inputs (an ensemble's first member)."""
    for candidate in (ranker, getattr(ranker, "model", None), *getattr(ranker, "members", ())[:1]):
        if isinstance(candidate, PairModel):
            return candidate
    return None


#: How a ranker may read a text longer than its model's input (``read_long_texts``).
LONG_TEXTS = ("windows", "cut")


def check_long_texts(how: str) -> str:
    """``how`` if it is one of :data:`LONG_TEXTS`, else a ConfigError naming them."""
    if how not in LONG_TEXTS:
        raise ConfigError(f"--long-texts must be one of {', '.join(LONG_TEXTS)}, got {how!r}")
    return how


def read_long_texts(ranker: Ranker, how: str) -> Ranker:
    """``ranker`` reading a text longer than its model's input in ``windows`` (the best one's score)
    or ``cut`` to its first tokens, every member of an ensemble alike; returned for chaining."""
    check_long_texts(how)
    for candidate in (ranker, getattr(ranker, "model", None), *getattr(ranker, "members", ())):
        if isinstance(candidate, PairModel):
            candidate.windows = how == "windows"
    return ranker


def warm_up(ranker: Ranker) -> tuple[int, float]:
    """Run a ranker's model once at each of its bucketed batch shapes (half precision on CUDA: see
    ``sieveqa.batching``), so no call pays for building a shape's kernels; (shapes run, seconds)."""
    model = pair_model(ranker)
    if model is None:
        return 0, 0.0
    started = time.perf_counter()
    return model.warm_up(), time.perf_counter() - started
