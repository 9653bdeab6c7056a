"""The HTTP service's wire contract: what clients send and get back, as pydantic models.

``POST /rerank`` takes the two request shapes search engineers already send: Hugging Face
text-embeddings-inference (``query``, ``texts``, ``truncate``, ``raw_scores``, ``return_text``) and
Cohere-style rerank (``query``, ``documents``, ``top_n``, ``return_documents``). The answer comes
back in the shape of the request: a bare list of ``{index, score, text?}`` for ``texts``, an object
with ``results`` of ``{index, relevance_score, document?}`` for ``documents``. Both are sorted best
first. ``alpha`` and ``budget`` set a cascade's pruning for this request only.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StrictBool


def _no_bool(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError("expected a number, not true or false")
    if isinstance(value, str):
        raise ValueError(f"expected a number, not the string {value[:20]!r}")
    return value


#: Numbers as JSON has them: 3 and 3.0 are both 3, but true is no 1 and "3" no 3 (as the schema says).
_NUMBER = BeforeValidator(_no_bool)
Int = Annotated[int, _NUMBER]
Float = Annotated[float, _NUMBER]
#: A text with something in it (an empty or blank one is a 400, as the schema says).
#: Some character that is not white space, by both regex dialects that read this pattern: the server's
#: (Rust's, where U+0085 is white space) and the schema's readers' (ECMA-262, where U+FEFF is).
Text = Annotated[str, Field(min_length=1, pattern=r"[^\s\x85\uFEFF]")]


class _Wire(BaseModel):
    model_config = ConfigDict(extra="ignore")


class _Request(_Wire):
    """What a client sends: booleans are StrictBool, numbers Int or Float, so 0 is no false and true
    no 1, as the schema says."""


class Document(_Request):
    """A Cohere document given as an object."""

    text: Text


class RerankRequest(_Request):
    """One query and the texts to rank for it (``texts`` or ``documents``, not both)."""

    # texts and documents may be left out but not sent as null, so the schema can say "one of them".
    model_config = ConfigDict(
        extra="ignore",
        json_schema_extra={
            "oneOf": [
                {"required": ["texts"], "not": {"required": ["documents"]}},
                {"required": ["documents"], "not": {"required": ["texts"]}},
            ]
        },
    )

    query: Text = Field(description="the question")
    texts: list[Text] = Field(
        None,  # type: ignore[assignment]
        min_length=1,
        description="candidate texts (text-embeddings-inference shape)",
    )
    documents: list[Text | Document] = Field(
        None,  # type: ignore[assignment]
        min_length=1,
        description="candidate texts (Cohere shape): strings or {text} objects",
    )
    top_n: Annotated[int, Field(ge=1), _NUMBER] | None = Field(None, description="return only the N best")
    return_text: StrictBool = Field(False, description="texts shape: include each text in its result")
    return_documents: StrictBool = Field(False, description="documents shape: include each document")
    raw_scores: StrictBool = Field(False, description="the model's logits instead of probabilities")
    truncate: StrictBool = Field(
        True, description="cut pairs longer than the model's limit; false: refuse them (413)"
    )
    alpha: Float | list[Float] | None = Field(
        None, description="cascades: drop ratio per exit (one for all, or one per exit but the last)"
    )
    budget: Annotated[float, Field(gt=0, le=1), _NUMBER] | None = Field(
        None, description="cascades: the most layers to spend, as a share of the full model's"
    )
    model: str | None = Field(
        None, description="the served model's name or an alias given to serve (another name: 400)"
    )
    retrieval_scores: list[Annotated[float, _NUMBER, Field(allow_inf_nan=False)]] | None = Field(
        None,
        description="the first stage's score of each text, in order (BM25, a vector store's similarity): "
        "fused with the model's as fusion says",
    )
    fusion: str | None = Field(
        None,
        description="auto (the default: interp:0.2 with retrieval_scores where given, else the model "
        "alone), none, interp:W or rrf:W (W: the first stage's share; BM25 of these texts without "
        "retrieval_scores); a fused ranking's scores are the fused ones",
    )

    def candidate_texts(self) -> list[str]:
        given = self.texts if self.texts is not None else self.documents or []
        return [d.text if isinstance(d, Document) else d for d in given]


class RankedText(_Wire):
    """One text of a ``texts`` request, where it ranked."""

    index: int
    score: float
    text: str | None = None


class RankedDocument(_Wire):
    """One document of a ``documents`` request, where it ranked."""

    index: int
    relevance_score: float
    document: Document | None = None


class Cost(_Wire):
    """What answering took: transformer inputs run, layer-units (one layer over one input), seconds."""

    inferences: int
    layer_units: int
    flops: int
    compute_seconds: float
    queue_seconds: float = 0.0


class RerankMeta(_Wire):
    model: str
    cost: Cost
    info: dict[str, Any] = Field(default_factory=dict)


class RerankDocuments(_Wire):
    """The answer to a ``documents`` request."""

    id: str
    results: list[RankedDocument]
    meta: RerankMeta


class AnswerRequest(_Request):
    # sieveqa's own request: a field it does not know is refused, as a typo (min_confidense) would
    # otherwise drop what the client asked for in silence
    model_config = ConfigDict(extra="forbid")

    question: Text = Field(description="the question, asked of the server's corpus index")
    top: Int = Field(1, ge=1, le=20, description="answers to return")
    confidences: Literal["best", "all"] | None = Field(
        None,
        description="which answers carry a calibrated confidence: the best (what 'answered' reads; one "
        "judge pass a question) or all (one judge pass per distinct answer passage); default: the server's",
    )
    passages: Int = Field(5, ge=0, le=50, description="retrieved passages to list with their scores")
    budget: Annotated[float, Field(gt=0, le=100), _NUMBER] | None = Field(
        None, description="skyline: layers per passage to spend for this question (methods that take it)"
    )
    min_confidence: Annotated[float, Field(ge=0, le=1, allow_inf_nan=False), _NUMBER] | None = Field(
        None,
        description="below this calibrated confidence the answer is a best guess (answered: false); "
        "default: the server's",
    )
    budget_ms: Annotated[float, Field(gt=0, le=600_000, allow_inf_nan=False), _NUMBER] | None = Field(
        None,
        description="answer within about this many ms at p50: the setting of the server's models and "
        "backend with the best dev P@1 within it on this kind of CPU (passages retrieved, drop ratios, "
        "and stages: the judge or a second look dropped); one that keeps the calibrated confidence first, "
        "only such where min_confidence is given (the server's --min-confidence too); one that drops it "
        "says so in the answer's budget note",
    )


class Passage(_Wire):
    """A retrieved passage and its reranking score (none where the method does not score passages)."""

    passage_id: str
    document: str
    title: str
    text: str
    score: float | None = None


class FoundAnswer(_Wire):
    """An answer sentence (or reader span) and the passage it stands in, at ``answer_span``."""

    answer: str
    score: float
    passage_score: float | None = None
    confidence: float | None = Field(None, description="calibrated P(right); null where not calibrated")
    signals: dict[str, float] = Field(
        default_factory=dict,
        description="what each stage said of this answer (the reranker's logit of its passage, ...): "
        "what the confidence reads",
    )
    document: str
    title: str
    location: str = Field(
        "",
        description="where the answer is in its file: 'page 3, § Options' (empty where the format has none)",
    )
    passage_id: str
    passage: str
    answer_span: tuple[int, int]


class AnswerResponse(_Wire):
    question: str
    method: str
    answered: bool = Field(
        description="false: no answer found in the index (the answers are best guesses, shown as such)"
    )
    reason: str | None = Field(
        None, description="why answered is false (no passage matches, or the confidence is below the cut)"
    )
    confidence: float | None = Field(None, description="the best answer's calibrated confidence")
    answers: list[FoundAnswer]
    passages: list[Passage] = Field(description="retrieved passages, best reranked first")
    cost: Cost
    retrieval_seconds: float
    budget: dict[str, Any] | None = Field(
        None, description="what budget_ms (or the server's --budget-ms) chose, with its dev P@1 and p50"
    )


class Info(_Wire):
    """``GET /info``: what text-embeddings-inference's ``/info`` says, for what applies to a reranker
    (``model_type`` is ``{"reranker": {"id2label", "label2id"}}``; ``sha`` and ``docker_label`` null)."""

    model_id: str
    model_sha: str | None = Field(description="a fingerprint of the served weights")
    model_dtype: str
    model_type: dict[str, dict[str, dict[str, Any]]]
    max_concurrent_requests: int = Field(description="requests that may wait for the model (--max-queue)")
    max_input_length: int = Field(description="tokens of a query and text pair the model reads")
    max_batch_tokens: int
    max_batch_requests: int | None = None
    max_client_batch_size: int = Field(description="texts per request (--max-texts)")
    auto_truncate: bool = Field(
        description="a pair longer than the model reads is cut unless truncate: false"
    )
    tokenization_workers: int
    version: str = Field(description="sieveqa's version")
    sha: str | None = None
    docker_label: str | None = None


class Health(_Wire):
    status: Literal["ok", "draining", "down"]
    model: str
    kind: str
    index: str | None
    method: str | None
    queue_depth: int


#: TEI's ``ErrorType``: what its clients read from a refusal.
TeiErrorType = Literal["Unhealthy", "Backend", "Overloaded", "Validation", "Tokenizer", "Empty"]
#: sieveqa's finer reason for a refusal.
Reason = Literal[
    "validation",
    "empty",
    "too_large",
    "overloaded",
    "timeout",
    "client_closed",
    "unavailable",
    "not_found",
    "not_allowed",
    "forbidden",
    "unsupported_media_type",
    "internal",
]


class ErrorBody(_Wire):
    """Every error, as TEI's ``ErrorResponse``: a message naming the field at fault and its TEI
    ``error_type``; ``reason`` says which of sieveqa's refusals it is."""

    error: str
    error_type: TeiErrorType
    reason: Reason
