"""Static int8 copies of the per-layer graphs, calibrated on recorded layer inputs.

*Static*: activation ranges are fixed from a calibration slice instead of measured on every call
(dynamic quantization), so the int8 kernels run back to back without a range pass per matrix.
ONNX Runtime: its quantizer, QDQ format, int8 weights per output channel, uint8 activations, only the
matrix products quantized (LayerNorm, softmax and GELU stay fp32, where int8 costs the most
accuracy for the least time). OpenVINO: NNCF's post-training quantization with its transformer
preset (it keeps the same sensitive operations in floating point).
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from sieveqa.errors import require_extra
from sieveqa.exported.graphs import layer_file

Samples = Sequence[dict[str, np.ndarray]]


def quantize_onnx(source: Path, target: Path, index: int, samples: Samples) -> str:
    """Write the int8 copy of ``source``'s layer ``index`` into ``target``; returns its file name."""
    quantization = require_extra("onnxruntime.quantization", "onnx", "int8 export for ONNX Runtime")

    class Reader(quantization.CalibrationDataReader):
        def __init__(self) -> None:
            self._items = iter(samples)

        def get_next(self) -> dict[str, np.ndarray] | None:
            return next(self._items, None)

    name = layer_file(index)
    prepared = target / f"prepared-{name}"
    with _quiet():
        # ONNX Runtime's advice before static quantization: shape inference and graph optimization,
        # so the quantizer sees fused MatMuls with known shapes.
        quantization.shape_inference.quant_pre_process(str(source / name), str(prepared))
        quantization.quantize_static(
            str(prepared),
            str(target / name),
            Reader(),
            quant_format=quantization.QuantFormat.QDQ,
            per_channel=True,
            op_types_to_quantize=["MatMul"],
            activation_type=quantization.QuantType.QUInt8,
            weight_type=quantization.QuantType.QInt8,
            calibrate_method=quantization.CalibrationMethod.MinMax,
        )
    prepared.unlink()
    return name


def convert_openvino(source: Path, target: Path, index: int, samples: Samples | None) -> str:
    """Convert ``source``'s ONNX layer ``index`` to OpenVINO IR in ``target`` (int8 through NNCF when
    ``samples`` are given); returns the .xml name (its weights are the .bin beside it)."""
    ov = require_extra("openvino", "openvino", "export to OpenVINO")
    model = ov.convert_model(str(source / layer_file(index)))
    if samples is not None:
        nncf = require_extra("nncf", "openvino", "int8 export for OpenVINO")
        with _quiet():
            model = nncf.quantize(
                model,
                nncf.Dataset(list(samples)),
                model_type=nncf.ModelType.TRANSFORMER,
                subset_size=len(samples),
            )
    name = layer_file(index, ".xml")
    ov.save_model(model, str(target / name), compress_to_fp16=False)
    return name


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Silence the quantizers' own progress bars and INFO logs (the CLI shows one bar for the export)."""
    loggers = [logging.getLogger(name) for name in ("nncf", "root")]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.ERROR)
    with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
        stderr, sys.stderr = sys.stderr, sink
        try:
            yield
        finally:
            sys.stderr = stderr
            for lg, level in zip(loggers, levels, strict=True):
                lg.setLevel(level)
