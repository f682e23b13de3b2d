# The course book. `make help` lists what a person can do.
PYTHON     ?= python3
VENV       ?= .venv
BIN        := $(VENV)/bin
SPHINX     := $(BIN)/sphinx-build
BUILD      := _build
# -W: a warning is an error; --keep-going: report all of them before stopping.
SPHINXOPTS ?= -W --keep-going

.DEFAULT_GOAL := help
.PHONY: help venv html instructor editions pdf pdf-instructor pdf-deps audit bench record-exhibits test test-fast clean clean-cache

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-14s %s\n", $$1, $$2}'

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	@touch $@

venv: $(VENV)/.installed ## Create the virtual environment the book builds in

html: venv ## Student edition, HTML -> _build/student/html/index.html
	$(SPHINX) -b html -c . -d $(BUILD)/student/doctrees book $(BUILD)/student/html $(SPHINXOPTS)

instructor: venv ## Instructor edition, HTML -> _build/instructor/html/index.html
	$(SPHINX) -b html -t instructor -c . -d $(BUILD)/instructor/doctrees book $(BUILD)/instructor/html $(SPHINXOPTS)

editions: html instructor ## Both HTML editions

pdf: venv ## Student edition, PDF -> _build/student/pdf/deep-learning-labs-student.pdf
	$(BIN)/python tools/build_pdf.py student

pdf-instructor: venv ## Instructor edition, PDF -> _build/instructor/pdf/
	$(BIN)/python tools/build_pdf.py instructor

pdf-deps: ## Install TeX and poppler for the PDFs (Debian/Ubuntu, as root)
	apt-get update -q && apt-get install -y -q --no-install-recommends $(shell cat tools/pdf-packages.txt)

audit: html ## Prove the student build holds no answer
	$(BIN)/python tools/audit_student_build.py $(BUILD)/student

record-exhibits: venv ## Record each CPU exhibit's error for this torch (after an upgrade)
	$(BIN)/python tools/record_exhibits.py

bench: venv ## Benchmark builds: cold, warm, edits, nbclient floor, Jupyter Book 1
	$(BIN)/python tools/bench_build.py

test: venv ## All tests, the slow full builds included (what CI runs)
	$(BIN)/python -m pytest -m 'slow or not slow'

test-fast: venv ## The fast tests only
	$(BIN)/python -m pytest

clean: ## Remove the built editions (keeps the execution cache)
	rm -rf $(BUILD)/student $(BUILD)/instructor

clean-cache: ## Remove the execution cache too: every cell runs again
	rm -rf $(BUILD)
