"""Exported bodies: the steppable encoder's layers on ONNX Runtime or OpenVINO, fp32 or static int8.

``EncoderModel.configure(backend="onnx" | "openvino")`` finds (or, for fp32, makes) the export of its
body and runs every body layer there; ``sieveqa export`` makes int8 exports, calibrated on a dev slice.
"""

from sieveqa.exported.store import (
    BACKENDS,
    FORMATS,
    attach,
    backend_precision,
    build_export,
    device_for,
    export_folder,
    open_runner,
)

__all__ = [
    "BACKENDS",
    "FORMATS",
    "attach",
    "backend_precision",
    "build_export",
    "device_for",
    "export_folder",
    "open_runner",
]
