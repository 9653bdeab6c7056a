"""One sentence-transformers CrossEncoder backend, timed on request: the race's other side.

Runs in its own virtualenv (``make race-env``: sentence-transformers with its ``onnx`` and ``openvino``
extras, which pin another transformers than sieveqa's), so it imports nothing from sieveqa. It loads
MODEL with BACKEND:PRECISION the way sentence-transformers' efficiency guide says, prints ``ready``,
then answers each ``run`` line on stdin with one JSON line: the seconds one ``predict`` over all pairs
took (and the scores, the first time).

int8: ONNX by ``export_dynamic_quantized_onnx_model`` (the guide's ONNX int8; its config for this
CPU's widest int8 instructions), OpenVINO by ``export_static_quantized_openvino_model``, calibrated on
``--calibration`` sentences (the guide's default calibration set, GLUE SST-2, is a download).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch
from sentence_transformers import CrossEncoder


def _int8_config() -> str:
    flags = Path("/proc/cpuinfo").read_text()
    return "avx512_vnni" if "avx512_vnni" in flags else "avx512" if "avx512f" in flags else "avx2"


def load(model: str, backend: str, precision: str, max_length: int, calibration: Path | None) -> CrossEncoder:
    common = {"device": "cpu", "max_length": max_length}
    if backend == "torch":
        kwargs = {"model_kwargs": {"torch_dtype": torch.bfloat16}} if precision == "bf16" else {}
        return CrossEncoder(model, **common, **kwargs)
    if precision == "fp32":
        return CrossEncoder(model, backend=backend, **common)
    base = CrossEncoder(model, backend=backend, **common)
    if backend == "onnx":
        from sentence_transformers import export_dynamic_quantized_onnx_model

        config = _int8_config()
        export_dynamic_quantized_onnx_model(base, config, model)
        return CrossEncoder(
            model, backend="onnx", model_kwargs={"file_name": f"onnx/model_qint8_{config}.onnx"}, **common
        )
    from sentence_transformers import export_static_quantized_openvino_model

    if calibration is None:
        raise SystemExit("openvino:int8 needs --calibration (a folder with a train.jsonl of {sentence})")
    export_static_quantized_openvino_model(
        base,
        None,
        model,
        dataset_name=str(calibration),
        dataset_config_name="default",
        dataset_split="train",
        column_name="sentence",
    )
    return CrossEncoder(
        model,
        backend="openvino",
        model_kwargs={"file_name": "openvino/openvino_model_qint8_quantized.xml"},
        **common,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--system", required=True, help="BACKEND:PRECISION")
    parser.add_argument("--pairs", type=Path, required=True, help="JSON list of [question, text]")
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--calibration", type=Path, default=None)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    backend, _, precision = args.system.partition(":")
    model = load(args.model, backend, precision, args.max_length, args.calibration)
    pairs = [tuple(p) for p in json.loads(args.pairs.read_text())]
    print("ready", flush=True)
    first = True
    for line in sys.stdin:
        if line.strip() != "run":
            break
        start = time.perf_counter()
        scores = model.predict(pairs, batch_size=args.batch_size, show_progress_bar=False)
        seconds = time.perf_counter() - start
        reply = {"seconds": seconds} | ({"scores": [float(s) for s in scores]} if first else {})
        print(json.dumps(reply), flush=True)
        first = False


if __name__ == "__main__":
    main()
