"""Where else a chapter is verified: its expected outputs for torches other than the build's.

Every build verifies each chapter on its own torch; someone verifies it on another: on a
runtime students use, from the student downloads (``make accept-outputs-runtime
RUNTIME=colab-cpu``), or on a second torch (``make accept-outputs-torch TORCH=2.14.1``).
There a chapter is **verified** (its file has an entry for each cell the build torch's file
has, and no other), **not yet verified** (no file: allowed, and said) or **stale** (cells
missing or gone: said, and ``make test-fast`` fails); docs/authoring.md, "Not yet verified,
or stale". The museum's check cells, the book's verdicts written per torch, are never
compared.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from pathlib import Path

import nbformat

from coursebook.model.museum import Wing, check_cells
from coursebook.model.notebooks import BOOK_ONLY_TAG, cell_tags
from coursebook.model.runtimes import Runtime
from coursebook.model.versions import release, verified_versions, version_key
from coursebook.prepare.editions import Edition
from coursebook.verify.expectations import (
    EDITIONS,
    code_digest,
    expectations_path,
    read_expectations,
)

RUNTIME_COMMAND = "make accept-outputs-runtime RUNTIME={name}"
TORCH_COMMAND = "make accept-outputs-torch TORCH={version}"


@dataclass(frozen=True)
class OtherTorch:
    """A torch the chapters are verified on besides the build's, and how."""

    torch: str
    label: str  # how pages name it: "Colab (torch 2.11.0)", "torch 2.14.1"
    command: str  # what records its expected outputs
    downloads: bool  # its outputs come from the student downloads (no answers, no book-only cells)

    @classmethod
    def of_runtime(cls, runtime: Runtime) -> OtherTorch:
        return cls(runtime.torch, runtime.reader_label,
                   RUNTIME_COMMAND.format(name=runtime.name), True)

    @classmethod
    def of_version(cls, version: str) -> OtherTorch:
        return cls(release(version), f"torch {release(version)}",
                   TORCH_COMMAND.format(version=release(version)), False)


def other_torch(version: str, runtimes: tuple[Runtime, ...]) -> OtherTorch:
    """The runtime that uses this torch release, or the release on its own."""
    runtime = next((r for r in runtimes if r.torch == release(version)), None)
    return OtherTorch.of_version(version) if runtime is None else OtherTorch.of_runtime(runtime)


class State(Enum):
    VERIFIED = "verified"
    NOT_YET = "not yet verified"
    STALE = "stale"


@dataclass(frozen=True)
class Standing:
    """One chapter on one other torch."""

    chapter: str
    other: OtherTorch
    path: Path  # its expected outputs there (present or not)
    state: State
    missing: tuple[str, ...] = ()  # first lines of the cells with no entry there
    orphaned: tuple[str, ...] = ()  # of the entries whose cell the chapter no longer has

    def message(self) -> str:
        """One line, for the build log, the instructor edition and the tests."""
        if self.state is State.VERIFIED:
            return f"{self.chapter}: verified on {self.other.label}"
        if self.state is State.NOT_YET:
            return (f"{self.chapter}: not yet verified on {self.other.label} ({self.path} does "
                    f"not exist); `{self.other.command}` records it")
        changes = [f"{len(lines)} {what}{_firsts(lines)}" for what, lines in (
            ("cell(s) without an entry", self.missing),
            ("entry(ies) for code the chapter no longer has", self.orphaned)) if lines]
        return (f"{self.chapter}: stale on {self.other.label}: {self.path} has "
                f"{' and '.join(changes)}; `{self.other.command}` records it again")

    def page_note(self) -> str:
        """The instructor edition's words (the student page names only where it was
        verified), to be followed by the command that records them."""
        # A changed cell is both missing (its new code) and orphaned (its old): one cell.
        what = ("not yet verified" if self.state is State.NOT_YET else
                f"stale ({max(len(self.missing), len(self.orphaned))} cell(s) changed since)")
        return f"Outputs {what} on {self.other.label}; recorded by "


def _firsts(lines: tuple[str, ...], shown: int = 2) -> str:
    lines = tuple(dict.fromkeys(lines))  # two cells may start alike
    named = ", ".join(f"`{line}`" for line in lines[:shown])
    return f" ({named}{', …' if len(lines) > shown else ''})"


def left_out_of_downloads(notebook: nbformat.NotebookNode) -> set[str]:
    """The code digests of a chapter's ``book-only`` cells, which downloads leave out."""
    return {code_digest(cell.source) for cell in notebook.cells
            if cell.cell_type == "code" and BOOK_ONLY_TAG in cell_tags(cell)}


def check_digests(museum: dict[str, Wing]) -> set[str]:
    """The code digests of the museum's check cells, for every torch it has records of."""
    return {code_digest(source) for source in check_cells(museum)}


def standing(chapter: str, other: OtherTorch, expected_dir: Path, build_torch: str,
             checks: set[str], book_only: set[str]) -> Standing | None:
    """How ``chapter`` stands on ``other``; None when the build's torch has no expected
    outputs for it (a recorded chapter, or one never accepted: the build reports that).

    ``checks`` (:func:`check_digests`) are never compared, nor, for a runtime's downloads,
    ``book_only`` (:func:`left_out_of_downloads`).
    """
    build = read_expectations(expectations_path(expected_dir, build_torch, chapter))
    if build is None:
        return None
    path = expectations_path(expected_dir, other.torch, chapter)
    theirs = read_expectations(path)
    if theirs is None:
        return Standing(chapter, other, path, State.NOT_YET)
    editions = [Edition.STUDENT.value] if other.downloads else list(EDITIONS)
    skipped = checks | (book_only if other.downloads else set())
    missing, orphaned = {}, {}  # key: first line, each cell once (of both editions), in order
    for edition in editions:
        ours, there = ([key for key in found.by_edition[edition]
                        if key.split(".")[0] not in skipped] for found in (build, theirs))
        missing.update({k: build.first_lines[k] for k in ours if k not in there})
        orphaned.update({k: theirs.first_lines[k] for k in there if k not in ours})
    state = State.STALE if missing or orphaned else State.VERIFIED
    return Standing(chapter, other, path, state, tuple(missing.values()),
                    tuple(orphaned.values()))


def standings(chapter: str, expected_dir: Path, build_torch: str, runtimes: tuple[Runtime, ...],
              checks: set[str], book_only: set[str]) -> list[Standing]:
    """How ``chapter`` stands on each torch it has expected outputs for, besides the
    build's, and on each runtime readers use; oldest torch first."""
    torches = {*verified_versions(expected_dir, chapter), *(r.torch for r in runtimes)}
    found = (standing(chapter, other_torch(v, runtimes), expected_dir, build_torch, checks,
                      book_only)
             for v in sorted(torches - {release(build_torch)}, key=version_key))
    return [s for s in found if s is not None]
