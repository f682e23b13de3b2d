"""A check asks only what the book taught before it: each names, in ``taught_in``, the
labelled sections that teach it, and each must come before the check, in its chapter or in
an earlier one of the reading order (coursebook.model.answer_checks.untaught_checks)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import BOOK
from coursebook.model.answer_checks import AnswerCheckError, chapter_teaching, untaught_checks
from coursebook.model.notebooks import is_chapter_source, read_chapter

CHAPTER = """---
jupytext:
  text_representation:
    format_name: myst
kernelspec:
  name: python3
  display_name: Python 3
---

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
  hint: add them.
  taught_in: [tiny-sums]
---
total
```

(tiny-products)=
## Products

Multiplying them.
"""


def _teaching(text: str, path: str = "chapter.md"):
    return chapter_teaching(read_chapter(text), path)


def _line_of(text: str, whole: str) -> int:
    return text.splitlines().index(whole) + 1


def test_a_check_naming_a_section_above_it_passes():
    assert untaught_checks([_teaching(CHAPTER)]) == []


@pytest.mark.parametrize("label, fault", [
    ("tiny-nowhere", "no section of this chapter or an earlier one has that label"),
    ("tiny-products", f"that is 'Products' at line {_line_of(CHAPTER, '## Products')}, after the check"),
])
def test_a_section_missing_or_after_the_check_is_one_error_at_the_check(label, fault):
    text = CHAPTER.replace("taught_in: [tiny-sums]", f"taught_in: [tiny-sums, {label}]")
    [error] = untaught_checks([_teaching(text, "book/chapter.md")])
    # At the answer cell's line (its code's first line), with the check's name.
    assert str(error).startswith(f"book/chapter.md:{_line_of(text, 'total')}: check 'tiny-total'")
    assert f"taught_in names '{label}', but {fault}" in str(error)
    assert "name the label `(label)=` above the heading of an earlier section" in str(error)
    assert "\n" not in str(error)


@pytest.mark.parametrize("entry, fault", [
    ("", "missing taught_in"),
    ("  taught_in: tiny-sums\n", "not a list of labels: taught_in"),
    ("  taught_in: []\n", "not a list of labels: taught_in"),
])
def test_a_check_without_taught_in_is_refused(entry, fault):
    text = CHAPTER.replace("  taught_in: [tiny-sums]\n", entry)
    with pytest.raises(AnswerCheckError) as refused:
        _teaching(text, "book/chapter.md")
    message = str(refused.value)
    assert message.startswith(f"book/chapter.md:{_line_of(text, 'total')}: ")
    assert f"check 'tiny-total': {fault};" in message
    assert "taught_in (the labels of the sections before it that teach what it asks)" in message


def test_an_earlier_chapter_teaches_and_a_later_one_does_not():
    first = CHAPTER.replace("tiny-sums", "first-sums").replace("tiny-total", "first-total")
    first = first.replace("tiny-products", "first-products")
    later = CHAPTER.replace("taught_in: [tiny-sums]", "taught_in: [first-products]")
    assert untaught_checks([_teaching(first, "first.md"), _teaching(later, "later.md")]) == []
    [error] = untaught_checks([_teaching(later, "later.md"), _teaching(first, "first.md")])
    assert error.path == Path("later.md")
    assert "'first-products', but that is 'Products' in first.md, a chapter after this one" in str(error)


def _reading_order() -> list[Path]:
    """The book's chapters in the order of index.md's toctree (what a build reads)."""
    [toctree] = re.findall(r"```\{toctree\}\n(.*?)```", (BOOK / "index.md").read_text(), re.S)
    names = [line.strip() for line in toctree.splitlines() if line.strip() and not line.startswith(":")]
    return [BOOK / f"{name}.md" for name in names
            if is_chapter_source((BOOK / f"{name}.md").read_text())]


def test_every_check_of_the_book_asks_what_an_earlier_section_taught():
    chapters = [_teaching(path.read_text(), str(path)) for path in _reading_order()]
    assert any(chapter.checks for chapter in chapters)
    assert all(check.taught_in for chapter in chapters for check in chapter.checks)
    assert untaught_checks(chapters) == []
