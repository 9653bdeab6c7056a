"""The shipped PEASI models answer questions over the shipped demo corpus (real weights)."""

from pathlib import Path

import pytest

from sieveqa.data.corpus import CorpusIndex
from sieveqa.data.formats import read_documents
from sieveqa.models.zoo import SHIPPED
from sieveqa.runtime.answer.answerer import Answerer, load_answerer

pytestmark = pytest.mark.real

QUESTIONS = {
    "Who invented the Fresnel lens?": "Augustin-Jean Fresnel",
    "What protein carries oxygen in octopus blood?": "haemocyanin",
    "When was the pneumatic tyre patented?": "1888",
    "What is compressed snow called before it becomes glacial ice?": "firn",
}


@pytest.mark.parametrize("name", ["peasi-pr", "peasi-easi", "peasi-judge"])
def test_shipped_files_are_small(name: str) -> None:
    assert (SHIPPED[name] / "model.safetensors").stat().st_size < 25 * 1024 * 1024


@pytest.fixture(scope="module")
def demo_index(tmp_path_factory) -> Path:
    return CorpusIndex.build(read_documents("demo"), tmp_path_factory.mktemp("demo") / "index").path


@pytest.fixture(scope="module")
def answerers(demo_index: Path) -> dict[str, Answerer]:
    """Each method's answerer over the demo, loaded on first use, once for the module (models load in
    seconds)."""

    class Loaded(dict):
        def __missing__(self, method: str) -> Answerer:
            self[method] = load_answerer(method, str(demo_index))
            return self[method]

    return Loaded()


# The default method in the suite (the one check there that the shipped models answer); pointwise (its
# own ranker and judge to load) in make test-slow.
@pytest.mark.parametrize("method", ["peasi", pytest.param("pointwise", marks=pytest.mark.slow)])
def test_demo_questions_get_their_sentence(answerers: dict[str, Answerer], method: str) -> None:
    answerer = answerers[method]
    assert answerer.method.model_names == (  # what eval-answers reports (the pointwise run named PEASI's)
        {"reranker": "peasi-pr", "selector": "peasi-easi", "second_look": "default", "judge": "peasi-judge"}
        if method == "peasi"
        else {"ranker": "default", "judge": "peasi-judge"}
    )
    for question, words in QUESTIONS.items():
        answer = answerer.answer(question)
        assert answer.best is not None and words in answer.best.text, (question, answer.best)


# The firn question was a known miss under the Wikipedia-only cut (confidence 0.34, cut 0.50): a right
# answer thrown away, as issue 63 found on other files; the cut chosen on a mix of documents keeps it.
ANSWERED = list(QUESTIONS)


@pytest.fixture(scope="module")
def default(answerers: dict[str, Answerer]) -> Answerer:
    return answerers["peasi"]


@pytest.mark.slow
@pytest.mark.parametrize("question", ANSWERED)
def test_the_default_answers_what_the_demo_says(default: Answerer, question: str) -> None:
    answer = default.answer(question)
    assert answer.answered, (question, answer.confidence)


@pytest.mark.slow
@pytest.mark.parametrize(
    "question", ["Who was the first emperor of the Yuan dynasty?", "What is the capital of Peru?"]
)
def test_the_default_abstains_on_what_the_demo_does_not_say(default: Answerer, question: str) -> None:
    """Issue 41: it answered the Yuan question with a sentence about bicycles at confidence 0.70."""
    assert default.min_confidence > 0
    answer = default.answer(question)
    assert answer.best is not None and not answer.answered, (question, answer.best, answer.confidence)
