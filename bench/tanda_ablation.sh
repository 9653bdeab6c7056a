#!/usr/bin/env bash
# The transfer step's effect (TANDA) and the shipped default model's test numbers.
# Needs `make default-model` to have run (RUN=runs/default); trains the adapt-only model itself.
# Writes bench/results/tanda/*.json.
set -euo pipefail
cd "$(dirname "$0")/.."
RUN=${RUN:-runs/default}
OUT=bench/results/tanda
SIEVEQA=${SIEVEQA:-.venv/bin/sieveqa}
mkdir -p "$OUT"

# Adapt only: the same adapt step as `make default-model`, started from the untuned backbone.
$SIEVEQA train --train wikiqa:train,trecqa:train --init minilm-l6 --dev wikiqa:dev,trecqa:dev-clean \
  --out "$RUN/adapt-only" --epochs 2 --lr 2e-5

FORCE=1 bench/tanda_eval.sh transfer="$RUN/transfer/best" adapt-only="$RUN/adapt-only/best" adapt="$RUN/adapt/best"
