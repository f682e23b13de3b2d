"""The museum in a chapter: each ``{museum-room} WING ROOM`` or ``{museum-introduction} WING``
marker replaced by its exhibits' cells, in the order a reader predicts (docs/authoring.md)."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass

import nbformat

from coursebook.claims.model import Claim
from coursebook.model.cell_notes import note, note_added_lines, noted
from coursebook.model.notebooks import (
    BOOK_ONLY_TAG,
    CLAIM_TAG,
    DOWNLOAD_ONLY_TAG,
    FRESH_PYTHON_TAG,
    RAISES_TAG,
    SECTION_LABEL,
    STAND_IN_ONLY_TAG,
    code_cell,
    markdown_cell,
    replace_markers,
)
from coursebook.model.versions import is_release
from coursebook.museum.model import CpuReproduction, ErrorRecord, Exhibit, ExhibitError, Wing

_MARKER = re.compile(r"^(`{3,}|:{3,})\{museum-(room|introduction)\}[ \t]+([^\n]+)\n\1[ \t]*$", re.M)


# A failing cell's error is behind a click (myst-nb's hide-output, worded per cell).
REVEAL_TAG = "hide-output"
_REVEAL_PROMPTS = {"code_prompt_show": "Show the error", "code_prompt_hide": "Hide the error"}
_PROMPT = "What goes wrong, and why?"
_FRESH_RUNTIME = "**The fix, in a fresh runtime.**"
# The summary of the download's collapsed block that holds an exhibit's error.
ERROR_SUMMARY = "The error, to compare with your prediction"
# The answer to the prompt's "why", collapsed after the error: on a page it takes in the rest
# of the exhibit, the fix's cells too (museum.render.fold_reveals finds it by its class).
REVEAL = "The cause and the fix"
REVEAL_CLASS = "exhibit-reveal"
_REVEAL_FENCE = "`````"  # longer than the error notes' it may take in (fold_into_reveal)


def _revealed(cell: nbformat.NotebookNode) -> nbformat.NotebookNode:
    cell.metadata["tags"] = [*cell.metadata.get("tags", []), REVEAL_TAG]
    cell.metadata["mystnb"] = dict(_REVEAL_PROMPTS)
    return cell


def _instructor_only(text: str) -> str:
    """Provenance: student pages speak only of the subject."""
    return f"\n\n:::{{only}} instructor\n*{text}*\n:::"


def _captured(exhibit: Exhibit) -> str:
    museum = exhibit.museum_record
    return f"Captured on a {museum.where}, {museum.date}."


def _cited(claims: tuple[Claim, ...]) -> str:
    """The cited claims' sources, as unseen comments."""
    return "".join(f"\n% source: {claim.source}" for claim in claims if claim.source)


def _claim_cells(claims: tuple[Claim, ...], captured: bool = False) -> list[nbformat.NotebookNode]:
    """A hidden cell per checked claim; a captured exhibit's on the stand-in, in a new Python."""
    tags = (STAND_IN_ONLY_TAG, FRESH_PYTHON_TAG) if captured else ()
    return [code_cell(f"# claim: {claim.says}\n"
                      + (_fresh_python_call(claim.check) if captured else claim.check),
                      CLAIM_TAG, *tags) for claim in claims if claim.check]


def claim_sources(museum: dict[str, Wing]) -> dict[str, Claim]:
    owners = [*museum.values(), *(e for wing in museum.values() for e in wing.exhibits)]
    return {cell.source.strip(): claim for owner in owners for claim in owner.claims
            for cell in _claim_cells((claim,), not getattr(owner, "runs_in_every_build", True))}


def _cause(exhibit: Exhibit, fix: str = "") -> str:
    """*The cause* (and ``fix``), collapsed: read after the prediction."""
    links = ", ".join(f"{{ref}}`{label}`" for label in exhibit.taught_in)
    see_also = f"\n\n*Taught in:* {links}." if links else ""
    cause = f"**The cause.** {exhibit.lesson}{_cited(exhibit.claims)}{see_also}"
    return (f"{_REVEAL_FENCE}{{dropdown}} {REVEAL}\n:class-container: {REVEAL_CLASS}\n"
            + "\n\n".join(filter(None, (cause, fix))) + f"\n{_REVEAL_FENCE}")


def fold_into_reveal(last: nbformat.NotebookNode, cell: nbformat.NotebookNode) -> str | None:
    """For a download, whose cells cannot fold: ``last``'s text with ``cell``'s inside its
    reveal, where ``last`` ends in an exhibit's and ``cell`` is markdown of that exhibit."""
    end = f"\n{_REVEAL_FENCE}"
    if (cell.cell_type == last.cell_type == "markdown" and last.source.endswith(end)
            and REVEAL_CLASS in last.source and not SECTION_LABEL.search(cell.source)):
        return f"{last.source[:-len(end)]}\n\n{cell.source}{end}"
    return None


def readers_records(exhibit: Exhibit, expected: ErrorRecord | None
                    ) -> list[tuple[str, ErrorRecord]]:
    """Readers' runtimes' records whose text differs from ``expected``, with their labels."""
    return [(label, record) for label, record in exhibit.reader_records
            if expected is None
            or (record.type, record.message) != (expected.type, expected.message)]


def _check_cell(exhibit: Exhibit, expected: ErrorRecord | None,
                *tags: str) -> nbformat.NotebookNode:
    """A hidden cell comparing the error above with ``expected`` (downloads: the note below)."""
    elsewhere = tuple({"label": label, **asdict(record)}
                      for label, record in readers_records(exhibit, expected))
    at = f"records[{exhibit.records.index(expected)}].message" if expected else "records"
    return _runs(exhibit, "records", code_cell(
        f"from coursebook.exhibit_checks import check_raised\n"
        f"check_raised({exhibit.key!r},\n"
        f"             expected={asdict(expected) if expected else None!r},\n"
        f"             museum={asdict(exhibit.museum_record)!r}"
        + (f",\n             elsewhere={elsewhere!r})" if elsewhere else ")"),
        "remove-input", BOOK_ONLY_TAG, *tags), at, check="same error as recorded")


def _expected_error_note(exhibit: Exhibit, expected: ErrorRecord | None,
                         reproduced: bool = False) -> nbformat.NotebookNode:
    """For downloads: the expected error, collapsed, with who printed it and other runtimes'
    wordings (``reproduced``, a rerun whose note names its packages: the error alone)."""
    record, museum = expected or exhibit.museum_record, exhibit.museum_record
    body = f"```text\n{record.type}: {record.message}\n```"
    if not reproduced:
        if record.source != "museum":  # not "the code above": a .md download has it last
            who = (f"With torch {record.torch}, the exhibit's code raises this error, and its "
                   "cell prints it:")
        else:  # where the museum met it is provenance, the instructor's to read
            who = (f"When the museum met this error"
                   f"{f' on torch {record.torch}' if is_release(record.torch) else ''}, it read:")
        texts = [(who, record)] + [(f"On {label} it reads:", other)
                                   for label, other in readers_records(exhibit, record)]
        if (museum.type, museum.message) not in {(r.type, r.message) for _, r in texts}:
            texts.append((f"When the museum met it, on torch {museum.torch}, it read:", museum))
        body = "\n".join([line for intro, r in texts for line in (
            intro, "", "```text", f"{r.type}: {r.message}", "```", "")] + [
            "Another torch version may word it differently; the type and the cause should match."])
    return markdown_cell(f"````{{dropdown}} {ERROR_SUMMARY}\n{body}\n````", "remove-cell",
                         DOWNLOAD_ONLY_TAG)


def _fix_ran_cell(*tags: str) -> nbformat.NotebookNode:
    cell = code_cell("from coursebook.exhibit_checks import fix_ran\nfix_ran()", "remove-input",
                     BOOK_ONLY_TAG, *tags)
    note(cell, check="fix ran")
    return cell


def _fix_run(exhibit: Exhibit, field: str, code: str, fresh: bool, *tags: str,
             side: CpuReproduction | None = None) -> list[nbformat.NotebookNode]:
    """A fix run in a new Python (``fresh``: alone, else after the code that failed), checked."""
    return [_runs(exhibit, field, _in_fresh_python(code, *tags, side=side)),
            _fix_ran_cell(FRESH_PYTHON_TAG, *tags),
            _on_a_cpu("the fix runs without an error" + (
                "" if fresh else " after the code that failed, in the same runtime"), side)]


def exhibit_cells(exhibit: Exhibit, total: int, torch_version: str) -> list[nbformat.NotebookNode]:
    """Its code, error, cause and fix, each checked where this build runs it (a TPU exhibit:
    the museum's capture, and reruns and CPU reproductions where its file has them)."""
    captured = not exhibit.runs_in_every_build
    title = f"({exhibit.label})=\n## {exhibit.number:02d}/{total:02d} · {exhibit.title}"
    cells = (_captured_cells(exhibit, title) if captured
             else _run_cells(exhibit, title, torch_version))
    if old := exhibit.museum_fix:
        cells.append(markdown_cell(
            f"**The museum's fix.** {old.note}\n\n```python\n{old.code}\n```\n\n"
            f"{old.changed}{_instructor_only(_captured(exhibit))}"))
    return cells + _claim_cells(exhibit.claims, captured)


def _run_cells(exhibit: Exhibit, title: str, torch_version: str) -> list[nbformat.NotebookNode]:
    record = exhibit.record_for(torch_version)
    if exhibit.fix_in_fresh_runtime:
        fix = f"{_FRESH_RUNTIME} {exhibit.fix_note}\n\n{_shown_code(exhibit.fix_code)}"
        fix_cells = _fix_run(exhibit, "fix_code", exhibit.fix_code, True)
    else:
        fix = f"**The fix.** {exhibit.fix_note}"
        fix_cells = [_runs(exhibit, "fix_code", code_cell(exhibit.fix_code)), _fix_ran_cell()]
    return [markdown_cell(f"{title}\n\n**The code.** {_PROMPT}"),
            _runs(exhibit, "failing_code", _revealed(code_cell(exhibit.failing_code, RAISES_TAG))),
            _check_cell(exhibit, record),
            _expected_error_note(exhibit, record),
            markdown_cell(_cause(exhibit, fix)),
            *fix_cells]


def in_one_process(cells: list[tuple[str, bool]]) -> str:
    """A program running ``cells`` (code, raises on purpose) in one namespace, as a notebook
    does: an expected error is caught and the cells after it run on."""
    lines = ["# The cells in the page's order, in one process, as a notebook runs them.",
             "cells = {'__name__': '__main__'}  # the variables they share"]
    for code, raises in cells:
        run = f'exec(r"""\n{code}\n""", cells)'
        lines += ["try:  # the failing code: its error is the lesson", "    " + run,
                  "except Exception:", "    pass", "else:",
                  "    raise RuntimeError('the failing code ran without an error')"
                  ] if raises else [run]
    return "\n".join(lines)


def _in_fresh_python(code: str, *tags: str,
                     side: CpuReproduction | None = None) -> nbformat.NotebookNode:
    """A hidden, book-only cell running ``code`` in a new Python, ``side``'s packages first."""
    return code_cell(_fresh_python_call(code, side), "remove-input", BOOK_ONLY_TAG,
                     FRESH_PYTHON_TAG, *tags)


def _fresh_python_call(code: str, side: CpuReproduction | None = None) -> str:
    named = f", side_environment={side.side_environment!r}" if side and side.side_environment \
        else ""
    return ("from coursebook.exhibit_checks import run_in_fresh_python\n"
            f"run_in_fresh_python(r'''\n{code}\n'''{named})")


def _on_a_cpu(does: str, side: CpuReproduction | None = None) -> nbformat.NotebookNode:
    """For downloads, in place of a fresh-Python cell: what its code ``does`` on a CPU."""
    needs = (f" with {', '.join(f'`{p}`' for p in side.side_packages)} installed"
             if side is not None and side.side_environment else "")
    return markdown_cell(f"*Run in a new runtime on a CPU{needs}, {does}.*", "remove-cell",
                         DOWNLOAD_ONLY_TAG)


def _shown_code(code: str, where: str = "In a fresh Python process") -> str:
    return f"{where}:\n\n```python\n{code}\n```"


def _captured_cells(exhibit: Exhibit, title: str) -> list[nbformat.NotebookNode]:
    museum, rerun, cpu = exhibit.museum_record, exhibit.museum_rerun, exhibit.cpu
    only = (STAND_IN_ONLY_TAG,) if rerun is not None and rerun.stand_in_only else ()
    run = "; the code is run again after the cause" if rerun else ""
    cells = [markdown_cell(
        f"{title}\n\n**The code**, as the museum ran it. {_PROMPT}\n\n"
        f"```python\n{exhibit.failing_code}\n```\n\n"
        f"::::{{dropdown}} {_REVEAL_PROMPTS['code_prompt_show']}\n"
        f":::{{admonition}} The museum's record\n:class: captured-record\n"
        f"The museum's text, verbatim{run}:\n\n```text\n{museum.type}: {museum.message}\n```"
        f"\n:::\n::::{_instructor_only(_captured(exhibit))}\n\n{_cause(exhibit)}")]

    def raised(field: str, shown: str, code: str, *tags: str, side=None) -> list:
        """The failing code run again in a new Python, its error checked."""
        return [markdown_cell(shown),
                _runs(exhibit, field, _revealed(_in_fresh_python(code, RAISES_TAG, *tags,
                                                                 side=side))),
                _check_cell(exhibit, museum, FRESH_PYTHON_TAG, *tags),
                _on_a_cpu("the code above raises the error below", side),
                _expected_error_note(exhibit, museum, reproduced=True)]

    if rerun is not None:
        where = "In a fresh Python process, this set-up, then the museum's code above"
        cells += raised("museum_rerun.setup", f"**The museum's code, run again.** {rerun.note}"
                        f"\n\n{_shown_code(rerun.setup, where)}",
                        f"{rerun.setup}\n\n{exhibit.failing_code}", *only)
    # A CPU reproduction is the stand-in's to run: an accelerator machine leaves it out.
    if cpu is not None and cpu.reproduction:
        cells += raised("cpu.reproduction", f"**Reproduced on CPU.** {cpu.note}\n\n"
                        f"{_shown_code(cpu.reproduction)}", cpu.reproduction, STAND_IN_ONLY_TAG,
                        side=cpu)
    provenance = (f"The museum's fix. {_captured(exhibit)} It ran without error on the same "
                  "hardware."
                  if exhibit.museum_fix is None else
                  "The book's fix, for the releases this chapter installs; the museum's own "
                  "follows. Not run on a TPU by this book.")
    fix = _FRESH_RUNTIME if exhibit.fix_in_fresh_runtime else "**The fix.**"
    cells.append(markdown_cell(f"{fix} {exhibit.fix_note}\n\n```python\n{exhibit.fix_code}\n```"
                               f"{_instructor_only(provenance)}"))
    if rerun is not None:
        fresh = exhibit.fix_in_fresh_runtime
        after = ("in a new Python process, one that never ran the code above." if fresh else
                 "where the museum's code left the process: its set-up, the museum's code (its "
                 "error expected), then the fix, in one process.")
        code = exhibit.fix_code if fresh else in_one_process(
            [(rerun.setup, False), (exhibit.failing_code, True), (exhibit.fix_code, False)])
        # The fix may print nothing: only the instructor's page heads its cell.
        cells += [markdown_cell(_instructor_only(f"The fix, run again {after}").strip()),
                  *_fix_run(exhibit, "fix_code", code, fresh, *(() if fresh else only))]
    if cpu is not None and cpu.reproduction and cpu.fix:
        fresh = cpu.fix_in_fresh_runtime  # alone in a fresh runtime, or after the reproduction
        where = ("In a fresh Python process, without the older packages" if fresh
                 else "In the reproduction's process, after it")
        code, side = (cpu.fix, None) if fresh else (
            in_one_process([(cpu.reproduction, True), (cpu.fix, False)]), cpu)
        cells += [markdown_cell(f"**The fix on CPU.** {cpu.fix_note}\n\n"
                                f"{_shown_code(cpu.fix, where)}"),
                  *_fix_run(exhibit, "cpu.fix", code, fresh, STAND_IN_ONLY_TAG, side=side)]
    elif cpu is not None and not cpu.reproduction:
        cells.append(markdown_cell(f"*{cpu.note}*"))
    return cells


@dataclass(frozen=True)
class CellOrigin:
    exhibit: Exhibit
    field: str
    line: int


def _runs(exhibit: Exhibit, field: str, cell: nbformat.NotebookNode, at: str = "",
          **check: str) -> nbformat.NotebookNode:
    """``cell``, noted with the exhibit's ``field`` it runs (``at``: where) and any ``check``."""
    note(cell, exhibit=[exhibit.key, field, at or field], **check)
    return cell


def origin_of(cell, museum: dict[str, Wing]) -> CellOrigin | None:
    """The exhibit field a code cell the museum added runs, from its note (None: not one)."""
    if not noted(cell, "exhibit"):
        return None
    key, field, at = noted(cell, "exhibit")
    wing, number = key.split("/")
    exhibit = museum[wing].exhibits[int(number) - 1]  # numbered 1..n (load_museum)
    return CellOrigin(exhibit, field, exhibit.file.line(at))


def check_cells(museum: dict[str, Wing]) -> set[str]:
    """The sources of the book's own check cells (verdicts, not torch's output)."""
    return {_fix_ran_cell().source, *(_check_cell(exhibit, record).source
                                      for wing in museum.values() for exhibit in wing.exhibits
                                      for record in exhibit.records)}


def cell_origins(museum: dict[str, Wing], torch_version: str) -> dict[str, CellOrigin]:
    """What each code cell the museum adds runs, by source: for a download's run (no notes)."""
    cells = [cell for wing in museum.values() for exhibit in wing.exhibits
             for cell in exhibit_cells(exhibit, 0, torch_version)]
    return {cell.source: origin for cell in cells if (origin := origin_of(cell, museum))}


def _marker_cells(kind: str, arguments: list[str], museum: dict[str, Wing],
                  torch_version: str) -> list[nbformat.NotebookNode]:
    if len(arguments) != (2 if kind == "room" else 1):
        usage = "{museum-room} WING ROOM" if kind == "room" else "{museum-introduction} WING"
        raise ExhibitError(f"a museum marker reads `{usage}`, got {arguments}")
    if arguments[0] not in museum:
        raise ExhibitError(f"no wing '{arguments[0]}' under exhibits/ (have {sorted(museum)})")
    wing = museum[arguments[0]]
    if kind == "introduction":
        return [markdown_cell(f"*{wing.tagline}*\n\n{wing.introduction}{_cited(wing.claims)}"),
                *_claim_cells(wing.claims)]
    exhibits = [exhibit for exhibit in wing.exhibits if exhibit.room == arguments[1]]
    if not exhibits:
        raise ExhibitError(f"wing '{wing.name}' has no exhibit in room '{arguments[1]}'")
    # The room's index: cards on a page, a plain list in print.
    total = len(wing.exhibits)
    cards = [f":::{{grid-item-card}} {e.number:02d}/{total:02d}\n:link: {e.label}\n"
             f":link-type: ref\n\n{e.title}\n:::" for e in exhibits]
    listing = "\n".join(f"- {{ref}}`{e.label}`" for e in exhibits)
    return [markdown_cell("`````{only} html\n::::{grid} 1 2 2 3\n:gutter: 2\n\n"
                          + "\n\n".join(cards) + "\n::::\n`````\n\n`````{only} latex\n"
                          + listing + "\n`````"),
            *(cell for e in exhibits for cell in exhibit_cells(e, total, torch_version))]


def place_museum(notebook: nbformat.NotebookNode, museum: dict[str, Wing],
                 torch_version: str) -> None:
    replace_markers(notebook, _MARKER, lambda marker: _marker_cells(
        marker.group(2), marker.group(3).split(), museum, torch_version))
    # Exhibits are independent: the run goes on past a broken one, so one build names each.
    if any(noted(cell, "exhibit") for cell in notebook.cells):
        notebook.metadata.setdefault("mystnb", {})["execution_allow_errors"] = True


def link_back_to_exhibits(notebook: nbformat.NotebookNode, museum: dict[str, Wing]) -> None:
    """After each section an exhibit's ``taught_in`` names, a link to the exhibit."""
    by_label: dict[str, list[Exhibit]] = {}
    for exhibit in (exhibit for wing in museum.values() for exhibit in wing.exhibits):
        for label in exhibit.taught_in:
            by_label.setdefault(label, []).append(exhibit)
    for cell in (cell for cell in notebook.cells if cell.cell_type == "markdown"):
        parts, end = [], 0
        for section in SECTION_LABEL.finditer(cell.source):
            if linked := by_label.get(section["label"]):
                links = "; ".join(f"{{ref}}`{e.label}`" for e in linked)
                parts += [cell.source[end:section.end()], "\n\n:::{seealso}\n"
                          f"In the error museum: {links}.\n:::"]
                end = section.end()
                # Its 4 lines are the book's; the lines below it are the author's.
                note_added_lines(cell, "".join(parts).count("\n") - 3, 4)
        cell.source = "".join(parts) + cell.source[end:]
