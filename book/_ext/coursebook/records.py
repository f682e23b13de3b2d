"""Recorded chapters: cells that run only on a special builder, their outputs committed.

A chapter whose top matter says ``coursebook: {records: NAME}`` never executes in an
ordinary build. ``tools/record_chapter.py`` (``make tpu-cache``) runs it on a TPU builder,
or on a CPU as the *CPU stand-in*, and writes ``book/records/NAME-KIND.ipynb``: the
executed notebook, with its provenance (device from the runtime, versions, date, a hash
of the code) in its metadata. An ordinary build puts those outputs into jupyter-cache
under the chapter's own cache key, so myst-nb merges them as it merges any cached
notebook; a label under each cell says where it ran. A cell whose code has no record
stops the build (or, with ``coursebook_allow_stale_records``, is shown marked stale).
"""

from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import nbformat

from .editions import cell_tags

KINDS = ("tpu", "cpu")  # preferred first: a TPU record wins over the CPU stand-in
TPU_ONLY_TAG = "tpu-only"  # a cell that cannot run on a CPU
PROVENANCE_KEY = "coursebook_record"
RECORD_COMMAND = "make tpu-cache"


class RecordError(Exception):
    """A record that is malformed, mislabelled or out of date."""


def records_name(notebook: nbformat.NotebookNode) -> str | None:
    return (notebook.metadata.get("coursebook") or {}).get("records")


def code_hash(notebook: nbformat.NotebookNode) -> str:
    code = [cell.source for cell in notebook.cells if cell.cell_type == "code"]
    return hashlib.sha256(json.dumps(code).encode()).hexdigest()


def record_path(records_dir: Path, name: str, kind: str) -> Path:
    return records_dir / f"{name}-{kind}.ipynb"


@dataclass(frozen=True)
class Record:
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
    """A record's kind must agree with the device the runtime reported."""
    platform = provenance.get("device_platform", "")
    device_kind = provenance.get("device_kind", "")
    if kind == "tpu" and (platform != "tpu" or not device_kind.upper().startswith("TPU")):
        raise RecordError(f"{path}: labelled TPU, but it ran on {platform!r} ({device_kind!r}); "
                          "a CPU run can never be a TPU record")
    if kind == "cpu" and platform != "cpu":
        raise RecordError(f"{path}: labelled CPU stand-in, but it ran on {platform!r}")


def load_record(path: Path, kind: str) -> Record:
    notebook = nbformat.read(path, as_version=4)
    provenance = notebook.metadata.get(PROVENANCE_KEY)
    required = ("device_platform", "device_kind", "versions", "date", "code_hash")
    if not isinstance(provenance, dict) or any(k not in provenance for k in required):
        raise RecordError(f"{path}: metadata '{PROVENANCE_KEY}' needs {', '.join(required)}")
    check_label(kind, provenance, path)
    return Record(kind, path, notebook)


def load_records(records_dir: Path, name: str) -> list[Record]:
    """The records of a chapter, TPU first; the CPU stand-in must exist."""
    records = [load_record(record_path(records_dir, name, kind), kind)
               for kind in KINDS if record_path(records_dir, name, kind).is_file()]
    if not any(record.kind == "cpu" for record in records):
        raise RecordError(f"{record_path(records_dir, name, 'cpu')} is missing: run "
                          f"`{RECORD_COMMAND} KIND=cpu` (the CPU stand-in)")
    return records


def _label_cell(text: str) -> nbformat.NotebookNode:
    # A plain paragraph: LaTeX chokes on a class div after every cell of a long chapter.
    return nbformat.v4.new_markdown_cell(f"*{text}*")


def attach_records(notebook: nbformat.NotebookNode, records: list[Record],
                   allow_stale: bool) -> tuple[nbformat.NotebookNode, nbformat.NotebookNode]:
    """The notebook with record labels, and the same with outputs for jupyter-cache.

    Returns ``(labelled, executed)``: ``labelled`` is what the page is read from (labels
    are markdown, which jupyter-cache does not hash); ``executed`` carries the outputs.
    """
    labelled = copy.deepcopy(notebook)
    labelled.cells, outputs = [], []
    by_kind = [(record, record.outputs_by_source()) for record in records]
    for cell in notebook.cells:
        labelled.cells.append(cell)
        if cell.cell_type != "code":
            continue
        tpu_only = TPU_ONLY_TAG in cell_tags(cell)
        found = next(((record, sources[cell.source]) for record, sources in by_kind
                      if cell.source in sources and (record.kind == "tpu" or not tpu_only)), None)
        if found is not None:
            record, cell_outputs = found
            outputs.append(cell_outputs)
            # A hidden cell, or a verdict on the cell above, needs no label of its own.
            if not {"remove-cell", "remove-input"} & set(cell_tags(cell)):
                labelled.cells.append(_label_cell(record.label()))
            continue
        outputs.append([])
        first_line = (cell.source.strip().splitlines() or [""])[0]
        if tpu_only and not any(record.kind == "tpu" for record in records):
            labelled.cells.append(_label_cell(
                f"Not yet run on a TPU: it runs with `{RECORD_COMMAND}` on a TPU builder."))
        elif allow_stale:
            labelled.cells.append(_label_cell(
                "Stale: this cell changed since it was recorded; its output is not shown."))
        else:
            raise RecordError(f"cell `{first_line}` changed since its record: run "
                              f"`{RECORD_COMMAND}` on a TPU builder (and `{RECORD_COMMAND} "
                              "KIND=cpu` for the CPU stand-in), then commit book/records/")
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
