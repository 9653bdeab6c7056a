"""Prometheus metrics of one app: requests (done and in progress), latency, batches, queue depth
and compute spent.

Each app has its own registry, so several apps (tests, one process serving two models) never clash.
"""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from sieveqa.serving.batcher import BatchStats

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_SECONDS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
_POWERS = tuple(float(2**i) for i in range(13))  # 1 ... 4096


class Metrics:
    """The service's counters, histograms and gauges, rendered in Prometheus' text format."""

    def __init__(self, queue_depth: Callable[[], float]) -> None:
        r = self.registry = CollectorRegistry()
        self.requests = Counter(
            "sieveqa_requests",
            "HTTP requests by endpoint and status code",
            ["endpoint", "status"],
            registry=r,
        )
        self.in_progress = Gauge(
            "sieveqa_requests_in_progress",
            "HTTP requests received and not yet answered, by endpoint",
            ["endpoint"],
            registry=r,
        )
        self.latency = Histogram(
            "sieveqa_request_seconds",
            "Time from request to response",
            ["endpoint"],
            buckets=_SECONDS,
            registry=r,
        )
        self.queue_seconds = Histogram(
            "sieveqa_queue_seconds",
            "Time a rerank request waited for its batch",
            buckets=_SECONDS,
            registry=r,
        )
        self.batch_requests = Histogram(
            "sieveqa_batch_requests", "Requests per micro-batch", buckets=_POWERS[:9], registry=r
        )
        self.batch_pairs = Histogram(
            "sieveqa_batch_pairs", "Pairs per micro-batch", buckets=_POWERS, registry=r
        )
        self.batch_seconds = Histogram(
            "sieveqa_batch_seconds", "Compute time per micro-batch", buckets=_SECONDS, registry=r
        )
        self.pairs = Counter("sieveqa_pairs", "Pairs scored by /rerank", registry=r)
        self.layer_units = Counter(
            "sieveqa_layer_units",
            "Transformer layer-units spent (one layer over one input)",
            ["endpoint"],
            registry=r,
        )
        self.inferences = Counter("sieveqa_inferences", "Transformer inputs run", ["endpoint"], registry=r)
        depth = Gauge("sieveqa_queue_depth", "Requests waiting for the model", registry=r)
        depth.set_function(queue_depth)

    def batch(self, stats: BatchStats) -> None:
        """Record one micro-batch (the batcher's ``on_batch``)."""
        self.batch_requests.observe(stats.requests)
        self.batch_pairs.observe(stats.pairs)
        self.batch_seconds.observe(stats.seconds)
        self.pairs.inc(stats.pairs)
        self.layer_units.labels("rerank").inc(stats.layer_units)
        self.inferences.labels("rerank").inc(stats.pairs)

    def render(self) -> bytes:
        return generate_latest(self.registry)
