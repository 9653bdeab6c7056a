"""--format hf: a folder transformers and sentence-transformers load, scoring as sieveqa does."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from sieveqa.errors import ConfigError
from sieveqa.exported.hf import export_hf, hf_refusal

PAIRS = [
    ("who wrote hamlet", "shakespeare wrote hamlet around 1600"),
    ("who wrote hamlet", "the play is set in denmark"),
    ("what is water", "water is h2o, a molecule of hydrogen and oxygen"),
    # Cut to the limit the same way: the candidate is the longer side (a long question is cut
    # otherwise by Hugging Face, which the module's docstring says).
    ("what is water", "water is a molecule " * 30),
]


@pytest.mark.slow
def test_transformers_and_sentence_transformers_score_as_sieveqa(tiny_model, tmp_path) -> None:
    from sentence_transformers import CrossEncoder
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    model = tiny_model.configure(precision="fp32")
    with torch.no_grad():  # a head far from zero, so that a lost scale would show
        model.head.output.weight.mul_(50.0)
    out = export_hf(model, tmp_path / "hf")
    model.windows = False  # transformers and sentence-transformers cut a long text; sieveqa reads windows
    ours = model.predict(PAIRS)
    st = CrossEncoder(str(out), device="cpu").predict(PAIRS)
    assert np.abs(st - ours).max() <= 1e-4
    hf = AutoModelForSequenceClassification.from_pretrained(out).eval()
    tokenizer = AutoTokenizer.from_pretrained(out)
    batch = tokenizer([q for q, _ in PAIRS[:3]], [t for _, t in PAIRS[:3]], padding=True, return_tensors="pt")
    with torch.no_grad():
        logits = hf(**batch).logits.squeeze(-1)
    raw = model.predict(PAIRS[:3], activation_fn=torch.nn.Identity())
    assert np.abs(logits.numpy() - raw).max() <= 1e-4


def test_models_without_an_equivalent_say_so(tiny_cascade, tiny_model) -> None:
    assert "cascade has no Hugging Face equivalent" in hf_refusal(tiny_cascade)
    tiny_model.config.pooling = "mean"
    with pytest.raises(ConfigError, match="pooling 'mean' has no Hugging Face equivalent"):
        export_hf(tiny_model, Path("/nonexistent"))


def test_a_failed_save_leaves_nothing_and_is_one_line(tiny_model, tmp_path, monkeypatch) -> None:
    """A full disk left a hidden `.OUT.*.partial` folder with the weights and a raw OSError (issue 42)."""
    import errno

    from transformers import PreTrainedTokenizerBase

    def full(self, *args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(PreTrainedTokenizerBase, "save_pretrained", full)
    with pytest.raises(
        ConfigError, match=r"out: could not write the export there \(No space left on device\)$"
    ):
        export_hf(tiny_model, tmp_path / "out")
    assert list(tmp_path.iterdir()) == []


def test_a_base_with_two_labels_exports_one_without_a_warning(tiny_model, tmp_path, caplog) -> None:
    """all-MiniLM's config names two labels: transformers warned of num_labels=1 against them."""
    backbone = tiny_model.encoder.backbone.config
    backbone.id2label, backbone.label2id = {0: "LABEL_0", 1: "LABEL_1"}, {"LABEL_0": 0, "LABEL_1": 1}
    with caplog.at_level("WARNING"):
        export_hf(tiny_model, tmp_path / "hf")
    assert "incompatible" not in caplog.text
    assert json.loads((tmp_path / "hf" / "config.json").read_text())["id2label"] == {"0": "LABEL_0"}
