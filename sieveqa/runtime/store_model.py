"""Which model a store belongs to: its signature, and finding it again after folders have moved."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sieveqa.errors import ConfigError, StoreError
from sieveqa.models import zoo
from sieveqa.models.hashing import HashingModel

#: Config fields that change what a model stores or how it reads a store.
_SIGNATURE_FIELDS = ("backbone", "num_layers", "max_length", "composition", "hashing", "pooling", "beta")


def model_signature(model: HashingModel) -> dict[str, Any]:
    """What must match between a store and the model that reads it."""
    cfg = model.config
    return {
        **{name: getattr(cfg, name) for name in _SIGNATURE_FIELDS},
        "kind": cfg.store_kind,
        "dim": model.encoder.hidden_size,
        "encoder_fingerprint": model.body_fingerprint(),
    }


def check_signature(path: Path, stored: dict[str, Any], ours: dict[str, Any]) -> None:
    """Raise StoreError naming every setting in which a model differs from the store's builder."""
    diffs = [
        f"{k} {stored.get(k)!r} (store) != {ours[k]!r} (model)" for k in ours if stored.get(k) != ours[k]
    ]
    if diffs:
        if diffs[-1].startswith("encoder_fingerprint") and len(diffs) == 1:
            diffs = ["the encoder weights differ (another training run or checkpoint)"]
        raise StoreError(f"{path} was built by another model: {'; '.join(diffs)}")


def store_model(name: str | Path) -> HashingModel:
    """A model that encodes or reads a store: a HAS, BERT-attention or BERT-pooling model."""
    model = zoo.load_model(name)
    if not isinstance(model, HashingModel):
        raise ConfigError(
            f"--model {name} is a {model.kind} model; answer stores need a HAS, bert-attention or "
            "bert-pooling model (sieveqa train --arch has)"
        )
    return model


def find_model(store: Path, reference: dict[str, Any]) -> HashingModel:
    """The model a store records: by shipped name, else at its folder, else at the same place
    relative to the store (both moved together). Raises StoreError naming it when none is found."""
    name, fingerprint = reference.get("name"), str(reference.get("fingerprint") or "")
    if name in zoo.SHIPPED:
        return store_model(name)
    places = [reference.get("path")]
    if reference.get("relative"):
        places.append(str((store / reference["relative"]).resolve()))
    for place in places:
        if place and Path(place).is_dir():
            return store_model(place)
    if name is None:
        raise StoreError(f"{store}: no model recorded with the store; name one (--model)")
    raise StoreError(
        f"{store}: its model {name!r} (body fingerprint {fingerprint[:12]}) is no longer at {places[0]}; "
        "pass --model FOLDER (the store checks it is the same model)"
    )
