"""Each claim still holds on this build's torch, or the build stops at its sentence.

A claim's cell ran with the chapter (:mod:`coursebook.prepare.claims`): it held when it
raised nothing and printed nothing. A failed assert is one error at the sentence's file
and line (an exhibit's: its TOML file and the ``says`` line), never a traceback; so is a
fragment that is in no sentence above its check, and a check that printed. Each chapter's
count of claims checked and cited is logged with the other per-chapter summaries.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import nbformat
from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util import logging

from coursebook.config import book_config
from coursebook.model.claims import Claim
from coursebook.model.faults import shown_path
from coursebook.model.versions import release
from coursebook.page_state import PREPARED, mark_failed, page_state_of, page_states
from coursebook.prepare.chapters import PreparedChapter
from coursebook.verify.chapter_checks import executed_notebook

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ClaimProblem:
    claim: Claim
    message: str


def _ran(cell) -> bool:
    return cell.get("execution_count") is not None or bool(cell.get("outputs"))


def _first_line(text: str) -> str:
    return (text.strip().splitlines() or [""])[0]


def claim_problems(claims: list[tuple[Claim, nbformat.NotebookNode]],
                   where: str) -> list[ClaimProblem]:
    """What is wrong with each claim, given the cell that checked it (as executed): a
    fragment in no sentence, an error (the claim no longer holds ``where``: "on torch
    2.13.0"), or something printed."""
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
                f"{_first_line(str(error.get('evalue', '')))}\n    Correct the sentence "
                "and its check, or the check if the sentence still holds.")))
        elif outputs:
            shown = next((o.get("text") or str(o.get("data", {}).get("text/plain", ""))
                          for o in outputs), "")
            problems.append(ClaimProblem(claim, (
                f"the check of {said} printed `{_first_line(shown)}`: a claim's check prints "
                "nothing (its asserts are the check)")))
    return problems


def _report(message: str, location) -> None:
    logger.error("%s", message, location=location, type="coursebook", subtype="claim")


def check_claims(app: Sphinx, doctree: nodes.document) -> None:
    """``doctree-read``: each claim of the chapter just read against the run of its check
    (this build's, from the cache, or its recording's); the counts kept for the summary."""
    env = app.env
    prepared: PreparedChapter | None = env.temp_data.get(PREPARED)
    if prepared is None:
        return
    for line, comment in prepared.claims.unsourced:
        _report(f"`{comment}` is not a citation the build reads: cite the claim above it "
                "as `% source: https://...`", (env.docname, line or None))
    executed = executed_notebook(app, prepared)
    if executed is None:  # not run: the execution checks report why
        problems = []
    else:
        ran = [(c.claim, executed.cells[c.index]) for c in prepared.claims.checked
               if _ran(executed.cells[c.index]) or prepared.recorded is not None]
        where = ("in its recording" if prepared.recorded is not None
                 else f"on torch {release(book_config(app.config).torch)}")
        problems = claim_problems(ran, where)
        page_state_of(env, env.docname).claims = (len(ran) - len(problems), prepared.claims.cited)
    for problem in problems:
        claim = problem.claim  # an exhibit's: at its TOML file
        _report(problem.message, f"{shown_path(claim.toml)}:{claim.line}" if claim.toml
                else (env.docname, claim.line or None))
    if problems or prepared.claims.unsourced:
        mark_failed(env, env.docname)


def log_claim_counts(app: Sphinx, *_) -> None:
    """``write-started``, every build, after the expected outputs' summary: per chapter,
    how many claims held and how many are cited."""
    env = app.env
    chapters = page_states(env)
    for docname in sorted(chapters):
        counts = chapters[docname].claims
        if counts is not None and docname in env.found_docs:
            logger.info("claims: %s: %d checked, %d cited", Path(env.doc2path(docname)).name,
                        *counts)
