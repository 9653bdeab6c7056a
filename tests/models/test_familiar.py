"""predict / rank with sentence-transformers' meaning, on every kind of ranker."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
import torch

from sieveqa.errors import ConfigError
from sieveqa.runtime.cascade import CascadeRanker
from tests.conftest import two_members
from tests.serving.conftest import RecordingRanker

PAIRS = [("who wrote hamlet", "shakespeare wrote it"), ("what is water", "h2o"), ("who wrote hamlet", "no")]


def _sigmoid(x: float) -> float:
    return 1 / (1 + math.exp(-x))


def _examples():
    from sieveqa.models.familiar import _questions

    return _questions(PAIRS)


def test_predict_is_the_sigmoid_of_the_logits_in_pair_order(tiny_model) -> None:
    scores = tiny_model.predict(PAIRS)
    assert isinstance(scores, np.ndarray) and scores.dtype == np.float32 and scores.shape == (3,)
    (hamlet, water) = tiny_model.score(_examples())  # pairs 0 and 2 share a query: one question
    logits = [hamlet[0], water[0], hamlet[1]]
    assert np.allclose(scores, [_sigmoid(x) for x in logits], atol=1e-6)
    raw = tiny_model.predict(PAIRS, activation_fn=torch.nn.Identity(), convert_to_numpy=False)
    assert raw == pytest.approx(logits, abs=1e-5)


def test_a_single_pair_gives_a_single_score_and_tensors_on_request(tiny_model) -> None:
    one = tiny_model.predict(PAIRS[0])
    assert np.ndim(one) == 0 and float(one) == pytest.approx(float(tiny_model.predict(PAIRS)[0]), abs=1e-6)
    assert isinstance(tiny_model.predict(PAIRS, convert_to_tensor=True), torch.Tensor)


def test_batch_size_keeps_a_questions_pairs_together() -> None:
    ranker = RecordingRanker()
    scores = ranker.predict(PAIRS, batch_size=1, activation_fn=torch.nn.Identity())
    assert ranker.calls == [["who wrote hamlet"], ["what is water"]]  # two pairs of one query, one call
    assert scores.tolist() == [20.0, 3.0, 2.0]  # RecordingRanker scores a text by its length


def test_rank_is_best_first_with_top_k_and_texts(tiny_model) -> None:
    docs = ["no", "shakespeare wrote hamlet", "h2o", "a play"]
    ranked = tiny_model.rank("who wrote hamlet", docs, return_documents=True)
    assert sorted(r["corpus_id"] for r in ranked) == [0, 1, 2, 3]
    assert [r["score"] for r in ranked] == sorted((r["score"] for r in ranked), reverse=True)
    assert all(r["text"] == docs[r["corpus_id"]] for r in ranked)
    top = tiny_model.rank("who wrote hamlet", docs, top_k=2)
    assert top == [{k: v for k, v in r.items() if k != "text"} for r in ranked[:2]]
    assert tiny_model.rank("q", []) == []


def test_a_cascade_ranks_in_its_own_order(tiny_cascade) -> None:
    """A cascade's survivors of the last exit come first, whatever the earlier exits scored."""
    ranker = CascadeRanker(tiny_cascade, drop_ratios=0.5)
    docs = [f"candidate text number {i}" for i in range(8)]
    ranked = ranker.rank("which one", docs)
    result = ranker.run(_examples_for("which one", docs))
    assert [r["corpus_id"] for r in ranked] == result.orders()[0]
    assert len(ranker.predict([("which one", d) for d in docs])) == 8


def _examples_for(query: str, docs: list[str]):
    from sieveqa.data.records import Candidate, Question, RankingExample

    return [RankingExample(Question("q", query), [Candidate(str(i), d) for i, d in enumerate(docs)])]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda r: r.predict([("q", "t"), ("only one",)]), "pairs[1]: expected a (query, text) pair"),
        (lambda r: r.predict([("q", 3)]), "pairs[0]: both query and text must be strings"),
        (lambda r: r.predict([("q", "t")], batch_size=0), "batch_size must be >= 1"),
        (lambda r: r.rank("q", "one string"), "documents must be a list of strings"),
        (lambda r: r.rank("q", ["a", None]), "documents[1]: expected a string"),
        (lambda r: r.rank("q", ["a"], top_k=0), "top_k must be an integer >= 1, got 0"),
        (lambda r: r.rank("q", ["a"], top_k=1.5), "top_k must be an integer >= 1, got 1.5"),
        (lambda r: r.rank("q", None), "documents must be a list of strings, got NoneType"),
        (lambda r: r.predict(None), "pairs must be a list of (query, text) pairs, got NoneType"),
    ],
)
def test_bad_input_is_one_clear_error(call, message) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        call(RecordingRanker())


def test_an_ensemble_loaded_by_name_predicts_and_ranks(tiny_model, tmp_path) -> None:
    from sieveqa.runtime.ensemble import EnsembleSpec
    from sieveqa.runtime.policy import load_ranker

    first, second = two_members(tiny_model, tmp_path)
    EnsembleSpec((str(first), str(second)), (0.5, 0.5)).save(tmp_path / "ens")
    ensemble = load_ranker(tmp_path / "ens", device="cpu", precision="fp32")
    scores = ensemble.predict(PAIRS, activation_fn=torch.nn.Identity())
    (hamlet, water) = ensemble.score(_examples())
    assert scores.tolist() == pytest.approx([hamlet[0], water[0], hamlet[1]], abs=1e-5)
    query = PAIRS[0][0]
    ranked = ensemble.rank(query, [t for q, t in PAIRS if q == query])
    assert [r["corpus_id"] for r in ranked] == sorted((0, 1), key=lambda i: -hamlet[i])


def test_similarities_are_not_squashed_and_a_store_ranker_refuses_texts() -> None:
    """A cosine or a probability came back through a sigmoid, as if it were a logit."""
    from sieveqa.models.base import SimilarityResult
    from sieveqa.runtime.store.ranker import StoreRanker

    class Cosines(RecordingRanker):
        def run(self, examples, progress=False):  # type: ignore[no-untyped-def]
            return SimilarityResult([[0.9, -0.2][: len(ex.candidates)] for ex in examples])

    assert Cosines().predict([("q", "a"), ("q", "b")]).tolist() == pytest.approx([0.9, -0.2])
    assert isinstance(Cosines().predict(("q", "a")), np.float32)  # one pair: a scalar, as there
    with pytest.raises(ConfigError, match="scores the answers of its store by id"):
        StoreRanker.predict(None, [("q", "a")])  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="scores the answers of its store by id"):
        StoreRanker.rank(None, "q", ["a"])  # type: ignore[arg-type]


def test_numpy_inputs_are_taken(tiny_model) -> None:
    pairs = np.array(PAIRS)
    assert tiny_model.predict(pairs).tolist() == tiny_model.predict(PAIRS).tolist()
    docs = np.array(["no", "shakespeare wrote hamlet"])
    assert tiny_model.rank("who wrote hamlet", docs) == tiny_model.rank("who wrote hamlet", list(docs))
    assert len(tiny_model.rank("who wrote hamlet", docs, top_k=np.int64(1))) == 1  # refused before


def test_a_generator_of_documents_or_pairs_is_ranked_whole(tiny_model) -> None:
    """Validation consumed a generator, so rank() gave [] (issue 42)."""
    docs = ["Shakespeare wrote Hamlet.", "Paris is in France.", "Hamlet is a play."]
    expected = tiny_model.rank("who wrote hamlet", docs)
    assert tiny_model.rank("who wrote hamlet", (d for d in docs)) == expected and len(expected) == 3
    pairs = [("who wrote hamlet", d) for d in docs]
    assert list(tiny_model.predict(p for p in pairs)) == list(tiny_model.predict(pairs))


def test_predict_on_a_cascade_gives_probabilities_as_on_any_cross_encoder(tiny_cascade) -> None:
    """A cascade's own scores are its last exit's logits: predict turns them into probabilities (it
    returned the logits, because the scores a cascade sorts by are not logits)."""
    ranker = CascadeRanker(tiny_cascade, drop_ratios=0.0)
    probabilities = ranker.predict(PAIRS)
    logits = ranker.predict(PAIRS, activation_fn=torch.nn.Identity())
    assert np.allclose(probabilities, 1 / (1 + np.exp(-np.asarray(logits))), atol=1e-6)
    assert all(0 <= p <= 1 for p in probabilities)


def test_rank_fuses_a_retrievers_scores_where_given() -> None:
    """Passages a retriever found come with its scores: rank fuses them (auto: interp:0.2), its
    scores then the fused ones; fusion="none" ranks by the model; a wrong count is refused."""
    from sieveqa.models.fusion import Fusion

    docs = ["aaaaa", "bbbbbb", "c", "dd"]  # RecordingRanker scores a text by its length
    given = [30.0, 0.0, 0.0, 0.0]
    ranked = RecordingRanker().rank("q", docs, retrieval_scores=given)
    fused = Fusion.parse("auto").combine([float(len(d)) for d in docs], given)
    assert [r["corpus_id"] for r in ranked] == sorted(range(4), key=lambda i: -fused[i])
    assert [r["score"] for r in ranked] == pytest.approx(sorted(fused, reverse=True))
    assert [r["corpus_id"] for r in ranked] == [0, 1, 3, 2]  # the retriever's sure one moved up
    alone = RecordingRanker().rank("q", docs, retrieval_scores=given, fusion="none")
    assert [r["corpus_id"] for r in alone] == [1, 0, 3, 2]
    with pytest.raises(ConfigError, match="retrieval_scores: 2 scores for 4 documents"):
        RecordingRanker().rank("q", docs, retrieval_scores=[1.0, 2.0], fusion="none")
    assert RecordingRanker().rank("q", docs)[0]["corpus_id"] == 1  # auto without scores: the model alone


def test_a_fusion_named_without_scores_fuses_bm25_over_the_documents() -> None:
    """As `rank --fusion` and /rerank's fusion do (it ranked by the model alone here before)."""
    from sieveqa.models.fusion import Fusion, lexical_scores

    docs = ["a long text of nothing", "cats purr", "dogs bark at the postman"]  # lengths: 22, 9, 24
    ranked = RecordingRanker().rank("why do cats purr", docs, fusion="interp:0.9")
    fused = Fusion.parse("interp:0.9").combine(
        [float(len(d)) for d in docs], lexical_scores("why do cats purr", docs)
    )
    assert [r["score"] for r in ranked] == pytest.approx(sorted(fused, reverse=True))
    assert ranked[0]["corpus_id"] == 1  # BM25's one match, at nine tenths of the weight
    with pytest.raises(ConfigError, match="fusion"):
        RecordingRanker().rank("q", docs, fusion="magic:2")


def test_one_document_or_tied_scores_fuse_to_the_top_not_to_zero() -> None:
    """Min-max of a single score (or of tied ones) gave 0.0: a lone right passage fused to 0 and a
    `score > 0.5` filter dropped it."""
    ranked = RecordingRanker().rank("q", ["shakespeare wrote hamlet"], retrieval_scores=[3.0])
    assert [r["score"] for r in ranked] == [1.0]
    tied = RecordingRanker().rank("q", ["ab", "cd"], retrieval_scores=[2.0, 1.0])
    assert [r["corpus_id"] for r in tied] == [0, 1] and tied[0]["score"] == 1.0


def test_retrieval_scores_must_be_numbers_and_the_query_not_blank() -> None:
    """None gave a raw TypeError from float(), strings were taken, a blank query was ranked (the CLI,
    /rerank and the components refuse it)."""
    for bad, kind in ((None, "NoneType"), ("1", "str"), (True, "bool")):
        with pytest.raises(ConfigError, match=rf"retrieval_scores\[1\]: expected a number, got {kind}"):
            RecordingRanker().rank("q", ["a", "b"], retrieval_scores=[1.0, bad])
    assert RecordingRanker().rank("q", ["a", "bb"], retrieval_scores=[np.float32(1), np.int64(2)])
    with pytest.raises(ConfigError, match="the query is empty"):
        RecordingRanker().rank("  ", ["a"])


def test_a_dataframe_of_pairs_is_read_by_rows_not_by_column_names(tiny_model) -> None:
    """list(DataFrame) is its column names: predict scored the one pair ("query", "text")."""
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"query": [q for q, _ in PAIRS], "text": [t for _, t in PAIRS]})
    assert tiny_model.predict(frame).tolist() == tiny_model.predict(PAIRS).tolist()
    assert len(tiny_model.predict(frame)) == len(PAIRS)
