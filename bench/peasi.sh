#!/usr/bin/env bash
# PEASI's tables (docs/RESULTS.md): every answer method on SQuAD-AS2 test questions over their
# retrieved passages (squad-passages:test) and on WikiQA test, and each passage reranker.
# Needs `make peasi-models` (PEASI=runs/peasi). Writes bench/results/peasi/*.json.
set -euo pipefail
cd "$(dirname "$0")/.."
P=${PEASI:-runs/peasi}
# The EASI to pair with each reranker: EASI=NAME, else the one chosen on dev (runs/peasi/easi-choice.txt).
EASI=${EASI:-$(sed -n 's/^EASI chosen on dev: //p' "$P/easi-choice.txt" 2>/dev/null || true)}
EASI=${EASI:-easi-pooled}
OUT=bench/results/peasi
SIEVEQA=${SIEVEQA:-.venv/bin/sieveqa}
SETS=${SETS:-squad-passages:test-sentences wikiqa-passages:test-sentences}
# ONLY=stage1 runs what needs only the first training stage; ONLY=stage2 the multi-task rerankers.
ONLY=${ONLY:-all}
mkdir -p "$OUT"

for dataset in $SETS; do
  tag=${dataset%%:*}
  run() {  # NAME, then eval-answers options; a result already there is kept unless FORCE=1
    local name=$1; shift
    if [ -e "$OUT/$tag.$name.json" ] && [ -z "${FORCE:-}" ]; then echo "kept $OUT/$tag.$name.json"; return; fi
    $SIEVEQA eval-answers --dataset "$dataset" "$@" --json "$OUT/$tag.$name.json"
  }
  if [ "$ONLY" != stage2 ]; then
    run pointwise --method pointwise
    run cascade --method cascade
    run peasi --method peasi --reranker "$P/pr/best" --selector "$P/easi-pooled/best"
    run peasi-slots --method peasi --reranker "$P/pr/best" --selector "$P/easi-slots/best"
    run peasi-all --method peasi-all --selector "$P/easi-pooled/best"
  fi
  if [ "$ONLY" != stage1 ]; then
    run peasi-pr-continued --method peasi --reranker "$P/pr-continued/best" --selector "$P/$EASI/best"
    for s in mtl0 mtl1 concat; do
      run "peasi-$s" --method peasi --reranker "$P/$s/best"
    done
  fi
done
