"""Error helpers: messages stay short, optional dependencies name the extra that installs them."""

import pytest

from sieveqa.errors import MissingExtraError, SieveQAError, require_extra, shorten


def test_shorten_keeps_short_text_and_cuts_long_text_saying_how_long() -> None:
    assert shorten("short") == "short"
    assert shorten(["a", 1]) == "['a', 1]"
    long = "x" * 5000
    cut = shorten(long, 20)
    assert cut.startswith("x" * 19 + "…") and cut.endswith("(5,000 characters)")


def test_a_missing_optional_package_names_its_extra() -> None:
    with pytest.raises(
        MissingExtraError, match=r"plotting needs 'no_such_pkg': pip install 'sieveqa\[plot\]'"
    ):
        require_extra("no_such_pkg.sub", "plot", "plotting")
    assert issubclass(MissingExtraError, SieveQAError) and issubclass(MissingExtraError, ImportError)
    assert require_extra("json", "none", "reading").dumps([]) == "[]"
