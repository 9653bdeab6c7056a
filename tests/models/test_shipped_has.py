"""The shipped HAS model searches a store of the demo corpus's sentences (real weights)."""

from pathlib import Path

import pytest

from sieveqa.data.formats import read_documents
from sieveqa.data.sentences import split_sentences
from sieveqa.models.zoo import SHIPPED
from sieveqa.runtime.store.answer_store import AnswerStore
from sieveqa.runtime.store.format import store_model
from sieveqa.runtime.store.ranker import SearchSettings, StoreRanker

pytestmark = pytest.mark.real

QUESTIONS = {
    "Who invented the Fresnel lens?": "Augustin-Jean Fresnel",
    "What protein carries oxygen in octopus blood?": "haemocyanin",
    "When was the pneumatic tyre patented?": "1888",
}


def test_shipped_file_is_small() -> None:
    assert (SHIPPED["has"] / "model.safetensors").stat().st_size < 25 * 1024 * 1024


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    sentences = [
        (f"{doc.id}/{i}", text)
        for doc in read_documents("demo")
        for i, text in enumerate(split_sentences(doc.text))
    ]
    model = store_model("has")
    return AnswerStore.build(
        model, sentences, tmp_path_factory.mktemp("demo") / "store", model_ref="has"
    ).path


@pytest.mark.slow
@pytest.mark.parametrize("stage", ["vector", "none"])
def test_demo_questions_find_their_sentence_in_the_top_three(store: Path, stage: str) -> None:
    ranker = StoreRanker.open(store, settings=SearchSettings(first_stage=stage, k=20))
    assert ranker.store.manifest["model_ref"]["name"] == "has"  # found again by its shipped name
    for question, words in QUESTIONS.items():
        hits = ranker.search(question, top=3)
        assert any(words in hit.text for hit in hits), (question, hits)
