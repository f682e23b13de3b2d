# The course book. `make help` lists what a person can do.
PYTHON     ?= python3
VENV       ?= .venv
BIN        := $(VENV)/bin
SPHINX     := $(BIN)/sphinx-build
BUILD      := _build
# -W: a warning is an error; --keep-going: report all of them before stopping;
# -j: pages are read (and chapters executed) in JOBS processes.
JOBS       ?= auto
SPHINXOPTS ?= -W --keep-going -j $(JOBS)

.DEFAULT_GOAL := help
.PHONY: help venv chapter chapter-packages preview execute merge-caches recording recording-check recording-ready recording-environments tpu-smoke record-cloud-tpu html instructor editions pdf pdf-instructor handouts pdf-deps audit prose-check bench accept-outputs verify-torch accept-outputs-torch refresh-runtimes verify-runtime accept-outputs-runtime test test-recording test-suite test-fast clean clean-cache

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-23s %s\n", $$1, $$2}'

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	@touch $@

venv: $(VENV)/.installed ## Create the virtual environment the book builds in

# Recorded chapters: run on a machine of a kind of tools/machine-kinds.toml, in the environments
# of book/recordings/NAME-environments.toml. The recorder needs Python 3.11 or newer with its
# venv package, and a few small packages (not the book's environment), so it runs in Colab as
# it comes and on a Cloud TPU VM with a Python brought along (its image's is 3.10).
# tools/check_venv.py stops first, with one line, on a Python too old or that cannot create
# environments (Colab's 3.13 without python3.13-venv). The first TPU recording, step by
# step: docs/recording.md.
RECORDING ?= bridges
KIND      ?= tpu
RECORDER  := .venv-recorder
RECORD     = $(RECORDER)/bin/python tools/record_chapter.py book/$(RECORDING).md --kind $(KIND)

$(RECORDER)/.installed: tools/recorder-requirements.txt
	@$(PYTHON) tools/check_venv.py
	$(PYTHON) -m venv $(RECORDER)
	$(RECORDER)/bin/pip install --quiet -r tools/recorder-requirements.txt
	@touch $@

recording: $(RECORDER)/.installed ## Run a recorded chapter on this machine -> book/recordings/ (RECORDING=bridges KIND=tpu|gpu|cpu)
	$(RECORD)

recording-check: $(RECORDER)/.installed ## Check a committed recording against a fresh run (CI: KIND=cpu)
	$(RECORD) --check

recording-ready: $(RECORDER)/.installed ## Check that each accelerator environment installs on its machines (needs the registry)
	$(RECORDER)/bin/python tools/check_environments.py

# The last line it prints: the environments' Pythons, as JSON (the TPU smoke test reads it).
recording-environments: $(RECORDER)/.installed ## Create a recorded chapter's environments on this machine, run nothing (RECORDING=bridges KIND=tpu)
	@$(RECORD) --environments-only

# Progress on stderr, the report on stdout (and in SMOKE_REPORT, when set).
SMOKE_REPORT ?=
tpu-smoke: $(RECORDER)/.installed ## On a TPU machine, before its first recording: each bridge alone and both together, one JSON report (RECORDING=bridges)
	@$(RECORDER)/bin/python tools/tpu_smoke.py --recording $(RECORDING) $(if $(SMOKE_REPORT),--output $(SMOKE_REPORT))

# A spot Cloud TPU VM, made and deleted by the script (gcloud, logged in; `--dry-run` lists
# its commands): this commit's recording comes back into book/recordings/.
PROJECT ?=
record-cloud-tpu: ## Record on a spot Cloud TPU VM made for it, then delete it (PROJECT=... RECORDING=bridges; DRY_RUN=1 prints the gcloud commands)
	$(PYTHON) tools/cloud_tpu_record.py --recording $(RECORDING) $(if $(PROJECT),--project $(PROJECT)) $(if $(DRY_RUN),--dry-run)

# $(call edition,SPHINX-BUILD,EDITION,OUTPUT ROOT,EXTRA OPTIONS): one HTML edition.
edition = $(1) -b html -c . $(if $(filter instructor,$(2)),-t instructor) \
          -d $(3)/$(2)/doctrees book $(3)/$(2)/html $(SPHINXOPTS) $(4)

html: venv ## Student edition, HTML -> _build/student/html/index.html
	$(call edition,$(SPHINX),student,$(BUILD))

instructor: venv ## Instructor edition, HTML -> _build/instructor/html/index.html
	$(call edition,$(SPHINX),instructor,$(BUILD))

# At the same time, sharing one cache: a notebook both editions share (the museum's) runs
# once, the other edition waits for it (coursebook.execute.shared_cache), then takes it from the cache.
editions: venv ## Both HTML editions, built at the same time
	$(MAKE) -j 2 html instructor

# A new chapter from the skeleton (tools/chapter-template.md), or a lesson brought in (FROM=),
# listed in book/index.md's contents and reading order (AFTER=, else after the last chapter
# that is not recorded); the tool refuses to overwrite a chapter and prints what it changed,
# what is left to do and the commands that follow.
NAME  ?=
TITLE ?=
FROM  ?=
AFTER ?=
chapter: venv ## Start a chapter: book/NAME.md from the skeleton (NAME=pt02 TITLE="PT02: ..."), or bring a lesson in (FROM=path.ipynb|.py|.md, SOLUTIONS=its solutions .ipynb); AFTER=pt01
	$(BIN)/python tools/new_chapter.py "$(NAME)" "$(TITLE)" $(if $(FROM),--from "$(FROM)") $(if $(SOLUTIONS),--solutions "$(SOLUTIONS)") $(if $(AFTER),--after "$(AFTER)")

# What a chapter needs beyond the book's own packages, declared in its top matter
# (`coursebook: {packages: [NAME, ...]}`): a build installs nothing, and refuses a chapter
# that needs one this environment lacks (coursebook/prepare/chapter_packages.py).
chapter-packages: venv ## Install the packages the chapters declare into the book's environment
	$(BIN)/python tools/chapter_packages.py --install book

# sphinx-autobuild: each save rebuilds the edition (verified as `make html` does) and reloads
# the open page; a failed build keeps the last good pages. See `tools/preview.py --help`.
EDITION ?= student
PORT    ?= 8000
preview: venv ## Serve an edition on localhost, rebuilt on each save (EDITION=student|instructor PORT=8000)
	$(BIN)/python tools/preview.py --edition $(EDITION) --port $(PORT)

# Execution across machines: each of N shards executes its chapters (dealt by their
# recorded execution times) into _build/shards/shard-I/ (what the build's cache holds is
# copied, not executed); the merge checks them against the book and fills the build's
# cache, so that `make html instructor` executes nothing.
SHARD  ?= 1/1
SHARDS ?= $(lastword $(subst /, ,$(SHARD)))
execute: venv ## Execute one shard's chapters into its own cache (SHARD=I/N) -> _build/shards/shard-I/
	$(BIN)/python tools/shards.py execute $(SHARD) --reuse $(BUILD)/.jupyter_cache

merge-caches: venv ## Merge the N shards' caches into the build's cache (SHARDS=N)
	$(BIN)/python tools/shards.py merge $(SHARDS)

pdf: venv ## Student edition, PDF -> _build/student/pdf/deep-learning-labs-student.pdf
	$(BIN)/python tools/build_pdf.py student

pdf-instructor: venv ## Instructor edition, PDF -> _build/instructor/pdf/
	$(BIN)/python tools/build_pdf.py instructor

# One Sphinx run per edition writes every chapter's LaTeX; each chapter is typeset and
# checked on its own. Same execution cache as the HTML: nothing runs again.
handouts: venv ## Lab handouts, one PDF per chapter and edition -> _build/<edition>/pdf/handouts/<chapter>.pdf
	$(BIN)/python tools/build_pdf.py student --handouts
	$(BIN)/python tools/build_pdf.py instructor --handouts

pdf-deps: ## Install TeX and poppler for the PDFs (Debian/Ubuntu, as root)
	apt-get update -q && apt-get install -y -q --no-install-recommends $(shell cat tools/pdf-packages.txt)

# On a clean tree: an incremental build's search index keeps terms of earlier builds, and
# jupyter_execute/ the notebook of a chapter since taken out (audited against today's answers).
# It reads only what it builds: each PDF is audited as it is made (tools/build_pdf.py).
audit: venv ## Rebuild the student HTML on a clean tree and prove it holds no answer
	rm -rf $(BUILD)/student/html $(BUILD)/student/doctrees $(BUILD)/student/jupyter_execute
	$(call edition,$(SPHINX),student,$(BUILD))
	$(BIN)/python tools/audit_student_build.py $(BUILD)/student

# Facts come from the course material in ../shared/seeds; sentences must be the book's own.
prose-check: venv ## List prose sharing 12+ words in a row with the course material (../shared/seeds)
	$(BIN)/python tools/prose_overlap.py

# After a reviewed change of outputs, or a new torch: this torch's error record of each
# exhibit, then the expected outputs of every chapter, both editions (one after the other:
# both write the same files); each chapter whose outputs changed then runs a second time,
# so that an output varying between runs is found now (tools/accept_outputs.py).
# Review `git diff exhibits/ book/expected/` before committing.
ACCEPT := -D coursebook_accept_outputs=1
accept-outputs: venv ## Take this build's outputs as expected (exhibit errors and chapter outputs), changed chapters run twice
	$(BIN)/python tools/accept_exhibit_records.py --replace
	$(BIN)/python tools/accept_outputs.py

# A second torch, really run: the book's pins with another torch, in a side environment.
# PyPI serves torch 2.14.1 as a CUDA build (about 5.5 GB), so CI leaves this out; its
# expected outputs and exhibit records are committed.
TORCH      ?= 2.14.1
TORCH_VENV := .venv-torch-$(TORCH)
TORCH_OUT  := $(BUILD)/torch-$(TORCH)

$(TORCH_VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(TORCH_VENV)
	$(TORCH_VENV)/bin/pip install --quiet --upgrade pip
	$(PYTHON) -c "import tomllib; print('\n'.join(d for d in tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies'] if not d.startswith('torch==')))" > $(TORCH_VENV)/pins.txt
	$(TORCH_VENV)/bin/pip install --quiet -r $(TORCH_VENV)/pins.txt torch==$(TORCH) pytest
	$(TORCH_VENV)/bin/pip install --quiet --no-deps -e .
	@touch $@

verify-torch: $(TORCH_VENV)/.installed ## Verify chapters and exhibits on another torch (TORCH=2.14.1) -> _build/torch-2.14.1/
	$(call edition,$(TORCH_VENV)/bin/sphinx-build,student,$(TORCH_OUT))
	$(call edition,$(TORCH_VENV)/bin/sphinx-build,instructor,$(TORCH_OUT))
	$(TORCH_VENV)/bin/python -m pytest -q book

accept-outputs-torch: $(TORCH_VENV)/.installed ## accept-outputs, on that torch (TORCH=2.14.1)
	$(TORCH_VENV)/bin/python tools/accept_exhibit_records.py --replace
	$(call edition,$(TORCH_VENV)/bin/sphinx-build,student,$(TORCH_OUT),$(ACCEPT))
	$(call edition,$(TORCH_VENV)/bin/sphinx-build,instructor,$(TORCH_OUT),$(ACCEPT))

# Runtimes (tools/runtimes.toml): where students run the chapters. Colab's pins come from a
# local copy of the lists Colab publishes, kept whole in tools/runtime-images/ (the recorder
# resolves with them and names each difference); nothing is fetched during a build.
COLAB_LISTS ?= ../shared/colab-runtimes
refresh-runtimes: venv ## Refresh tools/runtimes.toml's pins from a local copy of Colab's lists (COLAB_LISTS=../shared/colab-runtimes)
	$(BIN)/python tools/refresh_runtimes.py $(COLAB_LISTS)

# The student downloads, run as Colab's "Run all" in a replica of a runtime (its Python
# and pins, in .venv-runtime-NAME/). Colab's torch comes from PyPI as a CUDA build of
# several GB and the replica needs Python 3.13, so CI leaves this out; the expected outputs
# and exhibit records it compares with are committed. A recorded chapter's download runs in
# its stand-in's environment (what its set-up cell makes of a runtime without the device),
# as Run all and part by part after each restart, every cell against the recording.
RUNTIME ?= colab-cpu
verify-runtime: html ## Run the student downloads in a replica of a runtime (RUNTIME=colab-cpu) and compare every cell
	$(BIN)/python tools/verify_runtime.py $(RUNTIME)

accept-outputs-runtime: html ## accept-outputs, on a runtime's replica (RUNTIME=colab-cpu): its torch's outputs and exhibit errors
	$(BIN)/python tools/verify_runtime.py $(RUNTIME) --accept

# BENCH_ARGS: see `tools/bench_build.py --help` (--runs, --skip-jupyter-book, ...).
bench: venv ## Benchmark builds against the nbclient floor, Sphinx, Jupyter Book 1 and 2, a 12-chapter book
	$(BIN)/python tools/bench_build.py $(BENCH_ARGS)

# The recording check mostly installs its stand-in environment (a 7.8 GB download, disk
# and network bound) while the tests mostly compute: run side by side, each one's output
# shown whole when it ends.
test: venv ## All tests, the slow full builds included, and the CPU stand-in recording re-run (what CI runs)
	@$(PYTHON) tools/system_tools.py
	$(MAKE) -j 2 --output-sync=target test-recording test-suite

# The stand-in's re-run, then the recorded chapter's student download run in the stand-in's
# environment, as Colab's Run all runs it on a runtime without the device and as a runtime
# with the device runs it after each restart, every cell compared with the recording.
test-recording: venv
	$(MAKE) recording-check KIND=cpu
	COURSEBOOK_STAND_IN=1 $(BIN)/python -m pytest -q -m slow tests/test_downloads.py -k stand_in

# Two workers too, each file's tests on one (they share its fixtures), the files in the order
# tests/conftest.py gives them (the most slow tests first); the `built` books are built once,
# by the first worker that asks. Not --dist loadgroup: with pytest 9.2 it groups nothing
# (pytest-dev/pytest-xdist#1386). The slowest tests are listed at the end, for whoever
# shortens the suite.
test-suite: venv
	$(BIN)/python -m pytest -n 2 --dist loadfile --no-loadscope-reorder -m 'slow or not slow' \
		--durations=15 tests book

# Two workers (pytest-xdist): the fast tests are independent, and the machines have two cores.
test-fast: venv ## The fast tests only: no build, no chapter executed (two workers)
	$(BIN)/python -m pytest -n 2 tests

clean: ## Remove the built editions (keeps the execution cache)
	rm -rf $(BUILD)/student $(BUILD)/instructor

clean-cache: ## Remove the execution cache too: every cell runs again
	rm -rf $(BUILD)
