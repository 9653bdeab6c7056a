"""One training loop for every sieveqa model: AdamW (one fused kernel on a CPU or GPU), linear warm-up
then decay, gradient accumulation, seeded runs, progress bars, dev evaluation that keeps the best model,
and checkpoints that resume exactly where a killed run stopped (every random generator is saved with the
weights, so a resumed run ends with the same weights as an uninterrupted one;
``sieveqa.training.checkpoint``). It trains wherever the model is, under bf16 autocast on a GPU or on a
CPU that multiplies bf16 natively (``TrainConfig.precision``). Only one run at a time may write into an
output folder.
"""

from __future__ import annotations

import functools
import json
import math
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.torch import load_file, save_file
from torch import Tensor, nn
from tqdm.auto import tqdm
from transformers import get_linear_schedule_with_warmup

from sieveqa.batching import length_batches
from sieveqa.device import autocast, resolve_precision, trim_heap
from sieveqa.encoder import state_fingerprint
from sieveqa.errors import ConfigError, DataFormatError
from sieveqa.io import atomic_dir, atomic_write_json, exclusive
from sieveqa.training.batches import Evaluate, FeatureRows, Objective, TrainData
from sieveqa.training.checkpoint import StopRequest, check_checkpoint, rng_state, set_rng_state
from sieveqa.training.config import TrainConfig


@dataclass
class TrainState:
    """Where a run is: what the checkpoint records besides weights and optimizer."""

    epoch: int = 0
    batch_in_epoch: int = 0
    step: int = 0
    best_metric: float = -math.inf
    best_step: int = -1
    #: Wall seconds of the run so far (training, dev evaluations, checkpoints), over every part.
    seconds: float = 0.0
    #: Whether the last invocation paused at ``stop_after`` rather than finishing the run.
    paused: bool = False
    history: list[dict[str, Any]] = field(default_factory=list)

    def outcome(self, metric: str) -> str:
        """What the run chose, in words: the best dev checkpoint, or (no dev set) the last step's."""
        if self.best_step < 0:
            return f"no dev set: the model is the last step's ({self.step})"
        return f"best {metric}={self.best_metric:.4f} at step {self.best_step}"


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def train_precision(asked: str, device: torch.device) -> str:
    """The precision a run trains in: ``auto`` is bf16 where the device multiplies it natively (there it
    measured 2.3x faster than fp32 per step on a CPU, docs/RESULTS.md), else fp32 (fp16 would need
    loss scaling, which this loop does not do)."""
    resolved = resolve_precision(asked, device, training=True)
    if resolved not in ("fp32", "bf16"):
        return "fp32"
    return resolved


# Devices where AdamW runs as one fused kernel over all parameters instead of a Python loop of small
# ops per tensor: on MiniLM-L6 (22.7M parameters, 2 vCPUs) a step takes 32 ms instead of 141.
FUSED_DEVICES = ("cpu", "cuda")


def _adamw(model: nn.Module, config: TrainConfig, device: torch.device) -> torch.optim.AdamW:
    fused = True if device.type in FUSED_DEVICES else None
    return torch.optim.AdamW(_param_groups(model, config.weight_decay), lr=config.lr, fused=fused)


def _load_optimizer(optimizer: torch.optim.Optimizer, saved: dict[str, Any]) -> None:
    """Load ``saved`` into ``optimizer`` keeping its own kernel (fused or per tensor): a checkpoint
    written by either continues under this one, its step counts hosted where that kernel wants them."""
    kernels = [(group["fused"], group["foreach"]) for group in optimizer.param_groups]
    optimizer.load_state_dict(saved)
    for group, (fused, foreach) in zip(optimizer.param_groups, kernels, strict=True):
        group["fused"], group["foreach"] = fused, foreach
        for param in group["params"]:
            state = optimizer.state.get(param, {})
            if "step" in state:
                state["step"] = state["step"].to(dtype=torch.float32, device=param.device if fused else "cpu")


def _param_groups(model: nn.Module, weight_decay: float) -> list[dict[str, Any]]:
    decay, no_decay = [], []
    for name, param in model.named_parameters():
        if not param.requires_grad:
            continue
        (no_decay if param.ndim < 2 or "LayerNorm" in name else decay).append(param)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


class Trainer:
    """Trains ``model`` on ``data`` with ``objective``; writes everything under ``out_dir``.

    ``out_dir/best`` holds the best model by the dev metric (or the last one without ``evaluate``),
    ``out_dir/checkpoint`` the resumable state, ``out_dir/train_log.json`` the history.
    :class:`FeatureRows` data is made compact in place (:meth:`Features.compact`) for the run.
    """

    def __init__(
        self,
        model: nn.Module,
        objective: Objective,
        data: TrainData,
        config: TrainConfig,
        out_dir: str | Path,
        evaluate: Evaluate | None = None,
        meta: dict[str, Any] | None = None,
    ) -> None:
        if len(data) == 0:
            raise DataFormatError("no training examples")
        if isinstance(data, FeatureRows):  # held for the whole run: compact, the preparation's heap freed
            data.features = data.features.compact()
            trim_heap()
        self.model, self.objective, self.data, self.config = model, objective, data, config
        self.out_dir = Path(out_dir)
        self.evaluate = evaluate
        self.meta = meta or {}
        self.batches_per_epoch = math.ceil(len(data) / config.batch_size)
        self.total_batches = max(1, round(self.batches_per_epoch * config.epochs))
        # Accumulation never crosses an epoch's end (so an epoch-end checkpoint holds no pending
        # gradients): each epoch, and the part of one that ends a fractional run, rounds up apart.
        full, rest = divmod(self.total_batches, self.batches_per_epoch)
        per_epoch = math.ceil(self.batches_per_epoch / config.grad_accum)
        self.total_steps = full * per_epoch + math.ceil(rest / config.grad_accum)
        self.device = next(model.parameters()).device
        self.optimizer = _adamw(model, config, self.device)
        self.scheduler = get_linear_schedule_with_warmup(
            self.optimizer, int(config.warmup_ratio * self.total_steps), self.total_steps
        )
        self.state = TrainState()
        self._since = time.perf_counter()
        self.precision = train_precision(config.precision, self.device)

    # -- checkpoints --------------------------------------------------------------------------------

    @property
    def checkpoint_dir(self) -> Path:
        return self.out_dir / "checkpoint"

    @functools.cached_property
    def _frozen(self) -> frozenset[str]:
        """The parameters this run does not train."""
        return frozenset(n for n, p in self.model.named_parameters() if not p.requires_grad)

    @functools.cached_property
    def _frozen_fingerprint(self) -> str:
        state = self.model.state_dict()
        return state_fingerprint({n: state[n] for n in sorted(self._frozen)})

    def _tick(self) -> None:
        now = time.perf_counter()
        self.state.seconds += now - self._since
        self._since = now

    def save_checkpoint(self) -> None:
        self._tick()
        with atomic_dir(self.checkpoint_dir) as tmp:
            # What the run trains (and the buffers); what it froze is its start's, checked on resume.
            trained = {k: v for k, v in self.model.state_dict().items() if k not in self._frozen}
            save_file(
                {k: v.detach().cpu().contiguous() for k, v in trained.items()}, str(tmp / "model.safetensors")
            )
            rng = {"torch_rng": torch.get_rng_state()}
            if self.device.type == "cuda":
                rng["cuda_rng"] = torch.cuda.get_rng_state(self.device)
            torch.save(
                {"optimizer": self.optimizer.state_dict(), "scheduler": self.scheduler.state_dict(), **rng},
                tmp / "optimizer.pt",
            )
            state = {
                **self.state.__dict__,
                "config": self.config.to_dict(),
                "n_pairs": len(self.data),
                "n_examples": self.meta.get("n_examples", len(self.data)),
                "run": {k: v for k, v in self.meta.items() if k != "n_examples"},
                "precision": self.precision,
                "rng": rng_state(),
                "frozen_fingerprint": self._frozen_fingerprint,
            }
            (tmp / "trainer_state.json").write_text(json.dumps(state, indent=2), encoding="utf-8")

    def try_resume(self) -> bool:
        """Load ``out_dir/checkpoint`` if present; refuse one written for other data or settings."""
        path = self.checkpoint_dir
        if not check_checkpoint(self.out_dir, self.config, len(self.data)):
            return False
        saved = json.loads((path / "trainer_state.json").read_text(encoding="utf-8"))
        if "frozen_fingerprint" in saved and saved["frozen_fingerprint"] != self._frozen_fingerprint:
            raise ConfigError(
                f"{path}: the weights this run keeps frozen are not those it started from (the --init "
                "model, --train-layers or the installed backbone changed since); use a new output "
                "folder (or --no-resume)"
            )
        weights = load_file(str(path / "model.safetensors"))
        own = set(self.model.state_dict())
        missing, extra = own - self._frozen - set(weights), set(weights) - own
        if missing or extra:
            what = (
                f"lacks {sorted(missing)[0]}"
                if missing
                else f"holds {sorted(extra)[0]}, which the model has not"
            )
            raise ConfigError(f"{path}: the checkpoint {what}; use a new output folder (or --no-resume)")
        self.model.load_state_dict(weights, strict=False)
        blob = torch.load(path / "optimizer.pt", weights_only=True, map_location=self.device)
        _load_optimizer(self.optimizer, blob["optimizer"])
        self.scheduler.load_state_dict(blob["scheduler"])
        torch.set_rng_state(blob["torch_rng"].cpu())
        if "cuda_rng" in blob and self.device.type == "cuda":
            torch.cuda.set_rng_state(blob["cuda_rng"].cpu(), self.device)
        if "rng" in saved:
            set_rng_state(saved["rng"])
        if saved.get("precision", self.precision) != self.precision:
            # Same settings on another kind of machine: "auto" resolved otherwise. Continuing is
            # right (emulated bf16 is several times slower than fp32), but the weights will differ
            # from an uninterrupted run's.
            tqdm.write(
                f"{path}: the checkpoint trained in {saved['precision']}, this machine continues in "
                f"{self.precision} (--precision auto)"
            )
        fields_ = {k: saved[k] for k in TrainState.__dataclass_fields__ if k in saved}
        self.state = TrainState(**fields_)
        return True

    # -- the loop -------------------------------------------------------------------------------------

    def _epoch_batches(self, epoch: int) -> list[list[int]]:
        rng = random.Random(self.config.seed * 1_000_003 + epoch)
        return length_batches(self.data.lengths, self.config.batch_size, rng=rng)

    def _run_eval(self, reason: str) -> None:
        self._tick()
        record: dict[str, Any] = {
            "step": self.state.step,
            "epoch": self.state.epoch,
            "when": reason,
            "train_seconds": round(self.state.seconds, 1),
            "precision": self.precision,
        }
        if self.evaluate is not None:
            self.model.eval()
            metrics = self.evaluate(self.model)
            self.model.train()
            record.update(metrics)
            if self.config.metric not in metrics:  # e.g. has_auc on a dev set without unanswerable questions
                given = ", ".join(sorted(metrics))
                raise ConfigError(
                    f"--metric {self.config.metric}: the dev evaluation gave none (it gave {given})"
                )
            value = metrics[self.config.metric]
            if value > self.state.best_metric:
                self.state.best_metric, self.state.best_step = value, self.state.step
                self._save_best()
        else:
            self._save_best()
        self.state.history.append(record)
        atomic_write_json(self.out_dir / "train_log.json", self.state.history)
        shown = ", ".join(
            f"{k}={v:.4f}" for k, v in record.items() if isinstance(v, float) and k != "train_seconds"
        )
        tqdm.write(f"[{reason}] {shown or f'step {self.state.step}, saved (no dev set)'}")

    def _save_best(self) -> None:
        self._save("best")

    def _save(self, folder: str) -> None:
        if hasattr(self.model, "save_pretrained"):
            extra = {"training": {**self.meta, "step": self.state.step, "config": self.config.to_dict()}}
            self.model.save_pretrained(self.out_dir / folder, extra=extra)

    def train(self, resume: bool = True) -> TrainState:
        """Run (or continue) training; returns the final state with the history. The model ends in
        eval mode."""
        with exclusive(self.out_dir, "training output folder"), StopRequest().installed() as stop:
            state = self._train(resume, stop)
        self.model.eval()
        return state

    def _batch(self, rows: Sequence[int]) -> dict[str, Tensor]:
        return {k: v.to(self.device) for k, v in self.data.batch(rows).items()}

    def _train(self, resume: bool, stop: StopRequest) -> TrainState:
        seed_everything(self.config.seed)
        if resume and self.try_resume():
            tqdm.write(f"resumed from {self.checkpoint_dir} at step {self.state.step}")
        self.state.paused = False
        tqdm.write(f"training in {self.precision} on {self.device}")
        self.model.train()
        done = self.state.epoch * self.batches_per_epoch + self.state.batch_in_epoch
        bar = tqdm(
            total=self.total_batches,
            initial=done,
            desc="training",
            unit="batch",
            disable=not self.config.progress,
            dynamic_ncols=True,
        )
        accum, running, started = 0, 0.0, time.perf_counter()
        ended = bool(self.state.history) and self.state.history[-1]["step"] == self.state.step
        self._since, complete = started, done >= self.total_batches and ended
        if 0 < self.config.stop_after <= self.state.step < self.total_steps:
            return self._pause(bar)
        if self.config.eval_at_start and self.state.step == 0 and not self.state.history:
            self._run_eval("start")  # what the run starts from (a student cut from a deeper model)
        while done < self.total_batches:
            batches = self._epoch_batches(self.state.epoch)
            for rows in batches[self.state.batch_in_epoch :]:
                if done >= self.total_batches:
                    break
                batch = self._batch(rows)
                with autocast(self.device, self.precision):
                    loss = self.objective(self.model, batch) / self.config.grad_accum
                loss.backward()
                accum += 1
                value = loss.item() * self.config.grad_accum
                running = value if running == 0.0 else 0.98 * running + 0.02 * value
                self.state.batch_in_epoch += 1
                done += 1
                bar.update(1)
                bar.set_postfix(loss=f"{running:.4f}", lr=f"{self.scheduler.get_last_lr()[0]:.2e}")
                epoch_end = self.state.batch_in_epoch == len(batches)
                if accum == self.config.grad_accum or done == self.total_batches or epoch_end:
                    self._optimizer_step()
                    accum = 0
                    if self.config.eval_every and self.state.step % self.config.eval_every == 0:
                        self._run_eval(f"step {self.state.step}")
                    if self.state.step % self.config.checkpoint_every == 0:
                        self.save_checkpoint()
                    if self.state.step == self.config.stop_after and done < self.total_batches:
                        return self._pause(bar)
                    if stop.signal is not None and done < self.total_batches:  # at the last: it ends
                        self._stop(bar)
            if self.state.batch_in_epoch >= len(batches):
                self.state.epoch += 1
                self.state.batch_in_epoch = 0
                self._run_eval(f"epoch {self.state.epoch}")
                self.save_checkpoint()
        bar.close()
        if not self.state.history or self.state.history[-1]["step"] != self.state.step:
            self._run_eval("end")
        if self.state.best_step not in (-1, self.state.step):  # dev chose an earlier step: keep the
            self._save("last")  # last one too, for a next step that starts from the end (TANDA's transfer)
        self.save_checkpoint()
        trained = f"trained {self.state.step} steps in {time.perf_counter() - started:.0f}s"
        if complete:  # resumed a finished run: said so, not "trained 10 steps in 0s"
            trained = f"the run was complete at step {self.state.step} (--no-resume trains it again)"
        tqdm.write(f"{trained}; {self.state.outcome(self.config.metric)}")
        return self.state

    def _pause(self, bar: tqdm) -> TrainState:
        bar.close()
        self.state.paused = True
        self.save_checkpoint()
        tqdm.write(f"paused at step {self.state.step} (--stop-after); run again to continue")
        return self.state

    def _stop(self, bar: tqdm) -> None:
        """A signal asked the run to stop: its checkpoint, then KeyboardInterrupt (exit 130 on the
        command line: a `make` chain does not go on to its next step)."""
        bar.close()
        self.save_checkpoint()
        tqdm.write(f"stopped at step {self.state.step}, checkpoint written; the same command continues")
        raise KeyboardInterrupt

    def _optimizer_step(self) -> None:
        params = [p for group in self.optimizer.param_groups for p in group["params"]]
        torch.nn.utils.clip_grad_norm_(params, self.config.max_grad_norm)
        self.optimizer.step()
        self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.state.step += 1
