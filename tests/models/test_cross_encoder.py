import json
from pathlib import Path

import pytest
import torch

from sieveqa.data.jsonl import read_jsonl
from sieveqa.errors import ModelFormatError
from sieveqa.io import file_sha256
from sieveqa.models.cross_encoder import CrossEncoder
from sieveqa.models.encoder_model import WORD_EMBEDDINGS


def test_scores_do_not_depend_on_batching(tiny_model, example_jsonl: Path) -> None:
    examples = read_jsonl(example_jsonl)
    whole = tiny_model.configure(batch_size=64).run(examples)
    pieces = tiny_model.configure(batch_size=3).score(examples)
    for a, b in zip(whole.scores, pieces, strict=True):
        assert a == pytest.approx(b, abs=1e-5)
    assert whole.n_pairs == sum(len(e.candidates) for e in examples)
    assert whole.cost.layer_units == 4 * whole.n_pairs and whole.cost.sequences == whole.n_pairs
    assert whole.cost.seconds > 0 and whole.pairs_per_second > 0


def test_rank_sorts_by_score(tiny_model, example_jsonl: Path) -> None:
    examples = read_jsonl(example_jsonl)
    for ex, ranked in zip(examples, tiny_model.rank_examples(examples), strict=True):
        assert [s.rank for s in ranked] == list(range(1, len(ex.candidates) + 1))
        scores = [s.score for s in ranked]
        assert scores == sorted(scores, reverse=True)
        assert {s.candidate.id for s in ranked} == {c.id for c in ex.candidates}


def test_save_load_round_trip_fp16(tiny_model, example_jsonl: Path, tmp_path: Path) -> None:
    examples = read_jsonl(example_jsonl)
    before = tiny_model.score(examples)
    tiny_model.save_pretrained(tmp_path / "m")
    loaded = CrossEncoder.from_pretrained(tmp_path / "m")
    for a, b in zip(before, loaded.score(examples), strict=True):
        assert a == pytest.approx(b, abs=1e-3)


def test_load_refuses_missing_tensors(tiny_model, tmp_path: Path) -> None:
    from safetensors.torch import load_file, save_file

    tiny_model.save_pretrained(tmp_path / "m")
    weights = tmp_path / "m" / "model.safetensors"
    state = load_file(str(weights))
    state.pop("head.1.weight")
    save_file(state, str(weights))
    config = json.loads((tmp_path / "m" / "config.json").read_text())
    config["weights_sha256"] = file_sha256(weights)  # a consistent file that lacks a tensor
    (tmp_path / "m" / "config.json").write_text(json.dumps(config))
    with pytest.raises(ModelFormatError, match=r"missing \['head\.1\.weight'\]"):
        CrossEncoder.from_pretrained(tmp_path / "m")


def test_not_a_model_folder(tmp_path: Path) -> None:
    with pytest.raises(ModelFormatError, match="neither a shipped model"):
        CrossEncoder.from_pretrained(tmp_path / "nothing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelFormatError, match="not a sieveqa model folder"):
        CrossEncoder.from_pretrained(tmp_path / "empty")


def test_a_training_runs_folder_points_at_its_model(tiny_model, tmp_path: Path) -> None:
    """`train --out runs/own` writes runs/own/best: the run's folder given as a model, or as --init,
    named only what a model folder needs (or listed the backbones)."""
    from sieveqa.backbones import load_backbone
    from sieveqa.errors import BackboneError

    tiny_model.save_pretrained(tmp_path / "run" / "best")
    says = f"; a training run's folder: its model is {tmp_path / 'run' / 'best'}"
    with pytest.raises(ModelFormatError, match="not a sieveqa model folder") as err:
        CrossEncoder.from_pretrained(tmp_path / "run")
    assert str(err.value).endswith(says)
    with pytest.raises(BackboneError, match="unknown backbone") as err:
        load_backbone(str(tmp_path / "run"))
    assert str(err.value).endswith(says)


@pytest.mark.parametrize("precision", ["bf16", "int8"])
def test_reduced_precision_stays_close(tiny_model, example_jsonl: Path, precision: str) -> None:
    examples = read_jsonl(example_jsonl)
    ref = tiny_model.score(examples)
    low = tiny_model.configure(precision=precision).score(examples)
    ref_t = torch.tensor([x for row in ref for x in row])
    low_t = torch.tensor([x for row in low for x in row])
    # bf16 keeps ~3 significant digits; int8 quantizes weights per tensor. Both stay near fp32.
    assert (ref_t - low_t).abs().max() < 0.05
    assert not torch.equal(ref_t, low_t)


@pytest.mark.real
def test_real_model_excludes_frozen_embeddings(tmp_path: Path) -> None:
    model = CrossEncoder()
    model.save_pretrained(tmp_path / "m")
    size_mb = (tmp_path / "m" / "model.safetensors").stat().st_size / 1e6
    assert size_mb < 25
    from safetensors import safe_open

    with safe_open(str(tmp_path / "m" / "model.safetensors"), "pt") as f:
        assert not any(k.startswith(WORD_EMBEDDINGS) for k in f.keys())  # noqa: SIM118
    # A different base (here: perturbed embeddings) is refused, not silently mixed in.
    with torch.no_grad():
        emb = model.encoder.backbone.embeddings.word_embeddings.weight
        assert emb.requires_grad is False


def test_windows_read_a_long_text_whole_and_keep_its_best_score(tiny_model) -> None:
    short = "the answer is here."
    long = " ".join(["filler words"] * 60) + " " + short
    plain, _ = tiny_model.score_matrix(["q?", "q?"], [long, short], last_only=True)
    windowed, cost = tiny_model.score_matrix(["q?", "q?"], [long, short], last_only=True, windows=True)
    assert windowed.shape == plain.shape and cost.sequences > 2
    assert torch.allclose(windowed[1], plain[1], atol=1e-5)  # a text that fits scores as before
    # The first window is the truncated text (equal up to float noise); later ones may score higher.
    assert windowed[0] >= plain[0] - 1e-5


def test_a_judge_starts_from_a_reader_body_with_a_new_head(tmp_path: Path) -> None:
    """``train --arch cross-encoder --init READER``: the reader's body, read whole, and a fresh head."""
    from sieveqa.models.cross_encoder import CrossEncoderConfig
    from sieveqa.models.reader import ReaderConfig, ReaderModel
    from sieveqa.training.run import init_model

    torch.manual_seed(3)
    reader = ReaderModel(ReaderConfig(backbone="tiny", max_length=32))
    reader.save_pretrained(tmp_path / "reader")
    judge = init_model(str(tmp_path / "reader"), "cross-encoder", {"max_length": 48})
    assert isinstance(judge, CrossEncoder) and judge.config.max_length == 48
    saved = ReaderModel.from_pretrained(tmp_path / "reader").encoder.state_dict()
    for name, weight in judge.encoder.state_dict().items():
        assert torch.equal(weight, saved[name]), name
    fresh = CrossEncoder(CrossEncoderConfig(backbone="tiny"))
    assert judge.head.state_dict().keys() == fresh.head.state_dict().keys()


def test_a_ranker_reads_a_long_text_in_windows_unless_told_to_cut_it(tiny_model) -> None:
    """The plain ranking path (run, score_pairs: eval, rank, /rerank) read only a passage's first
    max_length tokens; it now reads the whole in windows, as PEASI's passage reranker does."""
    from sieveqa.data.records import Candidate, Question, RankingExample

    long = " ".join(["filler words"] * 60) + " the answer is here."
    example = RankingExample(Question("q", "q?"), [Candidate("a", long), Candidate("b", "short one")])
    windowed, _ = tiny_model.score_matrix(["q?", "q?"], [long, "short one"], last_only=True, windows=True)
    cut, _ = tiny_model.score_matrix(["q?", "q?"], [long, "short one"], last_only=True)
    assert tiny_model.windows is True
    result = tiny_model.run([example])
    assert result.scores[0] == pytest.approx(windowed[:, 0].tolist(), abs=1e-5) and result.cost.sequences > 2
    assert tiny_model.score_pairs(["q?"], [long]) == pytest.approx([windowed[0, 0].item()], abs=1e-5)
    tiny_model.windows = False
    assert tiny_model.run([example]).scores[0] == pytest.approx(cut[:, 0].tolist(), abs=1e-5)


def test_the_progress_bar_knows_its_total_when_reading_windows(tiny_model, monkeypatch) -> None:
    """Reading windows, the bar had no total (the windows are counted only as texts are read)."""
    import sieveqa.batching as batching

    bars = []

    class Bar:
        def __init__(self, total=None, **_: object) -> None:
            self.total, self.done = total, 0
            bars.append(self)

        def __enter__(self) -> "Bar":
            return self

        def __exit__(self, *_: object) -> None:
            return None

        def update(self, n: int) -> None:
            self.done += n

        def refresh(self) -> None:
            return None

    monkeypatch.setattr(batching, "tqdm", Bar)
    long = " ".join(["filler words"] * 60) + " the answer is here."
    _, cost = tiny_model.score_matrix(["q?", "q?"], [long, "short"], progress=True, windows=True)
    (bar,) = bars
    assert bar.total == bar.done == cost.sequences > 2
