"""Expected outputs, broken on purpose in a copy of the real book (its cache copied too),
or in the tiny book: every message at the author's line, every cell compared."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from conftest import BOOK, TORCH_VERSION, copy_of_built_cache, sphinx_build
from coursebook.model.versions import release

pytestmark = pytest.mark.slow

TORCH = "torch-" + release(TORCH_VERSION)
# PT01's first tensor: its last row changes, its cell's code does not.
DATA_ROW, CHANGED_ROW = "[2., 4.]])", "[2., 5.]])"


def _change_the_data(source: Path) -> str:
    """Change the first tensor's data in PT01; return the code line it changes."""
    chapter = source / "pt01.md"
    text = chapter.read_text()
    first = next(line for line in text.splitlines() if DATA_ROW in line)
    assert "X" in first, f"PT01's first tensor is no longer written with {DATA_ROW}"
    chapter.write_text(text.replace(first, first.replace(DATA_ROW, CHANGED_ROW), 1))
    return first


def test_an_edit_executes_only_its_chapter_and_a_data_change_stops_it_until_accepted(built,
                                                                                    tmp_path):
    """A copy of the real book and of the built books' warm cache: a build and a warm rebuild
    execute nothing, nor does a prose edit; a change of PT01's data executes PT01 alone and
    stops the build with a diff at each cell downstream until its outputs are accepted."""
    source = tmp_path / "book"
    shutil.copytree(BOOK, source)
    cache = copy_of_built_cache(built, tmp_path / "cache")
    first = sphinx_build(source, tmp_path / "a", cache)
    assert first.returncode == 0 and first.executed == 0, first.log[-3000:]
    warm = sphinx_build(source, tmp_path / "a", cache)
    assert warm.returncode == 0 and warm.executed == 0, warm.log[-3000:]
    chapter = source / "pt01.md"
    copied = tmp_path / "a" / "html" / "_sources" / "pt01.md"
    assert copied.read_text() != chapter.read_text()  # the student text, kept when not rewritten
    text = chapter.read_text()
    assert "## 1. Tensors\n" in text
    chapter.write_text(text.replace("## 1. Tensors\n", "## 1. Tensors\n\nA new sentence.\n", 1))
    edited = sphinx_build(source, tmp_path / "a", cache)
    assert edited.returncode == 0 and edited.executed == 0, edited.log[-3000:]
    assert "A new sentence." in (tmp_path / "a" / "html" / "pt01.html").read_text()
    # Sphinx copied the edited file when it wrote the page; the student text replaced it.
    assert "A new sentence." in copied.read_text() and copied.read_text() != chapter.read_text()

    _change_the_data(source)
    build = sphinx_build(source, tmp_path / "a", cache)
    assert build.returncode == 1, build.log[-3000:]
    assert build.executed == 1 and "pt01.md: Executing notebook" in build.log
    # Each cell downstream of the data reports its line, cell and edition.
    errors = re.findall(r"pt01\.md:\d+: ERROR: code cell \d+ `[^`]+` \(student edition, torch ",
                        build.log)
    assert len(errors) > 1, build.log[-3000:]
    assert "make accept-outputs" in build.log
    assert re.search(r"^\s+--- .*pt01\.txt", build.log, re.M)
    assert re.search(r"^\s+-\s", build.log, re.M) and re.search(r"^\s+\+\s", build.log, re.M)
    assert "Traceback" not in build.log

    # Accepting the new outputs (the run just cached) makes it green again.
    expected = source / "expected" / TORCH / "pt01.txt"
    before = expected.read_text()
    accepted = sphinx_build(source, tmp_path / "a", cache,
                            settings={"coursebook_accept_outputs": "1"})
    assert accepted.returncode == 0, accepted.log[-3000:]
    assert expected.read_text() != before
    again = sphinx_build(source, tmp_path / "a", cache)
    assert again.returncode == 0 and again.executed == 0, again.log[-3000:]
    # The other edition still has the old outputs on record: it stops until accepted too.
    instructor = sphinx_build(source, tmp_path / "inst", cache, "instructor")
    assert instructor.returncode == 1 and "(instructor edition, torch " in instructor.log


def test_a_missing_expectation_stops_the_build_with_the_command(tiny_book, tmp_path, cache_copy):
    (tiny_book / "expected" / TORCH / "chapter.txt").unlink()
    build = sphinx_build(tiny_book, tmp_path / "out", cache_copy)
    assert build.returncode == 1 and build.executed == 0, build.log[-3000:]
    message = [line for line in build.log.splitlines() if "no expected outputs" in line]
    assert len(message) == 1, build.log[-3000:]
    assert "chapter.md" in message[0] and "make accept-outputs" in message[0]
    assert "Traceback" not in build.log
    # UvA's lab, new: "0 of 60 code cells verified (60 failed, above)"; none was compared.
    summary = [line for line in build.log.splitlines() if "code cells verified" in line]
    assert len(summary) == 1 and "(none expected yet, above)" in summary[0], summary


# --- Exact lines, and a chapter compared whatever blank lines end its cells (tiny book) ---

ACCEPT = {"coursebook_accept_outputs": "1"}
# A cell with options whose code ends in two blank lines: Markdown -> notebook -> Markdown
# dropped a newline, the cache lookup missed and the chapter went uncompared.
BLANK_ENDED = ("\n```{code-cell} ipython3\n:tags: [hide-input]\n\n"
               "print('blank-ended', 6 * 7)\n\n\n```\n")


def _plant(chapter: Path, text: str) -> None:
    chapter.write_text(chapter.read_text(encoding="utf8") + text, encoding="utf8")


def _line(chapter: Path, text: str) -> int:
    """The line of the chapter that ``text`` begins (the test's own oracle)."""
    [line] = [n for n, found in enumerate(chapter.read_text().splitlines(), 1)
              if found.startswith(text)]
    return line


def test_sphinx_and_myst_messages_name_the_authors_line(tiny_book, tmp_path):
    chapter = tiny_book / "chapter.md"
    # Deep in the chapter, after an answer the student edition drops, a claim cell and a
    # cell with options (which the page Sphinx reads writes otherwise): an unknown role, a
    # reference to nothing, each at the author's line (they were 11 to 60 lines below).
    _plant(chapter, "\n+++ {\"tags\": [\"answer\"]}\n\nAn answer\n\nof three paragraphs\n\n"
           "the student never sees.\n\n+++\n\nTripling gives a gradient function.\n\n"
           "```{code-cell} ipython3\n---\ntags: [claim]\n---\n# claim: Tripling gives a "
           "gradient function\nassert True\n```\n" + BLANK_ENDED +
           "\nHere is {unknownrole}`deep`.\n\nAnd here {ref}`no-such-target` is.\n"
           # A claim cell the book splits in two, so the page's text runs 2 lines longer
           # than the author's from here: what Sphinx says after reading is mapped back.
           "\nTripling again gives a gradient function.\n\n```{code-cell} ipython3\n"
           ":tags: [claim]\n\n# claim: Tripling again\nassert True\n# claim: gives a "
           "gradient function\nassert True\n```\n\nLast, {ref}`no-other-target`.\n"
           # An image without alt text, to which MyST gives no line (`chapter.md::`)
           "\n![](figs/no-such-image.png)\n"
           # A link to an anchor no heading has, on a paragraph's third line: MyST gives it no
           # line, and the message named the paragraph's first (d8: "3 lines high")
           "\nA broken\nanchor, then\nsee [the part](#no-such-part) here.\n"
           # the same target twice in a paragraph, its words before both (hr3's H17)
           "\nSay other-part here,\nthen [one](#other-part),\nand [two](#other-part) again.\n")
    build = sphinx_build(tiny_book, tmp_path / "out", tmp_path / "cache", settings=ACCEPT)
    role, ref = _line(chapter, "Here is"), _line(chapter, "And here")
    assert re.search(rf"chapter\.md:{role}: WARNING: Unknown interpreted text role", build.log), \
        build.log[-3000:]
    assert re.search(rf"chapter\.md:{ref}: WARNING: undefined label: 'no-such-target'",
                     build.log), build.log[-3000:]
    last = _line(chapter, "Last, ")
    assert re.search(rf"chapter\.md:{last}: WARNING: undefined label: 'no-other-target'",
                     build.log), build.log[-3000:]
    image = _line(chapter, "![](figs")
    assert re.search(rf"chapter\.md:{image}: WARNING: image file not readable: figs/no-such-",
                     build.log), build.log[-3000:]
    anchor = _line(chapter, "see [the part]")
    assert re.search(rf"chapter\.md:{anchor}: WARNING: 'myst' cross-reference target not found: "
                     "'no-such-part'", build.log), build.log[-3000:]
    first, second = _line(chapter, "then [one]"), _line(chapter, "and [two]")
    assert re.findall(r"chapter\.md:(\d+): WARNING: 'myst' cross-reference target not found: "
                      "'other-part'", build.log) == [str(first), str(second)], build.log[-3000:]


def test_a_cell_ending_in_blank_lines_is_compared_and_a_changed_output_fails(tiny_book, tmp_path):
    chapter = tiny_book / "chapter.md"
    _plant(chapter, BLANK_ENDED)
    accepted = sphinx_build(tiny_book, tmp_path / "out", tmp_path / "cache", settings=ACCEPT)
    assert accepted.returncode == 0, accepted.log[-3000:]
    expected = tiny_book / "expected" / TORCH / "chapter.txt"
    assert "    blank-ended 42" in expected.read_text(), accepted.log[-3000:]
    expected.write_text(expected.read_text().replace("blank-ended 42", "blank-ended 43"))
    build = sphinx_build(tiny_book, tmp_path / "out2", tmp_path / "cache")
    assert build.returncode == 1 and build.executed == 0, build.log[-3000:]
    line = _line(chapter, "print('blank-ended'")
    assert re.search(rf"chapter\.md:{line}: ERROR: code cell \d+ `print\('blank-ended', 6 \* 7\)`"
                     r" \(student edition", build.log), build.log[-3000:]
