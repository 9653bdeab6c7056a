"""POST /answer over a corpus index, GET /health, /metrics and the page's files."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from sieveqa.data.corpus import CorpusIndex
from sieveqa.data.documents import Document
from sieveqa.runtime.answer.answerer import Answerer
from sieveqa.serving import Service, create_app
from tests.fakes import KeywordRanker, LengthJudge

QUESTION = "the answer about cats, dogs, rain and snow?"


@pytest.fixture
def answering(keyword_answerer: Answerer) -> Iterator[TestClient]:
    service = Service(KeywordRanker(), keyword_answerer, name="keyword", index="idx")
    with TestClient(create_app(service)) as c:
        yield c


def test_the_answer_stands_in_its_passage_with_the_cost(answering: TestClient) -> None:
    r = answering.post("/answer", json={"question": QUESTION, "passages": 3})
    assert r.status_code == 200, r.text
    body = r.json()
    best = body["answers"][0]
    assert best["answer"] == "The answer is forty two."
    assert (best["document"], best["title"]) == ("a", "Animals")
    a, b = best["answer_span"]
    assert best["passage"][a:b] == best["answer"]
    assert body["method"] == "peasi"
    assert set(best["signals"]) == {"passage", "sentence", "in_passage", "margin"}  # what confidence reads
    assert best["signals"]["passage"] == best["passage_score"]
    assert len(body["passages"]) == 3
    scores = [p["score"] for p in body["passages"]]
    assert scores == sorted(scores, reverse=True)
    assert body["passages"][0]["passage_id"] == best["passage_id"]
    assert body["cost"]["inferences"] == 4 + 1  # 4 passages reranked, 1 read for its sentence
    assert r.headers["x-inferences"] == "5"
    metrics = answering.get("/metrics").text
    assert 'sieveqa_inferences_total{endpoint="answer"} 5.0' in metrics


def test_top_asks_for_more_answers(answering: TestClient) -> None:
    body = answering.post("/answer", json={"question": "answer rain snow cats", "top": 3}).json()
    assert len(body["answers"]) == 3
    assert body["answers"][0]["answer"] == "The answer is forty two."


def test_a_question_that_retrieves_nothing_has_no_answers(answering: TestClient) -> None:
    body = answering.post("/answer", json={"question": "zzz qqq"}).json()
    assert body["answers"] == [] and body["passages"] == []


def test_a_served_index_survives_index_add_and_serves_the_new_documents(
    answering: TestClient, keyword_answerer: Answerer
) -> None:
    """``sieveqa index add`` by another process used to delete the generation under the server: every
    later /answer was a 500 until restart."""
    assert answering.post("/answer", json={"question": QUESTION}).status_code == 200
    writer = CorpusIndex.open(keyword_answerer.index.path)
    writer.append([Document("c", "Owls hunt at night. The answer about owls is mice.", "Owls")])
    r = answering.post("/answer", json={"question": "the answer about owls?"})
    assert r.status_code == 200, r.text
    assert r.json()["answers"][0]["document"] == "c"


def test_an_answer_from_a_file_says_where_in_it(answering: TestClient, keyword_answerer: Answerer) -> None:
    from sieveqa.data.formats.blocks import Block, assemble

    assert answering.post("/answer", json={"question": QUESTION}).json()["answers"][0]["location"] == ""
    writer = CorpusIndex.open(keyword_answerer.index.path)
    blocks = [
        Block("Owls hunt at night.", section="Birds", page=3),
        Block("The answer about owls is mice.", section="Birds › Owls", page=4),
    ]
    writer.append([assemble("owls.pdf", "Owls", blocks)])
    best = answering.post("/answer", json={"question": "the answer about owls?"}).json()["answers"][0]
    assert (best["document"], best["location"]) == ("owls.pdf", "page 4, § Birds › Owls")


def test_a_served_index_moved_away_is_a_503_naming_it_and_answers_again_when_back(
    answering: TestClient, keyword_answerer: Answerer
) -> None:
    """A deleted or moved index was an HTTP 500 (FileNotFoundError in the manifest's stat)."""
    path = keyword_answerer.index.path
    path.rename(path.with_name("elsewhere"))
    r = answering.post("/answer", json={"question": QUESTION})
    assert r.status_code == 503, r.text
    assert r.json()["error"].startswith(f"index {path.name}: not there")
    assert str(path.parent) not in r.text and r.headers["retry-after"] == "1"
    path.with_name("elsewhere").rename(path)
    r = answering.post("/answer", json={"question": QUESTION})
    assert r.status_code == 200, r.text


@pytest.mark.parametrize("damage", ["manifest truncated", "manifest emptied", "replaced by a file"])
def test_a_served_index_damaged_under_the_server_is_a_503_naming_it_not_its_path(
    damage: str, answering: TestClient, keyword_answerer: Answerer
) -> None:
    """Found by a hostile probe: each was an HTTP 500, two of them with the server's absolute path."""
    import shutil

    path = keyword_answerer.index.path
    manifest = path / "manifest.json"
    if damage == "replaced by a file":
        shutil.rmtree(path)
        path.write_text("not an index")
    else:
        manifest.write_text(manifest.read_text()[:20] if damage == "manifest truncated" else "")
    r = answering.post("/answer", json={"question": QUESTION})
    assert r.status_code == 503, r.text
    assert r.json()["error"].startswith(f"index {path.name}")
    assert str(path.parent) not in r.text


@pytest.mark.parametrize(
    ("body", "status", "says"),
    [
        ({"question": "  "}, 400, "question is empty"),
        ({"question": "q", "top": 0}, 422, "top: Input should be greater"),
        ({"question": "q", "passages": "many"}, 422, "expected a number, not the string 'many'"),
        ({}, 422, "question: Field required"),
        ('{"question": "q", "budget_ms": NaN}', 422, "budget_ms: Input should be a finite number"),
        ('{"question": "q", "min_confidence": NaN}', 422, "min_confidence: Input should be a finite number"),
        # a typo was answered as if absent: the threshold the client asked for dropped in silence
        ({"question": "q", "min_confidense": 0.99}, 422, "min_confidense: no such field in this request"),
        ({"question": "q", "min-confidence": 0.9}, 422, "min-confidence: no such field in this request"),
    ],
)
def test_bad_questions(answering: TestClient, body: dict | str, status: int, says: str) -> None:
    if isinstance(body, str):  # JSON as Python writes it (NaN), which said "should be <= 600000"
        r = answering.post("/answer", content=body, headers={"content-type": "application/json"})
    else:
        r = answering.post("/answer", json=body)
    assert r.status_code == status
    assert says in r.json()["error"]


def test_health_says_what_is_loaded(answering: TestClient, client: TestClient) -> None:
    assert answering.get("/health").json() == {
        "status": "ok",
        "model": "keyword",
        "kind": "KeywordRanker",
        "index": "idx",
        "method": "peasi",
        "queue_depth": 0,
    }
    health = client.get("/health").json()
    assert (health["kind"], health["index"], health["method"]) == ("cross-encoder", None, None)


def test_the_page_and_its_files_are_served(client: TestClient) -> None:
    page = client.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "/static/app.js" in page.text
    assert client.get("/static/app.js").status_code == 200
    assert client.get("/static/style.css").status_code == 200


def test_the_schema_lists_the_endpoints_and_their_errors(client: TestClient) -> None:
    schema = client.get("/openapi.json").json()
    assert set(schema["paths"]) == {
        "/rerank",
        "/v1/rerank",
        "/v2/rerank",
        "/answer",
        "/health",
        "/info",
        "/metrics",
    }
    assert {"400", "413", "422", "429"} <= set(schema["paths"]["/rerank"]["post"]["responses"])
    rerank = schema["components"]["schemas"]["RerankRequest"]
    # This server's limits (5 texts, 200 characters), and no cascade settings for a plain model.
    assert rerank["properties"]["texts"]["maxItems"] == 5
    assert rerank["properties"]["texts"]["items"]["maxLength"] == 200
    assert rerank["properties"]["query"]["maxLength"] == 200
    assert "alpha" not in rerank["properties"] and "budget" not in rerank["properties"]
    assert {"required": ["texts"], "not": {"required": ["documents"]}} in rerank["oneOf"]


def test_the_schema_is_a_valid_openapi_document_naming_every_error_kind(client: TestClient) -> None:
    from openapi_spec_validator import validate

    schema = client.get("/openapi.json").json()
    validate(schema)  # GET and HEAD /health once shared an operation id: invalid
    assert {"get", "head"} <= set(schema["paths"]["/health"])
    assert "503" in schema["paths"]["/rerank"]["post"]["responses"]
    body = schema["components"]["schemas"]["ErrorBody"]["properties"]
    assert {"timeout", "client_closed"} <= set(body["reason"]["enum"])
    tei = {"Unhealthy", "Backend", "Overloaded", "Validation", "Tokenizer", "Empty"}
    assert set(body["error_type"]["enum"]) == tei  # TEI's ErrorType, what its clients read


def test_a_cascades_schema_offers_alpha_and_budget(tiny_cascade) -> None:
    from sieveqa.runtime.cascade import CascadeRanker

    with TestClient(create_app(Service(CascadeRanker(tiny_cascade)))) as c:
        properties = c.get("/openapi.json").json()["components"]["schemas"]["RerankRequest"]["properties"]
    assert {"alpha", "budget"} <= set(properties)


def test_a_question_brings_its_own_budget_through_the_methods_hook(keyword_answerer: Answerer) -> None:
    """/answer's budget reaches a method that takes it (skyline does) and is refused by others."""
    from sieveqa.runtime.answer.method import AnswerRun, Found

    class Budgeted(type(keyword_answerer.method)):
        name, request_settings = "budgeted", ("budget",)
        budget = 2.0

        def with_settings(self, budget=None, **other):
            twin = Budgeted(self.reranker, self.selector)
            twin.budget = budget if budget is not None else self.budget
            return twin

        def run(self, question, passages, top):
            return AnswerRun([Found(passages[0], 0, self.budget)], None, None)

    keyword_answerer.method = Budgeted(keyword_answerer.method.reranker, keyword_answerer.method.selector)
    with TestClient(create_app(Service(KeywordRanker(), keyword_answerer))) as c:
        assert c.post("/answer", json={"question": QUESTION}).json()["answers"][0]["score"] == 2.0
        assert (
            c.post("/answer", json={"question": QUESTION, "budget": 0.5}).json()["answers"][0]["score"] == 0.5
        )
        assert (
            "budget" in c.get("/openapi.json").json()["components"]["schemas"]["AnswerRequest"]["properties"]
        )


def test_budget_is_refused_by_a_method_without_it(answering: TestClient) -> None:
    r = answering.post("/answer", json={"question": QUESTION, "budget": 1.0})
    assert (r.status_code, r.json()["error"]) == (400, "budget: --method peasi takes no per-request settings")
    schema = answering.get("/openapi.json").json()["components"]["schemas"]["AnswerRequest"]
    assert "budget" not in schema["properties"]


def test_head_requests_are_answered(client: TestClient) -> None:
    """Load balancers probe with HEAD: it was a 405."""
    assert client.head("/health").status_code == 200
    assert client.head("/").status_code == 200


def test_answer_says_when_it_found_nothing_with_confidence(keyword_answerer: Answerer) -> None:
    """A calibrated method reports its confidence; below the server's min_confidence (or a request's)
    the answer is a best guess with answered: false."""
    from sieveqa.runtime.answer.confidence import Confidence

    best = keyword_answerer.answer(QUESTION).best.score
    keyword_answerer.confidence = Confidence(1.0, -best, min_confidence=0.6)  # P(right) 0.5 for it
    keyword_answerer.min_confidence = 0.6
    with TestClient(create_app(Service(KeywordRanker(), keyword_answerer))) as c:
        body = c.post("/answer", json={"question": QUESTION}).json()
        assert (body["answered"], body["confidence"]) == (False, 0.5)
        assert body["reason"].startswith("the best answer's confidence is below the cut")  # it said nothing
        assert body["answers"][0]["answer"] == "The answer is forty two."  # the best guess, shown as such
        assert body["answers"][0]["confidence"] == 0.5
        taken = c.post("/answer", json={"question": QUESTION, "min_confidence": 0.4}).json()
        assert taken["answered"] and taken["reason"] is None


def test_the_judge_reads_one_passage_unless_every_confidence_is_asked(keyword_answerer: Answerer) -> None:
    """The best answer carries a confidence (one judge pass); confidences: all gives each its own."""
    from sieveqa.runtime.answer.confidence import Confidence

    judge = LengthJudge()
    keyword_answerer.method.judge = judge  # type: ignore[attr-defined]
    keyword_answerer.confidence = Confidence(0.0, 0.0, signals={"judge": 0.01})
    with TestClient(create_app(Service(KeywordRanker(), keyword_answerer))) as c:
        asked = {"question": "answer rain snow cats", "top": 3}
        body = c.post("/answer", json=asked).json()
        assert len(judge.read) == 1 and body["confidence"] is not None
        assert [a["confidence"] is not None for a in body["answers"]] == [True, False, False]
        judge.read.clear()
        every = c.post("/answer", json={**asked, "confidences": "all"}).json()
        assert len(judge.read) == 3 and all(a["confidence"] is not None for a in every["answers"])
        assert every["cost"]["inferences"] == body["cost"]["inferences"] + 2
        bad = c.post("/answer", json={**asked, "confidences": "some"})
        assert bad.status_code == 422 and "confidences" in bad.text
    keyword_answerer.confidences = "all"  # the server's own default, when a request says nothing
    with TestClient(create_app(Service(KeywordRanker(), keyword_answerer))) as c:
        body = c.post("/answer", json=asked).json()
        assert all(a["confidence"] is not None for a in body["answers"])


def test_min_confidence_is_refused_where_nothing_is_calibrated(answering: TestClient) -> None:
    body = answering.post("/answer", json={"question": QUESTION}).json()
    assert body["answered"] and body["confidence"] is None
    r = answering.post("/answer", json={"question": QUESTION, "min_confidence": 0.5})
    assert r.status_code == 400 and r.json()["error"].startswith("min_confidence: --method peasi has no")


def test_budget_ms_moves_a_served_cascades_passages_and_drop_ratio(
    tmp_path, monkeypatch, tiny_cascade
) -> None:
    import json

    from sieveqa.exported.choice import cpu_kind
    from sieveqa.runtime.answer import budget
    from sieveqa.runtime.answer.budget import Setting
    from sieveqa.runtime.answer.sentence import Cascade
    from sieveqa.runtime.cascade import CascadeRanker

    index = CorpusIndex.build(
        [Document("a", "The answer is forty two. Cats purr."), Document("b", "Rain falls. Snow melts.")],
        tmp_path / "idx",
    )
    row = Setting("cascade", 1, "torch:fp32", (0.5,), 30.0, 0.6)
    path = tmp_path / "budgets.json"
    path.write_text(json.dumps({cpu_kind(): {"settings": [row.as_dict()]}}))
    monkeypatch.setattr(budget, "BUDGETS", path)
    answerer = Answerer(Cascade(CascadeRanker(tiny_cascade, drop_ratios=0.0)), index, retrieve=10)
    with TestClient(create_app(Service(KeywordRanker(), answerer))) as c:
        plain = c.post("/answer", json={"question": QUESTION}).json()
        assert plain["budget"] is None and len(plain["passages"]) == 2
        from sieveqa.runtime.answer import budgeted

        chosen, original = [], budgeted.choose
        monkeypatch.setattr(budgeted, "choose", lambda *a, **k: chosen.append(a) or original(*a, **k))
        got = c.post("/answer", json={"question": QUESTION, "budget_ms": 50}).json()
        assert len(chosen) == 1  # the budget is resolved once a request (it was twice: loop, then thread)
        assert (
            len(got["passages"]) == 1
            and got["budget"]["retrieve"] == 1
            and got["budget"]["drop_ratios"] == [0.5]
        )
        assert got["budget"]["note"] == ""
        # A budget request sees the index's new generation through the server's own answerer (it
        # used to refresh a copy, reopening the index on every request and never sweeping the old one).
        CorpusIndex.open(index.path).append([Document("c", "Owls hunt at night. The answer is mice.")])
        assert c.post("/answer", json={"question": QUESTION, "budget_ms": 50}).status_code == 200
        assert len(answerer.index) == len(CorpusIndex.open(index.path))  # the server's own, refreshed
        r = c.post("/answer", json={"question": QUESTION, "budget_ms": -1})
        assert r.status_code == 422 and "budget_ms" in r.json()["error"]
    monkeypatch.setattr(budget, "BUDGETS", tmp_path / "missing.json")
    with TestClient(create_app(Service(KeywordRanker(), answerer))) as c:
        r = c.post("/answer", json={"question": QUESTION, "budget_ms": 50})
        assert r.status_code == 400 and r.json()["error"].startswith("budget_ms: no settings measured")


def test_a_served_budget_drops_the_judge_only_where_abstention_is_not_asked(
    tmp_path, monkeypatch, tiny_cascade
) -> None:
    """A budget may drop the judge (and with it the confidence) of a served answerer, saying so; a
    request that asks for abstention (min_confidence) gets a setting that keeps it, or a 400 (it got
    an answer that never abstained)."""
    import json

    from sieveqa.exported.choice import cpu_kind
    from sieveqa.runtime.answer import budget
    from sieveqa.runtime.answer.budget import Setting
    from sieveqa.runtime.answer.confidence import Confidence
    from sieveqa.runtime.answer.sentence import Cascade
    from sieveqa.runtime.cascade import CascadeRanker

    index = CorpusIndex.build([Document("a", "The answer is forty two. Cats purr.")], tmp_path / "idx")
    method = Cascade(CascadeRanker(tiny_cascade, drop_ratios=0.0), judge=LengthJudge())  # type: ignore[arg-type]
    method.model_names = {"ranker": "c", "judge": "j"}
    calibrated = Confidence(0.0, -1.0, 0.2, dict(method.model_names), signals={"passage": 0.01})
    answerer = Answerer(method, index, retrieve=10, confidence=calibrated)
    quick = Setting("cascade", 1, "torch:fp32", (0.5,), 30.0, 0.6, models=(("ranker", "c"),))
    path = tmp_path / "budgets.json"
    path.write_text(json.dumps({cpu_kind(): {"settings": [quick.as_dict()]}}))
    monkeypatch.setattr(budget, "BUDGETS", path)
    with TestClient(create_app(Service(KeywordRanker(), answerer))) as c:
        assert c.post("/answer", json={"question": QUESTION}).json()["confidence"] is not None
        got = c.post("/answer", json={"question": QUESTION, "budget_ms": 50}).json()
        assert got["confidence"] is None and got["answered"]
        assert (
            got["budget"]["note"]
            == "this setting drops the judge: no calibrated confidence, the answer never abstains"
        )
        r = c.post("/answer", json={"question": QUESTION, "budget_ms": 50, "min_confidence": 0.5})
        assert (
            r.status_code == 400
            and "keeps the calibrated confidence that min_confidence asks for" in r.json()["error"]
        )


def test_health_names_the_index_not_the_servers_path(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    """GET /health gave any client the index's absolute path."""
    from sieveqa.serving import service as service_module

    monkeypatch.setattr(service_module, "load_ranker", lambda model, **settings: KeywordRanker())
    monkeypatch.setattr(service_module, "load_answerer", lambda method, index, **options: None)
    service = Service.load("keyword", index=str(tmp_path / "deep" / "my-index"))
    with TestClient(create_app(service)) as c:
        assert c.get("/health").json()["index"] == "my-index"


def test_a_server_that_takes_longer_questions_answers_them(keyword_answerer: Answerer) -> None:
    """A review found `serve --max-chars 50000` answering a 30,000-character question 422: the answerer
    refused past its own 20,000."""
    from sieveqa.serving.settings import Limits

    question = QUESTION + " and" * 7500
    wide = Service(KeywordRanker(), keyword_answerer, limits=Limits(max_chars=50_000))
    with TestClient(create_app(wide)) as c:
        assert c.post("/answer", json={"question": question}).status_code == 200
    with TestClient(create_app(Service(KeywordRanker(), keyword_answerer))) as c:
        assert c.post("/answer", json={"question": question}).status_code == 413
