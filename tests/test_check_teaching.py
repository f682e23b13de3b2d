"""A check asks only what the book taught before it: each names, in ``taught_in``, the
labelled sections that teach it, and each must come before the check, in its chapter or in
an earlier one of the reading order (coursebook.answer_checks.model.untaught_checks)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import BOOK, CHAPTER_TOP, sphinx_build
from coursebook.answer_checks.model import (
    AnswerCheck,
    AnswerCheckError,
    ChapterTeaching,
    chapter_teaching,
    untaught_checks,
)
from coursebook.answer_checks.prepare import SETUP_TAG
from coursebook.model.cell_notes import source_line
from coursebook.model.notebooks import (
    is_answer,
    is_chapter_source,
    is_claim,
    labelled_sections,
    read_chapter,
)
from coursebook.prepare.editions import Edition, edition_notebook

CHAPTER = CHAPTER_TOP.format(extra="") + """
(tiny-sums)=
# Sums

Adding two numbers.

```{code-cell} ipython3
total = 2 + 3
```

```{code-cell} ipython3
---
tags: [answer]
checks:
- name: tiny-total
  ask: the total
  value: total
  answer: 5
  accept: ["5.0"]
  refuse: ["6"]
  hint: add them.
  taught_in: [tiny-sums]
---
total
```

(tiny-products)=
## Products

Multiplying them.
"""


def _line_of(text: str, whole: str) -> int:
    return text.splitlines().index(whole) + 1


def _chapter(text: str = CHAPTER, path: str = "chapter.md", *taught_in: str) -> ChapterTeaching:
    """The chapter's sections, and its check (at its answer cell's line) naming ``taught_in``
    (made here, so that only what this file tests decides whether a check is well formed)."""
    check = AnswerCheck("tiny-total", "the total", "total", 5, "add them.", 1e-4, "total",
                        taught_in or ("tiny-sums",), _line_of(text, "total"))
    return ChapterTeaching(path, tuple(labelled_sections(read_chapter(text))), (check,))


def test_the_check_and_its_sections_are_read_at_their_lines():
    """What the build keeps of a chapter: its labelled sections and its checks, each at its
    line (the answer cell's, for a check)."""
    text = CHAPTER
    read = chapter_teaching(read_chapter(text), "chapter.md")
    assert [(s.label, s.title, s.line) for s in read.sections] == [
        ("tiny-sums", "Sums", _line_of(text, "# Sums")),
        ("tiny-products", "Products", _line_of(text, "## Products"))]
    [check] = read.checks
    assert (check.name, check.taught_in, check.line) == ("tiny-total", ("tiny-sums",),
                                                          _line_of(text, "total"))


def test_a_check_naming_a_section_above_it_passes():
    assert untaught_checks([_chapter()]) == []


@pytest.mark.parametrize("label, fault", [
    ("tiny-nowhere", "no section of this chapter or an earlier one has that label"),
    ("tiny-products",
     f"that is 'Products' at line {_line_of(CHAPTER, '## Products')}, after the check"),
])
def test_a_section_missing_or_after_the_check_is_one_error_at_the_check(label, fault):
    [error] = untaught_checks([_chapter(CHAPTER, "book/chapter.md", "tiny-sums", label)])
    # At the answer cell's line (its code's first line), with the check's name.
    assert str(error).startswith(
        f"book/chapter.md:{_line_of(CHAPTER, 'total')}: check 'tiny-total'")
    assert f"taught_in names '{label}', but {fault}" in str(error)
    assert "name the label `(label)=` above the heading of an earlier section" in str(error)
    assert "\n" not in str(error)


@pytest.mark.parametrize("entry, fault", [
    ("", "missing taught_in"),
    ("  taught_in: tiny-sums\n", "not a list of labels: taught_in"),
    ("  taught_in: []\n", "not a list of labels: taught_in"),
    ("  taught_in:\n", "not a list of labels: taught_in"),  # null: was a TypeError
])
def test_a_check_without_taught_in_is_refused(entry, fault):
    text = CHAPTER.replace("  taught_in: [tiny-sums]\n", entry)
    with pytest.raises(AnswerCheckError) as refused:
        chapter_teaching(read_chapter(text), "book/chapter.md")
    message = str(refused.value)
    assert message.startswith(f"book/chapter.md:{_line_of(text, 'total')}: ")
    assert "check 'tiny-total': " in message and fault in message
    assert "taught_in (the labels of the sections before it that teach what it asks)" in message


def test_an_earlier_chapter_teaches_and_a_later_one_does_not():
    first = _chapter(CHAPTER.replace("tiny-products", "first-products"), "first.md")
    later = _chapter(CHAPTER, "later.md", "first-products")
    assert untaught_checks([first, later]) == []
    [error] = untaught_checks([later, first])
    assert error.path == Path("later.md")
    assert ("'first-products', but that is 'Products' in first.md, a chapter after this one"
            in str(error))


def _wrong_try(text: str) -> tuple[str, str]:
    """The student notebook's table cell, and what a wrong value gets from its check."""
    import contextlib
    import io

    notebook = edition_notebook(read_chapter(text), Edition.STUDENT)
    [table] = [cell.source for cell in notebook.cells if SETUP_TAG in cell.metadata.get("tags", [])]
    namespace: dict = {}
    exec(table, namespace)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        namespace["check"]("tiny-total", 6)
    return table, printed.getvalue().strip()


def test_a_wrong_try_names_the_sections_to_revisit_after_its_hint():
    table, verdict = _wrong_try(CHAPTER.replace("taught_in: [tiny-sums]",
                                                "taught_in: [tiny-sums, tiny-intro]").replace(
        "Adding two numbers.", "(tiny-intro)=\n## Numbers in Python\n\nAdding two numbers."))
    assert verdict == ("tiny-total: not yet. Hint: add them. "
                       "Revisit: “Sums”, “Numbers in Python”.")
    assert "Revisit" not in table and "Numbers in Python" not in table  # not readable before


def test_a_section_of_an_earlier_chapter_is_not_named_to_the_student():
    """Its title is not known where the chapter is prepared; the build still checks it."""
    _, verdict = _wrong_try(CHAPTER.replace("taught_in: [tiny-sums]", "taught_in: [elsewhere]"))
    assert verdict == "tiny-total: not yet. Hint: add them."


def _reading_order() -> list[Path]:
    """The book's chapters in the order of index.md's toctree (what a build reads)."""
    [toctree] = re.findall(r"```\{toctree\}\n(.*?)```", (BOOK / "index.md").read_text(), re.S)
    names = [line.strip() for line in toctree.splitlines()
             if line.strip() and not line.startswith(":")]
    return [BOOK / f"{name}.md" for name in names
            if is_chapter_source((BOOK / f"{name}.md").read_text())]


def test_every_check_of_the_book_asks_what_an_earlier_section_taught():
    chapters = [chapter_teaching(read_chapter(path.read_text()), str(path))
                for path in _reading_order()]
    assert any(chapter.checks for chapter in chapters)
    assert all(check.taught_in for chapter in chapters for check in chapter.checks)
    assert untaught_checks(chapters) == []


@pytest.mark.slow
def test_a_build_stops_at_a_check_whose_section_is_missing_or_in_a_later_chapter(tiny_book,
                                                                                   tmp_path):
    """The build reads the reading order from the toctree and names each fault once, in one
    line at the check's answer cell."""
    chapter = tiny_book / "chapter.md"
    text = chapter.read_text().replace(
        "# A tiny chapter", "(tiny-start)=\n# A tiny chapter").replace(
        ":tags: [answer]\n", "---\ntags: [answer]\nchecks:\n"
        "- {name: tiny-later, ask: the value, value: tiny_answer_value, answer: 42, hint: add,"
        " accept: ['42.0'], refuse: ['41'],"
        " taught_in: [tiny-start, tiny-later-section]}\n"
        "- {name: tiny-nowhere, ask: the value, value: tiny_answer_value, answer: 42, hint: add,"
        " accept: ['42.0'], refuse: ['41'],"
        " taught_in: [tiny-no-such-section]}\n---\n", 1)
    chapter.write_text(text)
    top_matter = text[:text.index("(tiny-start)=")]
    (tiny_book / "later.md").write_text(f"{top_matter}(tiny-later-section)=\n# Later\n\nMore.\n")
    (tiny_book / "index.md").write_text("# Fixture\n\n```{toctree}\nchapter\nlater\n```\n")
    build = sphinx_build(tiny_book, tmp_path / "out", tmp_path / "cache")
    assert build.returncode != 0, build.log[-3000:]
    at = (f"chapter.md:{_line_of(text, 'tiny_answer_value = int(weights.sum().item()) * 21')}: "
          "ERROR: ")
    for message in ("check 'tiny-later' (answer cell "
                    "`tiny_answer_value = int(weights.sum().item()) * 21`): "
                    "taught_in names 'tiny-later-section', but that is 'Later' in ",
                    "check 'tiny-nowhere' (answer cell "
                    "`tiny_answer_value = int(weights.sum().item()) * 21`): "
                    "taught_in names 'tiny-no-such-section', but no section of this chapter "
                    "or an earlier one has that label: "):
        [line] = [line for line in build.log.splitlines() if message in line]
        assert at + message in line
    assert "tiny-start" not in build.log and "Traceback" not in build.log


# How a check reads a value out of the kernel (``a.detach()``), not what it asks a student.
_READING = {"detach", "item", "tolist", "clone", "cpu"}


def _methods_called(expression: str) -> set[str]:
    """The methods an expression calls: ``probabilities.argmax(dim=-1)`` calls ``argmax``."""
    import ast

    return {node.func.attr for node in ast.walk(ast.parse(expression, mode="eval"))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)} - _READING


def _section_texts(notebook) -> dict[str, str]:
    """Each labelled section's shown text (its markdown and its visible code, no claim or
    answer cell), up to the next labelled section."""
    sections = labelled_sections(notebook)
    ends = [section.line for section in sections[1:]] + [10**9]
    return {section.label: "\n".join(
        cell.source for cell in notebook.cells
        if section.line <= source_line(cell) < end and not is_claim(cell) and not is_answer(cell))
        for section, end in zip(sections, ends)}


def test_every_method_a_check_asks_for_is_shown_in_a_section_it_names():
    """A check whose value calls a method (the predicted class: ``.argmax``) names a section
    that shows it: issue 44 found pt01-challenge-3-classes asking for an argmax nothing taught."""
    missing = []
    for path in _reading_order():
        notebook = read_chapter(path.read_text())
        texts = _section_texts(notebook)
        for check in chapter_teaching(notebook, str(path)).checks:
            shown = "\n".join(texts.get(label, "") for label in check.taught_in)
            missing += [f"{check.name}: .{method}"
                        for method in sorted(_methods_called(check.value))
                        if f".{method}(" not in shown]
    assert missing == []
