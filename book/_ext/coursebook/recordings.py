"""Recordings: chapters whose cells run only on a special builder, outputs committed.

A *recording* is a chapter's notebook executed on a builder, with its provenance. A
chapter whose top matter says ``coursebook: {recording: NAME}`` never executes in an
ordinary build. ``tools/record_chapter.py`` (``make tpu-cache``) runs it on a TPU builder,
or on a CPU as the *CPU stand-in*, and writes ``book/recordings/NAME-KIND.ipynb``: the
executed notebook, with its provenance (device from the runtime, versions, date, a hash
of the code) in its metadata. An ordinary build puts those outputs into jupyter-cache
under the chapter's own cache key, so myst-nb merges them as it merges any cached
notebook; a label under each cell says where it ran. A cell whose code has no recording
stops the build (or, with ``coursebook_allow_stale_recordings``, is shown marked stale).
"""

from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import nbformat

from .faults import BookError
from .notebooks import TPU_ONLY_TAG, cell_tags

KINDS = ("tpu", "cpu")  # preferred first: a TPU recording wins over the CPU stand-in
PROVENANCE_KEY = "coursebook_recording"
RECORDING_COMMAND = "make tpu-cache"


class RecordingError(BookError):
    """A recording that is malformed, mislabelled or out of date (``cell``: the changed one)."""

    def __init__(self, message: str, path: Path | None = None, line: int = 0,
                 cell: str = "") -> None:
        super().__init__(message, path, line)
        self.cell = cell


def recording_name(notebook: nbformat.NotebookNode) -> str | None:
    return (notebook.metadata.get("coursebook") or {}).get("recording")


def code_hash(notebook: nbformat.NotebookNode) -> str:
    code = [cell.source for cell in notebook.cells if cell.cell_type == "code"]
    return hashlib.sha256(json.dumps(code).encode()).hexdigest()


def recording_path(recordings_dir: Path, name: str, kind: str) -> Path:
    return recordings_dir / f"{name}-{kind}.ipynb"


@dataclass(frozen=True)
class Recording:
    kind: str
    path: Path
    notebook: nbformat.NotebookNode

    @property
    def provenance(self) -> dict:
        return self.notebook.metadata[PROVENANCE_KEY]

    def label(self) -> str:
        p = self.provenance
        where = (f"TPU ({p['device_kind']})" if self.kind == "tpu"
                 else "CPU stand-in (PJRT_DEVICE=CPU, JAX_PLATFORMS=cpu)")
        versions = ", ".join(f"{name} {version}" for name, version in p["versions"].items())
        return f"Recorded on {where}, {p['date']}; {versions}."

    def outputs_by_source(self) -> dict[str, list]:
        return {cell.source: cell.outputs for cell in self.notebook.cells
                if cell.cell_type == "code"}


def check_label(kind: str, provenance: dict, path: Path) -> None:
    """A recording's kind must agree with the device the runtime reported."""
    platform = provenance.get("device_platform", "")
    device_kind = provenance.get("device_kind", "")
    if kind == "tpu" and (platform != "tpu" or not device_kind.upper().startswith("TPU")):
        raise RecordingError(f"labelled TPU, but it ran on {platform!r} ({device_kind!r}); "
                             "a CPU run can never be a TPU recording. Delete the file, or run "
                             f"`{RECORDING_COMMAND}` on a TPU builder.", path)
    if kind == "cpu" and platform != "cpu":
        raise RecordingError(f"labelled CPU stand-in, but it ran on {platform!r}. Record it "
                             f"again with `{RECORDING_COMMAND} KIND=cpu`.", path)


def _read_notebook(path: Path, kind: str) -> nbformat.NotebookNode:
    try:
        return nbformat.read(path, as_version=4)
    except Exception as error:  # nbformat raises several kinds for a damaged file
        detail = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise RecordingError(
            f"not a readable notebook ({type(error).__name__}: {detail[:200]}). Restore it "
            f"with `git checkout -- {path}`, or record it again with "
            f"`{RECORDING_COMMAND} KIND={kind}`.", path) from None


def load_recording(path: Path, kind: str) -> Recording:
    notebook = _read_notebook(path, kind)
    provenance = notebook.metadata.get(PROVENANCE_KEY)
    required = ("device_platform", "device_kind", "versions", "date", "code_hash")
    if not isinstance(provenance, dict) or any(k not in provenance for k in required):
        raise RecordingError(f"metadata '{PROVENANCE_KEY}' needs {', '.join(required)} (the "
                             f"provenance a run writes): record it again with "
                             f"`{RECORDING_COMMAND} KIND={kind}`.", path)
    check_label(kind, provenance, path)
    return Recording(kind, path, notebook)


def load_recordings(recordings_dir: Path, name: str) -> list[Recording]:
    """The recordings of a chapter, TPU first; the CPU stand-in must exist."""
    recordings = [load_recording(recording_path(recordings_dir, name, kind), kind)
                  for kind in KINDS if recording_path(recordings_dir, name, kind).is_file()]
    if not any(recording.kind == "cpu" for recording in recordings):
        raise RecordingError(f"is missing: run `{RECORDING_COMMAND} KIND=cpu` (the CPU stand-in)",
                             recording_path(recordings_dir, name, "cpu"))
    return recordings


def _label_cell(text: str) -> nbformat.NotebookNode:
    # A plain paragraph: LaTeX chokes on a class div after every cell of a long chapter.
    return nbformat.v4.new_markdown_cell(f"*{text}*")


def attach_recordings(notebook: nbformat.NotebookNode, recordings: list[Recording],
                   allow_stale: bool) -> tuple[nbformat.NotebookNode, nbformat.NotebookNode]:
    """The notebook with recording labels, and the same with outputs for jupyter-cache.

    Returns ``(labelled, executed)``: ``labelled`` is what the page is read from (labels
    are markdown, which jupyter-cache does not hash); ``executed`` carries the outputs.
    """
    labelled = copy.deepcopy(notebook)
    labelled.cells, outputs = [], []
    by_kind = [(recording, recording.outputs_by_source()) for recording in recordings]
    for cell in notebook.cells:
        labelled.cells.append(cell)
        if cell.cell_type != "code":
            continue
        tpu_only = TPU_ONLY_TAG in cell_tags(cell)
        found = next(((recording, sources[cell.source]) for recording, sources in by_kind
                      if cell.source in sources and (recording.kind == "tpu" or not tpu_only)),
                     None)
        if found is not None:
            recording, cell_outputs = found
            outputs.append(cell_outputs)
            # A hidden cell, or a verdict on the cell above, needs no label of its own.
            if not {"remove-cell", "remove-input"} & set(cell_tags(cell)):
                labelled.cells.append(_label_cell(recording.label()))
            continue
        outputs.append([])
        first_line = (cell.source.strip().splitlines() or [""])[0]
        if tpu_only and not any(recording.kind == "tpu" for recording in recordings):
            labelled.cells.append(_label_cell(
                f"Not yet run on a TPU: it runs with `{RECORDING_COMMAND}` on a TPU builder."))
        elif allow_stale:
            labelled.cells.append(_label_cell(
                "Stale: this cell changed since it was recorded; its output is not shown."))
        else:
            raise RecordingError(f"cell `{first_line}` changed since its recording: run "
                                 f"`{RECORDING_COMMAND}` on a TPU builder (and `{RECORDING_COMMAND} "
                                 "KIND=cpu` for the CPU stand-in), then commit book/recordings/",
                                 cell=cell.source)
    executed = copy.deepcopy(notebook)
    code_cells = [cell for cell in executed.cells if cell.cell_type == "code"]
    for cell, cell_outputs in zip(code_cells, outputs):
        cell.outputs = copy.deepcopy(cell_outputs)
    return labelled, executed


def cache_recorded_outputs(cache_path: str, source_path: str,
                           executed: nbformat.NotebookNode) -> None:
    """Put the recorded outputs into jupyter-cache under the notebook's own key."""
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    cache = get_cache(cache_path)
    try:
        cache.match_cache_notebook(executed)
        return  # already there: this build or an earlier one put it
    except KeyError:
        pass
    cache.cache_notebook_bundle(CacheBundleIn(executed, source_path, data={"recorded": True}),
                                check_validity=False, overwrite=True)
