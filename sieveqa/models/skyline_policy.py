"""SkylineBuilder's learned scheduling policy (adaptive computation for ODQA, section 3.3.1).

The priority of a tower that has been read is ``w · p + MLP(φ)``, where ``p`` is its calibrated
has-answer probability and ``φ`` is ``p`` with embeddings of the tower's height and of its passage's
retrieval rank; a tower not read yet has a learned initial priority per rank. The policy is the
softmax of the priorities over the towers still open (trained by REINFORCE in
``sieveqa.training.skyline``; greedy at question time). About a thousand parameters: nothing next to
the reader.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Self

import torch
from torch import Tensor, nn

from sieveqa.errors import ConfigError, ModelFormatError
from sieveqa.fields import typed
from sieveqa.models._saving import load_into, read_meta, save_model_folder

KIND = "skyline-policy"


@dataclass
class PolicyConfig:
    """Shape of the policy: the reader's depth and the towers (ranks) it has embeddings for."""

    depth: int = 6
    max_towers: int = 30
    embedding: int = 8
    hidden: int = 16

    def __post_init__(self) -> None:
        if min(self.depth, self.max_towers, self.embedding, self.hidden) < 1:
            raise ConfigError(f"PolicyConfig: every size must be >= 1, got {asdict(self)}")


class SkylinePolicy(nn.Module):
    """Tower priorities from has-answer probability, height and rank."""

    def __init__(self, config: PolicyConfig | None = None) -> None:
        super().__init__()
        self.config = config = config or PolicyConfig()
        self.height = nn.Embedding(config.depth + 1, config.embedding)
        self.rank = nn.Embedding(config.max_towers, config.embedding)
        self.mlp = nn.Sequential(
            nn.Linear(2 * config.embedding + 1, config.hidden), nn.Tanh(), nn.Linear(config.hidden, 1)
        )
        self.mix = nn.Parameter(torch.ones(()))
        self.initial = nn.Parameter(torch.linspace(1.0, 0.0, config.max_towers))

    def priorities(self, prob: Tensor, height: Tensor, rank: Tensor) -> Tensor:
        """One priority per tower (1-D tensors of equal length; ranks beyond ``max_towers`` share
        the last rank's embedding)."""
        rank = rank.clamp(max=self.config.max_towers - 1)
        phi = torch.cat(
            [prob.unsqueeze(-1), self.height(height.clamp(max=self.config.depth)), self.rank(rank)], -1
        )
        read = self.mix * prob + self.mlp(phi).squeeze(-1)
        return torch.where(height > 0, read, self.initial[rank])

    def save_pretrained(self, path: str | Path, extra: dict | None = None) -> Path:
        meta = {"sieveqa_model": KIND, "config": asdict(self.config), **(extra or {})}
        return save_model_folder(path, self, meta, dtype=torch.float32)

    @classmethod
    def from_pretrained(cls, path: str | Path) -> Self:
        """Load a saved policy (or the ``best`` one of a ``train-scheduler`` output folder)."""
        path = Path(path)
        if (path / "best").is_dir():
            path = path / "best"
        meta = read_meta(path, KIND)
        where = f"{path}/config.json: config"
        try:
            config = PolicyConfig(**typed(PolicyConfig, meta["config"], where, ModelFormatError))
        except ConfigError as err:
            raise ModelFormatError(f"{where}: {err}") from err
        policy = cls(config)
        load_into(path, policy, meta)
        policy.meta = meta
        return policy.eval()


def load_scheduler(path: str | Path) -> SkylinePolicy:
    """A saved learned scheduler; a folder that is not one is a ConfigError naming ``--scheduler``."""
    try:
        return SkylinePolicy.from_pretrained(path)
    except ModelFormatError as err:
        raise ConfigError(f"--scheduler {path}: {err}") from None
