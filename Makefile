# Two commands: `make run` (the standard suite on the simulated rack) and `make test`.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test test-under-load bench clean

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $(STAMP)

run: $(STAMP)
	$(VENV)/bin/rackclock run

# serially by default; TEST_WORKERS=2: on 2 pytest-xdist workers, a test module per worker at a
# time. Not the default: with a served rack (RACKCLOCK_RACK), two workers can open the same
# device at once (test_pytest_plugin's calibration and test_snmp_pdu_with_device both bound
# pdu-1's trap port in one CI run)
TEST_WORKERS ?= 0
test: $(STAMP)
	$(PY) -m pytest -q -ra -n $(TEST_WORKERS) --dist loadfile $(PYTEST_ARGS)

# the suite 3 times in a row beside two CPU-bound hogs (tests/under_load.py)
test-under-load: $(STAMP)
	$(PY) tests/under_load.py --runs 3 --hogs 2 -- $(PYTEST_ARGS)

bench: $(STAMP)
	$(PY) benchmarks/run_all.py

clean:
	rm -rf $(VENV) build *.egg-info
