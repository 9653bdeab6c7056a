"""Models that ship with sieveqa, by name, and loading any saved model by its recorded kind."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, overload

from sieveqa import registry
from sieveqa.errors import ConfigError, ModelFormatError
from sieveqa.models._saving import model_kind

if TYPE_CHECKING:
    from sieveqa.models.encoder_model import EncoderModel

M = TypeVar("M")

RESOURCES = Path(__file__).resolve().parent.parent / "resources"
#: The second distribution, for the models that do not fit in sieveqa's wheel under PyPI's 100 MB.
MODELS_PACKAGE = "sieveqa-models"


def _models_resources() -> Path:
    """Where the installed sieveqa-models keeps its models (in a checkout: packages/sieveqa-models)."""
    spec = importlib.util.find_spec("sieveqa_models")
    if spec is not None and spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations))) / "resources"
    return RESOURCES.parent.parent / "packages" / "sieveqa-models" / "sieveqa_models" / "resources"


MODELS_RESOURCES = _models_resources()
SHIPPED = {
    "default": RESOURCES / "default-ranker",
    # The default ranker retrofitted with exits (heads only; its body is read from "default").
    "default-cascade": RESOURCES / "default-cascade",
    # PEASI's passage reranker (the default ranker trained on 256-token passages) and EASI selector.
    "peasi-pr": RESOURCES / "peasi-pr",
    "peasi-easi": RESOURCES / "peasi-easi",
    # peasi-pr retrofitted with exits (heads only; its body is read from "peasi-pr"), so PEASI's
    # passage reranking can drop passages at them (`make peasi-cascade`; issue 31's budget).
    "peasi-cascade": RESOURCES / "peasi-cascade",
    # peasi-pr taught whether a passage on the topic answers (SQuAD 2.0's human unanswerable questions
    # and made ones, issue 41): the answering methods' judge, whose logit their confidence reads.
    "peasi-judge": RESOURCES / "peasi-judge",
    # HAS for answer stores (issue 15): sentences of WikiQA train and a slice of SQuAD-AS2 train.
    "has": MODELS_RESOURCES / "has",
    # The anytime reader (issue 29): span and has-answer heads after every layer, calibrated, with its
    # dev-chosen schedule settings (policy.json) and learned SkylineBuilder scheduler (scheduler/).
    "reader": RESOURCES / "reader",
    # The previous default (transfer on SQuAD-AS2 train, 69k pairs) and its cascade, for comparison.
    "default-v1": MODELS_RESOURCES / "default-v1-ranker",
    "default-v1-cascade": MODELS_RESOURCES / "default-v1-cascade",
}


def resolve_model(name_or_path: str | Path) -> Path:
    """A shipped model's folder by name, the given folder, or a Hugging Face hub id's local copy
    (``org/name``, where no local folder ``org`` exists: downloaded once into the hub's cache, or read
    from it alone under ``HF_HUB_OFFLINE=1``); raises if none."""
    shipped = SHIPPED.get(str(name_or_path))
    path = shipped if shipped is not None else Path(name_or_path).expanduser()
    if shipped is not None and not path.is_dir() and path.is_relative_to(MODELS_RESOURCES):
        raise ModelFormatError(
            f"model {str(name_or_path)!r} ships in the {MODELS_PACKAGE} package, which is not installed: "
            f"pip install {MODELS_PACKAGE}"
        )
    if not path.is_dir():
        hub = _from_hub(str(name_or_path))
        if hub is not None:
            return hub
        names = ", ".join(SHIPPED)
        raise ModelFormatError(
            f"model {str(name_or_path)!r} is neither a shipped model ({names}) nor a folder"
        )
    return path


_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")


def check_model_name(name_or_path: str | Path) -> None:
    """Raise as ``resolve_model`` would for a name that is no shipped model, folder or hub id, without
    loading or downloading anything (components check what they are given when built)."""
    name = str(name_or_path)
    if name in SHIPPED or Path(name).expanduser().is_dir():
        return
    if _HUB_ID.fullmatch(name) and not Path(name.split("/")[0]).exists():
        return
    raise ModelFormatError(f"model {name!r} is neither a shipped model ({', '.join(SHIPPED)}) nor a folder")


#: What a cross-encoder needs from a hub repository (weights as safetensors when it has them).
_HUB_FILES = ["*.json", "*.txt", "*.model", "*.safetensors"]


def _from_hub(name: str) -> Path | None:
    """``name``'s snapshot from the Hugging Face hub, or None when it is no hub id (or the hub library
    is missing); a hub that cannot give it is one line."""
    if not _HUB_ID.fullmatch(name) or Path(name.split("/")[0]).exists():
        return None  # a relative path whose first folder exists is a path, mistyped or not
    try:
        from huggingface_hub import snapshot_download
        from huggingface_hub.errors import HfHubHTTPError, HFValidationError, LocalEntryNotFoundError
    except ImportError:
        return None
    try:
        path = Path(snapshot_download(name, allow_patterns=_HUB_FILES))
        if not any(path.glob("*.safetensors")):  # an older repository: PyTorch's pickled weights
            path = Path(snapshot_download(name, allow_patterns=[*_HUB_FILES, "*.bin"]))
    except (HfHubHTTPError, HFValidationError, LocalEntryNotFoundError, OSError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ModelFormatError(
            f"model {name!r}: no such folder here, not a shipped model, and the Hugging Face hub did "
            f"not give it ({first})"
        ) from None
    return path


def is_shipped(path: str | Path) -> bool:
    """Whether ``path`` lies inside the installed packages' shipped models (never written to)."""
    resolved = Path(path).resolve()
    return resolved.is_relative_to(RESOURCES.resolve()) or resolved.is_relative_to(MODELS_RESOURCES.resolve())


def model_ref(name_or_path: str | Path) -> str:
    """How to record a model so it can be found again: a shipped name as is, a folder as its
    absolute path (raises if it is neither)."""
    name = str(name_or_path)
    return name if name in SHIPPED else str(resolve_model(name_or_path).resolve())


@overload
def load_model(
    name_or_path: str | Path, expect: None = None, option: str = ..., want: str | None = ...
) -> EncoderModel: ...
@overload
def load_model(name_or_path: str | Path, expect: type[M], option: str = ..., want: str | None = ...) -> M: ...
@overload
def load_model(
    name_or_path: str | Path, expect: tuple[type, ...], option: str = ..., want: str | None = ...
) -> Any: ...
def load_model(
    name_or_path: str | Path,
    expect: type | tuple[type, ...] | None = None,
    option: str = "--model",
    want: str | None = None,
) -> Any:
    """Load any saved sieveqa model, picking the class from the folder's recorded kind. With
    ``expect`` (a class or classes), any other kind is a ConfigError naming ``option`` and saying
    what was wanted (``want``, e.g. "a reader (train one with --arch reader)")."""
    try:
        path = resolve_model(name_or_path)
    except ModelFormatError as err:  # say which option named it: --judge, --reranker, --selector
        if option == "--model":
            raise
        raise ModelFormatError(f"{option}: {err}") from None
    kind = model_kind(path)
    try:
        cls = registry.technique(kind).model_class()
    except ConfigError as err:
        raise ModelFormatError(f"{path}/config.json: {err}") from None
    model = cls.from_pretrained(path)  # a Hugging Face folder is a cross-encoder's (model_kind)
    if expect is not None and not isinstance(model, expect):
        classes = expect if isinstance(expect, tuple) else (expect,)
        wanted = want or " or ".join(_a(getattr(c, "kind", None) or c.__name__) for c in classes)
        raise ConfigError(f"{option} {name_or_path}: a {model.kind} model, not {wanted}")
    return model


def _a(kind: str) -> str:
    return f"{'an' if kind[:1] in 'aeiou' else 'a'} {kind} model"
