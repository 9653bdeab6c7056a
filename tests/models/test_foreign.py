"""Cross-encoders trained elsewhere (issue 45): a Hugging Face sequence-classification folder loads as a
sieveqa ranker and scores as ``transformers`` and sentence-transformers do; what cannot is one line."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from sieveqa.errors import ModelFormatError
from sieveqa.models.cross_encoder import CrossEncoder
from sieveqa.models.zoo import load_model
from tests.models.hf_tiny import tiny_distilbert, tiny_hf_cross_encoder

QUESTIONS = ["who discovered penicillin?", "what is the capital of france?", "why is the sea salty?"]
TEXTS = [
    "Alexander Fleming discovered penicillin in 1928.",
    "Paris is the capital of France.",
    "Bees make honey.",
]
KINDS = ["bert", "electra", "roberta", "xlm-roberta"]


def _one_fast(fast: str, kinds: list[str] = KINDS) -> list:
    """``kinds`` as parameters, all but ``fast`` marked slow (make test-slow runs them): the same code
    over another body, kept out of the minute the suite has."""
    return [k if k == fast else pytest.param(k, marks=pytest.mark.slow) for k in kinds]


def _mpnet_installed() -> bool:
    from sieveqa.backbones._mpnet import locate
    from sieveqa.errors import BackboneError

    try:
        locate()
    except BackboneError:
        return False
    return True


def test_an_mpnet_cross_encoder_scores_as_transformers_does(tmp_path: Path) -> None:
    if not _mpnet_installed():
        pytest.skip("all-mpnet-base-v2's parts are not installed (its tokenizer builds the tiny model)")
    path = tiny_hf_cross_encoder("mpnet", tmp_path / "mpnet")
    got = torch.tensor(load_model(path).score_pairs(QUESTIONS, TEXTS))
    assert (got - _hf_logits(path)[:, 0]).abs().max().item() < 1e-4


def _hf_logits(path: Path) -> torch.Tensor:
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    model = AutoModelForSequenceClassification.from_pretrained(path).eval()
    tokenizer = AutoTokenizer.from_pretrained(path)
    with torch.no_grad():
        return model(**tokenizer(QUESTIONS, TEXTS, padding=True, return_tensors="pt")).logits


@pytest.mark.parametrize(
    ("kind", "labels"),
    [*((k, 1) for k in KINDS), ("bert", 2), *(pytest.param(k, 2, marks=pytest.mark.slow) for k in KINDS[1:])],
)
def test_a_foreign_cross_encoder_scores_as_transformers_does(kind: str, labels: int, tmp_path: Path) -> None:
    path = tiny_hf_cross_encoder(kind, tmp_path / kind, labels=labels)
    logits = _hf_logits(path)
    want = logits[:, 0] if labels == 1 else logits[:, 1] - logits[:, 0]  # 2 labels: log-odds of relevant
    model = load_model(path)
    assert isinstance(model, CrossEncoder) and model.config.max_length == 64  # the tokenizer's own limit
    got = torch.tensor(model.score_pairs(QUESTIONS, TEXTS))
    assert (got - want).abs().max().item() < 1e-4
    assert want.std() > 0.01  # the scores differ (far beyond the tolerance): equal ones mean the same model
    assert model.meta["foreign"] == {"architecture": type_name(kind), "labels": labels}


def type_name(kind: str) -> str:
    names = {
        "bert": "Bert",
        "electra": "Electra",
        "roberta": "Roberta",
        "xlm-roberta": "XLMRoberta",
        "mpnet": "MPNet",
    }
    return f"{names[kind]}ForSequenceClassification"


@pytest.mark.slow  # importing sentence-transformers alone takes 2-4 s
@pytest.mark.parametrize("kind", ["bert", "roberta"])
def test_it_scores_as_sentence_transformers_cross_encoder_does(kind: str, tmp_path: Path) -> None:
    st = pytest.importorskip("sentence_transformers")
    path = tiny_hf_cross_encoder(kind, tmp_path / kind)
    theirs = torch.tensor(
        st.CrossEncoder(str(path), device="cpu").predict(list(zip(QUESTIONS, TEXTS, strict=True)))
    )
    ours = torch.sigmoid(
        torch.tensor(load_model(path).score_pairs(QUESTIONS, TEXTS))
    )  # ST's default for 1 label
    assert (theirs - ours).abs().max().item() < 1e-4


def test_layer_by_layer_ranking_matches_the_full_pass(tmp_path: Path) -> None:
    from sieveqa.runtime.policy import load_ranker

    path = tiny_hf_cross_encoder("roberta", tmp_path / "r")
    ranker = load_ranker(str(path), precision="fp32")
    question, docs = QUESTIONS[0], [*TEXTS, "Fleming was Scottish."]
    hits = ranker.rank(question, docs, top_k=len(docs))
    scores = load_model(path).score_pairs([question] * len(docs), docs)
    assert [h["corpus_id"] for h in hits] == sorted(range(len(docs)), key=lambda i: -scores[i])


def test_what_cannot_be_a_ranker_is_one_line_naming_the_folder(tmp_path: Path) -> None:
    import transformers

    tiny = {"hidden_size": 32, "num_attention_heads": 2, "vocab_size": 100}
    tiny_distilbert(tmp_path / "distil")
    with pytest.raises(
        ModelFormatError, match=r"distil: a distilbert cross-encoder: sieveqa runs bert, electra"
    ):
        load_model(tmp_path / "distil")
    transformers.BertModel(
        transformers.BertConfig(num_hidden_layers=1, intermediate_size=64, **tiny)
    ).save_pretrained(tmp_path / "plain")
    with pytest.raises(ModelFormatError, match=r"plain: a BertModel, not a sequence classifier"):
        load_model(tmp_path / "plain")
    labels = transformers.BertForSequenceClassification(
        transformers.BertConfig(num_hidden_layers=1, intermediate_size=64, num_labels=3, **tiny)
    )
    labels.save_pretrained(tmp_path / "three")
    with pytest.raises(ModelFormatError, match=r"three: 3 labels: a ranker needs one relevance score"):
        load_model(tmp_path / "three")


def test_a_sieveqa_export_loads_back_with_the_same_scores(saved_tiny: Path, tmp_path: Path) -> None:
    """``export --format hf`` then load: the round trip keeps the ranking scores (issue 45, part 2)."""
    from sieveqa.exported.hf import export_hf

    original = load_model(saved_tiny)
    back = load_model(export_hf(original, tmp_path / "hf"))
    assert back.meta["foreign"]["architecture"] == "BertForSequenceClassification"
    want = torch.tensor(original.score_pairs(QUESTIONS, TEXTS))
    got = torch.tensor(back.score_pairs(QUESTIONS, TEXTS))
    assert (got - want).abs().max().item() < 1e-4


def _fill_hub_cache(cache: Path, repo: str, source: Path) -> None:
    """A local Hugging Face hub cache holding ``repo`` at ``main``, as a download would leave it."""
    commit = "0" * 40
    folder = cache / f"models--{repo.replace('/', '--')}"
    (folder / "refs").mkdir(parents=True)
    (folder / "refs" / "main").write_text(commit)
    snapshot = folder / "snapshots" / commit
    snapshot.mkdir(parents=True)
    for file in source.iterdir():
        (snapshot / file.name).write_bytes(file.read_bytes())


def test_a_hub_id_loads_from_the_local_hub_cache_offline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The download path, exercised without a network: HF_HUB_OFFLINE=1 over a pre-filled cache."""
    from huggingface_hub import constants

    source = tiny_hf_cross_encoder("bert", tmp_path / "source")
    _fill_hub_cache(tmp_path / "hub", "someone/tiny-reranker", source)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.chdir(tmp_path)  # no local folder "someone"
    model = load_model("someone/tiny-reranker")
    want = torch.tensor(load_model(source).score_pairs(QUESTIONS, TEXTS))
    assert torch.equal(torch.tensor(model.score_pairs(QUESTIONS, TEXTS)), want)
    with pytest.raises(
        ModelFormatError, match=r"'someone/other': no such folder here, not a shipped model, and the Hug"
    ):
        load_model("someone/other")  # offline and not in the cache: one line, no network tried


@pytest.mark.slow
@pytest.mark.parametrize("kind", _one_fast("electra"))  # ELECTRA: embeddings_project and a gelu head
def test_a_foreign_body_runs_on_onnx_runtime_as_in_torch(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("onnxruntime")
    monkeypatch.setenv("SIEVEQA_CACHE", str(tmp_path / "cache"))
    model = load_model(tiny_hf_cross_encoder(kind, tmp_path / kind))  # ELECTRA: embeddings_project, gelu
    reference = torch.tensor(model.score_pairs(QUESTIONS, TEXTS))
    model.configure(backend="onnx")
    assert model.backend == "onnx"
    assert (torch.tensor(model.score_pairs(QUESTIONS, TEXTS)) - reference).abs().max().item() < 1e-4


@pytest.mark.parametrize("kind", _one_fast("bert"))  # BERT's pooler is where the export went wrong
def test_a_foreign_model_exports_back_to_hugging_face_unchanged(kind: str, tmp_path: Path) -> None:
    """Its two-layer head maps back as it is (the export once put the eps pooler in front of it)."""
    from sieveqa.exported.hf import export_hf

    model = load_model(tiny_hf_cross_encoder(kind, tmp_path / kind))
    logits = _hf_logits(export_hf(model, tmp_path / "back"))[:, 0]
    assert (logits - torch.tensor(model.score_pairs(QUESTIONS, TEXTS))).abs().max().item() < 1e-4


def test_a_folder_saved_in_bf16_loads_and_its_retrofit_scores(tmp_path: Path) -> None:
    """transformers 5 loads a folder in its saved dtype: the retrofit cascade's body came back bf16."""
    import shutil

    from transformers import AutoModelForSequenceClassification

    from sieveqa.training.cascade import retrofit_cascade
    from sieveqa.training.config import TrainConfig

    source = tiny_hf_cross_encoder("roberta", tmp_path / "fp32")
    half = tmp_path / "bf16"
    shutil.copytree(source, half)
    AutoModelForSequenceClassification.from_pretrained(source).to(torch.bfloat16).save_pretrained(half)
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text(
        "".join(f'{{"query": "{q}", "text": "{t}"}}\n' for q, t in zip(QUESTIONS, TEXTS, strict=True))
    )
    config = TrainConfig(progress=False, batch_size=4, lr=1e-2, epochs=1)
    retrofit_cascade(
        str(half), f"pairs:{pairs}", tmp_path / "retro", exits=[1, 2, 3], dev=None, config=config
    )
    cascade = load_model(tmp_path / "retro" / "best")
    assert cascade.encoder.backbone.embeddings.word_embeddings.weight.dtype == torch.float32
    assert cascade.exit_scores(QUESTIONS, TEXTS).shape == (3, 3)
    half.rename(tmp_path / "moved")  # the cascade reads its body from there: it says so
    with pytest.raises(ModelFormatError, match=r"its body comes from .*bf16, which is no longer there"):
        load_model(tmp_path / "retro" / "best")


def test_a_folder_without_its_head_weights_is_refused_not_randomised(tmp_path: Path) -> None:
    from safetensors.torch import load_file, save_file

    folder = tiny_hf_cross_encoder("bert", tmp_path / "b")
    weights = load_file(folder / "model.safetensors")
    save_file(
        {k: v for k, v in weights.items() if not k.startswith("classifier.")}, folder / "model.safetensors"
    )
    with pytest.raises(ModelFormatError, match=r"b: its weights lack classifier.bias, classifier.weight"):
        load_model(folder)


@pytest.mark.slow  # OpenVINO compiles each layer's graph: seconds
def test_a_foreign_body_runs_on_openvino_as_in_torch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("openvino")
    monkeypatch.setenv("SIEVEQA_CACHE", str(tmp_path / "cache"))
    model = load_model(tiny_hf_cross_encoder("electra", tmp_path / "e"))
    reference = torch.tensor(model.score_pairs(QUESTIONS, TEXTS))
    model.configure(backend="openvino")
    assert model.backend == "openvino"
    assert (torch.tensor(model.score_pairs(QUESTIONS, TEXTS)) - reference).abs().max().item() < 1e-4


def _damaged(tmp_path: Path, how: str) -> Path:
    import json

    path = tiny_hf_cross_encoder("bert", tmp_path / how)
    weights = path / "model.safetensors"
    if how == "truncated":
        weights.write_bytes(weights.read_bytes()[:1000])
    elif how == "garbled":
        weights.write_bytes(b"\xff" * 64 + weights.read_bytes()[64:])
    elif how == "resized":
        config = json.loads((path / "config.json").read_text())
        (path / "config.json").write_text(json.dumps(config | {"hidden_size": config["hidden_size"] * 2}))
    else:  # no tokenizer
        for file in path.glob("tokenizer*"):
            file.unlink()
    return path


@pytest.mark.parametrize(
    ("how", "says"),
    [
        ("truncated", "transformers cannot load it (Error while deserializing header"),
        ("garbled", "transformers cannot load it (Error while deserializing header"),
        ("resized", "its weights' shapes do not fit the sizes its config.json gives"),
        ("untokenized", "no tokenizer in it (none of tokenizer.json, vocab.txt"),
    ],
)
def test_a_damaged_hugging_face_folder_is_one_line_naming_the_damage(
    how: str, says: str, tmp_path: Path
) -> None:
    # found by a hostile probe: each was a traceback (or, without a tokenizer, every word an [UNK])
    path = _damaged(tmp_path, how)
    with pytest.raises(ModelFormatError, match=re.escape(says)):
        load_model(str(path))
