"""Stand-ins for models, shared by the tests: rankers and selectors whose choices are known."""

from collections.abc import Sequence

import torch

from sieveqa.data.documents import Document
from sieveqa.data.records import RankingExample
from sieveqa.encoder import Cost
from sieveqa.models.base import Ranker, RankResult
from sieveqa.models.easi import SentenceRead, SentenceReader
from sieveqa.runtime.answer.peasi import PeasiOptions

DOCS = [
    Document("a", "Cats sleep a lot. The answer is forty two. Dogs bark.", "Animals"),
    Document("b", "Rain falls. Snow is cold.", "Weather"),
]


class KeywordRanker(Ranker):
    """Scores a text by how often it says 'answer' (and counts one inference per text)."""

    def run(self, examples: Sequence[RankingExample], progress: bool = False) -> RankResult:
        scores = [[float(c.text.count("answer")) for c in ex.candidates] for ex in examples]
        return RankResult(scores, Cost(sequences=sum(len(s) for s in scores)))

    def score_matrix(self, questions, texts, progress=False, last_only=False, windows=False):
        return torch.tensor([[float(t.count("answer"))] for t in texts]), Cost(sequences=len(texts))


#: PEASI as the paper runs it (the best passage, EASI decides, no second look): what tests without a
#: point-wise ranker for the second look construct.
TOP_PASSAGE = PeasiOptions(read=1, second_look=0, bm25_weight=0.0)


class KeywordSelector(SentenceReader):
    """EASI stand-in: a sentence's logit is 20 when it says 'answer', else 0, so all probability goes
    to those that say it (one inference a passage)."""

    def read(self, questions, passages, progress=False):
        logits = [[20.0 * ("answer" in s) for s in sents] for sents in passages]
        return SentenceRead(logits, None, Cost(sequences=len(passages)))

    def select(self, questions, passages, progress=False):
        out = []
        for sents in passages:
            hits = [float("answer" in s) for s in sents]
            total = sum(hits) or len(sents)
            out.append([(h or (not any(hits))) / total for h in hits])
        return out, Cost(sequences=len(passages))


class LengthJudge:
    """A judge whose logit of a passage is its length in characters; records what it read."""

    def __init__(self) -> None:
        self.read: list[str] = []

    def score_matrix(self, questions, texts, progress=False, last_only=False, windows=False):
        self.read += texts
        return torch.tensor([[float(len(t))] for t in texts]), Cost(sequences=len(texts))
