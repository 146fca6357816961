# GPU Brrr. `make book` builds the book, `make test` runs the CPU test suite; both set up .venv first.
# `make test` leaves out what is marked slow: the book's demos in a fresh environment, every act's
# notebooks through nbgrader validate and autograde but Act 0's, and the adversarial submissions whose
# `# slow:` line says why their CPU grading duplicates another test's.
# `make test-all` runs everything; CI (.ci/run) runs `make test`. Both spread the tests over the
# cores (pytest-xdist; JOBS=auto, or JOBS=4).
# On a GPU machine, `make test-gpu` runs every solution and exercise, the grader's GPU tests and the
# speed benchmark with the machine's own Python (its torch, Triton and CuPy match its CUDA);
# `make test-gpu-adversarial`, `test-gpu-book` and `test-gpu-stability` run the rest of the GPU suite.

PYTHON ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
ACTS := $(notdir $(wildcard solutions/act*))
OUT ?= gpu-out
JOBS ?= auto
# Tests that share a fixture run on one worker (pytest.mark.xdist_group, hence --dist loadgroup).
# OpenMP's threads sleep when out of work instead of spinning: the workers share the cores with
# each other and with the processes they start, and spinning took 40% more CPU on two cores.
PYTEST := OMP_WAIT_POLICY=PASSIVE $(VPY) -m pytest -q -n $(JOBS) --dist loadgroup

.PHONY: all setup book exercises test test-all lint test-gpu test-gpu-adversarial test-gpu-book test-gpu-stability test-gpu-class test-gpu-ncu test-gpu-multi test-gpu-all clean

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
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(PYTEST) -m "not gpu and not slow"

test-all: $(STAMP)
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(PYTEST) -m "not gpu"

# Run on a GPU machine; each writes one archive under $(OUT) (the run's folder results/runs/<name>/, executed notebooks)
# and fitted a 10-minute call on one H200 (README: measured times). test-gpu: the ceilings, every solution notebook at full
# marks (speed included), every untouched exercise at zero, the timing-protocol and checker tests,
# and the benchmark tables built from those gradings.
test-gpu:
	STEPS="solutions bench exercises" bash tests/gpu/run.sh "$(OUT)"

# The isolation tests (crash, leak, endless kernel) and the adversarial submissions' verdicts.
test-gpu-adversarial:
	STEPS="adversarial" bash tests/gpu/run.sh "$(OUT)"

# The book's demo notebooks, executed; their executed copies are committed over book/.
test-gpu-book:
	STEPS="book" bash tests/gpu/run.sh "$(OUT)"

# Repeated gradings of every timed reference solution (verdicts and speed spread); STABILITY_K and
# STABILITY_RUNS pick problems and gradings per call, `python -m autograder stability` merges calls.
test-gpu-stability:
	STEPS="stability" bash tests/gpu/run.sh "$(OUT)"

# A small class graded by `python -m autograder class` over every GPU of the host: its CSVs and the
# time per student per act (tests/gpu/grade_class.py; CLASS_ASSIGNMENTS picks acts).
test-gpu-class:
	STEPS="class" bash tests/gpu/run.sh "$(OUT)"

# Nsight Compute's counters of the SGEMM steps, the transpose, the reduction and the strided read
# (tests/gpu/profile_ncu.py): the numbers the book's profiling tables quote.
test-gpu-ncu:
	STEPS="ncu" bash tests/gpu/run.sh "$(OUT)"

# On a host with 2 or more GPUs (issue 22): Act 5's ring against NCCL, NCCL's bus bandwidth per size and the
# GPU-to-GPU copy (results/act5/*.json in the archive), and the book's demos with the NCCL plot measured.
test-gpu-multi:
	STEPS="multigpu book" bash tests/gpu/run.sh "$(OUT)"

# All of the above but the stability runs in one call: for a host with several GPUs or no time limit.
test-gpu-all:
	bash tests/gpu/run.sh "$(OUT)"

clean:
	rm -rf _build $(VENV) gradebook.db
