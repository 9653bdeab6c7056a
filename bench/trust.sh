#!/usr/bin/env bash
# Issue 41's test tables (docs/RESULTS.md, "Answers worth trusting"): answer P@1 of every sentence method,
# with its shipped models and settings, on SQuAD-AS2 test questions over their retrieved passages and on
# WikiQA test; and how often questions whose article is not indexed abstain, at the shipped threshold.
# (Dev and squad2-open:test-made come from calibrate-confidence's reports: `make confidence-ship`.)
# A result already there is kept unless FORCE=1. Writes bench/results/trust/*.json.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-bench/results/trust}
SIEVEQA=${SIEVEQA:-.venv/bin/sieveqa}
METHODS=${METHODS:-peasi pointwise cascade peasi-all}
SETS=${SETS:-squad-passages:test-sentences wikiqa-passages:test-sentences squad-open-mini:test-unindexed}
mkdir -p "$OUT"
for method in $METHODS; do
  for dataset in $SETS; do
    out="$OUT/$method.${dataset%%:*}.${dataset#*:}.json"
    if [ -e "$out" ] && [ -z "${FORCE:-}" ]; then echo "kept $out"; continue; fi
    $SIEVEQA eval-answers --dataset "$dataset" --method "$method" --json "$out"
  done
done
