"""Devices and precisions: auto picks what the hardware does natively; impossible choices are refused."""

import pytest
import torch

from sieveqa import device
from sieveqa.errors import DeviceError


def test_auto_device_is_cuda_only_when_one_is_visible() -> None:
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert device.resolve_device("auto").type == expected
    assert device.resolve_device("cpu").type == "cpu"
    with pytest.raises(DeviceError, match="device must be one of auto, cpu, cuda, got 'tpu'"):
        device.resolve_device("tpu")


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is visible")
def test_cuda_without_a_gpu_is_an_error() -> None:
    with pytest.raises(DeviceError, match="no CUDA GPU is visible"):
        device.resolve_device("cuda")


@pytest.mark.parametrize(
    ("flags", "expected"),
    [({"avx2"}, "fp32"), ({"avx2", "avx512f", "avx512_bf16"}, "bf16"), ({"avx2", "amx_bf16"}, "bf16")],
)
def test_auto_precision_on_a_cpu_follows_native_bf16(monkeypatch, flags: set[str], expected: str) -> None:
    monkeypatch.setattr(device, "cpu_info", lambda: ("test cpu", frozenset(flags)))
    assert device.resolve_precision("auto", torch.device("cpu")) == expected


def test_bf16_asked_for_without_bf16_units_is_said_once(monkeypatch, caplog) -> None:
    """teacher-scores --precision bf16 on an AVX2 CPU scored 8x slower than fp32, without a word."""
    device._warn_emulated_bf16.cache_clear()
    monkeypatch.setattr(device, "cpu_info", lambda: ("test cpu", frozenset({"avx2", "amx_bf16"})))
    assert device.resolve_precision("bf16", torch.device("cpu")) == "bf16" and not caplog.records
    monkeypatch.setattr(device, "cpu_info", lambda: ("test cpu", frozenset({"avx2"})))
    for _ in range(2):
        assert device.resolve_precision("bf16", torch.device("cpu")) == "bf16"
    assert device.resolve_precision("auto", torch.device("cpu")) == "fp32"
    assert len(caplog.records) == 1
    assert caplog.records[0].getMessage().startswith("bf16 on this CPU (test cpu: no AVX512-BF16 or AMX)")
    device._warn_emulated_bf16.cache_clear()


def test_impossible_precisions_are_refused() -> None:
    cpu = torch.device("cpu")
    assert device.resolve_precision("int8", cpu) == "int8"
    with pytest.raises(DeviceError, match="fp16 is for CUDA"):
        device.resolve_precision("fp16", cpu)
    with pytest.raises(DeviceError, match=r"int8 .* CPU only"):
        device.resolve_precision("int8", torch.device("cuda"))
    with pytest.raises(DeviceError, match="precision must be one of"):
        device.resolve_precision("fp8", cpu)


def test_autocast_is_bf16_only_when_asked() -> None:
    a, b = torch.randn(4, 4), torch.randn(4, 4)
    with device.autocast(torch.device("cpu"), "bf16"):
        assert (a @ b).dtype == torch.bfloat16
    with device.autocast(torch.device("cpu"), "fp32"):
        assert (a @ b).dtype == torch.float32


@pytest.mark.parametrize("bf16", [True, False])
def test_auto_precision_on_cuda_is_fp32_for_inference_and_half_for_training(monkeypatch, bf16: bool) -> None:
    """A GPU check found a fresh process 4-5x slower in half precision (a kernel per new shape)."""
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *args, **kwargs: bf16)
    assert device.resolve_precision("auto", torch.device("cuda")) == "fp32"
    assert device.resolve_precision("auto", torch.device("cuda"), training=True) == (
        "bf16" if bf16 else "fp16"
    )


def test_trim_heap_gives_back_glibcs_free_pages_and_is_quiet_elsewhere(monkeypatch) -> None:
    import platform

    from sieveqa import device

    if platform.libc_ver()[0] == "glibc":
        assert device._malloc_trim() is not None  # the real lookup finds it
    calls: list[int] = []
    monkeypatch.setattr(device, "_malloc_trim", lambda: calls.append)
    device.trim_heap()
    assert calls == [0]
    monkeypatch.setattr(device, "_malloc_trim", lambda: None)
    device.trim_heap()  # no glibc: nothing to call, no error
    assert calls == [0]


@pytest.mark.slow  # two fresh processes (~10 s each on 2 busy cores); the mechanism is tested below too
def test_the_threads_option_sizes_torch_and_the_tokenizer_of_a_command() -> None:
    """`sieveqa --threads N` (through ``thread_env``, which Ray actors and replicas get too) sizes torch's
    pool and nanotoken's rayon pool: it took every core, whatever was asked."""
    import os
    import subprocess
    import sys

    pytest.importorskip("nanotoken")
    script = (
        "import os, sys, torch\n"
        "from sieveqa.cli import app\n"
        "try:  # a command refused at once: the option acts before the command runs\n"
        "    app(['--threads', sys.argv[1], 'rank', '--input', '/nonexistent'], standalone_mode=False)\n"
        "except SystemExit:\n"
        "    pass\n"
        "from sieveqa.models.cross_encoder import CrossEncoder, CrossEncoderConfig\n"
        "fast = CrossEncoder(CrossEncoderConfig(backbone='tiny', max_length=64)).featurizer._fast\n"
        "fast.encode_batch_list([f'hello world {i}' for i in range(5000)], add_special_tokens=False)\n"
        "print('THREADS', torch.get_num_threads(), len(os.listdir('/proc/self/task')))\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "RAYON_NUM_THREADS")}
    found = {}
    for n in (1, 3):
        out = subprocess.run([sys.executable, "-c", script, str(n)], env=env, capture_output=True, text=True)
        line = [x for x in out.stdout.splitlines() if x.startswith("THREADS")]
        assert line, out.stderr[-2000:]
        found[n] = tuple(map(int, line[-1].split()[1:]))
    assert found[1][0] == 1 and found[3][0] == 3  # torch's intra-op pool
    assert found[3][1] - found[1][1] >= 2  # rayon's pool (and OpenMP's team) grew with it


def test_use_threads_resizes_torch_in_a_running_process(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    from sieveqa.device import use_threads

    for name in ("OMP_NUM_THREADS", "RAYON_NUM_THREADS"):
        monkeypatch.setenv(name, "0")  # recorded, so put back as they were (or unset) after the test
        monkeypatch.delenv(name)
    before = torch.get_num_threads()
    try:
        use_threads(1)
        assert torch.get_num_threads() == 1 and os.environ["RAYON_NUM_THREADS"] == "1"
        assert os.environ["OMP_NUM_THREADS"] == "1"  # what a process started from here (Ray's) reads
    finally:
        torch.set_num_threads(before)
