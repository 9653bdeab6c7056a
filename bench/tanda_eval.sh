#!/usr/bin/env bash
# Evaluate models on the TANDA table's sets: bench/tanda_eval.sh TAG=MODEL [TAG=MODEL ...]
# writes bench/results/tanda/TAG.DATASET.json for each (DATASETS overrides the list; a result already
# there is kept unless FORCE=1).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=bench/results/tanda
SIEVEQA=${SIEVEQA:-.venv/bin/sieveqa}
DATASETS=${DATASETS:-wikiqa:dev trecqa:dev-clean wikiqa:test trecqa:test-clean}
mkdir -p "$OUT"
for spec in "$@"; do
  tag=${spec%%=*} model=${spec#*=}
  for dataset in $DATASETS; do
    json="$OUT/$tag.${dataset/:/_}.json"
    if [ -e "$json" ] && [ -z "${FORCE:-}" ]; then echo "kept $json"; continue; fi
    $SIEVEQA eval --model "$model" --dataset "$dataset" --json "$json"
  done
done
