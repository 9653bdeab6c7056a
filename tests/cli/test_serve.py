"""``sieveqa serve``: refusals before any model loads, and a shutdown that finishes requests in flight."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.cli.conftest import one_error_line


def _reranks_received(url: str) -> float:
    """/rerank requests the server has begun (in progress) or answered, from its /metrics."""
    text = httpx.get(f"{url}/metrics").text
    return sum(
        sample.value
        for family in text_string_to_metric_families(text)
        if family.name in ("sieveqa_requests_in_progress", "sieveqa_requests")
        for sample in family.samples
        if sample.labels.get("endpoint") == "/rerank" and not sample.name.endswith("_created")
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_taken_port_is_one_error_line(sieveqa) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        line = one_error_line(sieveqa("serve", "--model", "no-such-model", "--port", port))
    assert f"--port {port}: the address is in use" in line


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--max-texts", "0"], "max_texts must be >= 1"),
        (["--timeout-s", "nan"], "timeout_s is not a number"),  # it passed: NaN < 1 is false
        (["--result-cache-mb", "-1"], "result_cache_mb must be >= 0"),
        (["--max-wait-ms", "-1"], "max_wait_ms >= 0"),
        (["--port", "70000"], "--port 70000: must be in 0..65535"),
        (["--budget-ms", "100"], "--budget-ms goes with --index: it chooses how /answer runs"),
        (["--heap", "tcmalloc"], "--heap 'tcmalloc': must be one of glibc, fixed"),
        (["--long-texts", "truncate"], "--long-texts must be one of windows, cut, got 'truncate'"),
    ],
)
def test_bad_settings_are_one_error_line(sieveqa, args: list[str], says: str) -> None:
    assert says in one_error_line(sieveqa("serve", *args))


def test_a_missing_index_is_refused_before_the_model_loads(sieveqa, tmp_path: Path) -> None:
    line = one_error_line(sieveqa("serve", "--index", tmp_path / "nothing", "--port", _free_port()))
    assert "nothing" in line


# 10-30 s on an idle CPU; the grace and timeouts leave room for a loaded one (training beside it ran
# the same requests in about 40 s).
@pytest.mark.slow  # a real server process; .ci/run runs it apart (make test-shutdown)
def test_sigterm_finishes_the_requests_in_flight(saved_tiny: Path) -> None:
    port = _free_port()
    command = [str(Path(sys.executable).parent / "sieveqa"), "serve", "--model", str(saved_tiny)]
    server = subprocess.Popen(
        # A long deadline: the texts a request may hold are fitted to it at load, on a machine the
        # suite keeps busy.
        [*command, "--port", str(port), "--grace", "90", "--timeout-s", "600"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    # Four requests of 1,000 long texts: about a second of work for the tiny model on this CPU.
    body = {"query": "who wrote hamlet and when", "texts": [f"{i} " + "x " * 60 for i in range(1000)]}
    got: list[tuple[int, float]] = []

    def send(n: int) -> None:  # four queries: identical requests would share one job
        response = httpx.post(f"{url}/rerank", json={**body, "query": f"{body['query']} {n}"}, timeout=120)
        got.append((response.status_code, time.monotonic()))

    try:
        for _ in range(300):
            try:
                if httpx.get(f"{url}/health").status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.05)
        senders = [threading.Thread(target=send, args=(n,)) for n in range(4)]
        for t in senders:
            t.start()
        # Signal once the server has all four (a request still being sent is not yet in flight).
        for _ in range(600):
            if (received := _reranks_received(url)) >= 4:
                break
            time.sleep(0.02)
        else:
            pytest.fail(f"the server received {received:g} of the 4 requests (600 looks, 20 ms apart)")
        signalled = time.monotonic()
        server.send_signal(signal.SIGTERM)
        for t in senders:
            t.join(120)
        # uvicorn re-raises the signal once it has shut down, so the exit is SIGTERM's own.
        assert server.wait(30) in (0, -signal.SIGTERM)
    finally:
        server.kill()
    assert [code for code, _ in got] == [200] * 4, server.stdout.read() if server.stdout else ""
    assert max(when for _, when in got) > signalled  # work was still in flight at the signal
