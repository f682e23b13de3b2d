#!/usr/bin/env python3
"""Run the student downloads in a replica of a runtime and compare what they print.

For a runtime of tools/runtimes.toml verified by its downloads (Colab's CPU runtime, say):
creates its environment (.venv-runtime-NAME/: its Python where this machine has it, else
the nearest, and its pins; a pin with a local build tag such as 2.11.0+cpu is installed as
the registry's build of that release), then runs each student download
(_build/student/html/_sources/CHAPTER.ipynb) as Colab's "Run all" does: tags ignored, its
own %pip cells run, stopping at the first error. Each cell's output is compared with the
expected outputs for the runtime's torch (book/expected/torch-VERSION/CHAPTER.txt) and
each exhibit's caught error with its record for that torch. With --accept, both are
recorded instead, with the replica named as where they ran. Review the diff.

A recorded chapter's download installs its own runtime's pins where it runs (its set-up
cell), so it runs in the environment of its stand-in recording instead (made by `make
recording-check KIND=cpu`), as on a runtime without the device: Run all, and again as a
runtime with the device runs it after each restart cell (every part in a new kernel); every
cell's output is compared with the stand-in's recording. Its outputs are recorded, never
accepted here.
"""

from __future__ import annotations

import argparse
import copy
import datetime
import json
import platform
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

from book_environment import (
    EXHIBITS_DIR,
    MACHINE_KINDS_FILE,
    RUNTIMES_FILE,
    find_python,
    use_book_environment,
)

use_book_environment()

import nbformat
from nbclient.exceptions import CellExecutionError, DeadKernelError
from record_chapter import install_kernel

from coursebook.answer_checks.model import AnswerCheck, cell_checks, notebook_checks
from coursebook.answer_checks.prepare import shown_hint
from coursebook.model.cell_notes import source_line
from coursebook.model.faults import BookError, shown_path
from coursebook.model.machine_kinds import (
    environments_path,
    load_environments,
    load_machine_kinds,
    stand_in_kind,
)
from coursebook.model.notebooks import (
    RESTART_TAG,
    cell_tags,
    first_line,
    is_chapter_source,
    read_chapter,
)
from coursebook.model.outputs import normalise
from coursebook.model.recordings import Recording, load_recording, recording_name, recording_path
from coursebook.model.runtimes import Runtime, load_runtimes, reader_runtimes, release
from coursebook.museum.model import (
    ErrorRecord,
    Exhibit,
    Wing,
    load_museum,
    write_records,
)
from coursebook.museum.prepare import cell_origins
from coursebook.page_state import CellOutput
from coursebook.prepare.chapter_packages import install_cell
from coursebook.prepare.chapters import edition_chapter
from coursebook.prepare.editions import Edition
from coursebook.render.downloads import GOES_ON
from coursebook.torch_versions.verify import Standing, State, check_digests, other_torch, standing
from coursebook.verify.expectations import (
    Expectations,
    accept_into,
    cell_outputs,
    compare,
    expectations_path,
    keyed_cells,
    read_expectations,
    shown_text,
)

BOOK = ROOT / "book"
EXPECTED = BOOK / "expected"
DOWNLOADS = ROOT / "_build" / "student" / "html" / "_sources"
# The book environment's torch, read from its metadata: importing it costs `--help` ~3 s.
TORCH_VERSION = metadata.version("torch")
STUDENT = Edition.STUDENT.value  # a download is the student edition's notebook
VERSIONS = """
import json, platform, sys
from importlib import metadata
versions = {"python": platform.python_version(), **{n: metadata.version(n) for n in sys.argv[1:]}}
import torch
versions["torch"] = torch.__version__  # its build string: 2.11.0+cu130
print(json.dumps(versions))
"""


class Stop(Exception):
    """The run cannot go on: one line says why and what to do."""


# --- The replica ------------------------------------------------------------------------

def ensure_replica(runtime: Runtime, python: Path) -> Path:
    """Create or update the runtime's environment; its python."""
    path = ROOT / f".venv-runtime-{runtime.name}"
    replica = path / "bin" / "python"
    wanted = json.dumps({"python": str(python), "requirements": runtime.requirements()})
    stamp = path / ".requirements.json"
    if replica.exists() and stamp.is_file() and stamp.read_text() == wanted:
        return replica
    print(f"verify-runtime: installing {runtime.name} into {path.name}/ "
          f"({', '.join(runtime.requirements())}) ...", flush=True)
    for step in ([str(python), "-m", "venv", "--clear", str(path)],
                 [str(replica), "-m", "pip", "install", "--quiet", *runtime.requirements()]):
        if subprocess.run(step).returncode != 0:
            raise Stop(f"could not install {runtime.name} into {path}: see pip's message "
                       f"above; the pins are in tools/runtimes.toml [{runtime.name}]")
    stamp.write_text(wanted)
    return replica


def replica_versions(replica: Path, runtime: Runtime) -> dict[str, str]:
    names = [name for name in runtime.packages if name != "torch"]
    done = subprocess.run([str(replica), "-c", VERSIONS, *names], capture_output=True, text=True)
    if done.returncode != 0:
        raise Stop(f"{replica} cannot report its versions: "
                   f"{(done.stderr.strip().splitlines() or ['no output'])[-1]}")
    return json.loads(done.stdout)


def replica_label(runtime: Runtime, versions: dict[str, str], python_note: str) -> str:
    """Where a replica's texts were recorded, as an exhibit record's ``where`` says it."""
    torch_note = ("" if versions["torch"] == runtime.packages["torch"] else
                  f" in place of {runtime.packages['torch']}")
    return (f"a replica of {runtime.title}: {platform.system()} {platform.machine()}, "
            f"Python {versions['python']}{python_note}, torch {versions['torch']}{torch_note}")


# --- The answer checks' trials ----------------------------------------------------------

@dataclass(frozen=True)
class Trial:
    check: AnswerCheck
    cell: int  # index, among the trial cells, of the cell whose output is the verdicts
    expected: str  # the verdicts on its value, its accept entries, then its refuse entries


def trial_cells(source: nbformat.NotebookNode) -> tuple[list, list[Trial]]:
    """Cells to append to a chapter's student download, and what each trial must print."""
    cells: list = []
    trials = []
    named = {check.name: check for check in notebook_checks(source)}  # with what they revisit
    for cell in source.cells:
        checks = [named[check.name] for check in cell_checks(cell)]
        if not checks:
            continue
        cells.append(nbformat.v4.new_code_cell(cell.source))  # the answer's own code
        for check in checks:
            verdicts = [f"{check.name}: correct"] * (1 + len(check.accept)) + [
                f"{check.name}: not yet. Hint: {shown_hint(check)}"] * len(check.refuse)
            trials.append(Trial(check, len(cells), "\n".join(verdicts)))
            cells.append(nbformat.v4.new_code_cell("\n".join(
                f'check("{check.name}", {value})'
                for value in (check.value, *check.accept, *check.refuse))))
    return cells, trials


def _verdicts(output) -> str:
    """check()'s printout (stdout), or the error that cut it short; not a warning (stderr)."""
    if output.get("output_type") == "error":
        return f"{output.get('ename')}: {output.get('evalue')}"
    return output.get("text", "") if output.get("name") == "stdout" else ""


def failed_trials(ran_cells: list, trials: list[Trial]) -> list[str]:
    """What each trial printed that it should not have."""
    failures = []
    for trial in trials:
        cell = ran_cells[trial.cell]
        # A hint written as a YAML block ends with a newline: a blank line in the printout.
        printed = "\n".join(line for line in "".join(
            map(_verdicts, cell.get("outputs", []))).strip().splitlines() if line.strip())
        if printed != trial.expected:
            failures.append(f"check '{trial.check.name}': expected {trial.expected!r}, "
                            f"printed {printed!r}")
    return failures


# --- One chapter ------------------------------------------------------------------------

@dataclass
class ChapterRun:
    """One download run in the replica: its cells' outputs, and the exhibits' caught errors."""

    chapter: str
    outputs: list[CellOutput] = field(default_factory=list)
    caught: dict[str, tuple[Exhibit, str]] = field(default_factory=dict)  # by exhibit key
    trials: int = 0  # answer checks tried
    failed_trials: list[str] = field(default_factory=list)
    started: datetime.datetime | None = None  # when its run started


def chapters(museum: dict[str, Wing], recorded: bool = False) -> dict[str, nbformat.NotebookNode]:
    """The student notebook of each chapter that is not recorded (or, with ``recorded``,
    of each chapter that is), by name."""
    found = {}
    for path in sorted(BOOK.glob("*.md")):
        text = path.read_text(encoding="utf8")
        if not is_chapter_source(text):
            continue
        notebook = edition_chapter(text, str(path), Edition.STUDENT, museum,
                                   TORCH_VERSION,
                                   machine_kinds=load_machine_kinds(MACHINE_KINDS_FILE)).notebook
        if (recording_name(notebook) is not None) == recorded:
            found[path.stem] = notebook
    return found


def read_download(downloads: Path, name: str) -> tuple[Path, nbformat.NotebookNode]:
    path = downloads / f"{name}.ipynb"
    if not path.is_file():
        raise Stop(f"{path} is missing: build the student edition first (`make html`)")
    return path, nbformat.read(path, as_version=4)


def run_all(notebook: nbformat.NotebookNode, workdir: Path,
            kernel_name: str = "python3") -> nbformat.NotebookNode:
    """Execute as Jupyter's and Colab's "Run all": tags ignored, stop at the first error
    (nbclient's ``CellExecutionError``)."""
    from nbclient import NotebookClient

    from coursebook.execute.notebook_runs import kernel_manager_class

    notebook = copy.deepcopy(notebook)
    for cell in notebook.cells:
        cell.metadata.pop("tags", None)
    NotebookClient(notebook, timeout=300, kernel_name=kernel_name, allow_errors=False,
                   kernel_manager_class=kernel_manager_class(),
                   resources={"metadata": {"path": str(workdir)}}).execute()
    return notebook


def _run_all(notebook: nbformat.NotebookNode, workdir: Path, kernel: str,
             stopped: str) -> nbformat.NotebookNode:
    """Run all, as a student does; a cell that fails stops it (``stopped``: the message)."""
    try:
        return run_all(notebook, workdir, kernel)
    except (CellExecutionError, DeadKernelError) as error:
        last = (str(error).strip().splitlines() or ["(no message)"])[-1]
        raise Stop(f"{stopped}: {last}") from None


def run_chapter(name: str, chapter: nbformat.NotebookNode, downloads: Path,
                kernel: str, origins: dict) -> ChapterRun:
    """Run the download in the replica's kernel; each cell paired with its chapter cell."""
    path, download = read_download(downloads, name)
    if (stale := _out_of_date(chapter, download.cells)) is not None:
        line = f":{stale[0]}" if stale[0] else ""  # a cell the chapter no longer has: no line
        raise Stop(f"book/{name}.md{line}: {path} {stale[1]}: the download is out of date; "
                   "run `make html`")
    # After the notebook, as a student would: each answer through its check, right and changed.
    extra, trials = trial_cells(read_chapter((BOOK / f"{name}.md").read_text(encoding="utf8")))
    download.cells += extra
    started = datetime.datetime.now(datetime.UTC)
    with tempfile.TemporaryDirectory() as workdir:
        ran = _run_all(download, Path(workdir), kernel, f"{path}: Run all stopped")
    run = ChapterRun(name, trials=len(trials), started=started)
    run.failed_trials = failed_trials(ran.cells[len(ran.cells) - len(extra):], trials)
    run.outputs = cell_outputs(chapter, {key: done for key, _, done in _paired(chapter, ran.cells)})
    for output in run.outputs:
        origin = origins.get(output.source)
        if origin is not None and origin.field == "failing_code":
            run.caught[origin.exhibit.key] = (origin.exhibit, normalise(output.text))
    return run


# --- Comparing and recording ------------------------------------------------------------

def _same(expectations: Expectations | None, outputs: list[CellOutput]) -> tuple[int, int]:
    """(same, different) among the verified cells that have an expected text, by the rule
    the build compares with (a ``(varies)`` entry's text is a pattern)."""
    if expectations is None:
        return 0, 0
    compared = [o for o in outputs
                if not o.unverified and o.key in expectations.by_edition[STUDENT]]
    different = len(compare(expectations, STUDENT, compared))
    return len(compared) - different, different


def _record_text(record: ErrorRecord | None) -> str | None:
    return None if record is None else f"{record.type}: {normalise(record.message)}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runtime", help="a runtime of tools/runtimes.toml (colab-cpu)")
    parser.add_argument("--accept", action="store_true",
                        help="record this run's outputs and exhibit errors for the runtime's torch")
    parser.add_argument("--downloads", type=Path, default=DOWNLOADS,
                        help="the student downloads (default: _build/student/html/_sources)")
    parser.add_argument("--python", type=Path, help="the Python to create the replica with")
    args = parser.parse_args(argv)
    try:
        return verify(args)
    except (Stop, BookError) as error:
        print(f"verify-runtime: {error}", file=sys.stderr)
        return 2


def verify(args: argparse.Namespace) -> int:
    runtimes = load_runtimes(RUNTIMES_FILE)
    runtime = runtimes.get(args.runtime)
    if runtime is None or runtime.verified_by != "downloads":
        able = [r.name for r in runtimes.values() if r.verified_by == "downloads"]
        raise Stop(f"{args.runtime!r} is not a runtime verified by its downloads in "
                   f"tools/runtimes.toml (have {', '.join(able)})")
    kinds = load_machine_kinds(MACHINE_KINDS_FILE)
    museum = load_museum(EXHIBITS_DIR, kinds)
    build_torch = release(TORCH_VERSION)
    found = chapters(museum)
    # The check cells as the build writes them: with the readers' records.
    list_standings(runtime, found, load_museum(EXHIBITS_DIR, kinds, reader_runtimes(RUNTIMES_FILE)),
                   build_torch)
    chosen = (args.python, "") if args.python else find_python(runtime.python, nearest=True)
    if chosen is None:
        raise Stop(f"no Python {runtime.python} (nor a near one) on this machine; install one "
                   f"(e.g. `pyenv install {runtime.python}`) or pass --python")
    python, python_note = chosen
    replica = ensure_replica(runtime, python)
    versions = replica_versions(replica, runtime)
    where = replica_label(runtime, versions, python_note)
    print(f"verify-runtime: {where}")
    kernel = f"runtime-{runtime.name}"
    # ipykernel 6's debugger warns about frozen modules on every start: not the chapter's.
    install_kernel(kernel, replica, {"PYDEVD_DISABLE_FILE_VALIDATION": "1"})
    origins = cell_origins(museum, TORCH_VERSION)
    problems = 0
    exhibits: dict[str, tuple[Exhibit, str]] = {}
    for name, chapter in found.items():
        run = run_chapter(name, chapter, args.downloads, kernel, origins)
        exhibits.update(run.caught)
        problems += check_chapter(run, runtime, where, build_torch, args.accept)
    problems += check_exhibits(exhibits, runtime, where, build_torch, args.accept)
    problems += verify_recorded(args.downloads, museum, kinds)
    if problems:
        print(f"verify-runtime: {problems} difference(s) on {runtime.title}. If the new texts "
              f"are right, record them with `{other_torch(runtime.torch, (runtime,)).command}` and "
              "review `git diff book/expected exhibits`.", file=sys.stderr)
    return 1 if problems else 0


def list_standings(runtime: Runtime, found: dict[str, nbformat.NotebookNode],
                   museum: dict[str, Wing], build_torch: str) -> None:
    """Before the replica runs: which chapters are not yet verified on the runtime, or
    stale there (coursebook.torch_versions.verify), one line each, and a count. ``museum``:
    loaded as the build loads it (its check cells are never compared)."""
    other, checks = other_torch(runtime.torch, (runtime,)), check_digests(museum)
    states: dict[State, int] = dict.fromkeys(State, 0)
    for name, notebook in found.items():
        standing_there = standing(name, other, EXPECTED, build_torch, checks, notebook)
        if standing_there is None:
            continue  # no expected outputs on this build's torch: the build says so
        states[standing_there.state] += 1
        if standing_there.state is not State.VERIFIED:
            print(f"verify-runtime: {standing_there.message()}")
    print(f"verify-runtime: on {other.label}, {states[State.VERIFIED]} chapter(s) verified, "
          f"{states[State.NOT_YET]} not yet verified, {states[State.STALE]} stale")


# --- A recorded chapter's download, in its stand-in's environment ------------------------

def stand_in_python(name: str, kinds: dict) -> Path:
    """The Python of a recorded chapter's stand-in environment, where `make recording` puts it."""
    stand_in = stand_in_kind(kinds.values())
    main = load_environments(environments_path(BOOK / "recordings", name), kinds)[stand_in.name][0]
    python = ROOT / f".venv-{name}-{stand_in.name}-{main.name}" / "bin" / "python"
    if not python.exists():
        raise Stop(f"{python} is missing: `make recording-check KIND={stand_in.name}` makes it")
    return python


def _out_of_date(chapter: nbformat.NotebookNode, cells: list[nbformat.NotebookNode]
                 ) -> tuple[int, str] | None:
    """Where a download's code cells are not the chapter's (a cell added, edited or removed
    since it was built): the chapter's line and what; None when each has the other's."""
    kept = {key.replace(".", "-"): cell for key, cell in keyed_cells(chapter, downloaded=True)}
    code = [cell for cell in cells if cell.cell_type == "code"]
    installs = install_cell(chapter)  # the download's own cells: its packages, the wrapper's
    ids, own = {cell.get("id") for cell in code}, GOES_ON.partition("\n")[0]
    for id_, cell in kept.items():
        if id_ not in ids:
            return source_line(cell), f"lacks the code cell `{first_line(cell)}`"
    for cell in code:
        if cell.get("id") not in kept and not (installs and cell.source == installs.source
                                               or cell.source.startswith(own)):
            return 0, f"has a code cell the chapter no longer has: `{first_line(cell)}`"
    return None


def _stale(chapter: nbformat.NotebookNode, cells: list[nbformat.NotebookNode]) -> list[str]:
    """The one line saying the download is :func:`_out_of_date`; none when it is not."""
    if (stale := _out_of_date(chapter, cells)) is None:
        return []
    line = f" (the chapter's line {stale[0]})" if stale[0] else ""
    return [f"the download {stale[1]}{line}: rebuild it (`make html`)"]


def _paired(chapter: nbformat.NotebookNode, cells: list[nbformat.NotebookNode]
            ) -> list[tuple[str, nbformat.NotebookNode, nbformat.NotebookNode]]:
    """Each chapter code cell a download keeps (claims and book-only left out): its key, the
    cell, and the download's cell whose id is that key (model/notebooks.with_stable_ids);
    the download is not :func:`_out_of_date`."""
    by_id = {cell.get("id"): cell for cell in cells if cell.cell_type == "code"}
    return [(key, cell, by_id[key.replace(".", "-")])
            for key, cell in keyed_cells(chapter, downloaded=True)]


def after_restarts(download: nbformat.NotebookNode,
                   chapter: nbformat.NotebookNode) -> list[nbformat.NotebookNode]:
    """The download cut before each restart cell: the parts a runtime with the device runs,
    each in a process of its own (the restart cell begins its part)."""
    restarts = [done for _, cell, done in _paired(chapter, download.cells)
                if RESTART_TAG in cell_tags(cell)]
    parts = [nbformat.from_dict({**download, "cells": []})]
    for cell in download.cells:
        if any(cell is restart for restart in restarts):
            parts.append(nbformat.from_dict({**download, "cells": []}))
        parts[-1].cells.append(cell)
    return parts


def recording_differences(chapter: nbformat.NotebookNode, ran: list[nbformat.NotebookNode],
                          recording: Recording) -> list[str]:
    """Each download code cell that ran (in order) against its chapter cell's recorded
    output, as the page shows it; one line per difference."""
    if stale := _stale(chapter, ran):
        return stale
    recorded = recording.outputs_by_source()
    problems = []
    for _, cell, done in _paired(chapter, ran):
        if cell.source not in recorded:
            problems.append(f"`{first_line(cell)}`: not in {recording.path.name} (re-record it)")
            continue
        expected = shown_text(nbformat.v4.new_code_cell(outputs=recorded[cell.source]))
        if shown_text(done) != expected:
            problems.append(f"`{first_line(cell)}` printed\n    {shown_text(done)!r}\n  "
                            f"where {recording.path.name} holds\n    {expected!r}")
    return problems


def check_recorded_download(name: str, chapter: nbformat.NotebookNode,
                            download: nbformat.NotebookNode, recording: Recording,
                            kernel: str, workdir: Path) -> list[str]:
    """Run a recorded chapter's download as Run all, then part by part as after each restart;
    every cell's differences from the recording, one line each, saying which run; then its
    answer checks tried (:func:`recorded_trials`)."""
    if stale := _stale(chapter, download.cells):  # its cells cannot be cut at the restarts
        return [f"{name}.ipynb: {line}" for line in stale]
    problems = []
    for how, parts in (("Run all", [download]),
                       ("after each restart", after_restarts(download, chapter))):
        ran = [cell for part in parts for cell in _run_all(
            part, workdir, kernel, f"{name}.ipynb ({how}): a cell failed").cells]
        problems += [f"{name}.ipynb ({how}): {line}"
                     for line in recording_differences(chapter, ran, recording)]
    return problems + [f"{name}.ipynb (answer checks): {line}"
                       for line in recorded_trials(name, chapter, download, kernel, workdir)]


def recorded_trials(name: str, chapter: nbformat.NotebookNode, download: nbformat.NotebookNode,
                    kernel: str, workdir: Path) -> list[str]:
    """A recorded chapter's answer checks tried on their answers, accept and refuse lists, in
    its device's stand-in: no build runs them (a recorded chapter's instructor edition never
    runs). They run where the student checks: the download's part (as after a restart, its
    bridge's own process) up to its check cell, then each answer through its check."""
    extra, trials = trial_cells(read_chapter((BOOK / f"{name}.md").read_text(encoding="utf8")))
    calls = tuple(f'check("{trial.check.name}"' for trial in trials)
    for part in after_restarts(download, chapter) if trials else []:
        checked = [i for i, cell in enumerate(part.cells)
                   if cell.cell_type == "code" and any(call in cell.source for call in calls)]
        if checked:
            tried = nbformat.from_dict({**part, "cells": part.cells[:checked[-1] + 1] + extra})
            ran = _run_all(tried, workdir, kernel, f"{name}.ipynb (answer checks): a cell failed")
            return failed_trials(ran.cells[len(ran.cells) - len(extra):], trials)
    return [f"no cell checks {trial.check.name}" for trial in trials]


def verify_recorded(downloads: Path, museum: dict[str, Wing], kinds: dict) -> int:
    """Each recorded chapter's download against its stand-in recording; the differences."""
    problems = 0
    stand_in = stand_in_kind(kinds.values())
    for name, chapter in chapters(museum, recorded=True).items():
        download = read_download(downloads, name)[1]
        recording = load_recording(recording_path(BOOK / "recordings", name, stand_in.name),
                                   stand_in)
        kernel = f"stand-in-{name}"
        install_kernel(kernel, stand_in_python(name, kinds),
                       {"PYDEVD_DISABLE_FILE_VALIDATION": "1"})
        with tempfile.TemporaryDirectory() as workdir:
            found = check_recorded_download(name, chapter, download, recording, kernel,
                                            Path(workdir))
        for line in found:
            print(f"book/{name}.md: {line}")
        cells = len(keyed_cells(chapter, downloaded=True))
        print(f"{name}: {cells} cells compared with {recording.path.name}, twice (Run all, and "
              f"after each restart): {len(found)} different")
        problems += len(found)
    return problems


def check_chapter(run: ChapterRun, runtime: Runtime, where: str, build_torch: str,
                  accepting: bool) -> int:
    """One download's cells against the expected outputs for the runtime's torch (written
    first when accepting); the number of cells that differ, lack an expectation or were
    refused (an output holding the time it ran)."""
    name, other = run.chapter, other_torch(runtime.torch, (runtime,))
    path = expectations_path(EXPECTED, runtime.torch, name)
    expectations = read_expectations(path)
    refused = []
    if accepting:
        header = [f"# Expected outputs of {name}.md for torch {runtime.torch}, on {runtime.title}.",
                  f"# Accepted with `{other.command}` on "
                  f"{datetime.date.today().isoformat()}: the student download run as Colab's "
                  f"Run all in {where}.",
                  "# One entry per code cell of the download: a hash of its code, then its "
                  "output, indented. Review the diff before committing."]
        shown, refused = accept_into(path, expectations, STUDENT, run.outputs,
                                     lambda: [o.key for o in run.outputs], header,
                                     since=run.started)
        for line in shown + [f"book/{name}.md:{r.cell.line}: {r.message(path)}" for r in refused]:
            print(line)
        expectations = read_expectations(path)
    same, different = _same(expectations, run.outputs)
    build_same, build_different = _same(
        read_expectations(expectations_path(EXPECTED, build_torch, name)), run.outputs)
    print(f"{name}: {same + different} cells compared with torch {runtime.torch}'s "
          f"expected outputs: {same} same, {different} different (against this build's "
          f"torch {build_torch}: {build_same} same, {build_different} different)")
    if expectations is None:  # allowed (a new chapter), and said
        print(Standing(name, other, path, State.NOT_YET).message())
        return len(refused)
    if run.trials:
        print(f"{name}: {run.trials} answer checks tried: "
              f"{run.trials - len(run.failed_trials)} say 'correct' to the answer and their "
              "accept list and 'not yet' with their hint to their refuse list")
    for failure in run.failed_trials:
        print(f"book/{name}.md: {failure}")
    mismatches = compare(expectations, STUDENT, run.outputs)
    for mismatch in mismatches:
        print(f"book/{name}.md:{mismatch.cell.line}: code cell "
              f"`{mismatch.cell.first_line}` ({runtime.title}, torch {runtime.torch}) "
              f"{mismatch.diff(path)}")
    return len({o.cell.key for o in [*refused, *mismatches]}) + len(run.failed_trials)


def check_exhibits(caught: dict[str, tuple[Exhibit, str]], runtime: Runtime, where: str,
                   build_torch: str, accepting: bool) -> int:
    """Each exhibit's caught error against its record for the runtime's torch."""
    problems, same, build_same, differ_from_build = 0, 0, 0, []
    for key, (exhibit, text) in sorted(caught.items()):
        record = exhibit.record_for(runtime.torch)
        if _record_text(exhibit.record_for(build_torch)) == text:
            build_same += 1
        else:
            differ_from_build.append(key)
        if _record_text(record) == text:
            same += 1
            continue
        if accepting and (record is None or record.source != "museum"):
            kind, _, message = text.partition(": ")
            new = ErrorRecord(torch=runtime.torch, source="build", where=where,
                              date=datetime.date.today().isoformat(), type=kind, message=message)
            write_records(exhibit, [r for r in exhibit.records if r is not record] + [new])
            print(f"{key}: recorded for torch {runtime.torch}: {text}")
            same += 1
            continue
        recorded = _record_text(record) or "(no record for this torch)"
        print(f"{shown_path(exhibit.path)}: exhibit {key} on {runtime.title} (torch "
              f"{runtime.torch}) caught\n    {text}\n  but its record says\n    {recorded}")
        problems += 1
    print(f"exhibits: {len(caught)} caught errors compared with their torch {runtime.torch} "
          f"records: {same} same, {len(caught) - same} different (against this build's torch "
          f"{build_torch}: {build_same} same, {len(differ_from_build)} different"
          f"{': ' + ', '.join(differ_from_build) if differ_from_build else ''})")
    return problems


if __name__ == "__main__":
    sys.exit(main())
