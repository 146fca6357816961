# GPU Brrr. `make book` builds the book, `make test` runs the CPU test suite; both set up .venv first.
# On a GPU machine, `make test-gpu` runs every solution and exercise, the grader's GPU tests and the
# speed benchmark with the machine's own Python (its torch, Triton and CuPy match its CUDA).

PYTHON ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
ACTS := $(notdir $(wildcard solutions/act*))
OUT ?= gpu-out

.PHONY: all setup book exercises test lint test-gpu test-gpu-stability clean

all: book

$(STAMP): requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip
	$(VPY) -m pip install -q -r requirements.txt
	$(VPY) -m pip install -q --no-deps -e .
	$(VPY) -m ipykernel install --sys-prefix --name python3 --display-name "Python 3" > /dev/null
	touch $(STAMP)

setup: $(STAMP)

book: $(STAMP)
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(VENV)/bin/jupyter-book build . -W -n --keep-going
	@echo "The book is in _build/html/index.html"

# Regenerate exercises/ (nbgrader's release folder) from solutions/ (its source folder).
exercises: $(STAMP)
	for act in $(ACTS); do PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(VENV)/bin/nbgrader generate_assignment $$act --force --log-level=WARN || exit 1; done

lint: $(STAMP)
	$(VENV)/bin/ruff check autograder tests

test: $(STAMP)
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(VPY) -m pytest -m "not gpu" -q

# Run on a GPU machine. Writes everything under $(OUT): logs, results/, executed notebooks.
test-gpu:
	bash tests/gpu/run.sh "$(OUT)"

# The same, plus ten gradings in a row of every reference solution (verdicts and speed spread).
test-gpu-stability:
	STABILITY=1 bash tests/gpu/run.sh "$(OUT)"

clean:
	rm -rf _build $(VENV) gradebook.db
