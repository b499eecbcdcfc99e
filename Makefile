# Two commands: `make demo` answers the demo question on the embedded model,
# `make test` runs the whole suite (unit and integration; the Postgres tests need
# $REACTGRAPH_TEST_DATABASE_URL, which .ci/run sets up). Both create .venv first.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
QUESTION ?= CNC-003 상태 확인해줘

.PHONY: demo test bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

demo: $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[local]"
	$(BIN)/reactgraph run --max-iterations 6 "$(QUESTION)"

test: $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[local,dev,postgres]"
	$(BIN)/python -m pytest

bench: $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[dev,postgres]"
	$(BIN)/python bench/overhead.py
	$(BIN)/python bench/import_time.py
	$(BIN)/python bench/tool_tokens.py
	$(BIN)/python bench/guard_cost.py
	$(BIN)/python bench/load.py
	$(BIN)/python bench/checkpoint_overhead.py
	$(BIN)/python bench/renderer.py

clean:
	rm -rf $(VENV) build site *.egg-info .pytest_cache .hypothesis
