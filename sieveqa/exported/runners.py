"""Layer runners over exported graphs: ONNX Runtime sessions or OpenVINO compiled models, one per
layer, called by :meth:`~sieveqa.encoder.SteppableEncoder.run_layer` in place of torch.

Both are safe to call from many threads at once: an ONNX Runtime session's ``run`` is, and an
OpenVINO infer request is not, so each thread gets its own request per layer.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from sieveqa.errors import require_extra


def _arrays(hidden: Tensor, mask: Tensor) -> dict[str, Any]:
    return {
        "hidden": hidden.detach().float().contiguous().numpy(),
        "mask": mask.detach().to(torch.int64).contiguous().numpy(),
    }


class OnnxRuntimeLayers:
    """The body's layers as ONNX Runtime sessions on the CPU, with ``threads`` intra-op threads."""

    def __init__(self, folder: Path, files: list[str], threads: int) -> None:
        ort = require_extra("onnxruntime", "onnx", "--backend onnx")
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        # One session per layer means one thread pool per layer: spinning pools waiting for their next
        # call would take the cores from the layer that runs (measured: 1.8x slower with spinning).
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.sessions = [
            ort.InferenceSession(str(folder / name), options, providers=["CPUExecutionProvider"])
            for name in files
        ]

    def run(self, index: int, hidden: Tensor, mask: Tensor) -> Tensor:
        return torch.from_numpy(self.sessions[index].run(None, _arrays(hidden, mask))[0])


class OpenVinoLayers:
    """The body's layers compiled by OpenVINO for the CPU; ``precision`` is its inference precision
    (``fp32``, or ``bf16`` where the CPU has it natively; an int8 export keeps int8 where NNCF put it)."""

    def __init__(self, folder: Path, files: list[str], threads: int, precision: str) -> None:
        ov = require_extra("openvino", "openvino", "--backend openvino")
        core = ov.Core()
        config = {
            "INFERENCE_PRECISION_HINT": "bf16" if precision == "bf16" else "f32",
            "INFERENCE_NUM_THREADS": threads,
            "PERFORMANCE_HINT": "LATENCY",
        }
        self.compiled = [
            core.compile_model(core.read_model(str(folder / name)), "CPU", config) for name in files
        ]
        self._local = threading.local()

    def run(self, index: int, hidden: Tensor, mask: Tensor) -> Tensor:
        requests = self._local.__dict__.setdefault("requests", {})
        request = requests.get(index)
        if request is None:
            request = requests[index] = self.compiled[index].create_infer_request()
        out = request.infer(_arrays(hidden, mask))
        # The request reuses its output buffer on the next call: copy before handing it on.
        return torch.from_numpy(out[0].copy())
