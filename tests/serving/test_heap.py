"""The heap settings a service starts with (``sieveqa serve --heap``)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from sieveqa.errors import ConfigError
from sieveqa.serving.settings import HEAP_SETTINGS, check_heap

_PROBE = """
import ctypes, sys
from sieveqa.serving.settings import configure_heap
from sieveqa.serving.worker import ModelThread

class Info(ctypes.Structure):
    names = "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost"
    _fields_ = [(n, ctypes.c_size_t) for n in names.split()]

libc = ctypes.CDLL("libc.so.6")
libc.mallinfo2.restype, libc.malloc.restype, libc.free.argtypes = Info, ctypes.c_void_p, [ctypes.c_void_p]

def mapped(size):
    before = libc.mallinfo2().hblks
    block = libc.malloc(size)
    now = libc.mallinfo2().hblks
    libc.free(block)
    return now > before

libc.free(libc.malloc(16 << 20))  # glibc raises its mmap threshold to the largest block freed
print(mapped(8 << 20))  # from the heap, which keeps it once freed
ModelThread()  # a model thread leaves the heap alone
print(configure_heap(sys.argv[1]))
print(mapped(12 << 20))  # more than the heap has free: the heap grew; with the threshold fixed, mmap
"""


def _probe(name: str) -> list[str]:
    if not sys.platform.startswith("linux"):
        pytest.skip("glibc's malloc settings are Linux's")
    command = [sys.executable, "-c", _PROBE, name]
    return subprocess.run(command, capture_output=True, text=True, check=True).stdout.split()


def test_the_fixed_settings_send_large_blocks_back_to_the_system() -> None:
    """After a 16 MiB block was freed, glibc grows its heap for any block up to that size, where
    freed blocks of ever new sizes fragment it (the RAG soak's creeping RSS); ``fixed`` maps them."""
    assert _probe("fixed") == ["False", "True", "True"]


def test_glibc_leaves_the_process_heap_as_it_was() -> None:
    """Nothing but the service's start changes the heap: ``glibc`` not, a model thread not."""
    assert _probe("glibc") == ["False", "True", "False"]


def test_an_unknown_setting_is_refused_naming_the_choices() -> None:
    with pytest.raises(ConfigError, match="--heap 'jemalloc': must be one of glibc, fixed"):
        check_heap("jemalloc")
    assert all(check_heap(name) == name for name in HEAP_SETTINGS)
