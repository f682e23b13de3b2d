"""Each claim holds on this build's torch, its sentence and check as accepted in
``book/expected/claims/<chapter>.txt``, or the build stops at its sentence."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path

import nbformat
from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util import logging

from coursebook.claims.model import Claim
from coursebook.config import book_config
from coursebook.model.faults import shown_path
from coursebook.model.notebooks import first_line, short_digest
from coursebook.model.versions import release
from coursebook.page_state import PREPARED, mark_failed, page_state_of, page_states
from coursebook.prepare.chapters import PreparedChapter, edition_of
from coursebook.reporting import ask_for, report
from coursebook.verify.chapter_checks import executed_notebook
from coursebook.verify.expectations import (
    ACCEPT_COMMAND,
    INDENT,
    Expectations,
    ExpectationsError,
    read_expectations,
    write_expectations,
)

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ClaimProblem:
    claim: Claim
    message: str


def claim_problems(claims: list[tuple[Claim, nbformat.NotebookNode]],
                   where: str) -> list[ClaimProblem]:
    """What is wrong with each claim, given its check's cell as run (``where``: "on torch
    2.13.0")."""
    problems = []
    for claim, cell in claims:
        said = f'the claim "{claim.says}"'
        if not claim.sentence:
            problems.append(ClaimProblem(claim, (
                f"{said} is not in the prose above its check (since the previous code cell): "
                "quote a fragment of the sentence it checks, verbatim")))
            continue
        outputs = cell.get("outputs", [])
        error = next((o for o in outputs if o.get("output_type") == "error"), None)
        if error is not None:
            problems.append(ClaimProblem(claim, (
                f"{said} no longer holds {where}: {error.get('ename')}: "
                f"{first_line(str(error.get('evalue', '')))}\n    Correct the sentence "
                "and its check, or the check if the sentence still holds.")))
        elif outputs:
            shown = next((o.get("text") or str(o.get("data", {}).get("text/plain", ""))
                          for o in outputs), "")
            problems.append(ClaimProblem(claim, (
                f"the check of {said} printed `{first_line(shown)}`: a claim's check prints "
                "nothing (its asserts are the check)")))
    return problems


# --- Accepted claims: each sentence bound to its check --------------------------------

CLAIMS_FOLDER = "claims"  # under the expected outputs' folder


def claim_entry(claim: Claim) -> str:  # its sentence above its check
    check = claim.check if claim.check.lstrip().startswith("#") else (
        f"# claim: {claim.says}\n{claim.check}")
    return "\n".join([f"sentence: {claim.sentence}", "check:",
                      *(f"{INDENT}{line}" if line.strip() else "" for line in check.splitlines())])


def claim_digest(claim: Claim) -> str:
    return short_digest(claim_entry(claim), 12)


def write_accepted_claims(path: Path, chapter: str, edition: str, claims: list[Claim]) -> bool:
    """This edition's claims accepted; False when the file stays as it was."""
    if not (claims or path.is_file()):  # a chapter that makes no claim has no file
        return False
    accepted = read_expectations(path, "claim") or Expectations()
    accepted.by_edition[edition] = {claim_digest(claim): claim_entry(claim) for claim in claims}
    return write_expectations(
        path, accepted, lambda: [*accepted.first_lines, *accepted.by_edition[edition]],
        [f"# The checked claims of {chapter}: each sentence above the check that holds it.",
         f"# Written by `{ACCEPT_COMMAND}`: a sentence or a check not as accepted here stops "
         "the build. Review the diff before committing."], "claim")


def unaccepted_claims(accepted: Expectations | None, edition: str,
                      claims: list[Claim], path: Path) -> list[ClaimProblem]:
    """Each claim not as accepted (beside the accepted entry quoting the same fragment),
    each accepted claim of this edition no longer made."""
    if accepted is None:
        return [ClaimProblem(claim, f"{len(claims)} checked claim(s) and no accepted claims in "
                             f"{path}: accept them with `{ACCEPT_COMMAND}`, review each "
                             "sentence beside its check, and commit the file")
                for claim in claims[:1]]
    ours = accepted.by_edition[edition]  # each accepted entry by its claim's digest
    seen = {claim_digest(claim) for claim in claims}  # and each changed claim's accepted entry
    problems = []
    for claim in claims:
        if claim_digest(claim) in ours:
            continue
        entry = claim_entry(claim)
        before = next((e for d, e in ours.items() if d not in seen
                       and e.splitlines()[2:3] == entry.splitlines()[2:3]), None)
        seen |= {d for d, e in ours.items() if e == before}
        if before is None:
            shown = "\n".join(f"{INDENT}+ {line}" for line in entry.splitlines())
            what = "is new, not yet accepted"
        else:
            shown = "\n".join(f"{INDENT}{line}" for line in difflib.unified_diff(
                before.splitlines(), entry.splitlines(), f"accepted ({path})", "this build",
                n=len(entry.splitlines()), lineterm=""))  # the whole check beside the sentence
            what = "has a sentence or a check that is not as accepted"
        problems.append(ClaimProblem(claim, (
            f'the claim "{claim.says}" {what}: if the whole sentence still holds and the check '
            f"shows it, accept it with `{ACCEPT_COMMAND}` and review the diff of {path}:\n"
            + shown)))
    gone = [e for d, e in ours.items() if d not in seen]
    if gone:
        said = "; ".join(e.splitlines()[0].removeprefix("sentence: ")[:80] for e in gone)
        problems.append(ClaimProblem(Claim("", 0), (
            f"{len(gone)} accepted claim(s) of {path} no longer made ({said}): if that is "
            f"right, accept with `{ACCEPT_COMMAND}` and review the diff")))
    return problems


def check_claims(app: Sphinx, doctree: nodes.document) -> None:
    """``doctree-read``: each claim of the chapter against the run of its check."""
    env = app.env
    prepared: PreparedChapter | None = env.temp_data.get(PREPARED)
    if prepared is None:
        return
    for line, comment in prepared.claims.unsourced:
        report(f"`{comment}` is not a citation the build reads: cite the claim above it as "
               "`% source: https://...`", (env.docname, line or None), "claim")
    executed = executed_notebook(app, prepared)
    if executed is None:  # not run: the execution checks report why
        problems = []
    else:
        cells = [(c.claim, executed.cells[c.index]) for c in prepared.claims.checked]
        ran = [(claim, cell) for claim, cell in cells if prepared.recorded is not None
               or cell.get("execution_count") is not None or cell.get("outputs")]
        where = ("in its recording" if prepared.recorded is not None
                 else f"on torch {release(book_config(app.config).torch)}")
        problems = claim_problems(ran, where)
        page_state_of(env, env.docname).claims = (len(ran) - len(problems), prepared.claims.cited)
    accepted = _accepted_claims(app, prepared)
    if accepted:
        ask_for(env, ACCEPT_COMMAND)
    for problem in problems + accepted:
        claim = problem.claim  # an exhibit's: at its TOML file
        report(problem.message, f"{shown_path(claim.toml)}:{claim.line}" if claim.toml
               else (env.docname, claim.line or None), "claim")
    if problems or accepted or prepared.claims.unsourced:
        mark_failed(env, env.docname)


def _accepted_claims(app: Sphinx, prepared: PreparedChapter) -> list[ClaimProblem]:
    """This edition's claims against the accepted ones (or written, when accepting)."""
    config = book_config(app.config)
    if not (config.verify_outputs or config.accept_outputs):
        return []
    docname, edition = app.env.docname, edition_of(app).value
    path = Path(app.srcdir, config.expected_dir, CLAIMS_FOLDER, f"{docname}.txt")
    if path.is_file():  # an edit of it (a merge's) reads the chapter again
        app.env.note_dependency(str(path))
    path = shown_path(path)
    claims = [c.claim for c in prepared.claims.checked if c.claim.sentence]
    try:
        if config.accept_outputs:
            if write_accepted_claims(path, Path(app.env.doc2path(docname)).name, edition, claims):
                logger.info("wrote %s (%s edition)", path, edition)
            return []
        return unaccepted_claims(read_expectations(path, "claim"), edition, claims, path)
    except ExpectationsError as error:  # at the file's line; accepting cannot mend it
        return [ClaimProblem(Claim("", error.line, toml=str(path)), error.message)]


def log_claim_counts(app: Sphinx, *_) -> None:  # write-started (claims/__init__.py)
    env = app.env
    chapters = page_states(env)
    for docname in sorted(chapters):
        counts = chapters[docname].claims
        if counts is not None and docname in env.found_docs:
            logger.info("claims: %s: %d checked, %d cited", Path(env.doc2path(docname)).name,
                        *counts)
