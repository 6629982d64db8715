# Two commands: `make run` (the standard suite on the simulated rack) and `make test`.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
RUN_STAMP := $(VENV)/.installed-run

.PHONY: run lint test test-under-load bench clean

# `make run`: the package alone (no test extra: no Ray, Jupyter or validators in a demo's .venv)
$(RUN_STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e .
	touch $(RUN_STAMP)

# `make test` and the benchmarks: the package with its test extra
$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $(STAMP)

run: $(RUN_STAMP)
	$(VENV)/bin/rackclock run

# pytest-xdist workers, one more than the cores where the machine has 2 or more (most tests wait
# on emulators in real time, so a third worker fills the cores; the suite holds its truth beside two
# CPU hogs: `make test-under-load`), a test module per worker at a time; a test that opens the
# served rack's devices (RACKCLOCK_RACK) holds the rack (bench/config/racklock.py), so the others
# wait. TEST_WORKERS=0: serially
TEST_WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 1); [ "$$n" -ge 2 ] && echo $$((n + 1)) || echo 0)
# the house gate (pyproject.toml [tool.ruff], [tool.mypy]): lint only, never reformats
lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

test: lint
	$(PY) -m pytest -q -ra -n $(TEST_WORKERS) --dist loadfile $(PYTEST_ARGS)

# the suite 3 times in a row beside two CPU-bound hogs (tests/under_load.py), with the workers
# and distribution `make test` uses
test-under-load: $(STAMP)
	$(PY) tests/under_load.py --runs 3 --hogs 2 -- -n $(TEST_WORKERS) --dist loadfile $(PYTEST_ARGS)

bench: $(STAMP)
	$(PY) benchmarks/run_all.py

clean:
	rm -rf $(VENV) build *.egg-info
