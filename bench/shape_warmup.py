"""Why the cascade runtime gains nothing from bf16 over PEASI's passages: the same questions ranked
three times by peasi-cascade at its tuned ratios, per-question calls, fp32 and bf16. In bf16 (oneDNN)
a kernel is built for every new input shape; a cascade's survivors make new shapes, and only the
first pass pays for them (docs/RESULTS.md, issue 31).

    python bench/shape_warmup.py
"""

import time

from sieveqa.data.registry import load_dataset
from sieveqa.runtime.policy import load_ranker


def main() -> None:
    examples = [e for e in load_dataset("squad-passages:dev") if e.candidates][:25]
    for precision in ("fp32", "bf16"):
        ranker = load_ranker("peasi-cascade", precision=precision)
        ranker.run(examples[:2])  # warm-up on other questions
        for attempt in (1, 2, 3):
            started = time.perf_counter()
            for example in examples:
                ranker.run([example])
            ms = 1000 * (time.perf_counter() - started) / len(examples)
            print(f"{precision} peasi-cascade (tuned ratios), pass {attempt}: {ms:.0f} ms per question")


if __name__ == "__main__":
    main()
