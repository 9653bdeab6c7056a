"""Training the anytime reader's temperatures and SkylineBuilder's policy, both on replay tables.

- :func:`calibrate`: one temperature per exit minimising the has-answer head's negative log-likelihood
  on held-out questions (temperature scaling, Guo et al. 2017; Schwartz et al. 2020 per layer).
- :func:`train_policy`: REINFORCE (Williams, 1992) for the tower-selection policy, section 3.3.2.
  An episode builds one question's towers one layer at a time, sampling the tower from the policy's
  softmax; choosing a tower whose passage holds an answer earns 1, every step costs ``step_cost``;
  returns are discounted by ``discount``. With an ``answer_reward`` instead, only the last step earns
  anything: whether the answer the built towers give is right, and every step's return is that
  (undiscounted, no step cost), so a deeper look at a tower already read is credited when it changes
  what is kept and answered. The optional baseline is the mean return at each step of the batch
  (variance reduction). Each episode draws its budget from ``budgets`` (one policy for every budget it
  will serve: its inputs do not include the budget). Validation replays the greedy policy on other
  questions at each training budget; the best mean EM's policy is kept.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch.nn.functional import binary_cross_entropy_with_logits
from tqdm.auto import tqdm

from sieveqa.errors import ConfigError
from sieveqa.evaluation.extractive import expected_calibration_error
from sieveqa.evaluation.odqa import ReadTable
from sieveqa.io import atomic_write_json, exclusive
from sieveqa.models.skyline_policy import PolicyConfig, SkylinePolicy
from sieveqa.runtime.answer.schedulers import policy_inputs
from sieveqa.runtime.answer.towers import Towers, sigmoid


def exit_logits(table: ReadTable) -> tuple[torch.Tensor, torch.Tensor]:
    """Raw has-answer logits (passages × exits) and the passages' labels, over every question."""
    logits = [[g.has_logit for g in p] for q in table.guesses for p in q]
    labels = [y for q in table.has_answer for y in q]
    return torch.tensor(logits, dtype=torch.float64), torch.tensor(labels, dtype=torch.float64)


def calibrate(table: ReadTable) -> list[float]:
    """Per-exit temperatures (within 0.01..100) that minimise the has-answer NLL on ``table``'s passages."""
    logits, labels = exit_logits(table)
    temps = []
    for e in range(logits.shape[1]):
        log_t = torch.zeros((), dtype=torch.float64, requires_grad=True)
        opt = torch.optim.LBFGS([log_t], lr=0.5, max_iter=100, line_search_fn="strong_wolfe")

        def closure(e: int = e, log_t: torch.Tensor = log_t, opt: torch.optim.LBFGS = opt) -> torch.Tensor:
            opt.zero_grad()
            loss = binary_cross_entropy_with_logits(logits[:, e] / log_t.exp(), labels)
            loss.backward()
            return loss

        opt.step(closure)
        # A head whose logits carry no signal pushes T to infinity; bounded, it stays usable.
        temps.append(round(min(max(float(log_t.detach().exp()), 0.01), 100.0), 6))
    return temps


def calibration_errors(table: ReadTable, temperatures: Sequence[float] | None = None) -> list[float]:
    """ECE of each exit's has-answer probability on ``table`` (with ``temperatures`` if given)."""
    logits, labels = exit_logits(table)
    temps = temperatures or [1.0] * logits.shape[1]
    ys = labels.int().tolist()
    return [
        expected_calibration_error([sigmoid(x / t) for x in logits[:, e].tolist()], ys)
        for e, t in enumerate(temps)
    ]


@dataclass
class PolicyOptions:
    """REINFORCE settings (the paper's appendix: SGD, lr 1e-3, batch 32, 16 epochs, cost 0.1, γ 0.9)."""

    budgets: list[float] = field(
        default_factory=lambda: [0.5, 1.0, 2.0],
        metadata={"help": "layers per passage an episode may spend (drawn)"},
    )
    epochs: int = field(default=16, metadata={"help": "passes over the training questions"})
    batch_size: int = field(default=32, metadata={"help": "episodes per update"})
    lr: float = field(default=1e-3, metadata={"help": "SGD learning rate"})
    step_cost: float = field(default=0.1, metadata={"help": "penalty of every step"})
    discount: float = field(default=0.9, metadata={"help": "discount factor of the return"})
    baseline: bool = field(default=True, metadata={"help": "subtract the batch's mean return per step"})
    seed: int = field(default=13, metadata={"help": "seed of the episodes' sampling"})
    reward: str = field(
        default="passage", metadata={"help": "passage: each step on an answer's passage; answer: its EM"}
    )

    def __post_init__(self) -> None:
        if not self.budgets or not min(self.budgets) > 0:
            raise ConfigError(f"--budget must be layers per passage above 0, got {self.budgets}")
        if self.reward not in ("passage", "answer"):
            raise ConfigError(f"--reward must be 'passage' or 'answer', got {self.reward!r}")
        if not self.lr > 0:
            raise ConfigError(f"--lr must be above 0, got {self.lr}")
        for flag, value in (("--epochs", self.epochs), ("--batch-size", self.batch_size)):
            if value < 1:
                raise ConfigError(f"{flag} must be >= 1, got {value}")
        if not (0 <= self.discount <= 1 and self.step_cost >= 0):
            raise ConfigError(
                f"discount must be in [0, 1] and step_cost >= 0, got {self.discount}, {self.step_cost}"
            )


#: ``(question, its built towers) -> reward`` of an episode's answer (towers may be built further).
AnswerReward = Callable[[int, Towers], float]


def episode(
    policy: SkylinePolicy,
    table: ReadTable,
    q: int,
    temperatures: Sequence[float],
    budget: float,
    gen: torch.Generator,
    answer_reward: AnswerReward | None = None,
) -> tuple[list[torch.Tensor], list[float]]:
    """Sample one question's build order: the log-probability of each choice and its reward (with
    ``answer_reward``, 0 until the last step, which earns the answer's)."""
    towers = table.towers(q, temperatures)
    log_probs, rewards = [], []
    steps = round(budget * len(towers))
    while len(rewards) < steps and (open_ := towers.open()):
        dist = torch.log_softmax(policy.priorities(*policy_inputs(towers, open_)), dim=0)
        choice = int(torch.multinomial(dist.exp(), 1, generator=gen))
        log_probs.append(dist[choice])
        rewards.append(0.0 if answer_reward else float(table.has_answer[q][open_[choice]]))
        towers.build([open_[choice]])
    if answer_reward and rewards:
        rewards[-1] = answer_reward(q, towers)
    return log_probs, rewards


def returns(rewards: Sequence[float], step_cost: float, discount: float) -> list[float]:
    """Discounted return from every step: ``G_t = (r_t - cost) + γ G_{t+1}``."""
    out, g = [0.0] * len(rewards), 0.0
    for t in range(len(rewards) - 1, -1, -1):
        g = rewards[t] - step_cost + discount * g
        out[t] = g
    return out


def train_policy(
    train: ReadTable,
    temperatures: Sequence[float],
    options: PolicyOptions,
    validate: Callable[[SkylinePolicy], float],
    out_dir: str | Path,
    progress: bool = True,
    answer_reward: AnswerReward | None = None,
) -> dict[str, Any]:
    """Train a policy on ``train``; keep the one ``validate`` (EM on other questions) scores best in
    ``out_dir/best``. Returns the history. ``answer_reward``: how an answer is scored, given exactly
    when ``options.reward`` is "answer"."""
    if (options.reward == "answer") != (answer_reward is not None):
        raise ValueError(f"reward {options.reward!r} takes an answer_reward only when it is 'answer'")
    out_dir = Path(out_dir)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # steps are tiny tensors: more threads only add overhead
    try:
        return _train_policy(train, temperatures, options, validate, out_dir, progress, answer_reward)
    finally:
        torch.set_num_threads(threads)


def _train_policy(
    train: ReadTable,
    temperatures: Sequence[float],
    options: PolicyOptions,
    validate: Callable[[SkylinePolicy], float],
    out_dir: Path,
    progress: bool,
    answer_reward: AnswerReward | None,
) -> dict[str, Any]:
    with exclusive(out_dir, "scheduler output folder"):
        torch.manual_seed(options.seed)
        gen = torch.Generator().manual_seed(options.seed)
        rng = random.Random(options.seed)
        policy = SkylinePolicy(PolicyConfig(depth=train.depth, max_towers=max(len(r) for r in train.rows)))
        opt = torch.optim.SGD(policy.parameters(), lr=options.lr)
        history: list[dict[str, Any]] = []
        best = validate(policy.eval())
        history.append({"epoch": 0, "dev_em": best})
        policy.save_pretrained(out_dir / "best", {"training": asdict(options), "epoch": 0})
        for epoch in tqdm(range(1, options.epochs + 1), desc="scheduler", unit="epoch", disable=not progress):
            policy.train()
            order = list(range(len(train.qids)))
            rng.shuffle(order)
            total = 0.0
            for s in range(0, len(order), options.batch_size):
                runs = [
                    episode(policy, train, q, temperatures, rng.choice(options.budgets), gen, answer_reward)
                    for q in order[s : s + options.batch_size]
                ]
                # The answer's EM is every step's return, undiscounted and free of step costs: a
                # discount of 0.9 over 15-60 steps would leave the first choices almost nothing.
                cost, discount = (0.0, 1.0) if answer_reward else (options.step_cost, options.discount)
                gains = [returns(r, cost, discount) for _, r in runs]
                longest = max(len(g) for g in gains)
                base = [0.0] * longest
                if options.baseline:
                    for t in range(longest):
                        at_t = [g[t] for g in gains if t < len(g)]
                        base[t] = sum(at_t) / len(at_t)
                loss = torch.zeros(())
                for (log_probs, rewards), g in zip(runs, gains, strict=True):
                    total += sum(rewards)
                    for t, lp in enumerate(log_probs):
                        loss = loss - lp * (g[t] - base[t])
                opt.zero_grad()
                (loss / len(runs)).backward()
                opt.step()
            em = validate(policy.eval())
            earned = "train_em" if answer_reward else "answer_steps"
            history.append({"epoch": epoch, "dev_em": em, earned: total / len(order)})
            if em > best:
                best = em
                policy.save_pretrained(out_dir / "best", {"training": asdict(options), "epoch": epoch})
            atomic_write_json(out_dir / "train_log.json", history)
        return {"best_dev_em": best, "history": history}
