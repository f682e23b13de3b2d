"""A student notebook's answer-check tables hold only a digest, a tolerance, a scrambled
hint and the question, and no hint or question spells the answer."""

from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat

from coursebook.answer_checks.model import AnswerCheck
from coursebook.model.faults import BookError
from coursebook.self_check import unscramble

ENTRY_FIELDS = {"digest", "numbers", "tolerance", "hint", "ask", "inputs"}
_TABLE = re.compile(r"^CHECKS: dict\[str, dict\] = (\{.*?^\})$", re.S | re.M)
_DIGEST = re.compile(r"[0-9a-f]{64}")


def answer_texts(answer) -> list[str]:
    """How a hint could spell an answer, lower-cased (not a bool: "true or false?")."""
    if isinstance(answer, bool):
        return []
    forms = ({" ".join(answer.split())} if isinstance(answer, str)
             else {json.dumps(answer), str(answer), str(tuple(answer)) if isinstance(answer, list)
                   else str(answer)})
    return sorted(form.lower() for form in forms if len(form) >= 2 or form.isdigit())


def check_tables(notebook: nbformat.NotebookNode) -> list[dict]:
    return [json.loads(match[1]) for cell in notebook.cells
            if cell.cell_type == "code" and (match := _TABLE.search(cell.source))]


def _spells(shown: str, text: str) -> bool:
    """Whether ``shown`` holds ``text`` as a whole word or number (1 is not in "x[21]", "2.1")."""
    before = r"(?<!\w)(?<!\d\.)" if re.match(r"\w", text) else ""
    after = r"(?!\w)(?!\.\d)" if re.search(r"\w$", text) else ""
    return re.search(before + re.escape(text) + after, shown) is not None


def table_leaks(path: Path, table: dict, checks: dict[str, AnswerCheck]) -> list[BookError]:
    leaks = []
    for name, entry in table.items():
        extra = sorted(set(entry) - ENTRY_FIELDS)
        if extra:
            leaks.append(BookError(f"check '{name}': holds {', '.join(extra)}: only "
                                   f"{', '.join(sorted(ENTRY_FIELDS))} belong in a check", path))
        if not _DIGEST.fullmatch(str(entry.get("digest", ""))):
            leaks.append(BookError(f"check '{name}': its digest is not a sha256 digest", path))
        check = checks.get(str(entry.get("digest")))
        try:  # a hint is shown after a wrong try: unscrambled, it must not spell the answer
            hint = unscramble(name, str(entry.get("hint", "")))
        except ValueError:  # not base64, or not text: a hint left readable in the notebook
            leaks.append(BookError(f"check '{name}': its hint is not scrambled", path))
            hint = str(entry.get("hint", ""))
        shown = f"{hint} {entry.get('ask', '')}".lower()
        for text in answer_texts(check.answer) if check else []:
            if _spells(" ".join(shown.split()), text):
                leaks.append(BookError(f"check '{name}': its hint or question spells the "
                                       f"answer ({text!r}): reword it in the chapter", path))
    return leaks


def notebook_leaks(path: Path, checks: dict[str, AnswerCheck]) -> list[BookError]:
    """``checks``: the book's, by the digest a student table holds."""
    try:
        notebook = nbformat.read(path, as_version=4)
    except Exception:  # noqa: BLE001 - not a notebook: the text audit reads it
        return []
    return [leak for table in check_tables(notebook) for leak in table_leaks(path, table, checks)]
