"""Milliseconds per AdamW step (with gradient clipping) over a MiniLM-L6-sized BERT, per kernel:
``python bench/adamw_step.py``. Compare the kernels within one run only (docs/RESULTS.md, issue 43)."""

from __future__ import annotations

import time

import torch
from transformers import BertConfig, BertModel


def main(steps: int = 20) -> None:
    torch.manual_seed(0)
    config = BertConfig(hidden_size=384, num_hidden_layers=6, num_attention_heads=12, intermediate_size=1536)
    params = list(BertModel(config).parameters())
    print(f"{sum(p.numel() for p in params) / 1e6:.1f}M parameters, {torch.get_num_threads()} threads")
    for p in params:
        p.grad = torch.randn_like(p)
    for kernel in ({"foreach": False}, {"foreach": True}, {"fused": True}):
        optimizer = torch.optim.AdamW(params, lr=1e-5, **kernel)
        for _ in range(3):
            optimizer.step()
        start = time.perf_counter()
        for _ in range(steps):
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            optimizer.step()
        print(f"{kernel}: {(time.perf_counter() - start) / steps * 1000:.1f} ms a step")


if __name__ == "__main__":
    main()
