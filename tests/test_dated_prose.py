"""A printed book has no "now": its prose names no time relative to when it is read.

"today", "currently" or "a bug still open" is true on the day it was written and silently
false later, in a handout nobody reprints (issue 44). A fact that may change says when it
held ("reported in March 2025", "Colab's list of 2026-08-19") instead.
"""

from __future__ import annotations

import re
from pathlib import Path

from conftest import BOOK, EXHIBITS, ROOT, book_museum
from coursebook.audit.own_words import Passage, chapter_passages, exhibit_passages

# Words that date a sentence from the reader's side.
UNDATED_NOW = re.compile(
    r"\b(?:today|nowadays|currently|at present|at the moment|as of now|right now|these days"
    r"|still open|an open (?:bug|issue)|(?:is|are) (?:now|still) (?:open|unfixed|unresolved))\b",
    re.I)


def undated(passages) -> list[str]:
    """Each passage that speaks of "now", with the words that do."""
    found = []
    for passage in passages:
        text = " ".join(passage.shown)
        found += [f"{passage.where}: {match.group(0)!r}" for match in UNDATED_NOW.finditer(text)]
    return found


def book_passages(book: Path = BOOK, exhibits: Path = EXHIBITS) -> list[Passage]:
    pages = [p for page in sorted(book.glob("*.md")) for p in chapter_passages(page, ROOT)]
    return pages + list(exhibit_passages(book_museum(exhibits), ROOT))


def test_the_book_names_no_undated_now():
    assert undated(book_passages()) == []


def test_an_undated_now_is_found(tmp_path):
    """The check bites: each way of saying "now", planted in a page, is reported."""
    (tmp_path / "book").mkdir()
    plants = ["Colab today runs Python 3.13.", "The hang is an open bug.",
              "torch_xla currently pins libtpu 0.0.21.", "A bug still open makes it hang."]
    page = tmp_path / "book" / "page.md"
    page.write_text("# A page\n\n" + "\n\n".join(plants) + "\n", encoding="utf8")
    found = undated(chapter_passages(page, tmp_path))
    assert len(found) == len(plants), found
