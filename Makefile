# Two commands for users: `make demo` and `make test`. Both install into .venv first if needed.
.PHONY: install demo test validate bench notebooks docs clean

VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

# A Python 3.12 interpreter: python3.12 on PATH if it runs (a pyenv shim may exist but
# refuse), else pyenv's own 3.12 installs. PyMC 6 / ArviZ 1.x need >= 3.12.
PYTHON312 ?= $(shell for p in python3.12 $${PYENV_ROOT:-$$HOME/.pyenv}/versions/3.12*/bin/python3.12 /usr/local/bin/python3.12 /usr/bin/python3.12; do \
	"$$p" -c 'import sys; assert sys.version_info[:2] == (3, 12)' >/dev/null 2>&1 && { echo "$$p"; break; }; done)

install: $(STAMP)

# uv installs the dependencies (PyPI's uv wheel, installed by pip into the venv): the same versions
# as pip resolves, in 22 s against pip's 155 s on a fresh 2-core machine (2026-12-04).
UV := $(BIN)/uv pip install --quiet --python $(BIN)/python

$(STAMP): pyproject.toml
	@test -n "$(PYTHON312)" || { echo "error: no working python3.12 found (install Python 3.12, or set PYTHON312=/path/to/python3.12)"; exit 1; }
	test -x $(BIN)/python || $(PYTHON312) -m venv $(VENV)
	test -x $(BIN)/uv || $(BIN)/python -m pip install --quiet uv
	$(UV) -e '.[test]'
	touch $(STAMP)

demo: install
	$(BIN)/bayes-raters demo

# Two pytest workers (pytest-xdist): most tests sample one chain at a time, so one process
# left a second core idle (50 min alone here at 6cb0be4). worksteal balances the long notebooks.
TEST_WORKERS ?= 2

# ruff first (style rules in pyproject.toml: pyflakes, pycodestyle at 160 columns, isort, bugbear,
# numpy-convention docstrings): a second, then the suite.
test: install
	$(BIN)/python -m ruff check .
	$(BIN)/python -m pytest -m "not slow and not site" -q --durations=15 -n $(TEST_WORKERS) --dist worksteal

# Slow statistical checks (calibration, large recoveries).
validate: install
	$(BIN)/python -m pytest -m slow -q --durations=0

bench: install
	@for f in benchmarks/bench_*.py; do echo "== $$f"; $(BIN)/python $$f || exit 1; done

# The documentation site (docs/conf.py): getting started, the model cards, the executed notebooks
# (their stored outputs) and the API reference, warnings as errors; then the site checks open it in
# headless Chromium (tests/docs/test_site.py; `apt-get install chromium`). CI builds it after make test.
docs: install $(VENV)/.docs-stamp
	$(BIN)/python -m sphinx -W --keep-going -b html -q docs docs/_build/html
	$(BIN)/python -m pytest -m site -q -p no:cacheprovider tests/docs
	@echo "the site: docs/_build/html/index.html"

$(VENV)/.docs-stamp: pyproject.toml
	$(UV) -e '.[test,docs]'
	touch $@

# Re-execute the notebooks in full mode and store their outputs (slow; run by hand).
notebooks: install
	$(BIN)/python notebooks/execute.py --full notebooks/*.ipynb

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info docs/_build docs/_copied
