import subprocess
import sys

import sieveqa


def test_every_public_name_resolves() -> None:
    for name in sieveqa.__all__:
        assert getattr(sieveqa, name) is not None, name


def test_import_is_light() -> None:
    # `sieveqa --help` must not pay for torch and transformers.
    code = "import sys, sieveqa, sieveqa.cli; print('torch' in sys.modules, 'transformers' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def test_unknown_name() -> None:
    import pytest

    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        sieveqa.Nope  # noqa: B018
