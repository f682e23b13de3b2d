"""Every executed cell did what its tags promise and showed what is expected, or the build
stops (myst-nb accepts a ``raises-exception`` cell that does not raise, and in cache mode a
failing notebook is only a warning)."""

from __future__ import annotations

import os
import platform
import re
import shutil
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import nbformat
from docutils import nodes
from myst_nb.sphinx_ import NbMetadataCollector
from sphinx.application import Sphinx
from sphinx.util import logging

from coursebook.answer_checks.model import CHECK_TAG
from coursebook.config import book_config
from coursebook.execute.cached_chapters import EXECUTED, report_folder, stopped_run
from coursebook.execute.notebook_runs import CUT_MARKER, LIMIT, StoppedRun, without_digest
from coursebook.execute.shared_cache import PACKAGE, READS, edited_since, in_key
from coursebook.model.cell_notes import source_line
from coursebook.model.faults import BookError, shown_path
from coursebook.model.notebooks import (NEEDS_ANSWERS_TAG, RAISES_TAG, cell_tags, first_line,
                                        top_matter_setting)
from coursebook.model.outputs import BARE_REPR, normalise
from coursebook.model.provenance import today
from coursebook.model.versions import release
from coursebook.museum.model import Wing
from coursebook.museum.prepare import CellOrigin, origin_of
from coursebook.page_state import PREPARED, CellOutput, mark_failed, page_state_of, page_states
from coursebook.prepare.chapter_packages import COMMAND as PACKAGES_COMMAND
from coursebook.prepare.chapters import PreparedChapter, edition_of, instructor_chapter
from coursebook.reporting import ask_for, report
from coursebook.verify.expectations import (
    ACCEPT_COMMAND,
    Expectations,
    ExpectationsError,
    accept_into,
    cell_outputs,
    compare,
    expectations_path,
    keyed_cells,
    read_expectations,
    run_digest,
)
from coursebook.verify.varying_outputs import MARK

logger = logging.getLogger(__name__)


def _exhibit_problem(origin: CellOrigin, error: str | None) -> BookError:
    """A generated exhibit cell that misbehaved, named by its exhibit's file and field."""
    exhibit, field = origin.exhibit.key, origin.field
    if error is None:
        what = (f"exhibit {exhibit}: the failing code (field '{field}') did not raise. "
                f"Make it fail as the exhibit teaches, then check its record with "
                f"`{ACCEPT_COMMAND}`.")
    elif field == "records":
        what = f"exhibit {exhibit}, field 'records':\n      {_short(error)}"
    else:
        what = (f"exhibit {exhibit}: the fix (field '{field}') raised an error:\n      "
                f"{_short(error)}\n    A fix must run: correct field '{field}'.")
    return BookError(what, origin.exhibit.path, origin.line)


def code_cells(doctree: nodes.document) -> Iterator[nodes.container]:
    return (node for node in doctree.findall(nodes.container)
            if node.get("nb_element") == "cell_code")


def normalise_output_nodes(doctree) -> None:
    """Cell outputs on a page as compared (a cut output's marker without its digest)."""
    for block in doctree.findall(nodes.literal_block):
        if "output" in block.get("classes", []) and (cleaned := without_digest(
                normalise(text := block.astext()))) != text:
            block.children = [nodes.Text(cleaned)]
            block.rawsource = cleaned


def _printed(cell: nodes.container, lines: int = 10) -> str:
    """The end of what a cell printed before it failed, indented for a message."""
    text = "\n".join(block.astext() for block in cell.findall(nodes.literal_block)
                     if "output" in block.get("classes", [])
                     and "traceback" not in block.get("classes", [])).strip("\n")
    if not text:
        return ""
    kept = text.splitlines()
    cut = f"      … ({len(kept) - lines} lines above)\n" if len(kept) > lines else ""
    return "\n    It printed:\n" + cut + "\n".join(f"      {line}" for line in kept[-lines:])


# The line naming an error (`ValueError: ...`, `jax.errors.TracerBoolConversionError`).
_ERROR_NAME = re.compile(r"^(?:\w+\.)*[A-Z]\w*(?:Error|Exception|Warning|Exit|Interrupt)\b")


def _short(error: str, lines: int = 12) -> str:
    """An error's last lines; a message longer than that from the line naming its error on
    (Flax's, of 20 lines: its end named nothing), the rest elided."""
    kept = error.splitlines()
    named = max((n for n, line in enumerate(kept) if _ERROR_NAME.match(line)), default=len(kept))
    start = min(named, max(len(kept) - lines, 0))
    return "\n      ".join(kept[start:start + lines] + ["…"] * (len(kept) - start > lines))


def _at(cell, what: str) -> BookError:
    """A code cell's fault at its line, the cell named by its first line (or as given)."""
    named, line = (cell, 0) if isinstance(cell, str) else (first_line(cell), source_line(cell))
    return BookError(f"code cell `{named}` {what}", line=line)


# A fetch without the network, in urllib's, requests', curl's, the resolver's, torch.hub's words.
_OFFLINE = re.compile(r"urlopen error|Max retries exceeded|Network is unreachable|Name or service "
                      r"not known|Temporary failure in name resolution|nodename nor servname"
                      r"|Could not resolve host|no internet connection")


_CHECKED = ("    The build wrote this cell from the `checks:` of the answer cell at this line: "
            "correct the check there; a function's answer and entries return a value on the "
            "check's inputs, never raise (docs/authoring.md, \"Answers students can check\").")


def _advice(error: str, printed: str, left_out: dict[str, int], chapter: str, source: str
            ) -> str:
    """What to do about an error a cell was not tagged for, by its cause."""
    reads = f"listed {top_matter_setting(chapter, 'coursebook: {reads: [...]}')}"
    declare = (f"{top_matter_setting(chapter, 'coursebook: {packages: [...]}')}, then "
               f"`{PACKAGES_COMMAND}`")
    name = re.search(r"^NameError: name '(\w+)' is not defined", error, re.M)
    if name and (answer := left_out.get(name[1])):
        return (f"    `{name[1]}` is defined at line {answer}, by an answer or a cell that needs "
                f"one, which this edition does not run: tag this cell `{NEEDS_ANSWERS_TAG}` (this "
                "edition then shows it without running it), or define the name in a cell students "
                "run too.")
    if re.search(r"^NotImplementedError\b", error, re.M):
        return ("    If it ran an exercise left to the student (its raise stays until they write "
                f"it), tag this cell `{NEEDS_ANSWERS_TAG}` (this edition then shows it without "
                "running it), with the answer in a cell above tagged `answer`; else fix the cell "
                "(torch raises it for a misspelt `forward` in an nn.Module).")
    if _OFFLINE.search(error + printed):  # torchvision prints urllib's
        return ("    It reached for the network, which a build may lack (CI's has none): put what "
                f"it fetches beside the chapter, at the path the cell reads, {reads}; what a "
                "library fetches into a cache of its own (`tiktoken.get_encoding`'s, a hub's "
                "models) have in that cache on each machine that builds (tiktoken's in the home: "
                "`TIKTOKEN_CACHE_DIR=$HOME/.cache/tiktoken`, as a run's temporary folder goes "
                "with it); or take the call out.")
    if absent := re.search(r"^FileNotFoundError: .*No such file or directory: '(/[^']+)'",
                           error, re.M):  # Kaggle's /kaggle/input/..., Colab's /content/...
        return (f"    It reads `{absent[1]}`, at a path of the machine it was written on, which "
                f"no build has: put the file beside the chapter, {reads}, and read it there, by a "
                f"relative path (`{os.path.basename(absent[1])}`).")
    if ops := re.search(r"operator (\w+)::\w+ does not exist", error):  # torchvision's nms
        return (f"    {ops[1]}'s compiled operators did not load: the {ops[1]} installed was not "
                "built for this torch (its CUDA build beside torch's CPU one, say): install the "
                "one built for it (PyTorch's own index has each), then build again.")
    if re.search(r"not compiled with CUDA|no NVIDIA driver|No CUDA GPUs|Unknown backend: '(?:gpu|"
                 r"cuda|tpu)'", error):  # torch's, then JAX's
        return ("    It asked for a GPU or TPU, which no build of the book has (it builds with "
                "torch's CPU build): let it run without one (`device = 'cuda' if "
                "torch.cuda.is_available() else 'cpu'`, JAX's default device), or record the "
                "chapter on one (docs/recorded-chapters.md).")
    if re.search(r"^ImportError: IProgress not found", error, re.M):  # tqdm.notebook's words
        return ("    tqdm.notebook draws its bar as a widget, which needs ipywidgets: show a text "
                f"bar (`from tqdm import tqdm`), or declare ipywidgets {declare} (a page draws a "
                "widget with scripts from the web, and no build compares it).")
    if re.search(r"^ModuleNotFoundError: No module named 'google(\.colab)?'", error,
                 re.M) and "google.colab" in source:  # 'google' where no namespace package is
        return ("    google.colab is Colab's own module, which no package installs: take the cell "
                "out (the book builds without Colab).")
    lacking = re.search(r"^ModuleNotFoundError: No module named '([^'.]+)", error, re.M)
    return ((f"    Declare the package that installs {lacking[1]} {declare};" if lacking else
             "    Fix the cell,") + f" or tag it `{RAISES_TAG}` if the error is what it teaches.")


def cell_problems(doctree: nodes.document, cells: list[nbformat.NotebookNode],
                  succeeded: bool, traceback: str | None,
                  museum: dict[str, Wing] | None = None,
                  stopped: StoppedRun | None = None,
                  report: Path | None = None, left_out: dict[str, int] | None = None
                  ) -> list[BookError]:
    """What went wrong in one executed chapter, in cell order. ``cells``: the notebook's,
    by myst-nb's cell index; ``succeeded``: the run went on past errors, else it stopped at
    the first unexpected one; ``stopped``: where a run that timed out or lost its kernel
    stopped (no later cell is blamed); ``report``: the file keeping the run's traceback;
    ``left_out``: the names and files the answers this edition lacks define, at their lines."""
    if stopped is not None and stopped.cell_index is None:
        return [_at("(the first one)", stopped.what)]
    succeeded = succeeded and stopped is None
    problems: list[BookError] = []
    for cell in code_cells(doctree):
        if stopped is not None and cell["cell_index"] >= stopped.cell_index:
            continue
        tags = cell.get("cell_metadata", {}).get("tags", [])
        error = next((block.astext().strip() for block in cell.findall(nodes.literal_block)
                      if "traceback" in block.get("classes", [])), None)
        where = cells[cell["cell_index"]]
        # `raises: RuntimeError`: another error (a module or a name a cell lacks) is not the
        # lesson, whatever accepting says. Its name starts a line of the traceback (a
        # SyntaxError's after a caret), maybe qualified (torch.OutOfMemoryError).
        wanted = cell.get("cell_metadata", {}).get("raises")
        # ipykernel's answer to input(), getpass or a debugger's prompt: no build types one.
        waits = any("StdinNotImplementedError" in block.astext() for block in
                    cell.findall(nodes.literal_block) if "output" in block.get("classes", []))
        origin = origin_of(where, museum) if museum else None
        exhibit = origin is not None and (error is not None) != (RAISES_TAG in tags)
        unexpected = error is not None and RAISES_TAG not in tags
        if waits:
            problems.append(_at(where, "waits for input, which no build gives: remove the call."))
        elif exhibit:
            if not (problems and problems[-1].path and origin.field == "records"
                    and problems[-1].message.startswith(f"exhibit {origin.exhibit.key}:")):
                problems.append(_exhibit_problem(origin, error))  # not "did not raise" twice
        elif unexpected:
            printed = _printed(cell)
            problems.append(_at(where, (
                f"raised an error it was not tagged for:\n      {_short(error)}{printed}\n"
                + (f"    The whole run's traceback: {report}\n" if report else "")
                + (_CHECKED if CHECK_TAG in tags else _advice(
                    error, printed, left_out or {}, doctree.get("source", ""), where.source)))))
        elif error is None and RAISES_TAG in tags:
            problems.append(_at(where, (
                f"is tagged `{RAISES_TAG}` but did not raise. Make it raise again, or drop the "
                f"tag{' and its `raises`' if wanted else ''} if it is meant to succeed.")))
        elif error is None and wanted:  # the tag dropped, as told above
            problems.append(_at(where, (
                f"names the error it teaches (`raises: {wanted}`) but is not tagged "
                f"`{RAISES_TAG}`, and raised nothing: take `raises` out, or tag it.")))
        if unexpected and not succeeded:
            break  # the run stopped at its first unexpected error: later cells never ran
        if not (waits or exhibit) and error is not None and wanted and not re.search(
                rf"^(?:[\w.]+\.)?{re.escape(str(wanted))}(?::|\s|$)", error, re.M):
            problems.append(_at(where, (
                f"raised another error than the {wanted} its `raises` names:\n      "
                f"{_short(error)}\n    Fix the cell (a package or an earlier cell it needs), "
                "or name in `raises` the error it teaches.")))
    if stopped is not None:
        made = stopped.error == "UnlistedRead" and (left_out or {}).get(
            os.path.normpath(Path(doctree.get("source", "")).parent / stopped.file))
        problems.append(_at(cells[stopped.cell_index], stopped.what if not made else (
            f"reads `{stopped.file}`, which only an answer's code names (line {made}): what a "
            f"run of it left there, which this edition does not run: tag this cell "
            f"`{NEEDS_ANSWERS_TAG}`, or make the file in a cell students run too.")))
    elif not succeeded and not problems:
        problems.append(_at("(the notebook)", f"failed to execute:\n      "
                            f"{_short(traceback or 'no traceback recorded')}"))
    return problems


def check_executed_chapter(app: Sphinx, doctree: nodes.document) -> None:
    """``doctree-read``."""
    env = app.env
    exec_data = NbMetadataCollector.get_exec_data(env, env.docname)
    prepared: PreparedChapter | None = env.temp_data.get(PREPARED)
    if exec_data is None or prepared is None:
        return
    # Where the traceback is kept once the build has read every page.
    kept = shown_path(_reports(app)[1].joinpath(*f"{env.docname}.err.log".split("/")))
    problems = cell_problems(doctree, prepared.notebook.cells,
                             bool(exec_data.get("succeeded")), exec_data.get("traceback"),
                             book_config(app.config).museum(), stopped_run(app),
                             kept if exec_data.get("traceback") else None, prepared.left_out)
    for problem in problems:
        report(problem.message, problem.location or (env.docname, problem.line or None),
               "execution")
    if problems:
        mark_failed(env, env.docname)
    for cell in code_cells(doctree):  # each output cut for the page, said once at its cell
        for block in cell.findall(nodes.literal_block):
            if "output" in block["classes"] and (found := CUT_MARKER.search(block.astext())):
                where = prepared.notebook.cells[cell["cell_index"]]
                logger.info("code cell `%s`: an output is longer than %s characters: the page "
                            "shows its start and its end around `%s`; the expected outputs "
                            "verify the whole by its digest", first_line(where), f"{LIMIT:,}",
                            without_digest(found[0]),
                            location=(env.docname, source_line(where) or None))


def executed_notebook(app: Sphinx, prepared: PreparedChapter) -> nbformat.NotebookNode | None:
    """The prepared notebook with its outputs (None: a failed run, or not run)."""
    return prepared.recorded if prepared.recorded is not None else app.env.temp_data.get(EXECUTED)


def raised_on_purpose(executed: nbformat.NotebookNode) -> tuple[str, ...]:
    """The types of the errors an executed chapter's ``raises-exception`` cells raised."""
    return tuple(sorted({output.ename for cell in executed.cells if RAISES_TAG in cell_tags(cell)
                         for output in cell.get("outputs", [])
                         if output.get("output_type") == "error"}))


def keep_cell_outputs(app: Sphinx, doctree: nodes.document) -> None:
    """``doctree-read``: a chapter's outputs, kept with the page so that a warm build too
    compares them without the cache; and the error types it raises on purpose (downloads')."""
    env = app.env
    prepared: PreparedChapter | None = env.temp_data.get(PREPARED)
    chapter = page_state_of(env, env.docname)
    if prepared is None or chapter.failed:
        return
    executed = executed_notebook(app, prepared)
    if executed is not None:
        chapter.raised = raised_on_purpose(executed)
        if prepared.recorded is None:  # a recording is compared when it is attached
            chapter.outputs = cell_outputs(executed)
    elif (NbMetadataCollector.get_exec_data(env, env.docname) or {}).get("succeeded"):
        report("this chapter ran, but its outputs are not in the execution cache under its "
               "prepared notebook's key, so they cannot be compared with its expected outputs: "
               "a fault of the book's extension (the notebook myst-nb read is not the one "
               "prepared); report it with this chapter", (env.docname, None), "expected-outputs")
        mark_failed(env, env.docname)


# The summary lines, logged once the errors are out (Sphinx holds back the reading phase's).
_SUMMARY = "coursebook_output_summary"


def compare_expected_outputs(app: Sphinx, env, since: datetime | None = None) -> None:
    """``env-updated``: each chapter's outputs against its expected ones, or written when
    accepting (``since``: the build's start); the duration is logged for ``make bench``."""
    config = book_config(app.config)
    if not (config.verify_outputs or config.accept_outputs):
        return
    started = time.perf_counter()
    summary: list[str] = []
    torch_version = config.torch
    expected_dir = Path(app.srcdir, config.expected_dir)
    edition = edition_of(app).value
    states = page_states(env)
    chapters = [docname for docname in sorted(states)
                if states[docname].outputs is not None and docname in env.found_docs]
    for docname in chapters:
        outputs = states[docname].outputs
        path = expectations_path(expected_dir, torch_version, docname)
        try:
            expectations = read_expectations(path)
        except ExpectationsError as error:  # the file names itself; the versions page reads it too
            report(str(error), None, "expected-outputs")
            app.statuscode = 1
            continue
        notebook = states[docname].notebook  # prepared, as its outputs were kept
        run = run_digest(notebook)
        if config.accept_outputs:
            shown, refused = accept_into(
                path, expectations, edition, outputs,
                lambda: [k for k, _ in keyed_cells(instructor_chapter(env, docname))],
                [(f"# Expected outputs of {Path(env.doc2path(docname, False)).as_posix()} for "
                  f"torch {release(torch_version)}."),
                 (f"# Accepted with `{ACCEPT_COMMAND}` on {today()} from a run on "
                  f"{platform.system()} {platform.machine()} (torch {torch_version})."),
                 ("# One entry per code cell: a hash of its code, then its output, indented. "
                  "Review the diff before committing.")], run, since, in_key(notebook, READS))
            for refusal in refused:
                _fail(app, docname, refusal.cell.line, refusal.message(path), fixed_by=None)
            summary += shown + states[docname].not_verified
            continue
        if expectations is None:
            _fail(app, docname, None,
                  f"no expected outputs for torch {release(torch_version)} ({path} is "
                  f"missing). Accept them with `{ACCEPT_COMMAND}`, review and commit them.")
            mismatches = [o for o in outputs if not o.unverified]
        else:
            mismatches = compare(expectations, edition, outputs, run)
            for mismatch in mismatches:
                _fail(app, docname, mismatch.cell.line,
                      f"code cell {mismatch.cell.index} `{mismatch.cell.first_line}` "
                      f"({edition} edition, torch {release(torch_version)}) "
                      f"{mismatch.diff(path)}\n    {mismatch.fix(path)}",
                      fixed_by=None if mismatch.varies else ACCEPT_COMMAND)
        failed = (f" ({len(mismatches)} failed, above)" if expectations is not None
                  else " (none expected yet, above)") if mismatches else ""
        counted, left = compared_account(outputs, mismatches, patterns_alone(expectations, edition))
        # Not fatal: this torch verified them; another torch's outputs are judged by them.
        old = edited_since(notebook, expectations.reads) if expectations else ()
        summary.append(f"{Path(env.doc2path(docname)).name} ({edition}): {counted} against "
                       f"{verified_against(torch_version, notebook)}{failed}{left}" + (
                           f"; {path} holds old hashes of {', '.join(old)} (files its cells read):"
                           f" `{ACCEPT_COMMAND}` writes them" if old else ""))
        summary += states[docname].not_verified
    # A chapter myst-nb's settings keep from running (conf.py's nb_execution_excludepatterns)
    # shows its code alone: said, so it never passes for verified.
    summary += [f"{Path(env.doc2path(docname)).name} ({edition}): not run by this build "
                "(myst-nb's execution settings leave it out): its code cells are not verified"
                for docname, state in sorted(states.items())
                if docname in env.found_docs and state.outputs is None and not state.failed
                and state.notebook is not None and state.recorded_with is None
                and any(cell.cell_type == "code" for cell in state.notebook.cells)]
    summary.append(f"{len(chapters)} chapters compared in {time.perf_counter() - started:.3f} s")
    env.temp_data[_SUMMARY] = summary


def verified_against(torch: str, notebook: nbformat.NotebookNode | None) -> str:
    """What a chapter's outputs follow: this torch where its cells' text names it (a comment
    too; not a declared library's use of it), each declared package at its run's version;
    else Python."""
    named = [f"{name} {version}" for name, version in in_key(notebook, PACKAGE).items()]
    torch_used = notebook is None or any(re.search(r"\btorch", cell.source) for cell in
                                         notebook.cells if cell.cell_type == "code")
    return ", ".join([f"torch {release(torch)}"] * torch_used + named
                     or [f"Python {platform.python_version()}"])


def versions_not_recorded(notebook: nbformat.NotebookNode | None) -> str:
    """Another run's declared packages: its file holds no versions (of its key, a digest)."""
    names = ", ".join(in_key(notebook, PACKAGE))
    return f", with {names} at versions not recorded" if names else ""


def patterns_alone(expectations: Expectations | None, edition: str) -> set[str]:
    """The edition's entries marked ``(varies)`` that are marks alone (`<number>`): any output
    matches them (an empty one only an empty output)."""
    return {key for key in expectations.varying[edition] if (entry := expectations.by_edition[
        edition][key]).strip() and not MARK.sub("", entry).strip()} if expectations else set()


def compared_account(outputs: list[CellOutput], mismatches: list,
                     alone: set[str] = frozenset()) -> tuple[str, str]:
    """How many code cells were compared and matched, and what was not, with why (``; not
    …``): the build's summary line, the instructor page and `pytest book`'s skips."""
    failed = {getattr(mismatch, "cell", mismatch).key for mismatch in mismatches} | alone
    verified = [o for o in outputs if not o.unverified and o.key not in failed and o.compared]
    images = ", ".join(f"the {'widget' if shown.startswith('[widget]') else 'image'} "
                       f"`{shown[shown.index(' ') + 1:]}` of `{o.first_line}`"
                       + (f" (line {o.line})" if o.line else "") for o in outputs
                       if not o.unverified for shown in dict.fromkeys(BARE_REPR.findall(o.text)))
    patterns = ", ".join(f"`{o.first_line}` (line {o.line})" for o in outputs if o.key in alone)
    return (f"{len(verified)} of {len(outputs)} code cells verified",
            "".join(f"; not verified: `{o.first_line}` ({o.unverified})" for o in outputs
                    if o.unverified)
            + (images and "; not compared (its text is a repr, not what the page shows): "
               + images) + (patterns and "; not compared (its expected output is a pattern "
                            "alone, which any output matches): " + patterns))


def log_output_summary(app: Sphinx, *_) -> None:
    """``write-started`` (before the preview may stop a failed build)."""
    for line in app.env.temp_data.pop(_SUMMARY, []):
        logger.info("expected outputs: %s", line)


def _fail(app: Sphinx, docname: str, line: int | None, message: str,
          fixed_by: str | None = ACCEPT_COMMAND) -> None:
    report(message, (docname, line or None), "expected-outputs")
    if fixed_by is not None:
        ask_for(app.env, fixed_by)
    app.statuscode = 1  # also without -W: an unexpected output is never a warning


def _reports(app: Sphinx) -> tuple[Path, Path]:
    """Where myst-nb writes a failed notebook's traceback (the published folder), and where
    it is kept (one per output folder: HTML and PDF clear none of the other's)."""
    out = Path(app.outdir)
    return report_folder(app), out.parent / "reports" / out.name


def clear_execution_reports(app: Sphinx) -> None:
    """``builder-inited``: no report outlives its failure (a failed chapter is read again)."""
    for folder in _reports(app):
        shutil.rmtree(folder, ignore_errors=True)


def keep_execution_reports(app: Sphinx, env) -> None:
    """``env-updated``: move the tracebacks out of the output folder, which is published."""
    written, kept = _reports(app)
    if written.is_dir():
        shutil.rmtree(kept, ignore_errors=True)
        kept.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(written, kept)


def fail_build_on_failed_chapters(app: Sphinx, exception: Exception | None) -> None:
    """``build-finished``: a failed chapter fails the build, also without -W."""
    if exception is None and any(c.failed for c in page_states(app.env).values()):
        app.statuscode = 1
