"""Recorded chapters: outputs from a machine of a declared kind, never mislabelled."""

import ast
import copy
import functools
import glob
import json
import re
import shutil
import subprocess
import sys

import nbformat
import pytest

from conftest import (
    BOOK,
    MACHINE_KINDS_FILE,
    ROOT,
    RUNTIMES_FILE,
    TORCH_VERSION,
    book_museum,
    copy_of_built_cache,
    load_tool,
    plant_distribution,
    sphinx_build,
)
from coursebook.model.faults import BookError
from coursebook.model.machine_kinds import (
    environments_path,
    load_environments,
    load_machine_kinds,
    stand_in_kind,
)
from coursebook.model.notebooks import (
    ACCELERATOR_ONLY_TAG,
    BOOK_ONLY_TAG,
    RESTART_TAG,
    cell_tags,
    is_claim,
    read_chapter,
)
from coursebook.model.recordings import (
    PROVENANCE_KEY,
    attach_recordings,
    load_recording,
    load_recordings,
    recorded_chapter,
    recording_path,
    runs_on,
)
from coursebook.model.runtimes import load_runtimes
from coursebook.model.versions import package_key

RECORDINGS = BOOK / "recordings"
SECOND_KIND = ROOT / "tests" / "fixtures" / "second_kind"
MACHINES = load_machine_kinds(MACHINE_KINDS_FILE)


@functools.cache
def _prepared_bridges():
    from coursebook.prepare.chapters import edition_chapter
    from coursebook.prepare.editions import Edition
    return edition_chapter((BOOK / "bridges.md").read_text(), "bridges.md", Edition.STUDENT,
                           book_museum(), TORCH_VERSION, machine_kinds=MACHINES).notebook


def _bridges_notebook():
    """The student's bridges chapter as a build prepares it, a copy a test may change
    (prepared once: 0.2 s of CPU a preparation)."""
    return copy.deepcopy(_prepared_bridges())


def _bridges(notebook=None):
    return recorded_chapter(notebook or _bridges_notebook(), MACHINES)


def _attach(notebook=None, allow_stale=False, recordings_dir=RECORDINGS, instructor=True):
    notebook = notebook or _bridges_notebook()
    chapter = _bridges(notebook)
    pinned = load_environments(environments_path(RECORDINGS, "bridges"), MACHINES)
    return attach_recordings(notebook, chapter, load_recordings(recordings_dir, chapter),
                             allow_stale, pinned, instructor=instructor)


def test_every_machine_kind_is_complete_and_one_stands_in():
    assert any(machine.stand_in for machine in MACHINES.values())
    for machine in MACHINES.values():
        assert machine.label and machine.platform and "print(" in machine.probe


def test_a_download_shows_what_a_code_run_in_a_new_python_printed_and_where():
    """A code run in a new Python (exhibit 07's fix, 08's fix on CPU) is a code block of the
    page's prose; its cell is book-only, and the page shows its output under that block. The
    downloads leave the cell out, and showed the fix as a block and "runs without an error"
    only: now they show what it printed, from the recording, and on which device it printed
    it; the page, which shows the cell's own output, hides that note."""
    from coursebook.render.downloads import download_notebook
    from coursebook.render.plain_markdown import PlainMarkdown

    attached = _attach(instructor=False)
    printed = {cell.source: "".join(o.get("text", "") for o in cell.outputs
                                    if o.get("output_type") == "stream").strip("\n")
               for cell in attached.executed.cells
               if {BOOK_ONLY_TAG, "fresh-python", "remove-input"} <= set(cell_tags(cell))
               and "raises-exception" not in cell_tags(cell)}
    printed = {source: text for source, text in printed.items() if text}
    fixes = [exhibit.fix_code.strip() for wing in book_museum().values()
             for exhibit in wing.exhibits if exhibit.fix_in_fresh_runtime]
    assert fixes and all(any(fix in source for source in printed) for fix in fixes)
    download = "\n".join(cell.source for cell in download_notebook(
        attached.labelled, PlainMarkdown(lambda role, target: None)).cells)
    for text in printed.values():
        assert f"*Printed on a CPU:*\n\n```text\n{text}\n```" in download, text
    notes = [c for c in attached.labelled.cells if c.source.startswith("*Printed on a")]
    assert len(notes) == len(printed)
    assert all("remove-cell" in cell_tags(c) for c in notes)


def test_the_cpu_stand_in_recording_is_labelled_cpu():
    [recording] = load_recordings(RECORDINGS, _bridges())
    assert recording.machine.stand_in and recording.provenance["platform"] == "cpu"
    assert recording.label().startswith("CPU stand-in (PJRT_DEVICE=CPU")
    assert "TPU" not in recording.label()


def test_the_fix_lines_name_the_torch_of_the_recordings_label():
    [recording] = load_recordings(RECORDINGS, _bridges())
    named = {re.search(r"\(torch ([^)]+)\)", text).group(1)
             for cell in recording.notebook.cells if cell.cell_type == "code"
             for output in cell.outputs
             if "The fix ran" in (text := output.get("data", {}).get("text/markdown", ""))}
    assert named and named <= {versions["torch"] for versions
                               in recording.provenance["environments"].values()}


def test_a_cpu_run_can_never_be_a_tpu_recording(tmp_path):
    shutil.copy(RECORDINGS / "bridges-cpu.ipynb", tmp_path / "bridges-cpu.ipynb")
    shutil.copy(RECORDINGS / "bridges-cpu.ipynb", tmp_path / "bridges-tpu.ipynb")
    with pytest.raises(BookError, match="a CPU run can never be a TPU recording"):
        load_recordings(tmp_path, _bridges())
    relabelled = nbformat.read(tmp_path / "bridges-tpu.ipynb", as_version=4)
    relabelled.metadata[PROVENANCE_KEY].device_kind = "TPU v6 lite"  # platform still cpu
    nbformat.write(relabelled, tmp_path / "bridges-tpu.ipynb")
    with pytest.raises(BookError, match="never be a TPU recording"):
        load_recording(tmp_path / "bridges-tpu.ipynb", MACHINES["tpu"])


@pytest.mark.parametrize("which, old, new, message", [
    ("kinds", "stand_in = true\n", "", "field kind: no kind has 'stand_in = true'"),
    ("kinds", 'glibc = "2.35"\n', "", "field kind[0].arch: and glibc come together"),
    ("environments", "[[cpu]]\n", "[[abacus]]\n",
     "field abacus: is not a machine kind of the machine kinds file"),
    ("environments", 'name = "both"\nruntime', 'name = "both"\ncells_tagged = "x"\nruntime',
     "field tpu[0].cells_tagged: is set on the main environment"),
    ("environments", 'runtime = "colab-tpu"\n', "", "field tpu[0].requirements: is missing"),
])
def test_a_malformed_kinds_or_environments_file_names_its_field(tmp_path, which, old, new,
                                                                 message):
    files = {"kinds": MACHINE_KINDS_FILE, "environments": environments_path(RECORDINGS, "bridges")}
    for name, source in files.items():
        text = source.read_text()
        if name == which:
            assert old in text
            text = text.replace(old, new, 1)
        (tmp_path / f"{name}.toml").write_text(text)
    with pytest.raises(BookError) as refused:
        load_environments(tmp_path / "environments.toml",
                          load_machine_kinds(tmp_path / "kinds.toml"))
    assert f"{tmp_path / which}.toml" in str(refused.value) and message in str(refused.value)


@pytest.mark.parametrize("machines, message", [
    (None, "must list the machine kinds"),
    (["tpu", "abacus"], "names ['abacus'], not machine kinds"),
    (["tpu"], "needs a stand-in kind"),
])
def test_the_top_matter_names_known_kinds_and_a_stand_in(machines, message):
    notebook = _bridges_notebook()
    notebook.metadata.coursebook["machine_kinds"] = machines
    with pytest.raises(BookError, match=message.replace("[", r"\[").replace("]", r"\]")):
        recorded_chapter(notebook, MACHINES, "bridges.md")


def _only_defines(cell) -> bool:
    """A cell of definitions only (an exercise's function to fill in): nothing to show."""
    try:
        body = ast.parse(cell.source).body
    except SyntaxError:  # IPython's magics
        return False
    return bool(body) and not any(isinstance(node, ast.Expr) for node in body)


def test_every_cell_of_the_chapter_has_its_recorded_output():
    attached = _attach()
    code = [cell for cell in attached.executed.cells if cell.cell_type == "code"]
    stand_in = stand_in_kind(MACHINES.values())
    ran = [cell for cell in code if runs_on(cell, stand_in)]
    # A fix that prints nothing (the museum's, run again) is vouched for by the check after it;
    # a claim's check prints nothing when it holds; a restart cell, where nothing holds a device.
    silent = [cell for cell, after in zip(ran, ran[1:]) if "fix_ran()" in after.source]
    silent += [cell for cell in ran if is_claim(cell) or RESTART_TAG in cell_tags(cell)
               or _only_defines(cell)]
    assert ran and all(cell.outputs for cell in ran if cell not in silent)
    assert all(not cell.outputs for cell in code if cell not in ran)  # no TPU recording yet
    marks = [c.source for c in attached.labelled.cells if c.source.startswith("*Recorded on")]
    assert marks and all("CPU stand-in <recording-bridges-cpu>" in mark for mark in marks)


def test_the_instructor_edition_notes_an_answer_the_recording_never_ran():
    """The recorder runs the student's notebook, so the bridges exercise's answer and its
    instructor check have no recorded output: the instructor edition says so under each,
    rather than calling them changed since their recording."""
    from coursebook.model.recordings import ANSWER_NOT_RECORDED
    from coursebook.prepare.chapters import edition_chapter
    from coursebook.prepare.editions import Edition

    instructor = edition_chapter((BOOK / "bridges.md").read_text(), "bridges.md",
                                 Edition.INSTRUCTOR, book_museum(), TORCH_VERSION,
                                 machine_kinds=MACHINES).notebook
    # Stale cells allowed: the test is about the answer's cells, recorded or not.
    cells = _attach(instructor, allow_stale=True).labelled.cells
    answers = [index for index, cell in enumerate(cells)
               if cell.cell_type == "code" and "return weights - lr * gradient" in cell.source]
    checks = [index for index, cell in enumerate(cells)
              if 'check("bridges-sgd-step", sgd_step)' in cell.source]
    assert answers and checks
    assert all(cells[index + 1].source == ANSWER_NOT_RECORDED for index in answers + checks)


def test_one_provenance_panel_names_device_versions_date_and_commit():
    attached = _attach()
    [panel] = [c.source for c in attached.labelled.cells if "recording-provenance" in c.source]
    [recording] = load_recordings(RECORDINGS, _bridges())
    p = recording.provenance
    assert "(recording-bridges-cpu)=" in panel and p["date"] in panel and p["commit"] in panel
    assert f"torch {p['environments']['both']['torch']}" in panel
    assert "Not yet recorded on: TPU (`make recording RECORDING=bridges KIND=tpu`)" in panel
    assert "Environment drift" not in panel and attached.drift == {"cpu": []}


def test_the_student_reads_one_sentence_on_where_the_outputs_come_from():
    """The commit, the commands that record, the versions, the stand-in and the marks under
    each cell are the course team's (instructor edition)."""
    notebook = _bridges_notebook()
    notebook.cells.append(nbformat.v4.new_code_cell("jax.devices()",
                                                    metadata={"tags": [ACCELERATOR_ONLY_TAG]}))
    attached = _attach(notebook, instructor=False)
    [recording] = load_recordings(RECORDINGS, _bridges())
    authored = {cell.source for cell in notebook.cells}  # the chapter's own book-only prose
    notes = [c.source for c in attached.labelled.cells if c.cell_type == "markdown"
             and BOOK_ONLY_TAG in c.metadata.get("tags", []) and c.source not in authored]
    assert notes[0] == "*The outputs on this page were printed on a CPU, not on a TPU.*"
    assert notes[1:]
    assert set(notes[1:]) == {"*This cell needs a TPU: its output is not shown here.*"}
    shown = "\n".join(cell.source for cell in attached.labelled.cells
                      if cell.cell_type == "markdown")
    assert recording.provenance["commit"] not in shown and "make recording" not in shown
    assert "Recorded on" not in shown
    # Which torch and when are provenance (issue 44: R3's read), not the subject.
    assert recording.provenance["date"] not in shown


def test_a_recording_made_with_other_versions_is_flagged_as_drift(tmp_path):
    recording = nbformat.read(RECORDINGS / "bridges-cpu.ipynb", as_version=4)
    recording.metadata[PROVENANCE_KEY]["environments"]["both"]["jax"] = "0.9.0"
    nbformat.write(recording, tmp_path / "bridges-cpu.ipynb")
    attached = _attach(recordings_dir=tmp_path)
    pinned = load_environments(environments_path(RECORDINGS, "bridges"), MACHINES)["cpu"][0]
    jax = pinned.pins()["jax"]
    assert attached.drift["cpu"] == [f"jax 0.9.0 recorded, {jax} pinned (both)"]
    [panel] = [c.source for c in attached.labelled.cells if "recording-provenance" in c.source]
    assert f"**Environment drift** in this recording: jax 0.9.0 recorded, {jax} pinned" in panel


def test_the_tpu_kind_and_the_stand_in_run_one_runtime_in_the_same_kernels():
    """Same runtime, kernels, requirements and probes (the device is not the only difference:
    the provenance names the others, tested below)."""
    environments = load_environments(environments_path(RECORDINGS, "bridges"), MACHINES)
    tpu, cpu = environments["tpu"], environments["cpu"]
    assert MACHINES["tpu"].runtime == MACHINES["cpu"].runtime == tpu[0].runtime
    assert [(e.name, e.requirements, e.cells_tagged, e.shares, e.holds_device, e.probe)
            for e in tpu] == [(e.name, e.requirements, e.cells_tagged, e.shares, e.holds_device,
                               e.probe) for e in cpu]
    # A probe of its own (torch_xla's) names the chip, as JAX's device_kind does.
    assert all("xla_device_kind(" in e.probe for e in tpu if e.probe)
    runtime = load_runtimes()[tpu[0].runtime]
    assert set(tpu[0].pins()) == {package_key(n) for n in {**runtime.packages, **runtime.adds}}


def test_on_the_stand_in_both_bridges_print_pt01s_losses():
    """bridges.md says: "On a CPU, both loops print PT01's losses to the four decimals
    shown". Each loop's printed losses in the stand-in's recording, against PT01's expected
    outputs on every torch the book targets (a new torch or a new recording can part them)."""
    losses = re.compile(r"step +\d+: loss \d+\.\d+")
    pt01 = {path.parent.name: losses.findall(path.read_text(encoding="utf8"))
            for path in sorted((BOOK / "expected").glob("torch-*/pt01.txt"))}
    assert len(pt01) >= 3 and all(pt01.values()), pt01
    stand_in = stand_in_kind(MACHINES.values())
    recording = nbformat.read(recording_path(RECORDINGS, "bridges", stand_in.name), as_version=4)
    printed = ["".join(output.get("text", "") for output in cell.outputs)
               for cell in recording.cells if cell.cell_type == "code"]
    loops = [found for found in map(losses.findall, printed) if found]
    assert len(loops) == 2, loops  # the torchax loop and the torch_xla one
    for torch, expected in pt01.items():
        assert all(loop == expected for loop in loops), (torch, expected, loops)


def test_the_stand_in_recording_names_its_runtime_and_every_installed_package():
    [recording] = load_recordings(RECORDINGS, _bridges())
    p = recording.provenance
    assert p["runtime"]["name"] == MACHINES["cpu"].runtime
    assert set(p["installed"]) == set(p["environments"])
    for name, installed in p["installed"].items():
        # every distribution, not only the pins: libtpu and what pip pulled in besides
        assert "libtpu" in installed and len(installed) > len(p["environments"][name])
    # where it is not the runtime, it says so (PyPI's torch build for the image's +cpu)
    torch = next(line for line in p["runtime"]["differences"] if line.startswith("torch "))
    [panel] = [c.source for c in _attach().labelled.cells if "recording-provenance" in c.source]
    assert f"Its environment is {p['runtime']['title']}, except: " in panel and torch in panel
    if "image" in p["runtime"]:  # recorded with the runtime's image list: every difference
        image = load_tool("refresh_runtimes").freeze_versions(
            (ROOT / "tools" / "runtime-images" / f"{p['runtime']['name']}.txt").read_text())
        main = load_environments(environments_path(RECORDINGS, "bridges"), MACHINES)["cpu"][0].name
        here = {package_key(n): v for n, v in p["installed"][main].items()}
        here["torch"] = p["environments"][main]["torch"]  # the kernel's view: its build
        named = {package_key(line.split()[0]) for line in p["runtime"]["differences"]
                 if not line.startswith("python ")}
        assert named == {name for name, version in here.items() if image.get(name) != version}
        assert p["torch_build"].startswith(p["environments"][main]["torch"] + ": ")


def test_a_changed_cell_stops_with_the_cell_and_the_command():
    notebook = _bridges_notebook()
    cell = next(c for c in notebook.cells if c.cell_type == "code"
                and c.source.startswith("from torchax import interop"))
    cell.source = cell.source.replace("mean()", "sum()")
    with pytest.raises(BookError) as error:
        _attach(notebook)
    assert "cell `from torchax import interop` changed since its recording" in str(error.value)
    assert "make recording RECORDING=bridges KIND=cpu" in str(error.value)
    attached = _attach(notebook, allow_stale=True)
    assert any("Stale: this cell changed" in c.source for c in attached.labelled.cells)


def test_an_accelerator_only_cell_without_its_recording_says_so():
    notebook = _bridges_notebook()
    notebook.cells.append(nbformat.v4.new_code_cell("jax.devices()",
                                                    metadata={"tags": [ACCELERATOR_ONLY_TAG]}))
    labelled = _attach(notebook).labelled
    assert labelled.cells[-1].source.startswith("Not yet recorded: this cell runs on TPU")
    assert "make recording RECORDING=bridges KIND=tpu" in labelled.cells[-1].source


def _reproduced_exhibits() -> list:
    return [exhibit for wing in book_museum().values() for exhibit in wing.exhibits
            if (exhibit.cpu and exhibit.cpu.reproduction) or exhibit.museum_rerun]


@pytest.mark.parametrize("exhibit", _reproduced_exhibits(), ids=lambda e: e.key)
def test_the_cpu_reproduction_matches_the_museum_capture(exhibit):
    """The recorded check cells of each reproduced (or run again) TPU exhibit passed: one
    per CPU reproduction, one per run of the museum's own code."""
    [recording] = load_recordings(RECORDINGS, _bridges())
    checks = [c for c in recording.notebook.cells if c.cell_type == "code"
              and f"check_raised({exhibit.key!r}" in c.source]
    assert len(checks) == (bool(exhibit.cpu and exhibit.cpu.reproduction)
                           + bool(exhibit.museum_rerun))
    for check in checks:
        shown = "".join(o.get("data", {}).get("text/markdown", "") for o in check.outputs)
        assert "✓ Raised exactly the error the museum recorded" in shown


def _committed_data() -> list:
    return sorted([*RECORDINGS.glob("*.ipynb"), *(ROOT / "exhibits").rglob("*.toml"),
                   *(BOOK / "expected").rglob("*.txt")])


# An absolute path on a developer's or a builder's machine, in committed data.
MACHINE_PATH = re.compile(r"(?:/(?:home|root|Users|work|tmp|opt|usr)/|[A-Za-z]:\\\\|"
                          r"site-packages/|/\.venv)")


@pytest.mark.parametrize("path", _committed_data(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_machine_path_in_committed_recordings_and_records(path):
    found = [line.strip()[:160] for line in path.read_text(encoding="utf8").splitlines()
             if MACHINE_PATH.search(line)]
    assert not found, f"{path}: machine paths (normalise them when writing): {found}"


def test_the_recorder_writes_outputs_without_machine_paths():
    record = load_tool("record_chapter")
    evalue = ("cannot import name 'x' from 'jax.experimental' "
              "(/home/ta/.venv-bridges-cpu-both/lib/python3.12/site-packages/jax/__init__.py)")
    warning = "/root/env/lib/python3.11/site-packages/torch/a.py:3: UserWarning: slow\n"
    cell = nbformat.v4.new_code_cell("x", outputs=[
        nbformat.v4.new_output("error", ename="ImportError", evalue=evalue, traceback=[evalue]),
        nbformat.v4.new_output("stream", name="stderr", text=warning)])
    assert MACHINE_PATH.search(json.dumps(cell))  # the check above bites on such a cell
    record.normalised(cell)
    assert not MACHINE_PATH.search(json.dumps(cell))
    assert cell.outputs[1].text == "<site-packages>/torch/a.py:3: UserWarning: slow\n"


@pytest.mark.skipif(bool(glob.glob("/dev/accel*") + glob.glob("/dev/vfio/[0-9]*")),
                    reason="this machine has a TPU")
def test_the_tpu_recorder_refuses_on_this_cpu_machine_with_one_line(tmp_path):
    shutil.copytree(RECORDINGS, tmp_path / "recordings")
    done = subprocess.run([sys.executable, "tools/record_chapter.py", "book/bridges.md",
                           "--kind", "tpu", "--recordings", str(tmp_path / "recordings"),
                           "--venvs", str(tmp_path)], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith("record: this machine has no tpu device")
    assert not (tmp_path / "recordings" / "bridges-tpu.ipynb").exists()
    assert not list(tmp_path.glob(".venv-*"))  # it stopped before installing anything


@pytest.mark.parametrize("matter, key, message", [
    ("coursebook: jax", "coursebook", "field coursebook: is 'jax' (make it a table)"),
    ("coursebook:\n  recording: [bridges]\n  machine_kinds: [tpu, cpu]", "recording",
     "field coursebook.recording: is ['bridges'] (make it a string)"),
    ("coursebook:\n  recording: bridges\n  machine_kinds: tpu", "machine_kinds",
     "field coursebook.machine_kinds: is 'tpu' (make it a list of strings)"),
    ("coursebook:\n  recording: bridges\n  machine_kinds: [tpu, abacus]", "machine_kinds",
     "top matter 'coursebook: machine_kinds' names ['abacus'], not machine kinds of "
     "tools/machine-kinds.toml (have tpu, gpu, cpu)"),
    ("coursebook:\n  recording: bridges", "coursebook",  # at the table the key goes in
     "top matter 'coursebook: machine_kinds' must list the machine kinds this chapter is "
     "recorded on (from tpu, gpu, cpu)"),
], ids=["no-table", "recording-a-list", "machine_kinds-a-string", "machine_kinds-unknown",
        "machine_kinds-missing"])
def test_the_recorder_refuses_a_top_matter_of_another_shape_with_one_line(
        tmp_path, capsys, matter, key, message):
    """`make recording` reads the top matter as a build does: one line at the key's line."""
    text = (BOOK / "bridges.md").read_text()
    chapter = tmp_path / "bridges.md"
    chapter.write_text(text.replace("coursebook:\n  recording: bridges\n  machine_kinds: "
                                    "[tpu, cpu]", matter, 1))
    line = next(n for n, written in enumerate(chapter.read_text().splitlines(), 1)
                if written.lstrip().startswith(f"{key}:"))
    done = load_tool("record_chapter").main([str(chapter), "--kind", "cpu", "--recordings",
                                             str(tmp_path / "recordings"), "--venvs",
                                             str(tmp_path)])
    assert (done, capsys.readouterr().err) == (1, f"record: {chapter}:{line}: {message}\n")


def _record_tiny(book, kind: str, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "tools/record_chapter.py", str(book / "tiny.md"),
                           "--kind", kind, *extra,
                           "--machine-kinds", str(SECOND_KIND / "machine-kinds.toml"),
                           "--exhibits", str(SECOND_KIND / "exhibits"),
                           "--recordings", str(book / "recordings"),
                           "--python", f"main={sys.executable}",
                           "--python", f"second={sys.executable}"],
                          cwd=ROOT, capture_output=True, text=True)


@pytest.fixture(scope="module")
def _second_kind_recorded(tmp_path_factory):
    """The fixture book, recorded on the "lab" kind and on the stand-in, by the real recorder
    (once per module: each recording starts kernels)."""
    book = tmp_path_factory.mktemp("second-kind") / "book"
    shutil.copytree(SECOND_KIND / "book", book)
    for kind in ("lab", "cpu"):
        done = _record_tiny(book, kind)
        assert done.returncode == 0, done.stderr
    return book


@pytest.fixture
def second_kind_book(_second_kind_recorded, tmp_path):
    """A copy of the recorded book that a test may change."""
    book = tmp_path / "book"
    shutil.copytree(_second_kind_recorded, book)
    return book


@pytest.mark.slow  # the recorder runs the chapter in kernels
def test_a_second_kind_needs_only_data(second_kind_book):
    """A kind no code names: a chapter, an environments file, a machines table, recordings."""
    machines = load_machine_kinds(SECOND_KIND / "machine-kinds.toml")
    notebook = read_chapter((second_kind_book / "tiny.md").read_text())
    chapter = recorded_chapter(notebook, machines)
    recordings = load_recordings(second_kind_book / "recordings", chapter)
    assert [r.machine.name for r in recordings] == ["lab", "cpu"]
    # The book's notes on cells (their lines) are not written: moved prose changes no file.
    assert not [c for r in recordings for c in r.notebook.cells if "coursebook" in c.metadata]
    lab, cpu = ({c.source: c.outputs for c in r.notebook.cells if c.cell_type == "code"}
                for r in recordings)
    assert len(lab) == 3 and len(cpu) == 3  # each left out the other's only-cell
    attached = attach_recordings(notebook, chapter, recordings, allow_stale=False)
    shown = [c.outputs[0].text for c in attached.executed.cells if c.cell_type == "code"]
    assert shown == ["machine: lab\n", "only on an accelerator: lab\n",
                     "only on the stand-in: stand-in\n", "a kernel of its own: True\n"]
    second = next(source for source in cpu if "kernel of its own" in source)
    assert cpu[second][0].text == "a kernel of its own: False\n"  # the stand-in has one kernel
    assert [r.provenance["environments"].keys() for r in recordings] == [
        {"main", "second"}, {"main"}]
    marks = [c.source for c in attached.labelled.cells if c.source.startswith("*Recorded on")]
    lab_mark = "*Recorded on {ref}`Lab machine <recording-tiny-lab>`.*"
    assert marks == [lab_mark] * 2 + ["*Recorded on {ref}`CPU stand-in <recording-tiny-cpu>`.*",
                                      lab_mark]


@pytest.mark.slow  # the recorder runs the chapter in kernels
def test_a_second_kind_recording_checks_against_a_fresh_run(second_kind_book):
    assert _record_tiny(second_kind_book, "lab", "--check").returncode == 0
    chapter = second_kind_book / "tiny.md"
    chapter.write_text(chapter.read_text().replace('print("machine:"', 'print("ran on:"'))
    done = _record_tiny(second_kind_book, "lab", "--check")
    assert done.returncode == 1
    assert "+ran on: lab" in done.stdout and "the chapter's code changed" in done.stdout


@pytest.mark.slow
def test_the_second_kind_book_builds_with_its_panel_and_marks(second_kind_book, tmp_path):
    """The instructor edition's provenance panel and marks (a student reads one sentence)."""
    build = sphinx_build(second_kind_book, tmp_path / "out", tmp_path / "cache", "instructor",
                         settings={"coursebook_machine_kinds_file":
                                   str(SECOND_KIND / "machine-kinds.toml"),
                                   "coursebook_exhibits_dir": str(SECOND_KIND / "exhibits"),
                                   "coursebook_recordings_dir":
                                       str(second_kind_book / "recordings")})
    assert build.returncode == 0, build.log[-3000:]
    # A recorded chapter never runs in a build: myst-nb finds its recordings in the cache.
    assert build.executed == 0 and "Executing" not in build.log, build.log[-3000:]
    page = (tmp_path / "out" / "html" / "tiny.html").read_text()
    assert "recording-provenance" in page and "Outputs recorded with" in page  # panel, footer
    assert page.count('href="#recording-tiny-lab"') == 3
    assert "only on the stand-in: stand-in" in page


@pytest.mark.slow
def test_the_book_stops_when_a_recorded_cell_changes(built, tmp_path):
    source = tmp_path / "book"
    shutil.copytree(BOOK, source)
    chapter = source / "bridges.md"
    assert "optax.adam(0.05)" in chapter.read_text()  # the cell this test changes
    chapter.write_text(chapter.read_text().replace("optax.adam(0.05)", "optax.adam(0.1)"))
    # The `built` books' cache: the other chapters are taken from it, not executed again.
    cache = copy_of_built_cache(built, tmp_path / "cache")
    build = sphinx_build(source, tmp_path / "out", cache,
                         settings={"coursebook_recordings_dir": str(RECORDINGS)})
    assert build.returncode != 0 and build.executed == 0, build.log[-3000:]
    line = next(n for n, text in enumerate(chapter.read_text().splitlines(), 1)
                if text == "import optax")
    assert f"bridges.md:{line}: ERROR: cell `import optax` changed since its recording" in build.log
    assert build.log.count("changed since its recording") == 1 and "Traceback" not in build.log
    assert "make recording RECORDING=bridges KIND=cpu" in build.log
    stale = sphinx_build(source, tmp_path / "out2", cache,
                         settings={"coursebook_recordings_dir": str(RECORDINGS),
                                   "coursebook_allow_stale_recordings": "1"})
    assert stale.returncode == 0
    assert "Stale: this cell changed" in (tmp_path / "out2" / "html" / "bridges.html").read_text()


def _without_ensurepip(tmp_path) -> dict:
    """The environment of a Python whose venv package is missing (as Debian splits it out)."""
    import os
    fake = tmp_path / "no-venv-package" / "ensurepip"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text('raise ImportError("No module named ensurepip")\n')
    return {**os.environ, "PYTHONPATH": str(fake.parent)}


def test_a_python_without_its_venv_package_stops_the_recorder_with_one_line(tmp_path):
    env = _without_ensurepip(tmp_path)
    done = subprocess.run([sys.executable, "tools/check_venv.py"], cwd=ROOT, env=env,
                          capture_output=True, text=True)
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    assert done.returncode == 1 and done.stderr.count("\n") == 1
    assert done.stderr.startswith(f"check_venv: Python {version} (")
    assert f"`apt-get install python{version}-venv`" in done.stderr
    # make recording stops there, before it creates the recorder's environment
    recorder = tmp_path / "recorder"
    # As a person runs it: not a sub-make of `make -j 2 test` (whose jobserver flags would
    # add make's own warning to the output).
    alone = {k: v for k, v in env.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    made = subprocess.run(["make", "-s", "recording", "KIND=cpu", f"RECORDER={recorder}",
                           f"PYTHON={sys.executable}"], cwd=ROOT, env=alone,
                          capture_output=True, text=True)
    assert made.returncode != 0 and made.stderr.splitlines()[0] == done.stderr.strip()
    assert "Traceback" not in made.stderr and not recorder.exists()


@pytest.mark.slow  # creates an environment with pip
def test_this_python_can_make_the_recorders_environment():
    assert subprocess.run([sys.executable, "tools/check_venv.py"], cwd=ROOT,
                          capture_output=True).returncode == 0


@pytest.mark.parametrize("tool", ["record_chapter.py", "check_environments.py", "check_venv.py"])
def test_the_recording_tools_explain_themselves(tool):
    done = subprocess.run([sys.executable, f"tools/{tool}", "--help"], cwd=ROOT,
                          capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.startswith("usage:")


_KERNEL_SAYS_CPU = '''
# A planted fault: the machine's probe finds a TPU, the kernel that runs the cells does not.
[[kind]]
name = "tpu"
label = "TPU ({device_kind})"
platform = "tpu"
device_kind = "TPU"
environment = { COURSEBOOK_MACHINE_KIND = "tpu" }
probe = """
import json, sys
kernel = "ipykernel" in sys.modules
print(json.dumps({"platform": "cpu" if kernel else "tpu",
                  "device_kind": "cpu" if kernel else "TPU v6 lite"}))
"""

[[kind]]
name = "cpu"
label = "CPU stand-in"
platform = "cpu"
stand_in = true
environment = { COURSEBOOK_MACHINE_KIND = "stand-in" }
probe = """
import json
print(json.dumps({"platform": "cpu", "device_kind": "cpu"}))
"""
'''


# A planted fault: the machine and each kernel find a TPU; a new Python started by a kernel
# (its parent is ipykernel) does not.
_FRESH_PYTHON_SAYS_CPU = _KERNEL_SAYS_CPU.replace('''import json, sys
kernel = "ipykernel" in sys.modules
''', '''import json, os
kernel = b"ipykernel" in open(f"/proc/{os.getppid()}/cmdline", "rb").read()
''')


@pytest.mark.slow  # the recorder runs the chapter in kernels
@pytest.mark.parametrize("kinds, refused", [(_KERNEL_SAYS_CPU, "main"),
                                            (_FRESH_PYTHON_SAYS_CPU, "fresh")],
                         ids=["kernel", "fresh-python"])
def test_a_tpu_labelled_run_whose_kernel_reports_cpu_is_refused(tmp_path, kinds, refused):
    """The machine's probe says TPU, a kernel says CPU: nothing written. A kernel that holds
    no device (``fresh``) probes in a new Python of its environment, whose report counts."""
    if refused == "fresh" and not sys.platform.startswith("linux"):
        pytest.skip("the planted probe reads /proc")
    book = tmp_path / "book"
    shutil.copytree(SECOND_KIND / "book", book)
    chapter = book / "tiny.md"
    chapter.write_text(chapter.read_text().replace("lab", "tpu") +
                       "\n```{code-cell} ipython3\n:tags: [fresh-python]\n\nprint(1)\n```\n")
    environments = book / "recordings" / "tiny-environments.toml"
    environments.write_text(environments.read_text().replace("lab", "tpu").replace(
        "[[cpu]]", '[[tpu]]\nname = "fresh"\nshares = "main"\ncells_tagged = "fresh-python"\n'
        'holds_device = false\n\n[[cpu]]'))
    (tmp_path / "machine-kinds.toml").write_text(kinds)
    done = subprocess.run([sys.executable, "tools/record_chapter.py", str(chapter),
                           "--kind", "tpu", "--machine-kinds", str(tmp_path / "machine-kinds.toml"),
                           "--exhibits", str(SECOND_KIND / "exhibits"),
                           "--recordings", str(book / "recordings"),
                           "--python", f"main={sys.executable}",
                           "--python", f"second={sys.executable}"],
                          cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        f"record: the kernel of environment {refused!r} reports 'cpu' ('cpu'), not a tpu "
        "device: nothing written (a run is labelled only with the device every "
        "kernel ran on)")
    assert not (book / "recordings" / "tiny-tpu.ipynb").exists()


@pytest.mark.parametrize("holds_device", [True, False])
def test_a_kernel_that_holds_no_device_probes_in_a_new_python(holds_device, capsys):
    from coursebook.model.machine_kinds import RecordingEnvironment
    record_chapter = load_tool("record_chapter")
    probe = ('import json, os\n'
             'print(json.dumps({"platform": "cpu", "device_kind": str(os.getpid())}))')
    environment = RecordingEnvironment("fresh", ("ipykernel",), probe=probe,
                                       holds_device=holds_device)
    exec(record_chapter.probe_cell(MACHINES["cpu"], environment).source, {})
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    import os
    assert (report["device_kind"] == str(os.getpid())) == holds_device


@pytest.mark.slow  # the recorder runs the chapter in kernels
def test_a_failing_cell_stops_the_recorder_with_one_line(second_kind_book):
    chapter = second_kind_book / "tiny.md"
    chapter.write_text(chapter.read_text().replace('os.environ["COURSEBOOK_MACHINE_KIND"])\n```',
                                                   'os.environ["NO_SUCH_VARIABLE"])\n```', 1))
    before = (second_kind_book / "recordings" / "tiny-lab.ipynb").read_text()
    done = _record_tiny(second_kind_book, "lab")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        "record: cell `import os` failed in environment 'main': KeyError: 'NO_SUCH_VARIABLE'; "
        "nothing written")
    assert (second_kind_book / "recordings" / "tiny-lab.ipynb").read_text() == before


@pytest.mark.parametrize("machine", [b for b in MACHINES.values() if not b.stand_in],
                         ids=lambda b: b.name)
def test_no_accelerator_probe_passes_on_this_cpu_machine(machine):
    if any(glob.glob(pattern) for pattern in machine.device_files):
        pytest.skip(f"this machine has a {machine.name} device")
    import os
    done = subprocess.run([sys.executable, "-c", machine.probe], capture_output=True, text=True,
                          env={**os.environ, **machine.environment})
    if done.returncode == 0:  # a probe that cannot even run proves nothing either
        report = json.loads(done.stdout.strip().splitlines()[-1])
        assert not machine.ran_here(report["platform"], report["device_kind"])


@pytest.mark.slow  # the recorder runs the chapter in kernels
def test_a_recording_made_again_keeps_its_cell_ids_and_shuts_its_kernels_down(second_kind_book,
                                                                            tmp_path):
    """Ids come from the chapter's cells, not nbformat's random draw: recording the chapter
    again (a cell added at its end) changes no id of the cells it had, so the diff shows only
    what changed. That run's kernel, finished, is asked to shut down (a device client gives
    its device back on the way out), not killed: the exit handler its new cell set runs."""
    again = tmp_path / "again"
    shutil.copytree(second_kind_book, again)
    exited = tmp_path / "exited"
    added = again / "tiny.md"
    added.write_text(added.read_text() + "\n```{code-cell} ipython3\nimport atexit\n"
                     f"atexit.register(lambda: open({str(exited)!r}, 'w').write('exited'))\n```\n")
    done = _record_tiny(again, "lab")
    assert done.returncode == 0, done.stderr
    assert exited.read_text() == "exited"
    ids = [[cell.id for cell in nbformat.read(book / "recordings" / "tiny-lab.ipynb", 4).cells]
           for book in (second_kind_book, again)]
    assert ids[1][:-1] == ids[0] and len(set(ids[1])) == len(ids[1])
    read = [[cell.id for cell in read_chapter((book / "tiny.md").read_text()).cells]
            for book in (second_kind_book, again)]
    assert read[0] != read[1][:-1]


# --- Timeouts: a hung cell or fresh Python stops the run with one line ------------------

def _tiny_with(folder, *cells: str):
    """The fixture's tiny chapter, with more cells at its end (a cell may start with its
    options, `:tags: [second-kernel]`)."""
    book = folder / "book"
    shutil.copytree(SECOND_KIND / "book", book)
    chapter = book / "tiny.md"
    chapter.write_text(chapter.read_text() + "".join(f"\n```{{code-cell}} ipython3\n{cell}\n```\n"
                                                     for cell in cells))
    return book


def test_a_hung_fresh_python_is_stopped_at_its_timeout_with_its_children(capsys, monkeypatch):
    import time

    from coursebook.exhibit_checks import FRESH_PYTHON_TIMEOUT, run_in_fresh_python
    monkeypatch.setenv(FRESH_PYTHON_TIMEOUT, "1.5")  # as the recorder sets it
    started = time.monotonic()
    # The child starts a grandchild that holds its output pipe: both are stopped.
    code = ("import subprocess, sys, time\nprint('started', flush=True)\n"
            "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
            "time.sleep(600)")
    with pytest.raises(TimeoutError, match=r"^the fresh Python ran past 1\.5 s and was stopped$"):
        run_in_fresh_python(code)
    # Stopped, not waited for: far less than the sleep, however busy the machine.
    assert time.monotonic() - started < 300
    assert capsys.readouterr().out == "started\n"  # what it printed before, shown


@pytest.mark.slow  # the recorder runs the chapter in kernels, two runs at once
def test_two_runs_at_once_each_stop_at_their_own_timeouts_with_one_line(tmp_path):
    """Two recordings of one chapter on one kind at once, each with its own timeouts: a cell
    that sleeps past its run's 12 s; a fresh Python, started by a cell of the other run's
    second kernel, stopped at half its run's 16 s. That kernel starts only once the first
    run's cell runs (a FIFO hands over), so after the first run made its kernels: kernels the
    runs shared would give it the first run's half (6 s)."""
    import os
    import time
    from concurrent.futures import ThreadPoolExecutor

    handover = tmp_path / "handover"
    os.mkfifo(handover)
    # Opened for reading and writing, a FIFO never waits: the byte waits for the reader.
    hung = _tiny_with(tmp_path / "hung", f"import time\nimport os\nos.write(os.open("
                                         f"{str(handover)!r}, os.O_RDWR), b'.')\ntime.sleep(600)")
    fresh = _tiny_with(tmp_path / "fresh", f"open({str(handover)!r}).read(1)",
                       ":tags: [second-kernel]\n\n"
                       "from coursebook.exhibit_checks import run_in_fresh_python\n"
                       "run_in_fresh_python('import time; time.sleep(600)')")
    started = time.monotonic()
    with ThreadPoolExecutor(2) as pool:
        # 12 s: the probe (0.03 s here at load 3), the versions' reports (0.2 s) and each
        # kernel's cells (0.6 s, its start included) stay within it on a loaded machine (3 s
        # did not once, beside a full suite at load 9). 16 s: half of it leaves the cell's
        # import of coursebook (0.2 s) 8 s, however busy the machine.
        runs = [pool.submit(_record_tiny, book, "lab", "--cell-timeout", seconds)
                for book, seconds in ((hung, "12"), (fresh, "16"))]
        hung_run, fresh_run = (run.result() for run in runs)
    assert time.monotonic() - started < 300  # stopped, not waited for
    for book, done in ((hung, hung_run), (fresh, fresh_run)):
        assert done.returncode == 1 and "Traceback" not in done.stderr
        assert not (book / "recordings" / "tiny-lab.ipynb").exists()
    assert hung_run.stderr.strip().splitlines()[-1] == (
        "record: cell `import time` in environment 'main' ran past its 12 s timeout and was "
        "stopped; nothing written")
    assert fresh_run.stderr.strip().splitlines()[-1] == (
        "record: cell `from coursebook.exhibit_checks import run_in_fresh_python` failed in "
        "environment 'second': TimeoutError: the fresh Python ran past 8 s and was stopped; "
        "nothing written")


def test_the_environments_alone_are_made_and_named(tmp_path):
    """`make recording-environments` (the TPU smoke test's first step): no cell runs."""
    book = tmp_path / "book"
    shutil.copytree(SECOND_KIND / "book", book)
    done = _record_tiny(book, "lab", "--environments-only")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {
        "environments": {"main": sys.executable, "second": sys.executable}}
    assert not (book / "recordings" / "tiny-lab.ipynb").exists()


# --- The image: constraints where they resolve, every difference named -----------------

_FAKE_IMAGE = """\
# generated by pip freeze
ipython==7.34.0
jupyter_client==7.4.9
numpy==2.1.3
tensorflow==2.19.0
torch @ https://download.pytorch.org/whl/cpu/torch-2.9.0%2Bcpu-cp313-cp313-manylinux_2_28_x86_64.whl
"""


def test_the_provenance_names_every_package_that_differs_from_the_image():
    runtime_provenance = load_tool("record_chapter").runtime_provenance
    refresh = load_tool("refresh_runtimes")
    runtime = load_runtimes()[MACHINES["cpu"].runtime]
    installed = {"ipython": "9.18.1", "jupyter_client": "7.4.9", "numpy": "2.1.3",
                 "torch": "2.9.0", "torchax": "0.0.13"}
    versions = {"python": f"{runtime.python}.0", "torch": "2.9.0+cu128", "numpy": "2.1.3"}
    entry = runtime_provenance(runtime, installed, versions,
                               refresh.freeze_versions(_FAKE_IMAGE), constrained=True)
    assert entry["differences"] == ["ipython 9.18.1 (the image has 7.34.0)",
                                    "torch 2.9.0+cu128 (the image has 2.9.0+cpu)",
                                    "torchax 0.0.13 (not in the image)"]
    assert entry["not_installed"] == ["tensorflow"] and entry["image"] == runtime.source
    assert entry["constraints"] == "the image's versions"
    # Without an image list: the runtime's pins only, as before.
    assert runtime_provenance(runtime, installed, versions)["differences"] == [
        f"torch 2.9.0+cu128 (the runtime has {runtime.packages['torch']})"]


def test_the_image_constraints_are_its_exact_pins():
    record = load_tool("record_chapter")
    assert record.constraints_of(_FAKE_IMAGE) == [
        "ipython==7.34.0", "jupyter_client==7.4.9", "numpy==2.1.3", "tensorflow==2.19.0"]
    assert record.constraints_of(None) is None
    # The committed image list of the stand-in's runtime is there, as its source has it.
    assert record.image_list(MACHINES["cpu"].runtime)


@pytest.mark.slow  # creates an environment with pip and installs from the registry
@pytest.mark.parametrize("image, constrained, packaging", [
    (["packaging==23.2"], True, "23.2"),          # the image's version, where it resolves
    (["packaging==0.0.0rc0"], False, None)],      # else resolved without it, and said
    ids=["resolves", "does-not-resolve"])
def test_an_environment_resolves_with_the_image_where_it_can(tmp_path, image, constrained,
                                                              packaging):
    from coursebook.model.machine_kinds import RecordingEnvironment
    record = load_tool("record_chapter")
    environment = RecordingEnvironment("main", ("packaging",))
    machine = MACHINES["cpu"]
    try:
        python = record.ensure_environment(tmp_path / "env", machine, environment, image)
    except record.Refused as error:
        pytest.skip(f"the package registry is not reachable here: {error}")
    version = subprocess.run([str(python), "-c", "from importlib.metadata import version; "
                              "print(version('packaging'))"], capture_output=True, text=True)
    if packaging:
        assert version.stdout.strip() == packaging
    install = record.installed_with(python)
    assert install == {"constrained": constrained, "extra_index": machine.extra_index,
                       "extra_index_reached": False}
    runtime_provenance = load_tool("record_chapter").runtime_provenance
    entry = runtime_provenance(load_runtimes()[machine.runtime], {}, {}, {}, install["constrained"])
    assert entry["constraints"] == ("the image's versions" if constrained else
                                    "none: the image's versions did not resolve on this machine")


def test_the_torch_build_names_where_torch_came_from():
    record = load_tool("record_chapter")
    index = "https://download.pytorch.org/whl/cpu"
    assert record.torch_build("2.9.0+cpu", False, {}) == (
        "2.9.0+cpu: the machine's own packages (not installed by the recorder)")
    assert record.torch_build("2.9.0+cpu", True, {"extra_index": index,
                                                  "extra_index_reached": True}) == (
        f"2.9.0+cpu: installed by pip, with {index} as an extra index")
    assert record.torch_build("2.9.0+cu128", True, {"extra_index": index,
                                                    "extra_index_reached": False}) == (
        f"2.9.0+cu128: installed by pip from its default index ({index} was not reachable "
        "from this machine)")
    assert record.torch_build("2.9.0+cu128", True, {"extra_index": ""}).endswith(
        "from its default index (this kind names no other)")
    # The TPU kind reads PyTorch's CPU index (no CUDA wheels on a TPU machine); the stand-in
    # does not, so that a stand-in made here and one made by CI install the same torch.
    assert MACHINES["tpu"].extra_index == index and not MACHINES["cpu"].extra_index


@pytest.mark.slow  # the recorder runs the chapter in kernels
def test_a_recording_lists_every_difference_from_its_runtimes_image(tmp_path):
    """The recorder, run with this Python as an environment of Colab's TPU runtime, names
    each of its packages that the image has in another version or lacks."""
    refresh = load_tool("refresh_runtimes")
    runtime = load_runtimes()[MACHINES["cpu"].runtime]
    book = tmp_path / "book"
    shutil.copytree(SECOND_KIND / "book", book)
    environments = book / "recordings" / "tiny-environments.toml"
    environments.write_text(environments.read_text().replace(
        '[[cpu]]\nname = "main"\nrequirements = ["ipykernel"]',
        f'[[cpu]]\nname = "main"\nruntime = "{runtime.name}"'))
    done = _record_tiny(book, "cpu")
    assert done.returncode == 0, done.stderr
    provenance = nbformat.read(book / "recordings" / "tiny-cpu.ipynb", 4).metadata[PROVENANCE_KEY]
    image = refresh.freeze_versions(refresh.image_path(RUNTIMES_FILE, runtime.name).read_text())
    entry = provenance["runtime"]
    assert entry["image"] == runtime.source
    installed = {package_key(n): v for n, v in provenance["installed"]["main"].items()}
    differing = {package_key(line.split()[0]) for line in entry["differences"]
                 if not line.startswith("python ")}
    assert differing == {name for name, version in installed.items() if image.get(name) != version}
    assert f"torch {TORCH_VERSION} (the image has {image['torch']})" in entry["differences"]
    assert set(entry["not_installed"]) == set(image) - set(installed)
    assert provenance["torch_build"] == f"{TORCH_VERSION}: an environment given with --python"


def test_a_python_below_the_recorders_floor_stops_with_one_line():
    """The recorder uses datetime.UTC and tomllib (Python 3.11): an older Python is told so
    before anything is installed."""
    from book_environment import find_python
    older = find_python("3.10")
    if older is None:
        pytest.skip("no Python 3.10 on this machine to try")
    done = subprocess.run([str(older[0]), "tools/check_venv.py"], cwd=ROOT, capture_output=True,
                          text=True)
    assert done.returncode == 1 and done.stderr.count("\n") == 1
    assert done.stderr.startswith("check_venv: Python 3.10 (") and "floor, 3.11" in done.stderr
    requirements = (ROOT / "tools" / "recorder-requirements.txt").read_text()
    assert "3.10" not in requirements and "python_version" not in requirements


# --- A package the book adds wins over another's copy of its files --------------------------

def _wheel(folder, name: str, version: str, module: str, module_version: str,
           requires: tuple[str, ...] = ()) -> None:
    """A pure-Python wheel of ``name`` whose module ``module`` says ``module_version``."""
    import base64
    import hashlib
    import zipfile

    info = f"{name}-{version}.dist-info"
    files = {f"{module}/__init__.py": f'__version__ = "{module_version}"\n',
             f"{info}/METADATA": "Metadata-Version: 2.1\nName: {}\nVersion: {}\n{}".format(
                 name, version, "".join(f"Requires-Dist: {r}\n" for r in requires)),
             f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                              "Tag: py3-none-any\n"}

    def digest(text: str) -> str:
        raw = hashlib.sha256(text.encode()).digest()
        return "sha256=" + base64.urlsafe_b64encode(raw).rstrip(b"=").decode()

    record = "".join(f"{path},{digest(text)},{len(text.encode())}\n"
                     for path, text in files.items())
    with zipfile.ZipFile(folder / f"{name}-{version}-py3-none-any.whl", "w") as wheel:
        for path, text in {**files, f"{info}/RECORD": record + f"{info}/RECORD,,\n"}.items():
            wheel.writestr(path, text)


@pytest.mark.slow  # creates an environment with pip
def test_what_the_book_adds_is_the_code_imported_though_another_package_ships_its_files(
        tmp_path, monkeypatch):
    """torch_xla 2.9.0 ships a torchax of its own (pytorch/xla#9363), installed over the real
    one; planted: `shadower` depends on `planted` (so pip installs it after) and ships an old
    `planted` module. The environment's import of `planted` is the added package's code."""
    from coursebook.model.machine_kinds import RecordingEnvironment
    record = load_tool("record_chapter")
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    _wheel(wheels, "planted", "1.0", "planted", "1.0")
    _wheel(wheels, "shadower", "1.0", "planted", "0.5", requires=("planted==1.0",))
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(wheels))
    environment = RecordingEnvironment("main", ("shadower==1.0", "planted==1.0"),
                                       adds=("planted==1.0",))
    python = record.ensure_environment(tmp_path / "env", MACHINES["cpu"], environment)
    imported = subprocess.run([str(python), "-c", "import planted; print(planted.__version__)"],
                              capture_output=True, text=True)
    assert imported.stdout.strip() == "1.0", imported.stderr


def test_the_bridges_environments_lay_what_the_book_adds_last():
    runtime = load_runtimes()[MACHINES["cpu"].runtime]
    for kind, environments in load_environments(environments_path(RECORDINGS, "bridges"),
                                                MACHINES).items():
        main = environments[0]
        assert main.adds == tuple(f"{n}=={v}" for n, v in runtime.adds.items()), kind
        assert set(main.adds) <= set(main.requirements)


def test_an_imported_module_that_is_not_its_installed_release_stops_the_recorder(tmp_path):
    """The versions are the imported modules' where a module says one: `torchax` 0.0.6 code
    under torchax 0.0.13's metadata (torch_xla's copy) stops the run with one line."""
    record = load_tool("record_chapter")
    site = tmp_path / "site"
    plant_distribution(site, "planted", "1.0", '__version__ = "0.5"\n')
    report = record.run_python(sys.executable, record.VERSIONS, {"PYTHONPATH": str(site)},
                               "planted", "--imported", "planted")
    assert report["imported"] == {"planted": "0.5"}
    with pytest.raises(record.Refused) as refused:
        record.check_imported("main", report)
    assert str(refused.value).startswith(
        "environment 'main': `import planted` runs release 0.5, while its installed metadata "
        "says 1.0")
    # Not the same size: a .pyc of the first text, written in the same second, would stand.
    (site / "planted" / "__init__.py").write_text('__version__ = "1.0"  # as installed\n')
    report = record.run_python(sys.executable, record.VERSIONS, {"PYTHONPATH": str(site)},
                               "planted", "--imported", "planted")
    record.check_imported("main", report)
    assert report["imported"] == {"planted": "1.0"} and report["versions"]["planted"] == "1.0"


def test_the_books_own_folder_on_the_kernels_path_is_no_installed_package(tmp_path):
    """The kernels import the book's modules through PYTHONPATH; an editable install of the
    book leaves its egg-info there, which the provenance must not list as the environment's."""
    record = load_tool("record_chapter")
    site = tmp_path / "site"
    plant_distribution(site, "planted", "1.0", '__version__ = "1.0"\n')
    report = record.run_python(sys.executable, record.VERSIONS, {"PYTHONPATH": str(site)},
                               "planted")
    assert report["versions"]["planted"] == "1.0"  # importable, as the cells see it
    assert "planted" not in report["installed"] and "pytest" in report["installed"]


# --- Before a recording: what moved between Colab's published lists, the image and the pins --

def test_the_recorder_says_what_moved_before_it_records(tmp_path, colab_lists):
    """A newer copy of Colab's lists (planted: torch_xla 2.10.0, Python 3.14) and an image
    that moved (planted: jax 0.8.0 on the machine) are named, each line with its source;
    the committed copy matches the pins."""
    record = load_tool("record_chapter")
    runtime = load_runtimes()[MACHINES["tpu"].runtime]
    lists = tmp_path / "lists"
    shutil.copytree(colab_lists, lists, dirs_exist_ok=True)
    assert record.what_moved(runtime, lists, None) == [
        f"[{runtime.name}]'s pins match Colab's published list "
        f"({runtime.source.split(':')[0]}, {runtime.listed})"]
    freeze = lists / runtime.source.split(":")[1]
    freeze.chmod(0o644)
    freeze.write_text(freeze.read_text().replace("torch_xla-2.9.0-", "torch_xla-2.10.0-"))
    os_info = lists / "os-info-tpu.txt"
    os_info.chmod(0o644)
    os_info.write_text(os_info.read_text().replace("Python 3.13", "Python 3.14"))
    image = {package_key(n): v for n, v in runtime.packages.items()} | {"jax": "0.8.0"}
    moved = record.what_moved(runtime, lists, image)
    assert moved == [
        f"Colab's published list moved since [{runtime.name}]'s pins (listed {runtime.listed}):"
        " torch_xla 2.9.0 -> 2.10.0; python 3.13 -> 3.14",
        f"this machine's image moved since [{runtime.name}]'s pins: jax 0.7.2 -> 0.8.0"]
    assert record.what_moved(runtime, tmp_path / "absent", None) == [
        f"no copy of Colab's lists at {tmp_path / 'absent'}: [{runtime.name}]'s pins "
        f"(listed {runtime.listed}) not compared; `make refresh-runtimes` with a newer copy "
        "compares them"]


def test_a_device_kind_that_names_its_kind_is_not_repeated_in_the_label():
    """JAX names a v6e chip "TPU v6 lite": the label is that, not "TPU (TPU v6 lite)"."""
    assert MACHINES["tpu"].describe("TPU v6 lite") == "TPU v6 lite"
    assert MACHINES["gpu"].describe("NVIDIA H100") == "GPU (NVIDIA H100)"
    assert MACHINES["cpu"].describe("cpu") == MACHINES["cpu"].label


def test_a_python_brought_along_is_not_an_image_that_moved(tmp_path):
    """On a Cloud TPU VM the recorder's Python (uv's) has none of the pins: that is said
    once, not as every pin gone from an image."""
    record = load_tool("record_chapter")
    runtime = load_runtimes()[MACHINES["tpu"].runtime]
    lines = record.what_moved(runtime, tmp_path / "absent", {"pip": "25.0"})
    assert lines[-1] == (f"this machine's Python has none of [{runtime.name}]'s pins: it is not "
                         "the runtime's image, and the environments install them")


def test_the_recorder_imports_nothing_its_requirements_do_not_install():
    """The recorder's environment is tools/recorder-requirements.txt alone (a TPU VM installs
    only that): importing tools/record_chapter.py needs no module outside those packages and
    what they require (af664d2 imported jupytext, which CI's recording check then lacked)."""
    script = r"""
import importlib.abc, importlib.metadata as md, os, runpy, sys, sysconfig
from importlib.machinery import PathFinder
from packaging.requirements import Requirement
wanted = [Requirement(line.split('#')[0].strip()).name
          for line in open('tools/recorder-requirements.txt') if line.split('#')[0].strip()]
seen = set()
while wanted:
    name = wanted.pop().lower().replace('_', '-')
    if name in seen:
        continue
    seen.add(name)
    for text in md.requires(name) or []:
        need = Requirement(text)
        if need.marker is None or need.marker.evaluate({'extra': ''}):
            wanted.append(need.name)
allowed = {top for top, dists in md.packages_distributions().items()
           if any(d.lower().replace('_', '-') in seen for d in dists)}
own, stdlib = (f'{os.getcwd()}/tools/', f'{os.getcwd()}/book/'), sysconfig.get_paths()['stdlib']
class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        top = name.partition('.')[0]
        if top in sys.stdlib_module_names or top in allowed:
            return None
        spec = PathFinder.find_spec(top)
        if spec is None or (spec.origin or '').startswith((*own, stdlib)):  # the book's own code
            return None
        raise ModuleNotFoundError(f'not in the recorder environment: {top}')  # as if absent
sys.meta_path.insert(0, Refuse())
sys.argv = ['record_chapter.py', '--help']
try:
    runpy.run_path('tools/record_chapter.py', run_name='__main__')
except SystemExit:
    pass
"""
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr[-600:]
