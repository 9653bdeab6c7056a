"""The HTTP service (FastAPI, micro-batched), its web page, and batch ranking on Ray.

    >>> from sieveqa.serving import Service, create_app
    >>> app = create_app(Service.load("default", index="runs/demo-index"))

The app needs the ``serve`` extra (``pip install 'sieveqa[serve]'``), Ray the ``ray`` extra; names
are imported on first use, so the settings here load without either.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sieveqa.lazy import lazy_getattr

_EXPORTS = {
    "create_app": "sieveqa.serving.app",
    "serve_in_thread": "sieveqa.serving.app",
    "MicroBatcher": "sieveqa.serving.batcher",
    "Batching": "sieveqa.serving.settings",
    "Limits": "sieveqa.serving.settings",
    "RequestError": "sieveqa.serving.service",
    "Service": "sieveqa.serving.service",
}
__all__ = sorted(_EXPORTS)


__getattr__ = lazy_getattr("sieveqa.serving", _EXPORTS)


if TYPE_CHECKING:
    from sieveqa.serving.app import create_app
    from sieveqa.serving.batcher import MicroBatcher
    from sieveqa.serving.service import RequestError, Service
    from sieveqa.serving.settings import Batching, Limits
