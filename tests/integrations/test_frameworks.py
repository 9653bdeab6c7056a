"""The LangChain, LlamaIndex and Haystack rerankers, against the real libraries: the documents
come back best first, cut to the framework's count, scored as ``Ranker.rank`` scores them."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from sieveqa.errors import ConfigError, ModelFormatError
from sieveqa.integrations import shared_ranker
from sieveqa.runtime.cascade import CascadeRanker
from tests.serving.conftest import RecordingRanker

QUERY = "who wrote hamlet"
TEXTS = ["no", "shakespeare wrote hamlet", "a play", "hamlet is a danish prince in a play"]
# RecordingRanker scores a text by its length: the longest first; rank's score is the sigmoid.
BEST = [3, 1, 2]


def test_langchain_compressor_keeps_the_top_n_with_their_scores() -> None:
    pytest.importorskip("langchain_core")
    from langchain_core.documents import Document

    from sieveqa.integrations.langchain import SieveQACompressor

    ranker = RecordingRanker()
    docs = [Document(page_content=t, metadata={"n": i}, id=f"d{i}") for i, t in enumerate(TEXTS)]
    kept = SieveQACompressor(model=ranker, top_n=3).compress_documents(docs, QUERY)
    assert [d.metadata["n"] for d in kept] == BEST and [d.id for d in kept] == ["d3", "d1", "d2"]
    expected = ranker.rank(QUERY, TEXTS, top_k=3)
    assert [d.metadata["relevance_score"] for d in kept] == [r["score"] for r in expected]
    assert ranker.calls[0] == [QUERY]  # every document in one call
    assert docs[0].metadata == {"n": 0}  # the input documents are left as they were


def test_the_compressor_serves_a_contextual_compression_retriever_as_the_guide_builds_it() -> None:
    """The guide wraps a retriever in ContextualCompressionRetriever, which lives in langchain-classic:
    the [langchain] extra installs it (it did not)."""
    pytest.importorskip("langchain_classic")
    from langchain_classic.retrievers import ContextualCompressionRetriever
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever

    from sieveqa.integrations.langchain import SieveQACompressor

    class Everything(BaseRetriever):
        def _get_relevant_documents(self, query: str, *, run_manager: object) -> list[Document]:
            return [Document(page_content=t) for t in TEXTS]

    retriever = ContextualCompressionRetriever(
        base_compressor=SieveQACompressor(model=RecordingRanker(), top_n=2), base_retriever=Everything()
    )
    assert [d.page_content for d in retriever.invoke(QUERY)] == [TEXTS[i] for i in BEST[:2]]


@pytest.mark.slow
def test_llamaindex_postprocessor_keeps_the_top_n_with_their_scores() -> None:
    pytest.importorskip("llama_index.core")
    from llama_index.core.schema import NodeWithScore, TextNode

    from sieveqa.integrations.llamaindex import SieveQARerank

    ranker = RecordingRanker()
    nodes = [NodeWithScore(node=TextNode(text=t, id_=f"n{i}"), score=0.0) for i, t in enumerate(TEXTS)]
    kept = SieveQARerank(model=ranker, top_n=3).postprocess_nodes(nodes, query_str=QUERY)
    assert [n.node.node_id for n in kept] == ["n3", "n1", "n2"]
    assert [n.score for n in kept] == [r["score"] for r in ranker.rank(QUERY, TEXTS, top_k=3)]
    with pytest.raises(ConfigError, match="needs the query"):
        SieveQARerank(model=ranker).postprocess_nodes(nodes)


def test_haystack_component_runs_in_a_pipeline_and_serializes() -> None:
    pytest.importorskip("haystack")
    from haystack import Document, Pipeline

    from sieveqa.integrations.haystack import SieveQARanker

    component = SieveQARanker(model="default", top_k=2)
    component._ranker = ranker = RecordingRanker()  # what warm_up would load
    pipeline = Pipeline()
    pipeline.add_component("ranker", component)
    docs = [Document(content=t, id=f"h{i}") for i, t in enumerate(TEXTS)]
    out = pipeline.run({"ranker": {"query": QUERY, "documents": docs}})["ranker"]["documents"]
    assert [d.id for d in out] == ["h3", "h1"]
    assert [d.score for d in out] == [r["score"] for r in ranker.rank(QUERY, TEXTS, top_k=2)]
    assert len(component.run(query=QUERY, documents=docs, top_k=None)["documents"]) == 2  # its own top_k
    assert [d.id for d in component.run(query=QUERY, documents=docs, top_k=3)["documents"]] == [
        "h3",
        "h1",
        "h2",
    ]
    again = SieveQARanker.from_dict(component.to_dict())
    assert (again.model, again.top_k, again.drop_ratios) == ("default", 2, None)
    # A saved pipeline loads back: Haystack's allowlist had to be told about the module (issue 42).
    loaded = Pipeline.loads(pipeline.dumps())
    assert loaded.get_component("ranker").top_k == 2


def test_a_model_folder_with_its_budget_loads_once(tiny_cascade, tmp_path) -> None:
    """A cascade folder with drop_ratios: the budget is the cascade's, the load shared."""
    folder = tiny_cascade.save_pretrained(tmp_path / "cascade")
    ranker = shared_ranker(folder, drop_ratios=0.5)
    assert isinstance(ranker, CascadeRanker) and set(ranker.policy.drop_ratios) == {0.5}
    assert shared_ranker(folder, drop_ratios=0.5) is ranker
    with pytest.raises(ConfigError, match="not a loaded ranker"):
        shared_ranker(ranker, drop_ratios=0.3)


def test_a_folder_is_one_model_however_it_is_named_and_ratios_however_given(
    tiny_cascade, tmp_path, monkeypatch
) -> None:
    folder = tiny_cascade.save_pretrained(tmp_path / "named")
    ranker = shared_ranker(folder, drop_ratios=(0.5,) * 3)
    monkeypatch.chdir(tmp_path)
    assert shared_ranker("named", drop_ratios=[0.5, 0.5, 0.5]) is ranker
    assert shared_ranker("named", drop_ratios=[0.5, 0.5, np.float32(0.5)]) is ranker
    none = shared_ranker("named", drop_ratios=0)
    assert shared_ranker("named", drop_ratios=0.0) is none  # a copy per spelling, before


def test_a_haystack_component_with_a_loaded_ranker_says_it_cannot_be_serialized() -> None:
    pytest.importorskip("haystack")
    from sieveqa.integrations.haystack import SieveQARanker

    with pytest.raises(ConfigError, match="cannot be serialized"):
        SieveQARanker(model=RecordingRanker()).to_dict()


def test_shared_rankers_are_kept_a_few_at_most(monkeypatch) -> None:
    """shared_ranker kept a model per spelling of its options, forever (issue 42)."""
    from sieveqa import integrations
    from sieveqa.runtime import policy

    monkeypatch.setattr(integrations, "_LOADED", type(integrations._LOADED)())
    monkeypatch.setattr(policy, "load_ranker", lambda name, **overrides: RecordingRanker())
    for name in ("m1", "m2", "m3", "m4", "m5", "m6"):
        integrations.shared_ranker(name)
    assert len(integrations._LOADED) == integrations._KEPT
    assert integrations.shared_ranker("m6") is integrations._LOADED[("m6", None)]


def _each_framework(max_documents: int | None = 1000):
    """(name, call(query, texts)) for every framework installed, with a RecordingRanker."""
    calls = []
    ranker = RecordingRanker()
    if importlib.util.find_spec("langchain_core"):
        from langchain_core.documents import Document

        from sieveqa.integrations.langchain import SieveQACompressor

        lc = SieveQACompressor(model=ranker, top_n=None, max_documents=max_documents)
        calls.append(
            ("langchain", lambda q, ts: lc.compress_documents([Document(page_content=t) for t in ts], q))
        )
    if importlib.util.find_spec("llama_index"):
        from llama_index.core.schema import NodeWithScore, TextNode

        from sieveqa.integrations.llamaindex import SieveQARerank

        li = SieveQARerank(model=ranker, top_n=None, max_documents=max_documents)
        calls.append(
            (
                "llamaindex",
                lambda q, ts: li.postprocess_nodes(
                    [NodeWithScore(node=TextNode(text=t)) for t in ts], query_str=q
                ),
            )
        )
    if importlib.util.find_spec("haystack"):
        from haystack import Document as HDocument

        from sieveqa.integrations.haystack import SieveQARanker

        hs = SieveQARanker(model=ranker, top_k=None, max_documents=max_documents)
        calls.append(("haystack", lambda q, ts: hs.run(q, [HDocument(content=t) for t in ts])["documents"]))
    return calls


def test_a_blank_query_and_too_many_documents_are_refused_as_the_service_refuses_them() -> None:
    """The components ranked a blank query that /rerank refuses, and 10,000 documents ran on for
    minutes with nothing said (issue 64)."""
    calls = _each_framework(max_documents=3)
    assert calls
    for name, call in calls:
        with pytest.raises(ConfigError, match="the query is empty"):
            call("  ", TEXTS[:2])
        with pytest.raises(ConfigError, match="4 documents, more than max_documents=3"):
            call(QUERY, TEXTS)
        assert len(call(QUERY, TEXTS[:3])) == 3, name
    for _, call in _each_framework(max_documents=None):
        assert len(call(QUERY, TEXTS * 300)) == 1200  # no limit


def test_a_retrievers_scores_on_nodes_and_documents_are_fused_as_serve_fuses_them() -> None:
    """LlamaIndex nodes and Haystack documents come with their retriever's score: the ranking fuses it
    (auto), the kept ones carrying the fused score; scores all alike (a default 0) are ignored."""
    pytest.importorskip("llama_index.core")
    pytest.importorskip("haystack")
    from haystack import Document
    from llama_index.core.schema import NodeWithScore, TextNode

    from sieveqa.integrations.haystack import SieveQARanker
    from sieveqa.integrations.llamaindex import SieveQARerank
    from sieveqa.runtime.answer.fusion import Fusion

    given = [9.0, 0.0, 0.0, 0.1]  # the retriever is sure of "no"; the model (by length) of the last
    fused = Fusion.parse("auto").combine([float(len(t)) for t in TEXTS], given)
    best = sorted(range(4), key=lambda i: -fused[i])
    nodes = [
        NodeWithScore(node=TextNode(text=t, id_=f"n{i}"), score=g)
        for i, (t, g) in enumerate(zip(TEXTS, given, strict=True))
    ]
    kept = SieveQARerank(model=RecordingRanker(), top_n=4).postprocess_nodes(nodes, query_str=QUERY)
    assert [n.node.node_id for n in kept] == [f"n{i}" for i in best] and best != [*BEST, 0]  # moved
    assert [n.score for n in kept] == pytest.approx([fused[i] for i in best])
    component = SieveQARanker(model="default", top_k=4)
    component._ranker = RecordingRanker()
    docs = [
        Document(content=t, id=f"h{i}", score=g) for i, (t, g) in enumerate(zip(TEXTS, given, strict=True))
    ]
    assert [d.id for d in component.run(query=QUERY, documents=docs)["documents"]] == [f"h{i}" for i in best]


def test_numpy_scores_are_fused_and_fusion_none_keeps_the_models_probability() -> None:
    """A retriever's numpy float32 scores silently turned fusion off (float64 fused), and no component
    could ask for the model's own probability (a fused score is relative: not to threshold)."""
    pytest.importorskip("llama_index.core")
    pytest.importorskip("haystack")
    from haystack import Document
    from llama_index.core.schema import NodeWithScore, TextNode

    from sieveqa.integrations.haystack import SieveQARanker
    from sieveqa.integrations.llamaindex import SieveQARerank

    given = [9.0, 0.0, 0.0, 0.1]
    ranker = RecordingRanker()
    expected = [(r["corpus_id"], r["score"]) for r in ranker.rank(QUERY, TEXTS, retrieval_scores=given)]
    alone = [(r["corpus_id"], r["score"]) for r in ranker.rank(QUERY, TEXTS)]
    for kind in (np.float32, np.float64, float):
        nodes = [
            NodeWithScore(node=TextNode(text=t, id_=str(i)), score=kind(g))
            for i, (t, g) in enumerate(zip(TEXTS, given, strict=True))
        ]
        kept = SieveQARerank(model=ranker, top_n=None).postprocess_nodes(nodes, query_str=QUERY)
        assert [int(n.node.node_id) for n in kept] == [i for i, _ in expected], kind
        assert [n.score for n in kept] == pytest.approx([score for _, score in expected]), kind
    kept = SieveQARerank(model=ranker, top_n=None, fusion="none").postprocess_nodes(nodes, query_str=QUERY)
    assert [(int(n.node.node_id), round(n.score, 6)) for n in kept] == [(i, round(x, 6)) for i, x in alone]
    component = SieveQARanker(model=ranker, top_k=None, fusion="none")
    docs = [
        Document(content=t, id=str(i), score=g) for i, (t, g) in enumerate(zip(TEXTS, given, strict=True))
    ]
    ranked = component.run(QUERY, docs)["documents"]
    assert [(int(d.id), round(d.score, 6)) for d in ranked] == [(i, round(x, 6)) for i, x in alone]
    assert component.run("", [])["documents"] == []  # as Haystack's own rankers answer


def test_settings_are_checked_when_a_component_is_built() -> None:
    """A misspelt model, a negative count or an unknown argument failed at the first call, or (a
    LlamaIndex argument) was silently ignored."""
    from pydantic import ValidationError  # a pydantic model's validator's error comes wrapped in one

    built = 0
    if importlib.util.find_spec("langchain_core"):
        from sieveqa.integrations.langchain import SieveQACompressor as LC

        with pytest.raises(ValidationError, match="top_n must be an integer >= 1"):
            LC(top_n=-1)
        with pytest.raises(ValidationError, match="'defualt' is neither a shipped model"):
            LC(model="defualt")
        built += 1
    if importlib.util.find_spec("llama_index"):
        from sieveqa.integrations.llamaindex import SieveQARerank as LI

        with pytest.raises(ValidationError, match="modle"):
            LI(top_n=1, modle="default-cascade")
        with pytest.raises(ValidationError, match="fusion"):
            LI(fusion="magic")
        assert LI(top_n=np.int64(2)).top_n == 2
        built += 1
    if importlib.util.find_spec("haystack"):
        from sieveqa.integrations.haystack import SieveQARanker as HS

        with pytest.raises(ConfigError, match="top_k must be an integer >= 1"):
            HS(top_k=-1)
        with pytest.raises(ModelFormatError, match="'defualt' is neither a shipped model"):
            HS(model="defualt")
        with pytest.raises(ConfigError, match="max_documents must be an integer >= 1"):
            HS(max_documents=0)
        built += 1
    assert built
