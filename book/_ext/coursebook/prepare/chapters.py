"""From a chapter file to the notebook an edition executes, once per read at ``source-read``;
its other inputs are noted with Sphinx, which reads the page again when one changes."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path

import nbformat
from docutils import nodes
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.util import logging
from sphinx.util.matching import get_matching_files

from coursebook.answer_checks.model import AnswerCheckError, ChapterTeaching, chapter_teaching
from coursebook.answer_checks.prepare import mistried
from coursebook.claims.model import ChapterClaims, chapter_claims
from coursebook.config import BookConfig, book_config
from coursebook.model.cell_notes import cell_line, line_within, source_line
from coursebook.model.faults import BookError, shown_path
from coursebook.model.machine_kinds import MachineKind, environments_path, load_environments
from coursebook.model.notebooks import (CELL_MARKER, CHAPTER_SUFFIXES, HEADING_IN_ONLY,
                                        NEEDS_ANSWERS_TAG, RAISES_TAG, SCRIPT_SUFFIX,
                                        UNVERIFIED_KEY, answer_names, answer_strings, author_line,
                                        cell_script_fault, cell_tags, chapter_settings,
                                        first_line, is_chapter_source, note_output_keys,
                                        other_notebook_format, read_chapter, reads_as_json,
                                        top_matter_line)
from coursebook.model.recordings import (attach_recordings, load_recordings, recorded_chapter,
                                         recorded_where, recording_name, recording_path)
from coursebook.model.solutions import (SolutionError, heading_in_only, myst_roles, shown_by,
                                        without_unshown)
from coursebook.museum.model import Wing
from coursebook.museum.prepare import claim_sources, link_back_to_exhibits, place_museum
from coursebook.page_state import PREPARED, mark_failed, page_state_of
from coursebook.prepare.editions import Edition, edition_notebook
from coursebook.prepare.runtime_setup import place_runtime_setup
from coursebook.reporting import report, report_book_error

logger = logging.getLogger(__name__)


def edition_of(app: Sphinx) -> Edition:
    return Edition.INSTRUCTOR if app.tags.has("instructor") else Edition.STUDENT


# What a page pastes of myst-nb's glue: a role's key (`{glue:text}`key:.2f``), a directive's.
_GLUED = re.compile(r"\{glue(?::[\w-]*)?\}`([^`:<\s]+)|^[ \t]*(?:`{3,}|:{3,})\{glue(?::[\w-]*)?\}"
                    r"[ \t]+([^\s:]+)", re.M)


@dataclass(frozen=True)
class PreparedChapter:
    notebook: nbformat.NotebookNode
    recorded: nbformat.NotebookNode | None = None
    recorded_with: str | None = None
    claims: ChapterClaims = ChapterClaims()
    teaching: ChapterTeaching | None = None
    # The files its cells read (top matter `coursebook: {reads: [...]}`), by the name listed.
    reads: dict[str, Path] = field(default_factory=dict)
    # What the answers this edition leaves out define, at their lines: the names they bind,
    # the files only they name (as paths), but the chapter's data.
    left_out: dict[str, int] = field(default_factory=dict)


def edition_chapter(text: str, source_path: str, edition: Edition, museum: dict[str, Wing],
                    torch_version: str, machine_kinds: dict[str, MachineKind] | None = None,
                    runtimes_file: str = "", answer_spaces: bool = False,
                    shown: Callable[[str], bool] = lambda _: True) -> PreparedChapter:
    """A chapter's notebook for one edition (what a machine executes), its claims, and (taken
    before the answers go) what its checks ask and where it was taught."""
    try:
        notebook = read_chapter(text, strict=True)
    except SolutionError as error:
        raise SolutionError(error.message, source_path, error.line) from None
    folder = Path(source_path).parent
    reads = chapter_settings(notebook.metadata, source_path, text).reads  # they key its run
    if not all((folder / name).is_file() for name in reads):
        raise BookError(f"top matter 'coursebook: reads' is {list(reads)!r}: it must list the "
                        "files beside the chapter that its cells read (e.g. [names.txt]), each of "
                        "them there: correct the list, or put the file beside the chapter",
                        source_path, top_matter_line(text, "coursebook", "reads"))
    place_museum(notebook, museum, torch_version)
    place_runtime_setup(notebook, machine_kinds, source_path, runtimes_file)
    link_back_to_exhibits(notebook, museum)
    if hidden := [cell for cell in notebook.cells if RAISES_TAG in cell_tags(cell)
                  and {"remove-cell", "remove-output"} & set(cell_tags(cell))]:
        raise BookError(
            f"a `{RAISES_TAG}` cell must show its error, but these cells also hide their "
            f"output (remove-cell/remove-output): {[first_line(cell) for cell in hidden]}. "
            "Drop one of the tags.", source_path, source_line(hidden[0]))
    teaching = chapter_teaching(notebook, source_path)  # its checks' faults, at their file
    if wrong := mistried(list(teaching.checks)):  # before any edition is made of them
        raise AnswerCheckError(wrong[0].message, source_path, wrong[0].line)
    left_out = {**answer_names(notebook), **{
        os.path.normpath(folder / name): line for name, line in answer_strings(notebook).items()
        if name not in reads}} if edition is Edition.STUDENT else {}
    notebook, written = edition_notebook(notebook, edition, answer_spaces, shown), notebook
    for cell in notebook.cells:
        if "skip-execution" in cell_tags(cell):  # the author's (Flax's): shown, never run
            cell.metadata[UNVERIFIED_KEY] = "not run: tagged `skip-execution`"
        if edition is Edition.STUDENT and NEEDS_ANSWERS_TAG in cell_tags(cell):  # shown, not
            cell.metadata["tags"] = [*(tag for tag in cell_tags(cell) if tag != RAISES_TAG),
                                     "skip-execution"]  # run: no answer is there to use; it
            cell.metadata.pop("raises", None)  # cannot raise, nor the error it names
            cell.metadata[UNVERIFIED_KEY] = "not run: it needs the answers this edition lacks"
    claims = chapter_claims(notebook, claim_sources(museum), source_path, written)
    note_output_keys(notebook)
    return PreparedChapter(notebook, claims=claims, teaching=teaching,
                           reads={name: folder / name for name in reads}, left_out=left_out)


def refuse_pasted_answers(prepared: PreparedChapter, source_path: str) -> None:
    """A build's student edition: a page pasting (myst-nb's glue) what only an answer glues,
    which this edition does not run (myst-nb said a bare "No key ... in glue data")."""
    for cell, found in ((cell, found) for cell in prepared.notebook.cells
                        if cell.cell_type == "markdown" for found in _GLUED.finditer(cell.source)):
        key = found[1] or found[2]
        if line := prepared.left_out.get(os.path.normpath(Path(source_path).parent / key)):
            raise BookError(f"this pastes `{key}`, which only an answer glues (line {line}): "
                            "the student edition runs no answer, so its page has no value to "
                            "paste (and would show students the answer's): paste it in an "
                            "answer cell, or in an `{only} instructor` block", source_path,
                            line_within(cell, found.start()))


def instructor_chapter(env, docname: str) -> nbformat.NotebookNode:
    path = Path(env.doc2path(docname))
    config = book_config(env.config)
    return edition_chapter(path.read_text(encoding="utf8"), str(path), Edition.INSTRUCTOR,
                           config.museum(), config.torch, config.machine_kinds,
                           config.runtimes_file).notebook


def prepare_chapter(app: Sphinx, config: BookConfig, text: str, source_path: str
                    ) -> PreparedChapter:
    """The notebook this build's edition runs; for a recorded chapter, recordings attached."""
    instructor = edition_of(app) is Edition.INSTRUCTOR
    prepared = edition_chapter(text, source_path, edition_of(app), config.museum(), config.torch,
                               config.machine_kinds, config.runtimes_file, config.answer_space,
                               partial(shown_by, (app.tags,)))
    refuse_pasted_answers(prepared, source_path)
    notebook, claims = prepared.notebook, prepared.claims
    chapter = recorded_chapter(notebook, config.machine_kinds, source_path, text)
    if chapter is None:
        return prepared
    recordings_dir = Path(config.recordings_dir)
    pinned = load_environments(environments_path(recordings_dir, chapter.name),
                               config.machine_kinds, config.runtimes_path)
    recordings = load_recordings(recordings_dir, chapter)
    attached = attach_recordings(notebook, chapter, recordings, config.allow_stale_recordings,
                                 pinned, instructor=instructor)
    for kind, lines in attached.drift.items():
        for line in lines:
            logger.info("%s: environment drift in the %s recording: %s", source_path, kind, line)
    # Only what a recording ran is checked (a stale cell, where allowed, has no output).
    recorded = {source for recording in recordings for source in recording.outputs_by_source()}
    claims = replace(claims, checked=tuple(claim for claim in claims.checked
                                           if notebook.cells[claim.index].source in recorded))
    return replace(prepared, notebook=attached.labelled, recorded=attached.executed,
                   recorded_with=recorded_where(chapter, recordings, instructor), claims=claims)


def _note_inputs(app: Sphinx, config: BookConfig, prepared: PreparedChapter | None) -> list[str]:
    """Note what else makes the chapter's text or its outputs; returns those not there yet."""
    env = app.env
    env.note_dependency(config.machine_kinds_file)
    for path in [*sorted(Path(config.exhibits_dir).glob("*/*.toml")),
                 *(prepared.reads.values() if prepared else ())]:
        env.note_dependency(path)
    if prepared is None or (name := recording_name(prepared.notebook)) is None:
        return []
    recordings_dir = Path(config.recordings_dir)
    env.note_dependency(environments_path(recordings_dir, name))
    paths = [recording_path(recordings_dir, name, kind) for kind in config.machine_kinds]
    for path in filter(Path.is_file, paths):
        env.note_dependency(path)
    # Sphinx would take a missing dependency for a changed one, every build.
    return [str(path) for path in paths if not path.is_file()]


def prepare_edition_source(app: Sphinx, docname: str, source: list[str]
                           ) -> PreparedChapter | None:
    """``source-read``: this edition's chapter, prepared and kept in the page's state."""
    config = book_config(app.config)
    path = Path(app.env.doc2path(docname))
    try:
        if path.suffix not in CHAPTER_SUFFIXES \
                and app.config.source_suffix.get(path.suffix) == "myst-nb":
            # A format myst-nb executes (nb_custom_formats) that is no chapter.
            raise BookError(
                "a notebook in this format would be executed and published unverified (no "
                "expected outputs, no editions): bring it in as a chapter with `make chapter "
                f"FROM={shown_path(path)}`, then remove it", path, 1)
        if not is_chapter_source(source[0]):  # a page: its {only} blocks, as a chapter's
            if path.suffix == ".md" and (at := heading_in_only(source[0])) is not None:
                raise BookError(HEADING_IN_ONLY, path, at + 1)
            if path.suffix == ".md" and (other := other_notebook_format(source[0])):
                raise BookError(f"a notebook in {other[1]}, whose code the book would show "
                                "without running or verifying it: move it out of book/, then "
                                "bring it in as a chapter: `make chapter FROM=<its new path>`",
                                path, other[0])
            if path.suffix == ".md" and edition_of(app) is Edition.STUDENT:
                source[0] = without_unshown(source[0], partial(shown_by, (app.tags,)))
            return None
        prepared = prepare_chapter(app, config, source[0], str(path))
    except BookError as error:
        # An exhibit every chapter loads is reported once, at its own file and line.
        report_book_error(error, "source", fallback_location=docname)
        _note_inputs(app, config, None)
        mark_failed(app.env, docname)
        unbuilt = f"# {docname}\n\nThis page could not be built: see the build log.\n"
        # In the page's own format; myst-nb executes nothing.
        source[0] = (nbformat.writes(nbformat.v4.new_notebook(
            cells=[nbformat.v4.new_markdown_cell(unbuilt)],
            metadata={"mystnb": {"execution_mode": "off"}})) if reads_as_json(str(path))
            else unbuilt)
        return None
    for problem in unknown_domain_roles(prepared.notebook, str(path), app.env.domains.__contains__):
        report(problem.message, problem.location, "source")
    app.env.temp_data[PREPARED] = prepared
    chapter = page_state_of(app.env, docname)
    chapter.notebook, chapter.recorded_with = prepared.notebook, prepared.recorded_with
    chapter.teaching = prepared.teaching
    chapter.awaited = _note_inputs(app, config, prepared)
    return prepared


def unknown_domain_roles(notebook: nbformat.NotebookNode, source_path: str,
                         has_domain: Callable[[str], bool]) -> list[BookError]:
    """Each role of a domain no extension of the book adds (`{mat:func}`, MATLAB's):
    Sphinx says so naming no place, and reads it as the standard domain's role of that name."""
    return [BookError(f"`{{{name}}}`: no extension of the book adds the `{name.split(':')[0]}` "
                      "domain's roles: write it with MyST's own (`{ref}`, `{numref}`) or as text",
                      source_path, cell_line(cell, line))
            for cell in notebook.cells if cell.cell_type == "markdown"
            for name, line in myst_roles(cell.source)
            if ":" in name and not has_domain(name.split(":")[0])]


def leave_out_plain_scripts(app: Sphinx, config) -> None:
    """``config-inited``: a ``.py`` file (found as Sphinx finds pages) that is no percent script
    is left out; one with `# %%` cells is named, with why: else its chapter vanished, unsaid."""
    for name in sorted(get_matching_files(app.srcdir, config.include_patterns,
                                          [*config.exclude_patterns, *config.templates_path])):
        if not name.endswith(SCRIPT_SUFFIX):
            continue
        text = Path(app.srcdir, name).read_text(encoding="utf8", errors="replace")
        if (fault := cell_script_fault(text)) is not None:
            config.exclude_patterns.append(name)
            if any(map(CELL_MARKER.match, text.splitlines())):  # as jupytext reads cells
                report(f"this script has `# %%` cells, but the book reads no chapter in it: "
                       f"{fault[1]}.", f"{Path(app.srcdir, name)}:{fault[0]}", "source")


def refuse_unlisted_pages(app: Sphinx, env) -> None:
    """``env-updated``, student edition: a page in no toctree it shows (an unshown ``{only}``
    block's is blanked) stops each build, -W or not; Sphinx's toc.not_included, which it
    replaces, is a warning, and only after a build that read a page."""
    if edition_of(app) is not Edition.STUDENT:
        return
    listed = {app.config.root_doc, *env.files_to_rebuild, *set().union(*env.included.values())}
    unlisted = [docname for docname in sorted(env.all_docs.keys() - listed)
                if "orphan" not in env.metadata[docname]]
    for docname in unlisted:
        report("no toctree this edition shows lists this page (a toctree inside an `{only}` "
               "block it does not show lists none), yet Sphinx builds every page it finds: "
               "this edition would publish it (its page, its search entries). List it in a "
               "toctree it shows, or leave it out of this edition in conf.py (`if not "
               "INSTRUCTOR: exclude_patterns.append("
               f"{str(env.doc2path(docname, False))!r})`), as torch-versions.md is",
               docname, "source")
    if unlisted:
        app.statuscode = 1
        app.config.suppress_warnings = [*app.config.suppress_warnings, "toc.not_included"]


def refuse_shown_solutions(app: Sphinx, doctree) -> None:
    """``doctree-read``, student edition: stop at a solution the book could not cut out (at its
    text: sphinx-exercise places the box at its page's top), a page of the book given as
    written (a download, a literalinclude), and a file shown that only an answer's code names
    (an answer's run left it: a build's runs leave none)."""
    from sphinx_exercise.nodes import solution_node, solution_start_node  # the recorder lacks it

    if edition_of(app) is not Edition.STUDENT:
        return
    prepared: PreparedChapter | None = app.env.temp_data.get(PREPARED)
    named = dict(prepared.left_out) if prepared else {}  # its names match no file
    for node in doctree.findall(nodes.Element):
        as_written = (app.env.relfn2path(node["reftarget"], app.env.docname)[1]
                      if isinstance(node, addnodes.download_reference)  # or a literalinclude's:
                      else node.get("source") if isinstance(node, (nodes.literal_block, nodes.raw))
                      else None)
        # a page of the book, one this edition leaves out too (the instructor's appendix), not
        # a helper module (a .py no percent script), nor myst-nb's {nb-download} (its run's)
        page = as_written and Path(as_written).is_relative_to(app.srcdir) and app.env.path2doc(
            as_written)
        if page and (page in app.env.found_docs or not as_written.endswith(SCRIPT_SUFFIX) or
                     cell_script_fault(Path(as_written).read_text(encoding="utf8")) is None):
            report(f"this gives students `{os.path.relpath(as_written, app.srcdir)}`, a page "
                   "of the book as written, its answers and `{only} instructor` blocks "
                   "included: " + ("link the page instead (its own download gives the student "
                   "edition's)" if page in app.env.found_docs else "take it out: the student "
                   "edition leaves that page out, so it has no page to link"), node, "answers")
            mark_failed(app.env, app.env.docname)
        shown = as_written or (Path(app.srcdir, node["uri"]) if isinstance(node, nodes.image)
                               else node.source)
        if shown and (line := named.pop(os.path.normpath(shown), None)) and Path(shown).is_file():
            report(f"the student edition shows `{Path(shown).name}`, which only an answer's "
                   f"code names ({Path(doctree['source']).name}:{line}): what "
                   "a run of it left there is the answer's: show it in an answer cell, or make "
                   "it in a cell students run (data an answer reads: list it in top matter "
                   "`coursebook: reads`)", node, "answers")
            mark_failed(app.env, app.env.docname)
    fix = ("the book cuts solutions out of chapters only: move the exercise into one (a page "
           "with jupytext top matter, `make chapter`)" if PREPARED not in app.env.temp_data else
           "the book cuts out a `{solution}` directive written in the chapter's own text, not "
           "one an included file, an eval-rst block, a substitution or a setting puts there: "
           "write it there")
    for box in doctree.findall(lambda n: isinstance(n, (solution_node, solution_start_node))):
        text = next((n for n in box.findall(include_self=False)
                     if n.line and not isinstance(n, nodes.title)), box)
        report(f"a solution would show on this page of the student edition: {fix}", text,
               "answers")
        mark_failed(app.env, app.env.docname)


def name_the_authors_lines(app: Sphinx, doctree) -> None:
    """``doctree-read``: each node at the author's line, for Sphinx's later messages."""
    prepared: PreparedChapter | None = app.env.temp_data.get(PREPARED)
    if prepared is None:
        return
    line = author_line(prepared.notebook, doctree["source"])
    # MyST gives an image or a link in a paragraph (`![](x)`, `[text](#anchor)`) no line: its
    # paragraph's, and one more for each line end before its target in the text as written
    # (`](#anchor`; the n-th such node of a target there, at its n-th).
    seen: dict[tuple[int, str], int] = {}
    for inline in doctree.findall(lambda node: not node.line and isinstance(
            node, (nodes.image, nodes.reference, addnodes.pending_xref))):
        above = inline.parent
        while not above.line and above.parent is not None:
            above = above.parent
        target = inline.get("refuri") or inline.get("reftarget") or inline.get("uri") or "\0"
        nth = seen[id(above), target] = seen.get((id(above), target), -1) + 1
        written = [found.start() for found in re.finditer(
            rf"\]\(<?#?{re.escape(target.lstrip('#'))}", above.rawsource)][nth:nth + 1] or [0]
        inline.source, inline.line = above.source, above.line and above.line + (
            above.rawsource.count("\n", 0, written[0]))
    for node in doctree.findall(lambda node: bool(getattr(node, "line", None))):
        if node.source == doctree["source"]:
            node.line = line(node.line)
