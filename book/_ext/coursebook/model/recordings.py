"""Recordings: chapters whose cells run only on a special machine, outputs committed
(``book/recordings/NAME-KIND.ipynb``, by ``make recording``), never executed in a build
(docs/recorded-chapters.md)."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path

import nbformat

from coursebook.answer_checks.model import CHECK_TAG
from coursebook.model.cell_notes import source_line
from coursebook.model.faults import BookError
from coursebook.model.machine_kinds import MachineKind, RecordingEnvironment, stand_in_kind
from coursebook.model.notebooks import (
    ACCELERATOR_ONLY_TAG,
    BOOK_ONLY_TAG,
    DOWNLOAD_ONLY_TAG,
    FRESH_PYTHON_TAG,
    PROVENANCE_KEY,
    RAISES_TAG,
    STAND_IN_ONLY_TAG,
    cell_tags,
    chapter_settings,
    first_line,
    is_answer,
    markdown_cell,
    top_matter_line,
)
from coursebook.model.versions import package_key, release

RECORDING_COMMAND = "make recording"
_REQUIRED = ("platform", "device_kind", "environments", "date", "commit", "code_hash")


def recording_name(chapter: nbformat.NotebookNode | dict) -> str | None:
    """The recording a chapter's notebook, or its top matter alone, names (None: not one)."""
    return chapter_settings(getattr(chapter, "metadata", chapter)).recording


@dataclass(frozen=True)
class RecordedChapter:
    name: str
    machines: tuple[MachineKind, ...]
    source: str = ""  # the chapter's file, where known

    def command(self, machine: MachineKind) -> str:
        return f"{RECORDING_COMMAND} RECORDING={self.name} KIND={machine.name}"


def recorded_chapter(notebook: nbformat.NotebookNode, machines: dict[str, MachineKind],
                     source: str = "", text: str = "") -> RecordedChapter | None:
    if (settings := chapter_settings(notebook.metadata, source, text)).recording is None:
        return None
    accepted, field = settings.machine_kinds, "top matter 'coursebook: machine_kinds'"
    at = (source or None, top_matter_line(text, "coursebook", "machine_kinds"))
    if not accepted:
        raise BookError(f"{field} must list the machine kinds this chapter is recorded on "
                        f"(from {', '.join(machines)})", *at)
    if unknown := [kind for kind in accepted if kind not in machines]:
        raise BookError(f"{field} names {unknown}, not machine kinds of "
                        f"tools/machine-kinds.toml (have {', '.join(machines)})", *at)
    chosen = tuple(machine for machine in machines.values() if machine.name in accepted)
    if not any(machine.stand_in for machine in chosen):
        raise BookError(f"{field} needs a stand-in kind "
                        f"({', '.join(b.name for b in machines.values() if b.stand_in)}): "
                        "an ordinary build shows its outputs", *at)
    return RecordedChapter(settings.recording, chosen, source)


def recording_path(recordings_dir: Path, name: str, kind: str) -> Path:
    return recordings_dir / f"{name}-{kind}.ipynb"


def runs_on(cell, machine: MachineKind) -> bool:
    """Whether a machine of this kind runs (and may show the output of) a code cell."""
    return (ACCELERATOR_ONLY_TAG if machine.stand_in else STAND_IN_ONLY_TAG) not in cell_tags(cell)


@dataclass(frozen=True)
class Recording:
    machine: MachineKind
    path: Path
    notebook: nbformat.NotebookNode

    @property
    def provenance(self) -> dict:
        return self.notebook.metadata[PROVENANCE_KEY]

    def label(self) -> str:
        return self.machine.describe(self.provenance["device_kind"])

    def device(self) -> str:
        """The device, as a student reads it (a stand-in's by its platform: "CPU")."""
        return self.machine.platform.upper() if self.machine.stand_in else self.label()

    def summary(self) -> str:
        """Its torch, machine and date, as a page footer or a handout's cover names them."""
        torches = sorted({versions["torch"] for versions in
                          self.provenance["environments"].values() if "torch" in versions})
        return (f"torch {', '.join(torches) or 'unknown'} ({self.machine.short_label}, "
                f"{self.provenance['date']})")

    def anchor(self, name: str) -> str:
        return f"recording-{name}-{self.machine.name}"

    def outputs_by_source(self) -> dict[str, list]:
        return {cell.source: cell.outputs for cell in self.notebook.cells
                if cell.cell_type == "code"}

    def drift(self, pinned: list[RecordingEnvironment]) -> list[str]:
        """Where the recorded versions differ from today's pins, one line per package."""
        by_name = {environment.name: environment.pins() for environment in pinned}
        lines = []
        for environment, versions in self.provenance["environments"].items():
            if environment not in by_name:
                lines.append(f"environment '{environment}' is no longer pinned")
                continue
            recorded = {package_key(name): version for name, version in versions.items()}
            for package, pin in sorted(by_name[environment].items()):
                # PEP 440: a pin without a local label (+cu128) admits any local label.
                if package in recorded and release(recorded[package]) != pin:
                    lines.append(f"{package} {recorded[package]} recorded, {pin} pinned "
                                 f"({environment})")
        return lines


def check_machine_kind(machine: MachineKind, provenance: dict, path: Path) -> None:
    platform, device_kind = provenance.get("platform", ""), provenance.get("device_kind", "")
    if not machine.ran_here(platform, device_kind):
        raise BookError(
            f"labeled {machine.name}, but its runtime reported {platform!r} ({device_kind!r}); "
            "a run is only labeled with the device it ran on (a CPU run can never be a TPU "
            f"recording). Delete the file, or run `{RECORDING_COMMAND} KIND={machine.name}` on "
            "such a machine.", path)


def load_recording(path: Path, machine: MachineKind) -> Recording:
    try:
        notebook = nbformat.read(path, as_version=4)
    except Exception as error:  # nbformat raises several kinds for a damaged file
        detail = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise BookError(
            f"not a readable notebook ({type(error).__name__}: {detail[:200]}). Restore it "
            f"with `git checkout -- {path}`, or record it again with "
            f"`{RECORDING_COMMAND} KIND={machine.name}`.", path) from None
    provenance = notebook.metadata.get(PROVENANCE_KEY)
    if not isinstance(provenance, dict) or any(k not in provenance for k in _REQUIRED):
        raise BookError(f"metadata '{PROVENANCE_KEY}' needs {', '.join(_REQUIRED)} (the "
                        f"provenance a run writes): record it again with "
                        f"`{RECORDING_COMMAND} KIND={machine.name}`.", path)
    check_machine_kind(machine, provenance, path)
    return Recording(machine, path, notebook)


def load_recordings(recordings_dir: Path, chapter: RecordedChapter) -> list[Recording]:
    """The chapter's recordings, preferred kind first; the stand-in's must exist."""
    recordings = [load_recording(path, b) for b in chapter.machines
                  if (path := recording_path(recordings_dir, chapter.name, b.name)).is_file()]
    stand_in = stand_in_kind(chapter.machines)
    if not any(recording.machine == stand_in for recording in recordings):
        raise BookError(f"is missing: run `{chapter.command(stand_in)}` (the "
                        f"{stand_in.short_label})",
                        recording_path(recordings_dir, chapter.name, stand_in.name))
    return recordings


def printed_for_downloads(cell: nbformat.NotebookNode, outputs: list,
                         recording: Recording) -> nbformat.NotebookNode | None:
    """For downloads, which leave a book-only fresh-Python cell out (its code is shown in the
    prose), what it printed and on which device; None for another cell, or none printed
    (an error's note is the exhibit's)."""
    tags = set(cell_tags(cell))
    if not {BOOK_ONLY_TAG, FRESH_PYTHON_TAG, "remove-input"} <= tags or RAISES_TAG in tags:
        return None
    text = "".join(output.get("text", "") for output in outputs
                   if output.get("output_type") == "stream" and output.get("name") == "stdout")
    if not text.strip():
        return None
    return markdown_cell(f"*Printed on a {recording.device()}:*\n\n```text\n"
                         f"{text.strip(chr(10))}\n```", "remove-cell", DOWNLOAD_ONLY_TAG)


def provenance_panel(chapter: RecordedChapter, recordings: list[Recording],
                     drift: dict[str, list[str]]) -> str:
    """Where each recording ran and drifted, as an instructor reads it."""
    parts = []
    for recording in recordings:
        p = recording.provenance
        kernels = "; ".join(f"Kernel `{name}`: " + ", ".join(f"{package} {version}" for
                                                             package, version in versions.items())
                            for name, versions in p["environments"].items())
        parts.append(f"({recording.anchor(chapter.name)})=\n**{recording.label()}**, recorded "
                     f"{p['date']} at commit `{p['commit']}`. {kernels}.")
        runtime = p.get("runtime")
        if runtime:
            differs = "; ".join(runtime["differences"])
            parts.append(f"Its environment is {runtime['title']}" + (
                f", except: {differs}." if differs else ", to the version.") + (
                f" {len(runtime['not_installed'])} packages of the image are not installed."
                if runtime.get("not_installed") else ""))
        if drift.get(recording.machine.name):
            parts.append(f"**Environment drift** in this recording: "
                         f"{'; '.join(drift[recording.machine.name])}. Its outputs may differ "
                         f"from a run with today's pins: `{chapter.command(recording.machine)}`.")
    missing = [b for b in chapter.machines if all(r.machine != b for r in recordings)]
    if missing:
        parts.append("Not yet recorded on: " + ", ".join(
            f"{b.short_label} (`{chapter.command(b)}`)" for b in missing) + ".")
    return (":::{admonition} Where the outputs on this page were recorded\n"
            ":class: recording-provenance\n" + "\n\n".join(parts) + "\n:::")


def recorded_where(chapter: RecordedChapter, recordings: list[Recording], instructor: bool) -> str:
    """Where the outputs were recorded (a student: on which devices, and on which not)."""
    if instructor:
        return "Outputs recorded with " + "; ".join(recording.summary() for recording in recordings)
    devices = " and ".join(dict.fromkeys(r.device() for r in recordings))
    missing = [b.short_label for b in chapter.machines
               if not b.stand_in and all(r.machine != b for r in recordings)]
    return (f"The outputs on this page were printed on a {devices}"
            + (f", not on a {' or a '.join(missing)}" if missing else "") + ".")


@dataclass(frozen=True)
class AttachedRecordings:
    """The page's notebook with panel and marks (markdown: not hashed), and one with outputs."""

    labelled: nbformat.NotebookNode
    executed: nbformat.NotebookNode
    drift: dict[str, list[str]]


ANSWER_NOT_RECORDED = ("*An answer, or its check: the recordings run the students' notebook, "
                       "so this cell has no recorded output.*")


def attach_recordings(notebook: nbformat.NotebookNode, chapter: RecordedChapter,
                      recordings: list[Recording], allow_stale: bool,
                      pinned: dict[str, list[RecordingEnvironment]] | None = None,
                      instructor: bool = True) -> AttachedRecordings:
    """Each code cell's output from the most preferred recording that ran it, noted book-only
    (downloads lack the outputs)."""
    drift = {r.machine.name: r.drift(pinned[r.machine.name])
             for r in recordings if pinned and r.machine.name in pinned}
    by_kind = [(recording, recording.outputs_by_source()) for recording in recordings]
    panel = markdown_cell(provenance_panel(chapter, recordings, drift) if instructor else
                          f"*{recorded_where(chapter, recordings, instructor)}*", BOOK_ONLY_TAG)
    # The panel goes after the chapter's title, or first where it has none.
    title = next((cell for cell in notebook.cells
                  if cell.cell_type == "markdown" and "\n# " in f"\n{cell.source}"), None)
    labelled, executed = copy.deepcopy(notebook), copy.deepcopy(notebook)
    labelled.cells = [panel] if title is None else []
    for cell, run in zip(notebook.cells, executed.cells):
        labelled.cells.append(cell)
        if cell is title:
            labelled.cells.append(panel)
        if cell.cell_type != "code":
            continue
        recording, outputs = next(((r, sources[cell.source]) for r, sources in by_kind
                                   if cell.source in sources and runs_on(cell, r.machine)),
                                  (None, []))
        run.outputs = copy.deepcopy(outputs)
        tags = set(cell_tags(cell))
        if recording is not None:
            if (printed := printed_for_downloads(cell, outputs, recording)) is not None:
                labelled.cells.append(printed)
            # A hidden cell, or the book's verdict on the cell above, needs no mark.
            if (instructor and "remove-cell" not in tags
                    and not {"remove-input", BOOK_ONLY_TAG} <= tags):
                labelled.cells.append(markdown_cell(
                    f"*Recorded on {{ref}}`{recording.machine.short_label} "
                    f"<{recording.anchor(chapter.name)}>`.*", BOOK_ONLY_TAG))
            continue
        if instructor and (is_answer(cell) or CHECK_TAG in tags):
            # The recorder runs the student's notebook: an answer and its checks never run.
            labelled.cells.append(markdown_cell(ANSWER_NOT_RECORDED, BOOK_ONLY_TAG))
            continue
        able = [b for b in chapter.machines if runs_on(cell, b)]
        unrecorded = not any(runs_on(cell, r.machine) for r in recordings)
        if unrecorded and instructor:
            note = "Not yet recorded: this cell runs on " + " or ".join(
                f"{b.short_label} (`{chapter.command(b)}`)" for b in able) + "."
        elif unrecorded:
            note = (f"*This cell needs a {' or a '.join(b.short_label for b in able)}: its output "
                    "is not shown here.*")
        elif allow_stale:
            note = "*Stale: this cell changed since it was recorded; its output is not shown.*"
        else:
            commands = " and ".join(f"`{chapter.command(b)}`" for b in able)
            raise BookError(f"cell `{first_line(cell)}` changed since its recording: run "
                            f"{commands} on such machines, then commit book/recordings/",
                            chapter.source or None, source_line(cell))
        labelled.cells.append(markdown_cell(note, BOOK_ONLY_TAG))
    return AttachedRecordings(labelled, executed, drift)

