"""What one graph per layer costs against one graph for the whole body, on ONNX Runtime and OpenVINO.

sieveqa exports a body as one graph per layer so exits and schedulers keep working (sieveqa/exported).
This times the body alone over the same padded batches of real pairs: torch, the per-layer graphs as
`--backend` runs them, and the whole body exported as one graph, in fp32, taking turns.

    python bench/exported_layers.py --model default --dataset wikiqa:test --limit 100 \
        --out bench/results/backends/layers.json
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import torch
from _common import finish
from torch import nn

from sieveqa.data.registry import load_dataset
from sieveqa.exported.graphs import LayerGraph
from sieveqa.models.zoo import load_model


class Body(nn.Module):
    """Every layer of the body in one traceable graph."""

    def __init__(self, encoder: nn.Module) -> None:
        super().__init__()
        self.layers = nn.ModuleList(LayerGraph(encoder, i) for i in range(encoder.num_layers))

    def forward(self, hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            hidden = layer(hidden, mask)
        return hidden


def export_whole(encoder: nn.Module, path: Path) -> None:
    sample = (torch.randn(2, 16, encoder.hidden_size), torch.ones(2, 16, dtype=torch.long))
    axes = {
        "hidden": {0: "rows", 1: "tokens"},
        "mask": {0: "rows", 1: "tokens"},
        "out": {0: "rows", 1: "tokens"},
    }
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            Body(encoder).eval(), sample, str(path), input_names=["hidden", "mask"], output_names=["out"],
            dynamic_axes=axes, opset_version=17, dynamo=False,
        )  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="default")
    parser.add_argument("--dataset", default="wikiqa:test")
    parser.add_argument("--limit", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path("bench/results/backends/layers.json"))
    args = parser.parse_args()
    import onnxruntime as ort
    import openvino as ov

    model = load_model(args.model).configure(device="cpu", precision="fp32")
    examples = load_dataset(args.dataset)[: args.limit]
    features = model.featurizer.pairs(
        [ex.question.text for ex in examples for _ in ex.candidates],
        [c.text for ex in examples for c in ex.candidates],
        model.config.max_length,
    )
    with torch.inference_mode():
        batches = [
            (
                model.encoder.embed(b["input_ids"], b["attention_mask"], b["token_type_ids"]),
                b["attention_mask"],
            )
            for _, b in model.batches(features)
        ]
    threads = torch.get_num_threads()
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    core = ov.Core()
    ov_config = {
        "INFERENCE_PRECISION_HINT": "f32",
        "INFERENCE_NUM_THREADS": threads,
        "PERFORMANCE_HINT": "LATENCY",
    }
    with tempfile.TemporaryDirectory() as tmp:
        whole = Path(tmp) / "body.onnx"
        export_whole(model.encoder, whole)
        ort_whole = ort.InferenceSession(str(whole), options, providers=["CPUExecutionProvider"])
        ov_whole = core.compile_model(core.read_model(str(whole)), "CPU", ov_config).create_infer_request()

        def run_torch() -> None:
            with torch.inference_mode():
                for hidden, mask in batches:
                    for i in range(model.encoder.num_layers):
                        hidden = model.encoder.torch_layer(model.encoder.layers[i], hidden, mask)

        def per_layer(backend: str) -> None:
            with torch.inference_mode():
                for hidden, mask in batches:
                    for i in range(layered[backend].encoder.num_layers):
                        hidden = layered[backend].encoder.run_layer(i, hidden, mask)

        def whole_graph(request: object) -> None:
            for hidden, mask in batches:
                feed = {"hidden": hidden.numpy(), "mask": mask.numpy()}
                request.run(None, feed) if isinstance(request, ort.InferenceSession) else request.infer(feed)

        layered = {
            b: load_model(args.model).configure(device="cpu", precision="fp32", backend=b)
            for b in ("onnx", "openvino")
        }
        systems = {
            "torch fp32": run_torch,
            "onnxruntime, one graph per layer": lambda: per_layer("onnx"),
            "onnxruntime, one graph for the body": lambda: whole_graph(ort_whole),
            "openvino, one graph per layer": lambda: per_layer("openvino"),
            "openvino, one graph for the body": lambda: whole_graph(ov_whole),
        }
        times: dict[str, list[float]] = {name: [] for name in systems}
        for fn in systems.values():
            fn()  # warm-up
        for _ in range(args.repeats):
            for name, fn in systems.items():
                start = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - start)
    calls = len(batches) * model.encoder.num_layers
    rows = {
        name: {
            "seconds": round(statistics.median(t), 3),
            "pairs_per_second": round(len(features) / statistics.median(t), 1),
        }
        for name, t in times.items()
    }
    finish(
        args.out,
        "exported_layers",
        {"dataset": args.dataset, "pairs": len(features), "batches": len(batches), "layer_calls": calls,
         "threads": threads, "mean_tokens": float(np.mean(features.lengths)), "results": rows},
    )  # fmt: skip
    for name, row in rows.items():
        print(f"{name:40s} {row}")


if __name__ == "__main__":
    main()
