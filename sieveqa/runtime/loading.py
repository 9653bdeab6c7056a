"""``load_ranker``: a saved model, ready to rank, with the runtime policy saved beside it applied."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sieveqa import registry
from sieveqa.errors import ConfigError
from sieveqa.models.base import Ranker
from sieveqa.models.zoo import load_model


def load_ranker(
    model: str | Path,
    device: str = "auto",
    precision: str = "auto",
    batch_size: int | None = None,
    policy: str | Path | None = None,
    **overrides: Any,
) -> Ranker:
    """Load a shipped model by name (``default``, ``default-cascade``) or a saved folder, on
    ``device`` at ``precision`` (``auto``: CUDA if present; bf16 where the hardware has it natively).

    A technique with a runtime policy (a cascade's drop ratios) applies the one saved beside the
    model, or the one in the ``policy`` file; ``overrides`` replace single settings of it
    (``drop_ratios=0.3``). A model without one ranks by itself.
    """
    loaded = load_model(model).configure(device=device, precision=precision, batch_size=batch_size)
    ranker_class = registry.technique(loaded.kind).ranker_class()
    given = sorted(k for k, v in overrides.items() if v is not None)
    if ranker_class is None:
        if policy is not None or given:
            what = ", ".join(given) or "a policy"
            raise ConfigError(f"{model} is a {loaded.kind} model, which takes no runtime policy ({what})")
        return loaded
    return ranker_class.from_model(loaded, policy=policy, **overrides)
