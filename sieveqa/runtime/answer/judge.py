"""Whether the documents answer at all: a *judge* reads the passage each answer comes from.

An answer's own score (a sentence ranker's logit, a reader's span probability) says how well it
answers if anything does; on a question the documents are about but do not answer, it is often as high
as on one they do. A judge (``peasi-judge`` by default: PEASI's passage reranker taught on on-topic
unanswerable questions) scores (question, passage) pairs, and its logit of an answer's passage is a
signal the calibrated confidence reads. Abstention reads the best answer's only, so a method judges that
passage (one more inference per window); the others' passages are judged where the caller asks for every
answer's confidence (``Answerer(confidences="all")``, ``answer --confidences all``). Every
answering method that takes a ``judge`` option loads and applies it through here. Only a confidence
reads the signal, so the *default* judge loads where the calibration was fitted with it, or while one
is fitted (``load_answerer``); one the user names always loads.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from sieveqa.errors import BackboneError
from sieveqa.models.pair_model import PairModel
from sieveqa.profiling import stage
from sieveqa.runtime.answer.method import AnswerRun, ModelSettings

__all__ = ["attach_judge", "judge_name", "judged", "load_judge"]


def load_judge(name: str, settings: ModelSettings) -> PairModel | None:
    """The passage reranker ``name`` (``none``: no judge)."""
    if name.lower() == "none":
        return None
    try:
        return settings.model(name, PairModel, "--judge", "a passage reranker")
    except BackboneError as err:  # the shipped judge's base (MPNet) is a separate install
        raise BackboneError(
            f"--judge {name}: {err}; or --judge none (answers then carry no confidence)"
        ) from None


def attach_judge(method: Any, name: str, settings: ModelSettings) -> None:
    """Give ``method``, loaded with no judge, the judge ``name`` (its ``judge`` and model name)."""
    method.judge = load_judge(name, settings)
    method.model_names = {**method.model_names, **judge_name(name, method.judge)}


def judge_name(name: str, judge: PairModel | None) -> dict[str, str]:
    """The judge's entry in a method's ``model_names`` (none without a judge)."""
    return {"judge": name} if judge is not None else {}


def judged(
    judge: PairModel | None, question: str, run: AnswerRun, signal: str, every: bool = False
) -> AnswerRun:
    """``run`` with the judge's logit of the best answer's passage as that answer's ``signal`` (what
    abstention reads: one judge pass a question), and as that of every answer from the same passage;
    with ``every``, each answer's (one pass per distinct answer passage not judged yet)."""
    if judge is None or not run.answers:
        return run
    known = {f.passage.text: f.signals[signal] for f in run.answers if f.signals and signal in f.signals}
    wanted = [f.passage.text for f in (run.answers if every else run.answers[:1])]
    texts = [t for t in dict.fromkeys(wanted) if t not in known]
    if texts:
        with stage("judge"):
            matrix, cost = judge.score_matrix([question] * len(texts), texts, windows=True)
        known |= dict(zip(texts, matrix[:, -1].tolist(), strict=True))
        run.cost.add(cost)
    run.answers = [
        replace(f, signals={**(f.signals or {}), signal: known[f.passage.text]})
        if f.passage.text in known
        else f
        for f in run.answers
    ]
    return run
