"""Torch versions: where each chapter is verified (docs/authoring.md), and what changed
between versions (``{torch-version-changes}``)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

import nbformat
from docutils import nodes
from docutils.parsers.rst import Directive
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.transforms.post_transforms import SphinxPostTransform

from coursebook.config import book_config
from coursebook.execute.shared_cache import edited_since
from coursebook.exhibit_checks import CHANGED_CLASS
from coursebook.model.cell_notes import cell_key
from coursebook.model.faults import BookError
from coursebook.model.notebooks import BOOK_ONLY_TAG, cell_tags
from coursebook.model.runtimes import Runtime
from coursebook.model.versions import is_release, release, version_key
from coursebook.museum.model import ExhibitError, Wing
from coursebook.museum.prepare import check_cells
from coursebook.page_state import chapter_notebook, mark_failed, page_state_of
from coursebook.prepare.chapters import edition_of
from coursebook.prepare.editions import Edition
from coursebook.reporting import report, report_book_error
from coursebook.torch_versions.model import expected_files, verified_versions
from coursebook.verify.chapter_checks import (code_cells, compared_account, patterns_alone,
                                               verified_against, versions_not_recorded)
from coursebook.verify.expectations import (
    EDITIONS,
    ExpectationsError,
    code_digest,
    expectations_path,
    read_expectations,
)
from coursebook.worddiff import changed_words


@dataclass(frozen=True)
class OtherTorch:
    """A torch the chapters are verified on besides the build's, and how."""
    torch: str
    label: str  # how pages name it: "Colab (torch 2.11.0)", "torch 2.14.1"
    command: str  # what records its expected outputs
    downloads: bool  # its outputs come from the student downloads (no answers, no book-only cells)


def other_torch(version: str, runtimes: tuple[Runtime, ...]) -> OtherTorch:
    """The runtime that uses this torch release, or the release on its own."""
    version = release(version)
    if runtime := next((r for r in runtimes if r.torch == version), None):
        return OtherTorch(version, runtime.reader_label,
                          f"make accept-outputs-runtime RUNTIME={runtime.name}", True)
    return OtherTorch(version, f"torch {version}", f"make accept-outputs-torch TORCH={version}",
                      False)


State = Enum("State", "VERIFIED NOT_YET STALE")  # how a chapter stands on another torch


@dataclass(frozen=True)
class Standing:
    """One chapter on one other torch."""
    chapter: str
    other: OtherTorch
    path: Path  # its expected outputs there (present or not)
    state: State
    missing: tuple[str, ...] = ()  # first lines of the cells with no entry there
    orphaned: tuple[str, ...] = ()  # of the entries whose cell the chapter no longer has
    edited: tuple[str, ...] = ()  # the files its cells read, changed since its run there

    def message(self) -> str:
        if self.state is State.VERIFIED:
            return f"{self.chapter}: verified on {self.other.label}"
        if self.state is State.NOT_YET:
            return (f"{self.chapter}: not yet verified on {self.other.label} ({self.path} does "
                    f"not exist); `{self.other.command}` records it")
        changes = [f"{len(lines)} {what}{_firsts(lines)}" for what, lines in (
            ("cell(s) without an entry", self.missing),
            ("entry(ies) for code the chapter no longer has", self.orphaned),
            ("file(s) its cells read changed since", self.edited)) if lines]
        return (f"{self.chapter}: stale on {self.other.label}: {self.path} has "
                f"{' and '.join(changes)}; `{self.other.command}` records it again")

    def page_note(self) -> str:
        """The instructor page's words, followed there by the command."""
        # A changed cell is both missing (its new code) and orphaned (its old): one cell.
        cells = max(len(self.missing), len(self.orphaned))
        changed = ([f"{cells} cell(s)"] if cells else []) + list(self.edited)
        what = ("not yet verified" if self.state is State.NOT_YET else
                f"stale ({' and '.join(changed)} changed since)")
        return f"Outputs {what} on {self.other.label}; recorded by "


def _firsts(lines: tuple[str, ...]) -> str:
    lines = tuple(dict.fromkeys(lines))  # two cells may start alike
    named = ", ".join(f"`{line}`" for line in lines[:2])
    return f" ({named}{', …' if len(lines) > 2 else ''})"


def check_digests(museum: dict[str, Wing]) -> set[str]:
    return {code_digest(source) for source in check_cells(museum)}


def standing(chapter: str, other: OtherTorch, expected_dir: Path, build_torch: str,
             checks: set[str], notebook: nbformat.NotebookNode) -> Standing | None:
    """How ``chapter`` stands on ``other`` (None: the build's torch has no file for it);
    ``checks`` (the museum's, verdicts written per torch) are never compared."""
    build = read_expectations(expectations_path(expected_dir, build_torch, chapter))
    if build is None:
        return None
    path = expectations_path(expected_dir, other.torch, chapter)
    theirs = read_expectations(path)
    if theirs is None:
        return Standing(chapter, other, path, State.NOT_YET)
    editions = [Edition.STUDENT.value] if other.downloads else list(EDITIONS)
    skipped = checks | {code_digest(cell.source) for cell in notebook.cells if other.downloads
                        and cell.cell_type == "code" and BOOK_ONLY_TAG in cell_tags(cell)}
    missing, orphaned = {}, {}  # key: first line, each cell once (of both editions), in order
    for edition in editions:
        ours, there = ([key for key in found.by_edition[edition]
                        if key.split(".")[0] not in skipped] for found in (build, theirs))
        missing.update({k: build.first_lines[k] for k in ours if k not in there})
        orphaned.update({k: theirs.first_lines[k] for k in there if k not in ours})
    # A download holds none of these files: a runtime's run goes by its code alone.
    edited = () if other.downloads else edited_since(notebook, theirs.reads)
    state = State.STALE if missing or orphaned or edited else State.VERIFIED
    return Standing(chapter, other, path, state, tuple(missing.values()),
                    tuple(orphaned.values()), edited)


CHANGES_LABEL = "torch-versions"
# Where torch was built, not what it says: "2.13.0+cpu", "at /__w/.../TensorBody.h:493".
_BUILD_TAG = re.compile(r"(\d+\.\d+(?:\.\d+)?)\+[\w.]+")
_SOURCE_LINE = re.compile(r"(?:/[^\s:()]+/)?([\w.-]+\.(?:h|hpp|c|cc|cpp|cu|cuh)):\d+")


def comparable(text: str, version: str) -> str:
    """An output as compared across versions."""
    text = _BUILD_TAG.sub(r"\1", text)
    text = re.sub(rf"(?<![\w.]){re.escape(release(version))}(?![\w])", "<torch>", text)
    return _SOURCE_LINE.sub(r"\1", text)


def highlighted_block(runs: list[tuple[str, bool]]) -> nodes.literal_block:
    # Bold, not colour: print in black and white shows it.
    children = [nodes.strong(text, text, classes=["torch-diff-changed"]) if changed
                else nodes.Text(text) for text, changed in runs]
    # Sphinx highlights (and flattens to text) a block whose rawsource is its text, and
    # fills in an empty rawsource with the text: a marked-up one keeps the bold runs.
    marked = "".join(f"**{text}**" if changed else text for text, changed in runs)
    return nodes.literal_block(marked, "", *children, classes=["torch-diff"])


def highlight_changed_boxes(doctree: nodes.document) -> None:
    """``doctree-read``: in each "changed since" box, bold the words that differ."""
    for box in doctree.findall(nodes.admonition):
        blocks = list(box.findall(nodes.literal_block))
        if CHANGED_CLASS not in box["classes"] or len(blocks) != 2:
            continue
        for block, runs in zip(blocks, changed_words(blocks[0].astext(), blocks[1].astext())):
            block.replace_self(highlighted_block(runs))


def add_verified_versions(app: Sphinx, doctree: nodes.document) -> None:
    """Under a chapter's title: where it was verified (student edition: this torch only)."""
    config = book_config(app.config)
    chapter, running = app.env.docname, config.torch
    expected_dir = Path(app.srcdir, config.expected_dir)
    versions = verified_versions(expected_dir, chapter)
    state = page_state_of(app.env, chapter)
    # A version added or removed later reads the page again (page_states' collector).
    state.verified_versions = versions
    if not versions:
        return
    for path in expected_files(expected_dir, chapter):
        app.env.note_dependency(str(path))
    runtimes, notebook = config.reader_runtimes, state.notebook or nbformat.v4.new_notebook()
    try:
        checks = check_digests(config.museum())
        torches = {*versions, *(r.torch for r in runtimes)} - {release(running)}
        found = (standing(chapter, other_torch(v, runtimes), expected_dir, running, checks,
                          notebook) for v in sorted(torches, key=version_key))
        others = [s for s in found if s is not None]
        here = read_expectations(expectations_path(expected_dir, running, chapter))
    except BookError:  # an ExpectationsError too
        return  # the versions page and the chapter's own checks report it
    state.not_verified = [s.message() for s in others if s.state is not State.VERIFIED]
    against = verified_against(running, state.notebook)
    if edition_of(app) is Edition.STUDENT:  # the versions behind the outputs a student reads
        text = (f"The outputs on this page are those of {against}; another release may print "
                "some of them differently.")
        notes = [nodes.paragraph("", text, classes=["verified-on"])]
    else:
        verified = [s.other for s in others if s.state is State.VERIFIED]
        torches = [o.torch for o in verified if not o.downloads]
        readers = [o.label for o in verified if o.downloads]
        # The count is this build's; a runtime's file holds the student download's cells.
        also = ([f"torch {', '.join(torches)}"] if torches else []) + (
            [f"as the student download on {' and '.join(readers)}"] if readers else [])
        counted, left = compared_account(state.outputs or [], [],  # a mismatch fails the build
                                         patterns_alone(here, edition_of(app).value))
        text = f"{counted} against {against} (this build){left}" + (
            f"; verified too against {', and '.join(also)}{versions_not_recorded(state.notebook)}"
            if also else "")
        notes = [nodes.paragraph("", "", nodes.Text(f"{text}. See "),
                                 _link(CHANGES_LABEL, "what changed between torch versions"),
                                 nodes.Text("."), classes=["verified-on"])]
        notes += [nodes.paragraph("", "", nodes.Text(s.page_note()),
                                  nodes.literal(s.other.command, s.other.command),
                                  nodes.Text("."), classes=["verified-on", "not-verified"])
                  for s in others if s.state is not State.VERIFIED]
    section = next(doctree.findall(nodes.section), None)  # the chapter's, under its title
    if section is not None and section.children and isinstance(section[0], nodes.title):
        section[1:1] = notes


class TorchVersionChanges(Directive):
    """``{torch-version-changes}``: every output that differs between torch versions."""

    edition = Edition.STUDENT  # the build's: setup gives each build its subclass

    def run(self) -> list[nodes.Node]:
        env = self.state.document.settings.env
        try:
            return self._sections(env)
        except ExhibitError as error:  # the chapters that place the exhibits report it too
            report_book_error(error, "source", fallback_location=env.docname)
        except ExpectationsError as error:
            report(str(error), None, "expected-outputs")
        mark_failed(env, env.docname)  # read (and checked) again next build
        return []

    def _sections(self, env) -> list[nodes.Node]:
        config = book_config(env.config)
        edition = self.edition.value
        expected_dir = Path(env.srcdir, config.expected_dir)
        rows: dict[tuple[str, str], list[nodes.Node]] = {}
        files = expected_files(expected_dir)
        for path in files:
            env.note_dependency(str(path))
        museum, readers = config.museum(), config.reader_runtimes
        # An exhibit's failing code: its own records show its change.
        skipped = check_digests(museum) | {code_digest(exhibit.failing_code) for wing in
                                           museum.values() for exhibit in wing.exhibits}
        for chapter in sorted({"/".join(p.relative_to(expected_dir).with_suffix("").parts[1:])
                               for p in files}):  # torch-X/part/ch.txt: part/ch
            versions = verified_versions(expected_dir, chapter)  # oldest first
            if len(versions) > 1 and chapter in env.found_docs:  # its headings: CellHeadings
                env.note_dependency(env.doc2path(chapter))
            for old, new in zip(versions, versions[1:]):
                before, after = (read_expectations(expectations_path(expected_dir, v, chapter)
                                                   ).by_edition[edition] for v in (old, new))
                found = rows.setdefault((old, new), [])
                for key, text in after.items():
                    if key in before and key.split(".")[0] not in skipped:
                        found += _changed(
                            [nodes.Text("In "), cell_heading("", chapter=chapter, key=key),
                             nodes.Text(":")], old, before[key], new, text, readers)
        for exhibit in (exhibit for wing in museum.values() for exhibit in wing.exhibits):
            env.note_dependency(str(exhibit.path))
            # A capture's torch may be unknown ("unrecorded"): not a release to compare.
            records = sorted((r for r in exhibit.records if is_release(r.torch)),
                             key=lambda r: version_key(r.torch))
            for before, after in zip(records, records[1:]):
                if found := _changed(
                        [nodes.Text("Exhibit: "), _link(exhibit.label, exhibit.title)],
                        before.torch, f"{before.type}: {before.message}",
                        after.torch, f"{after.type}: {after.message}", readers):
                    rows.setdefault((before.torch, after.torch), []).extend(found)
        sections = []
        for (old, new), found in sorted(rows.items(), key=lambda item: (
                version_key(item[0][1]), version_key(item[0][0]))):
            section = nodes.section(ids=[f"torch-{old}-to-{new}".replace(".", "-")])
            section += nodes.title("", f"{other_torch(old, readers).label} → "
                                       f"{other_torch(new, readers).label}")
            section += found or [nodes.paragraph(
                "", "Every output recorded for both versions is the same.")]
            sections.append(section)
        return sections


def _changed(what: list[nodes.Node], old: str, old_text: str, new: str, new_text: str,
             readers: tuple[Runtime, ...]) -> list[nodes.Node]:
    """Under a paragraph of ``what``, two outputs side by side; none when they say the same."""
    if comparable(old_text, old) == comparable(new_text, new):
        return []
    pair = nodes.container(classes=["torch-diff-pair"])
    for version, runs in zip((old, new), changed_words(old_text, new_text)):
        label = other_torch(version, readers).label
        column = nodes.container(classes=["torch-diff-column"])
        column += nodes.paragraph("", "", nodes.strong(label, label))
        column += highlighted_block(runs)
        pair += column
    return [nodes.paragraph("", "", *what), pair]


def _link(label: str, title: str) -> nodes.Node:
    if not label:
        return nodes.inline("", title or "a cell without a section")
    return addnodes.pending_xref("", nodes.inline("", title), refdomain="std", reftype="ref",
                                 reftarget=label, refexplicit=True)


class cell_heading(nodes.Inline, nodes.Element):
    """The section of a chapter's cell (``chapter``, ``key``): a link once pages are read."""


class CellHeadings(SphinxPostTransform):
    """Each :class:`cell_heading` becomes a link to its section (no label: its title)."""

    default_priority = 5  # before Sphinx resolves references (10)

    def run(self, **kwargs) -> None:
        cells = list(self.document.findall(cell_heading))
        found = {chapter: _headings(self.env, chapter) for chapter in {n["chapter"] for n in cells}}
        for node in cells:
            node.replace_self(_link(*found[node["chapter"]].get(node["key"], ("", ""))))


def _headings(env, chapter: str) -> dict[str, tuple[str, str]]:
    """Each keyed code cell's (label, title) of its section; a cell the page does not show
    (a set-up cell), those of the shown cell before it, or of the first section."""
    try:
        doctree = env.get_doctree(chapter)
    except OSError:
        return {}  # the chapter's own page reports it

    def heading(section: nodes.Element) -> tuple[str, str]:
        labels = [name for name in section["names"] if doctree.nametypes.get(name)]
        return (labels or [""])[-1], section[0].astext()

    sections = list(doctree.findall(nodes.section))  # outer before inner: the innermost wins
    shown = {cell["cell_index"]: heading(section) for section in sections
             for cell in code_cells(section)}
    current, found = heading(sections[0]) if sections else ("", ""), {}
    for index, cell in enumerate(getattr(chapter_notebook(env, chapter), "cells", [])):
        current = shown.get(index, current)
        if key := cell_key(cell):
            found[key] = current
    return found
