"""The leak audit finds answers wherever a build could carry them, and only answers."""

import json
import re
from pathlib import Path

import pytest

from conftest import BOOK, ROOT, TINY_BOOK, load_tool
from coursebook.audit.answer_leaks import (
    Fingerprints,
    audit_build,
    chapter_fingerprints,
    fingerprint_words,
)
from coursebook.model.faults import BookError

ANSWER_SENTENCE = "The tiny chapter's answer says that tripling doubles nothing whatsoever here."
STUDENT_SENTENCE = "A worked example."


@pytest.fixture
def fingerprints() -> Fingerprints:
    return chapter_fingerprints(TINY_BOOK)


def _clean_build(root: Path) -> Path:
    html = root / "html"
    (html / "_sources").mkdir(parents=True)
    (html / "chapter.html").write_text(f"<p>{STUDENT_SENTENCE}</p>")
    (html / "searchindex.js").write_text(
        'Search.setIndex({"terms": {"work": [0]}, "titles": ["A tiny chapter"], '
        '"titleterms": {}, "alltitles": {"A tiny chapter": [[0, null]]}})')
    return root


def test_fingerprints_come_from_answer_cells(fingerprints):
    assert fingerprints.runs and "Tiny answers" in fingerprints.headings
    assert not any("worked" in run for run in fingerprints.runs)


def test_a_clean_build_passes(tmp_path, fingerprints):
    assert audit_build(_clean_build(tmp_path), fingerprints) == []


@pytest.mark.parametrize("name, content", [
    ("html/chapter.html", "<p>The tiny chapter&#8217;s answer says that <em>tripling</em> "
                          "doubles nothing whatsoever here.</p>"),
    ("html/_sources/chapter.md", "tiny_answer_value = int(weights.sum().item()) * 21\n"),
    ("html/chapter.html", f'<meta content="{ANSWER_SENTENCE}" name="description" />'),
    ("jupyter_execute/chapter.ipynb", json.dumps({"cells": [{"source": [
        "tiny_answer_value = int(weights.sum().item()) * 21\n",
        'print("tiny answer:", tiny_answer_value)']}]})),
])
def test_a_planted_answer_is_caught(tmp_path, fingerprints, name, content):
    build = _clean_build(tmp_path)
    planted = build / name
    planted.parent.mkdir(parents=True, exist_ok=True)
    planted.write_text(content)
    leaks = audit_build(build, fingerprints)
    assert [leak.path for leak in leaks] == [planted]


def test_an_answer_in_a_notebook_of_another_shape_is_caught(tmp_path, fingerprints):
    """JSON that is no v4 notebook (nbformat 3's worksheets) is read as its strings, not as
    its JSON text, where the quotes between its lines break every run of words."""
    build = _clean_build(tmp_path)
    planted = build / "html" / "old.ipynb"
    lines = ["The tiny chapter's", "answer says that", "tripling doubles",
             "nothing whatsoever here."]
    planted.write_text(json.dumps({"worksheets": [{"cells": [
        {"cell_type": "markdown", "source": lines}]}]}, indent=1))
    assert [leak.path for leak in audit_build(build, fingerprints)] == [planted]


def test_an_answer_is_read_as_its_page_shows_it(tmp_path):
    """Markdown as myst-parser reads it, not as a pattern guesses: an answer whose every
    passage holds a word in `_emphasis_` (a table's pipes, a fence's `#`) is found on the page."""
    book = tmp_path / "book"
    book.mkdir()
    (book / "chapter.md").write_text((TINY_BOOK / "chapter.md").read_text().replace(
        ANSWER_SENTENCE, "Its _gradient_ flows back through each layer first."))
    build = _clean_build(tmp_path / "out")
    (build / "html" / "chapter.html").write_text(
        "<p>Its <em>gradient</em> flows back through each layer first.</p>")
    [leak] = audit_build(build, chapter_fingerprints(book))
    assert leak.path.name == "chapter.html" and "gradient flows back" in leak.message


ALIGN = ("\\begin{align}\n\\hat{y} &= \\sigma(W x + b) \\\\\n"
         "\\mathcal{L} &= -\\log \\hat{y}_{target} + \\lambda \\|W\\|^2\n\\end{align}")
DEFINITION = "doubles nothing whatsoever when the learning rate tends towards zero here."


@pytest.mark.parametrize("page", [  # as Sphinx writes each (conf.py's amsmath, deflist)
    f'<div class="amsmath math">\\[{ALIGN.replace("&", "&amp;")}\\]</div>',
    f"<dl>\n<dt>Tripling the step</dt><dd><p>{DEFINITION}</p>\n</dd>\n</dl>"])
def test_an_answer_in_an_align_environment_or_a_definition_list_is_found_on_its_page(tmp_path,
                                                                                   page):
    """The book's MyST syntax is read as its pages show it: an amsmath environment as written
    (the page holds its LaTeX), a definition list's term and text."""
    book = tmp_path / "book"
    book.mkdir()
    (book / "chapter.md").write_text((TINY_BOOK / "chapter.md").read_text().replace(
        ANSWER_SENTENCE, f"{ALIGN}\n\nTripling the step\n: {DEFINITION}"))
    build = _clean_build(tmp_path / "out")
    (build / "html" / "chapter.html").write_text(page)
    [leak] = audit_build(build, chapter_fingerprints(book))
    assert "answer passage" in leak.message, leak


def test_an_exercises_last_line_its_answer_repeats_is_no_leak_before_the_next_heading(tmp_path):
    """mrdbourke's exercises: the answer repeats the exercise cell's comment, then comments
    on; in the student's `.md` download that comment is followed by the next question's `##`,
    so `# perform matmul on tensor_a and tensor_b #` was reported a LEAK by `make audit`."""
    book = tmp_path / "book"
    book.mkdir()
    top = (TINY_BOOK / "chapter.md").read_text().split("\n---\n")[0] + "\n---\n"
    (book / "chapter.md").write_text(
        top + "# Lab\n\n```{code-cell} ipython3\n# Multiply tensor_A and tensor_B here now\n```\n\n"
        "```{code-cell} ipython3\n:tags: [answer]\n# Multiply tensor_A and tensor_B here now\n"
        "# tensor_A @ tensor_B fails: transpose one\ntensor_C = tensor_A @ tensor_B.T\n```\n\n"
        "## 2. The largest value\n")
    build = _clean_build(tmp_path / "out")
    (build / "html" / "_sources" / "chapter.md").write_text(
        "# Lab\n\n```python\n# Multiply tensor_A and tensor_B here now\n```\n\n## 2. The largest "
        "value\n")
    found = chapter_fingerprints(book)
    assert audit_build(build, found) == []
    (build / "html" / "chapter.html").write_text("<p>tensor_C = tensor_A @ tensor_B.T</p>")
    [leak] = audit_build(build, found)  # the answer's own line is still found
    assert leak.path.name == "chapter.html", leak


def test_a_search_index_holding_answer_words_or_headings_is_caught(tmp_path, fingerprints):
    build = _clean_build(tmp_path)
    (build / "html" / "searchindex.js").write_text(
        'Search.setIndex({"terms": {"whatsoev": [0]}, "titles": ["Tiny answers"], '
        '"titleterms": {}, "alltitles": {}})')
    evidence = " ".join(leak.message for leak in audit_build(build, fingerprints))
    assert "whatsoev" in evidence and "Tiny answers" in evidence


def test_the_audit_tool_fails_on_a_leak_and_passes_when_clean(tmp_path, fingerprints, capsys):
    # In this process: a new Python imported the book's modules again, about 1 s of CPU a
    # run (test_faults starts each tool as a program).
    build = _clean_build(tmp_path)
    arguments = [str(build), "--book", str(TINY_BOOK)]
    audit = load_tool("audit_student_build")
    assert audit.main(arguments) == 0
    (build / "html" / "leak.html").write_text(ANSWER_SENTENCE)
    assert audit.main(arguments) == 1 and "leak.html" in capsys.readouterr().out


NOTE = "Instructor: most students forget to call zero_grad before the second pass."
MYST_NOTE = "answer: use torch.stack on the list of rows"


def _commented_book(root: Path) -> Path:
    """The tiny book, its chapter holding an instructor's note in an HTML comment and one in
    a MyST `%` comment, and comments in code and math the page shows (no note: visible text)."""
    book = root / "book"
    book.mkdir(parents=True)
    (book / "chapter.md").write_text((TINY_BOOK / "chapter.md").read_text().replace(
        STUDENT_SENTENCE, f"{STUDENT_SENTENCE} <!-- {NOTE} --> <!-- hide -->\n% {MYST_NOTE}\n\n"
                          "```html\n<!-- shown -->\n% shown too\n```\n\n$$\n% LaTeX's\n$$"))
    return book


@pytest.mark.parametrize("name, content", [
    ("html/chapter.html", f"<p>{STUDENT_SENTENCE} <!-- {NOTE} --></p>"),
    ("html/_sources/chapter.md", f"{STUDENT_SENTENCE}\n<!--\n{NOTE}\n-->\n"),
    ("html/_downloads/chapter.ipynb", json.dumps({"cells": [{"source": [f"<!-- {NOTE} -->"]}]})),
    ("jupyter_execute/chapter.ipynb", json.dumps({"cells": [{"source": [f"% {MYST_NOTE}"]}]})),
])
def test_an_authors_comment_in_a_student_build_is_caught(tmp_path, name, content):
    """A comment of a chapter, HTML's or MyST's (an instructor's note), is no student's: the
    student edition drops it (test_editions), and the audit finds it where a build could
    carry it."""
    found = chapter_fingerprints(_commented_book(tmp_path))
    assert found.comments == {f" {' '.join(fingerprint_words(text))} " for text in
                              (f"<!-- {NOTE} -->", "<!-- hide -->", f"% {MYST_NOTE}")}
    build = _clean_build(tmp_path / "out")
    # a word of a short comment is no leak where the page has it as its own (HR's F10)
    (build / "html" / "search.html").write_text("<button>hide</button> <p>Hide</p>")
    assert audit_build(build, found) == []
    planted = build / name
    planted.parent.mkdir(parents=True, exist_ok=True)
    planted.write_text(content)
    [leak] = audit_build(build, found)
    assert leak.path == planted and "1 comment(s) of a chapter's author" in leak.message


@pytest.mark.slow
def test_a_student_build_holds_no_authors_comment(tiny_book, tmp_path, cache_copy):
    """The fixture chapter's note is in no file of its student build: the page, its source,
    the downloads."""
    from conftest import sphinx_build

    (tiny_book / "chapter.md").write_text((_commented_book(tmp_path) / "chapter.md").read_text())
    build = sphinx_build(tiny_book, tmp_path / "out", cache_copy)  # prose: the cached run holds
    assert build.returncode == 0, build.log[-3000:]
    assert audit_build(tmp_path / "out", chapter_fingerprints(tiny_book)) == []
    # Not by the audit's own rule alone: the notes' words are in no file a student gets.
    assert [path.name for folder in ("html", "jupyter_execute")
            for path in (tmp_path / "out" / folder).rglob("*") if path.is_file()
            and any(note.encode() in path.read_bytes() for note in (NOTE, MYST_NOTE))] == []


def test_the_audit_tool_reads_only_what_its_build_made(tmp_path, fingerprints, capsys):
    """`make audit` rebuilds the HTML (html/, jupyter_execute/); a PDF or LaTeX an earlier build
    left there (a removed chapter's handout) is not audited against today's answers (HR's F17):
    named as not read; each PDF build audits what it makes."""
    from conftest import load_tool

    build = _clean_build(tmp_path)
    (build / "latex").mkdir()
    (build / "latex" / "removed.tex").write_text(ANSWER_SENTENCE)
    arguments = [str(build), "--book", str(TINY_BOOK)]
    assert load_tool("audit_student_build").main(arguments) == 0
    assert f"audit: not read: latex in {build} (earlier builds' files" in capsys.readouterr().out
    (build / "jupyter_execute").mkdir()
    (build / "jupyter_execute" / "chapter.ipynb").write_text(ANSWER_SENTENCE)
    assert load_tool("audit_student_build").main(arguments) == 1


def test_the_student_book_pdf_is_audited_as_it_is_made(tmp_path, monkeypatch, capsys):
    """An answer in the typeset student book stops `make pdf` (no PDF written), as a handout's
    does: `make audit` no longer reads PDFs."""
    import argparse

    import matplotlib

    from conftest import load_tool

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    build_pdf = load_tool("build_pdf")
    latex = tmp_path / "student" / "latex"
    latex.mkdir(parents=True)

    def typeset(folder, stem, single_pass):  # a PDF whose text is the answer's
        figure = plt.figure()
        figure.text(0.01, 0.5, ANSWER_SENTENCE)
        figure.savefig(latex / f"{stem}.pdf")
        plt.close(figure)
        return latex / f"{stem}.pdf"

    monkeypatch.setattr(build_pdf, "sphinx_latex", lambda *args: True)
    monkeypatch.setattr(build_pdf, "typeset", typeset)
    monkeypatch.setattr(build_pdf, "check_pdf", lambda *args: [])
    monkeypatch.setattr(build_pdf, "locate_chapters", lambda problems, *args: problems)
    monkeypatch.setattr(build_pdf, "located", lambda problems, *args: problems)
    args = argparse.Namespace(build=tmp_path, edition="student", source=TINY_BOOK,
                              single_pass=True)
    assert build_pdf.build_book(args) == 1
    assert "answer passage" in capsys.readouterr().err
    assert not (tmp_path / "student" / "pdf").exists()


def test_the_real_chapters_have_answers_to_look_for():
    assert len(chapter_fingerprints(BOOK).runs) > 100


def test_a_checkpoint_copy_is_not_visible_text(tmp_path):
    """Jupyter's ``.ipynb_checkpoints`` copy of a page, answers and all, is no page of the
    book: counted as visible, it would make every answer common text."""
    import shutil
    book = tmp_path / "book"
    shutil.copytree(TINY_BOOK, book)
    copy = book / ".ipynb_checkpoints" / "notes-checkpoint.md"
    copy.parent.mkdir()
    copy.write_text(f"# Notes\n\n{ANSWER_SENTENCE}\n")
    assert chapter_fingerprints(book).runs == chapter_fingerprints(TINY_BOOK).runs


def test_a_short_answer_is_caught_by_its_names(tmp_path, fingerprints):
    """An expression too short for a passage still leaks by a name only answers use."""
    assert "tiny_answer_value" in fingerprints.short and "weights" not in fingerprints.short
    build = _clean_build(tmp_path)
    (build / "html" / "short.html").write_text("<p>Use <code>weights.sum()</code>.</p>")
    [leak] = audit_build(build, fingerprints)
    assert leak.path.name == "short.html" and "weights.sum" in leak.message


def test_the_audit_skips_vendored_assets(tmp_path, fingerprints):
    build = _clean_build(tmp_path)
    (build / "html" / "_static").mkdir()
    (build / "html" / "_static" / "bundle.js").write_text(ANSWER_SENTENCE)
    assert audit_build(build, fingerprints) == []


def _overlaps(tmp_path, chapter: str, allowances: str = ""):
    from coursebook.audit.answer_leaks import answer_overlaps, read_allowances

    path = tmp_path / "chapter.md"
    path.write_text(chapter)
    (tmp_path / "allow.toml").write_text(allowances)
    return answer_overlaps({path: chapter}, read_allowances(tmp_path / "allow.toml")[0])[0]


def test_an_answer_sentence_copied_into_visible_prose_is_named_at_both_places(tmp_path):
    chapter = (TINY_BOOK / "chapter.md").read_text()
    assert _overlaps(tmp_path, chapter) == []
    planted = chapter.replace("A worked example.", f"A worked example. {ANSWER_SENTENCE}")
    [overlap] = _overlaps(tmp_path, planted)
    lines = planted.splitlines()
    assert lines[overlap.visible.line - 1].startswith("A worked example.")
    assert lines[overlap.answer.line - 1] == ANSWER_SENTENCE
    allowed = f'[[allow]]\npassage = "{ANSWER_SENTENCE}"\nwhy = "a test"\n'
    assert _overlaps(tmp_path, planted, allowed) == []
    with pytest.raises(BookError, match=r"allow.toml:1: field allow\[0\].why: is missing"):
        _overlaps(tmp_path, planted, f'[[allow]]\npassage = "{ANSWER_SENTENCE}"\n')


ANSWER_CODE = "tiny_answer_value = int(weights.sum().item()) * 21"


def test_an_answer_sentence_in_the_pages_description_is_named_at_its_key(tmp_path):
    """Top matter `myst: html_meta` is in the page's head (search results, link previews),
    in no cell: a description repeating an answer was on the student page, build passing."""
    planted = (TINY_BOOK / "chapter.md").read_text().replace("kernelspec:", (
        f"myst:\n  html_meta:\n    description: {ANSWER_SENTENCE}\nkernelspec:"))
    [overlap] = _overlaps(tmp_path, planted)
    assert planted.splitlines()[overlap.visible.line - 1] == f"    description: {ANSWER_SENTENCE}"
    assert "tripling doubles nothing" in overlap.passage


@pytest.mark.parametrize("condition, visible", [("instructor", False), ("html", True),
                                                  ("latex", True), ("not instructor", True)])
def test_an_answer_repeated_in_an_only_block_is_visible_where_a_student_edition_shows_it(
        tmp_path, condition, visible):
    """An instructor's note (`{only} instructor`), which no student edition shows (their pages
    leave it out), repeating the answer stopped the build as student-visible text."""
    planted = (TINY_BOOK / "chapter.md").read_text().replace("A worked example.", (
        f"A worked example.\n\n````{{only}} {condition}\nExpect: {ANSWER_SENTENCE}\n````"))
    assert len(_overlaps(tmp_path, planted)) == visible


@pytest.mark.parametrize("where, shown, leaks", [
    (STUDENT_SENTENCE, "A worked example.\n\n````{{only}} instructor\nExpect: {}\n````", 1),
    (STUDENT_SENTENCE, "A worked example.\n\n````{{only}} html\nExpect: {}\n````", 0),
    ("kernelspec:", "myst:\n  html_meta:\n    description: {}\nkernelspec:", 0)],
    ids=["instructor-note", "html-block", "description"])
def test_the_audit_reads_a_chapter_as_the_overlap_check_does(tmp_path, where, shown, leaks):
    """What no student edition shows is no visible text, what the page's head shows is: an
    `{only} instructor` note repeating an answer let that answer pass `make audit` on a student
    page, and a description the build allowed (`answer-overlaps.toml`) failed it."""
    book = tmp_path / "book"
    book.mkdir()
    (book / "chapter.md").write_text((TINY_BOOK / "chapter.md").read_text().replace(
        where, shown.format(ANSWER_SENTENCE)))
    build = _clean_build(tmp_path / "out")
    (build / "html" / "chapter.html").write_text(f"<p>{ANSWER_SENTENCE}</p>")
    assert len(audit_build(build, chapter_fingerprints(book))) == leaks


def test_an_answer_pasted_into_the_exercise_cell_is_found(tmp_path):
    """A whole answer copied into the visible cell above it: its code line is found (the
    leak audit would count the copy as visible, common text)."""
    chapter = (TINY_BOOK / "chapter.md").read_text()
    planted = chapter.replace("print((weights * 3).grad_fn)\n",
                              f"print((weights * 3).grad_fn)\n{ANSWER_CODE}\n")
    [overlap] = _overlaps(tmp_path, planted)
    lines = planted.splitlines()
    assert lines[overlap.visible.line - 1] == ANSWER_CODE
    assert lines[overlap.answer.line - 1] == ANSWER_CODE
    allowed = f'[[allow]]\npassage = "{ANSWER_CODE}"\nwhy = "scaffolding"\n'
    assert _overlaps(tmp_path, planted, allowed) == []


def test_an_answer_line_is_found_in_visible_code_in_its_own_case_only(tmp_path):
    """Code's case is its own: an answer's `Tiny_answer_value = ...` in visible code as
    `tiny_answer_value = ...` is another line, once told as a copy; in its own case it is one,
    and an allowance (its words lower-cased, as prose's) covers it."""
    answered = (TINY_BOOK / "chapter.md").read_text().replace("tiny_answer_value",
                                                               "Tiny_answer_value")
    shown = "print((weights * 3).grad_fn)\n"  # the visible cell above the answer
    line = ANSWER_CODE.replace("tiny", "Tiny")
    assert _overlaps(tmp_path, answered.replace(shown, f"{shown}{ANSWER_CODE}\n")) == []
    [overlap] = _overlaps(tmp_path, planted := answered.replace(shown, f"{shown}{line}\n"))
    assert planted.splitlines()[overlap.visible.line - 1] == line
    assert _overlaps(tmp_path, planted, f'[[allow]]\npassage = "{line}"\nwhy = "a stub"\n') == []


# The lines of QuantEcon's lecture-python-intro lectures/linear_equations.md (b9316aa) that
# stopped its student build: its solutions import and plot as its worked examples do. The
# transpose is ours: an argument-less call of no imported name, the answer's own work.
LECTURE = """---
jupytext:
  text_representation:
    format_name: myst
kernelspec:
  name: python3
  display_name: Python 3
---

# Linear equations

```{code-cell} ipython3
import numpy as np
import matplotlib.pyplot as plt
```

```{code-cell} ipython3
from numpy.linalg import solve
p = solve(A, h)  # equilibrium prices
fig, ax = plt.subplots()
ax.plot(q, p, 'o')
plt.legend()
```

```{code-cell} ipython3
# Solve for p by least squares.
```

```{code-cell} ipython3
:tags: ["answer"]
import numpy as np
from numpy.linalg import solve
from torch import nn
from torch.nn import MSELoss
p = solve(A, b)
A_T = A.transpose()
criterion = nn.CrossEntropyLoss()
loss = MSELoss()
fig, ax = plt.subplots()
ax.plot(q, a - b*q, 'r', label='Fitted line')
plt.legend()
```
"""


def test_lines_every_chapter_repeats_are_no_answer(tmp_path):
    """An import names what a chapter may use; an argument-less call of an imported name
    (``plt.legend()``) sets up or shows: an answer repeating one leaks nothing."""
    assert _overlaps(tmp_path, LECTURE) == []


@pytest.mark.parametrize("line", ["p = solve(A, b)", "A_T = A.transpose()",
                                  "criterion = nn.CrossEntropyLoss()", "loss = MSELoss()"])
def test_a_one_line_answer_pasted_into_student_code_is_found(tmp_path, line):
    assert not [overlap for overlap in _overlaps(tmp_path, LECTURE) if overlap.passage ==
                " ".join(fingerprint_words(line))]
    planted = LECTURE.replace("least squares.\n", f"least squares.\n{line}\n")
    [overlap] = [overlap for overlap in _overlaps(tmp_path, planted)
                 if overlap.passage == " ".join(fingerprint_words(line))]
    lines = planted.splitlines()
    assert lines[overlap.visible.line - 1] == lines[overlap.answer.line - 1] == line
    assert overlap.visible.line < overlap.answer.line


def test_an_answer_tagged_as_completing_its_exercise_may_repeat_that_cell_alone(tmp_path):
    """A lab's answers (`make chapter SOLUTIONS=`) repeat their stubs' lines, which the stubs
    show students anyway; any other visible cell holding such a line still stops the build."""
    line = "p = solve(A, b)"
    stub = LECTURE.replace("least squares.\n", f"least squares.\n{line}\n")
    words = " ".join(fingerprint_words(line))
    assert [overlap.passage for overlap in _overlaps(tmp_path, stub)] == [words]  # untagged
    tagged = stub.replace(':tags: ["answer"]', ':tags: ["answer", "completes-exercise"]')
    assert _overlaps(tmp_path, tagged) == []
    # Also in a visible cell after the stub, which holds it first: found there.
    later = tagged + f"\n```{{code-cell}} ipython3\nq = 2\n{line}\n```\n"
    [overlap] = _overlaps(tmp_path, later)
    assert overlap.passage == words and overlap.visible.line > overlap.answer.line
    assert later.splitlines()[overlap.visible.line - 1] == line


def test_an_overlap_is_named_at_its_line_not_at_an_earlier_one_using_its_names(tmp_path):
    """QuantEcon's short_path: `J[:] = next_J` was named at `next_J = bellman(J, Q)` above it
    in the answer, and at the line above it in the visible cell: the first line holding the
    passage's names."""
    line = "A_T[:] = p"
    planted = LECTURE.replace("least squares.\n", f"least squares.\np = A_T.sum()\n{line}\n"
                              ).replace("A_T = A.transpose()\n",
                                        f"A_T = A.transpose()\np = A_T.sum() + 1\n{line}\n")
    [overlap] = [overlap for overlap in _overlaps(tmp_path, planted)
                 if overlap.passage == " ".join(fingerprint_words(line))]
    lines = planted.splitlines()
    assert lines[overlap.visible.line - 1] == lines[overlap.answer.line - 1] == line


def test_an_overlap_over_two_lines_is_named_where_it_starts(tmp_path):
    """NTNU's ODE lecture shows an exercise's outline in a code block its answer repeats: a
    passage over two of its lines was named at the block's first line (its fence)."""
    planted = LECTURE.replace("# Linear equations\n", "# Linear equations\n\nThe steps:\n\n"
                              "```python\nq = 1\ncriterion = nn.CrossEntropyLoss()\n"
                              "loss = MSELoss()\n```\n")
    [overlap] = [overlap for overlap in _overlaps(tmp_path, planted)
                 if "crossentropyloss ( ) loss" in overlap.passage]
    line = "criterion = nn.CrossEntropyLoss()"
    assert overlap.visible.first_line == line == planted.splitlines()[overlap.visible.line - 1]


def test_an_answer_line_pasted_with_a_comment_of_its_own_is_found(tmp_path):
    planted = LECTURE.replace("least squares.\n", "least squares.\np = solve(A, b)  # mine\n")
    assert [overlap.passage for overlap in _overlaps(tmp_path, planted)] == [
        " ".join(fingerprint_words("p = solve(A, b)"))]


def test_each_line_an_answer_shares_with_one_visible_cell_is_named_in_one_build(tmp_path):
    """QuantEcon's Fibonacci answer repeats two lines of the recursion example above it: the
    check named one per pair of cells, so allowing it showed the next only on the next build."""
    chapter = LECTURE.replace("# Solve for p by least squares.\n",
                              "def x(t):\n    if t == 0:\n        return 1\n"
                              "    return 2 * x(t-1)\n")
    chapter += "\n```{code-cell} ipython3\n:tags: [\"answer\"]\ndef x(t):\n    if t == 0:\n" \
               "        return 0\n    return x(t-1) + x(t-2)\n```\n"
    shared = [overlap.passage for overlap in _overlaps(tmp_path, chapter)]
    assert shared == [" ".join(fingerprint_words(line)) for line in ("def x(t):", "if t == 0:")]


def test_a_passage_longer_than_a_run_is_named_whole_so_one_allowance_covers_it(tmp_path):
    """QuantEcon's column_iterator exercise shows a stub whose docstring its answer repeats:
    the check named the first eight words, and each allowance of what it named showed the
    next eight only on the next build (four builds for one docstring)."""
    doc = ('"""A generator function for CSV files, which steps through the elements of the '
           'column numbered column_number in the file target_file."""')
    chapter = LECTURE.replace("# Linear equations\n", "# Linear equations\n\nComplete:\n\n"
                              f"```python\ndef column_iterator(target_file, column_number):\n"
                              f"    {doc}\n    # put your code here\n```\n")
    chapter += (f"\n```{{code-cell}} ipython3\n:tags: [\"answer\"]\ndef column_iterator(target"
                f"_file, column_number):\n    {doc}\n    yield from open(target_file)\n```\n")
    [overlap] = _overlaps(tmp_path, chapter)
    assert overlap.passage.startswith("def column_iterator") and "target_file . \"" in (
        overlap.passage)
    assert chapter.splitlines()[overlap.answer.line - 1].startswith("def column_iterator")
    allowed = f"[[allow]]\npassage = '''{overlap.passage}'''\nwhy = 'the stub'\n"
    assert _overlaps(tmp_path, chapter, allowed) == []


def test_a_question_quoting_the_answers_value_is_found(tmp_path):
    """The value an answer's check holds (what the answer prints), quoted in visible prose."""
    chapter = (TINY_BOOK / "chapter.md").read_text().replace(
        ":tags: [answer]\n", "---\ntags: [answer]\nchecks:\n- {name: tiny, ask: the value, "
        "value: tiny_answer_value, answer: 42.125, hint: add}\n---\n", 1)
    assert _overlaps(tmp_path, chapter) == []
    planted = chapter.replace("A worked example.", "A worked example; it prints 42.125.")
    [overlap] = _overlaps(tmp_path, planted)
    assert overlap.passage == "42 . 125"
    assert planted.splitlines()[overlap.visible.line - 1].startswith("A worked example;")


def test_an_overlap_in_a_notebook_chapter_names_its_cells_and_their_lines(tmp_path):
    """Each place is found in its own cell's text, not by searching the file (an ``.ipynb``'s
    JSON, where a line number names nothing): there a place is its cell's number."""
    import nbformat

    from coursebook.audit.answer_leaks import answer_overlaps

    new = nbformat.v4
    lesson = nbformat.writes(new.new_notebook(cells=[
        new.new_markdown_cell(f"# A lesson\n\nA worked example.\n\n{ANSWER_SENTENCE}"),
        new.new_code_cell(ANSWER_CODE, metadata={"tags": ["answer"]}),
        new.new_markdown_cell(ANSWER_SENTENCE, metadata={"tags": ["answer"]})],
        metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}}))
    path = tmp_path / "lesson.ipynb"
    path.write_text(lesson)
    [overlap], _ = answer_overlaps({path: lesson})
    assert (overlap.visible.line, overlap.answer.line) == (1, 3)
    assert overlap.visible.first_line == overlap.answer.first_line == ANSWER_SENTENCE


def test_the_books_overlaps_are_all_allowed():
    from coursebook.audit.answer_leaks import ALLOWANCES_FILE, answer_overlaps, read_allowances

    sources = {path: path.read_text() for path in BOOK.glob("*.md")}
    # None found, and no allowance is kept that no overlap needs.
    assert answer_overlaps(sources, read_allowances(BOOK / ALLOWANCES_FILE)[0]) == ([], [])
    assert answer_overlaps(sources)[0]  # without the allowances, the overlaps are found


def test_the_overlap_check_skips_only_inputs_that_passed(tmp_path, monkeypatch):
    """A warm build skips the search when nothing changed; after an edit, only the edited
    page is read again, and a planted copy is still found."""
    from types import SimpleNamespace

    from coursebook.audit import answer_leaks as audit

    source = tmp_path / "book"
    source.mkdir()
    chapter = source / "chapter.md"
    chapter.write_text((TINY_BOOK / "chapter.md").read_text())
    (source / "index.md").write_text("# A tiny book\n\nIts one page of prose.\n")
    env = SimpleNamespace(found_docs={"chapter", "index"},
                          doc2path=lambda doc: source / f"{doc}.md", version={"coursebook": 1})
    app = SimpleNamespace(srcdir=source, doctreedir=tmp_path / "doctrees", env=env, statuscode=0)

    searched, read = [], []
    real_search, real_read = audit.answer_overlaps, audit.source_cells
    monkeypatch.setattr(audit, "answer_overlaps",
                        lambda *args: searched.append(1) or real_search(*args))
    monkeypatch.setattr(audit, "source_cells",
                        lambda path, text: read.append(path.name) or real_read(path, text))
    audit.check_answer_overlaps(app, env)
    audit.check_answer_overlaps(app, env)
    assert len(searched) == 1 and "_coursebook_audit_failed" not in app.__dict__
    assert sorted(read) == ["chapter.md", "index.md"]
    chapter.write_text(chapter.read_text().replace("A worked example.",
                                                   f"A worked example. {ANSWER_SENTENCE}"))
    audit.check_answer_overlaps(app, env)
    assert read[2:] == ["chapter.md"]  # the unchanged page's cells were kept
    audit.check_answer_overlaps(app, env)  # a failed check is never remembered
    assert len(searched) == 3 and app.statuscode == 1


def test_the_overlap_check_reads_every_source_again_when_the_extension_changes(tmp_path,
                                                                              monkeypatch):
    """The cells kept from a passed check were cut by the extension's code (own_words' parser,
    plain_markdown's directive options, read_chapter): an edit of any of it, as Sphinx's env
    versions tell (this extension's is a digest of its code), reads every source again."""
    from types import SimpleNamespace

    from coursebook.audit import answer_leaks as audit

    source = tmp_path / "book"
    source.mkdir()
    (source / "index.md").write_text("# A tiny book\n\nIts one page of prose.\n")
    env = SimpleNamespace(found_docs={"index"}, doc2path=lambda doc: source / f"{doc}.md",
                          version={"coursebook": 1, "sphinx": 66})
    app = SimpleNamespace(srcdir=source, doctreedir=tmp_path / "doctrees", env=env, statuscode=0)
    read = []
    real_read = audit.source_cells
    monkeypatch.setattr(audit, "source_cells",
                        lambda path, text: read.append(path.name) or real_read(path, text))
    audit.check_answer_overlaps(app, env)
    audit.check_answer_overlaps(app, env)
    assert read == ["index.md"]  # passed, and nothing changed since
    env.version = {"coursebook": 2, "sphinx": 66}  # plain_markdown.split_options edited, say
    audit.check_answer_overlaps(app, env)
    assert read == ["index.md", "index.md"]


def test_an_allowance_no_overlap_needs_any_more_stops_the_build_at_its_line(tmp_path):
    """An allowance left after its overlap went would let a later leak of its passage pass."""
    import logging
    from types import SimpleNamespace

    from coursebook.audit.answer_leaks import ALLOWANCES_FILE, check_answer_overlaps

    (tmp_path / "chapter.md").write_text((TINY_BOOK / "chapter.md").read_text().replace(
        "A worked example.", f"A worked example. {ANSWER_SENTENCE}"))
    allowances = tmp_path / ALLOWANCES_FILE
    needed = f'[[allow]]\npassage = "{ANSWER_SENTENCE}"\nwhy = "The example states it."\n'
    allowances.write_text(needed + '\n[[allow]]\nwhy = "Gone."\npassage = "x = w.sum()"\n')
    env = SimpleNamespace(found_docs={"chapter"}, doc2path=lambda doc: tmp_path / f"{doc}.md",
                          version={"coursebook": 1})
    app = SimpleNamespace(srcdir=tmp_path, doctreedir=tmp_path / "doctrees", env=env,
                          statuscode=0)
    records = []
    handler = logging.Handler()
    handler.emit = records.append
    logging.getLogger("sphinx").addHandler(handler)
    try:
        check_answer_overlaps(app, env)
        [record] = records
        assert record.location == f"{allowances}:7" and app.statuscode == 1
        # The base class's message: a Sphinx run earlier in this process
        # (tests/test_pytest_book.py) leaves handlers on "sphinx" whose filter turns the record
        # into one that prefixes its place.
        assert logging.LogRecord.getMessage(record).startswith(
            "field allow[1].passage: is shared by no answer")
        check_answer_overlaps(app, env)  # not remembered as passed: told again
        assert len(records) == 2 and records[1].location == record.location
        allowances.write_text(needed)
        app.statuscode, records[:] = 0, []
        check_answer_overlaps(app, env)
        assert records == [] and app.statuscode == 0
    finally:
        logging.getLogger("sphinx").removeHandler(handler)


def test_two_answers_sharing_one_visible_passage_are_each_named(tmp_path):
    """Their messages differ only in where the answer is, which Sphinx's once filter does not
    read: each is logged."""
    import logging
    from types import SimpleNamespace

    import nbformat
    from sphinx.util.logging import OnceFilter

    from coursebook.audit.answer_leaks import check_answer_overlaps

    new = nbformat.v4
    answer = {"tags": ["answer"]}
    (tmp_path / "lesson.ipynb").write_text(nbformat.writes(new.new_notebook(cells=[
        new.new_markdown_cell(f"# A lesson\n\nA worked example. {ANSWER_SENTENCE}"),
        new.new_markdown_cell(ANSWER_SENTENCE, metadata=answer),
        new.new_markdown_cell(f"Again: {ANSWER_SENTENCE}", metadata=answer)],
        metadata={"kernelspec": {"name": "python3", "display_name": "Python 3"}})))
    env = SimpleNamespace(found_docs={"lesson"}, doc2path=lambda doc: tmp_path / f"{doc}.ipynb",
                          version={"coursebook": 1})
    app = SimpleNamespace(srcdir=tmp_path, doctreedir=tmp_path / "doctrees", env=env,
                          statuscode=0)
    records = []
    handler = logging.Handler()
    handler.addFilter(OnceFilter())
    handler.emit = records.append
    logging.getLogger("sphinx").addHandler(handler)
    try:
        check_answer_overlaps(app, env)
    finally:
        logging.getLogger("sphinx").removeHandler(handler)
    assert sorted(record.location.rsplit(":", 1)[1] for record in records) == ["2", "3"]
    assert app.statuscode == 1


@pytest.mark.slow
def test_the_build_stops_on_an_answer_in_visible_text(tiny_book, tmp_path, cache_copy):
    from conftest import sphinx_build

    chapter = tiny_book / "chapter.md"
    chapter.write_text(chapter.read_text().replace("A worked example.",
                                                   f"A worked example. {ANSWER_SENTENCE}"))
    build = sphinx_build(tiny_book, tmp_path / "out", cache_copy)  # prose: the cached run holds
    assert build.returncode != 0
    assert build.log.count("an answer passage also shows in student-visible text") == 1
    assert "chapter.md:" in build.log and "Traceback" not in build.log


@pytest.mark.slow
def test_the_overlap_search_runs_before_the_pages_are_read(tiny_book, tmp_path, cache_copy):
    """While a cold build's readers wait for their kernels, the build's own process waits with
    them: the search for answers in visible text runs then, not after the last page is read
    (where it lengthened every build by its time). Each page read says whether the build has
    already failed (Sphinx holds the warnings of a read until its end)."""
    import subprocess
    import sys

    from conftest import book_conf_with

    chapter = tiny_book / "chapter.md"
    chapter.write_text(chapter.read_text().replace("A worked example.",
                                                   f"A worked example. {ANSWER_SENTENCE}"))
    conf = book_conf_with(tmp_path / "conf", "def setup(app):", "    app.connect("
                          "'source-read', lambda app, docname, source: print('read:', docname, "
                          "'failed' if app.statuscode else 'passing', file=sys.stderr))")
    done = subprocess.run([sys.executable, "-m", "sphinx", "-b", "html", "-c", str(conf), "-D",
                           f"nb_execution_cache_path={cache_copy}", str(tiny_book),
                           str(tmp_path / "out")], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode != 0 and "an answer passage also shows" in done.stderr
    assert "read: chapter failed" in done.stderr and "passing" not in done.stderr


# --- Short fingerprints: whole tokens, in the text a reader sees ---------------------------

@pytest.fixture(scope="module")
def book_fingerprints() -> Fingerprints:
    return chapter_fingerprints(BOOK, ROOT / "exhibits")


def _a_short_value(found: Fingerprints) -> str:
    """A value only the book's answers hold (``0.84``, say), from the chapters themselves."""
    return sorted(term for term in found.short if term[0].isdigit())[0]


def test_a_short_value_outside_the_readers_text_is_no_leak(tmp_path, book_fingerprints):
    """The false leaks of `make pdf`: LaTeX's preamble sets a font scale that happens to
    be an answer's value; a script, a notebook's metadata or a longer version number too."""
    value = _a_short_value(book_fingerprints)
    from coursebook.render.pdf_fonts import fontpkg

    preamble = [line.replace("0.84", value) for line in fontpkg().splitlines() if "Scale=" in line]
    assert preamble, "the LaTeX preamble (render/pdf_fonts.py) sets no font scale any more"
    build = _clean_build(tmp_path)
    latex = build / "latex"
    latex.mkdir()
    (latex / "book.tex").write_text("\n".join(preamble) + "\n\\begin{document}\nText.\n")
    (build / "html" / "page.html").write_text(
        f"<script>var scale = {value};</script><p>Version {value}.5 of a package.</p>")
    (build / "jupyter_execute").mkdir()
    (build / "jupyter_execute" / "chapter.ipynb").write_text(json.dumps(
        {"metadata": {"scale": value}, "cells": [{"source": "print(1)", "outputs": []}]}))
    assert audit_build(build, book_fingerprints) == []


@pytest.mark.parametrize("name, content", [
    ("html/page.html", "<p>The first example gets {value}.</p>"),
    ("html/_sources/page.md", "The first example gets {value}, as the answer says."),
    ("jupyter_execute/chapter.ipynb",
     '{{"cells": [{{"source": "x", "outputs": [{{"text": "tensor({value})"}}]}}]}}'),
])
def test_a_short_value_a_reader_sees_is_still_a_leak(tmp_path, book_fingerprints, name, content):
    value = _a_short_value(book_fingerprints)
    build = _clean_build(tmp_path)
    planted = build / name
    planted.parent.mkdir(parents=True, exist_ok=True)
    planted.write_text(content.format(value=value))
    [leak] = audit_build(build, book_fingerprints)
    assert leak.path == planted and value in leak.message


def test_an_answer_passage_in_latex_is_still_a_leak(tmp_path, fingerprints):
    build = _clean_build(tmp_path)
    (build / "latex").mkdir()
    (build / "latex" / "book.tex").write_text(f"\\begin{{document}}\n{ANSWER_SENTENCE}\n")
    [leak] = audit_build(build, fingerprints)
    assert leak.path.name == "book.tex" and "answer passage" in leak.message


# --- Spoilers: a predict-then-reveal answer shown before the student tries ----------------

_ERROR = ("RuntimeError: one of the variables needed for gradient computation has been "
          "modified by an inplace operation")
_CASE = ('<div class="cell tag_hide-output"><div class="cell_input"><pre>mutable.add_(1.)</pre>'
         '</div><details class="hide"><summary>Show code cell output</summary>'
         f'<div class="cell_output"><pre>Backward raised {_ERROR}</pre></div></details></div>')
_SEE_ALSO = ('<div class="admonition seealso"><p>See also <a class="reference internal" '
             'href="museum.html#exhibit-02">exhibit 02</a>.</p></div>')
_ANOTHER = '<p>See <a class="reference internal" href="museum.html#exhibit-05">exhibit 05</a>.</p>'

_FIGURE = ('<div class="cell tag_remove-input tag_book-only"><div class="cell_output">'
           '<img alt="h with grad_fn MulBackward0"/></div></div>')


def _with_pages(tmp_path: Path, chapter: str) -> Path:
    """A clean build whose chapter page holds ``chapter``, beside a museum page whose
    exhibit 02 shows the case's error (its id, as Sphinx gives a labelled section)."""
    build = _clean_build(tmp_path)
    (build / "html" / "chapter.html").write_text(
        f"<nav><a href='museum.html#exhibit-02'>02</a></nav><article>{chapter}</article>")
    (build / "html" / "museum.html").write_text(
        f'<article><section id="exhibit-02"><h2>02</h2><pre>{_ERROR}: [torch.FloatTensor [3]]'
        '</pre></section><section id="exhibit-05"><pre>RuntimeError: mat1 and mat2 shapes '
        'cannot be multiplied (32x16 and 8x4)</pre></section></article>')
    return build


@pytest.mark.parametrize("chapter", [
    f"<p>{STUDENT_SENTENCE}</p>{_CASE}{_SEE_ALSO}",  # the box after the case it relates to
    f"{_ANOTHER}{_CASE}",  # a link before it to a place that shows another error
    _CASE + _FIGURE.replace('<div class="cell_output">', '<details class="hide"><summary>Show'
                            '</summary><div class="cell_output">').replace("</div></div>",
                                                                           "</div></details></div>"),
])
def test_a_case_revealed_in_its_turn_is_no_spoiler(tmp_path, fingerprints, chapter):
    assert audit_build(_with_pages(tmp_path, chapter), fingerprints) == []


@pytest.mark.parametrize("chapter, evidence", [
    (f"{_SEE_ALSO}{_CASE}", "the link to 'museum.html#exhibit-02' comes before `mutable.add_(1.)`"),
    (_CASE.replace('<details class="hide">', '<details open class="hide">'),
     "the output of `mutable.add_(1.)` is in view"),
    (re.sub(r"</?details[^>]*>|<summary>.*?</summary>", "", _CASE),
     "the output of `mutable.add_(1.)` is in view"),
    (f"{_CASE}<p>Drawn from the tensors above.</p>{_FIGURE}",  # a figure of what it reveals
     "a figure without its code is in view right after `mutable.add_(1.)`"),
])
def test_a_planted_spoiler_is_caught(tmp_path, fingerprints, chapter, evidence):
    """A "See also" box above the case it answers; the case's output shown open, or with
    no reveal control at all."""
    [leak] = audit_build(_with_pages(tmp_path, chapter), fingerprints)
    assert leak.path.name == "chapter.html" and evidence in leak.message, leak.message


def test_a_spoiler_is_caught_where_its_target_shows_another_error_first(tmp_path, fingerprints):
    """The exhibit's section shows a warning before the case's error: both are read."""
    build = _with_pages(tmp_path, f"{_SEE_ALSO}{_CASE}")
    museum = build / "html" / "museum.html"
    museum.write_text(museum.read_text().replace(
        '<h2>02</h2>', '<h2>02</h2><pre>UserWarning: this exhibit first warns about a copy</pre>'))
    [leak] = audit_build(build, fingerprints)
    assert "the link to 'museum.html#exhibit-02' comes before" in leak.message, leak.message


def test_a_link_to_an_error_behind_a_click_is_no_spoiler(tmp_path, fingerprints):
    """The exhibit's section keeps its error in a closed dropdown: a link to it reveals nothing."""
    build = _with_pages(tmp_path, f"{_SEE_ALSO}{_CASE}")
    museum = build / "html" / "museum.html"
    text = museum.read_text()
    start = text.index("<pre>")
    museum.write_text(text[:start] + '<details class="sd-dropdown"><summary>Show the error'
                      '</summary>' + text[start:text.index("</pre>") + 6] + "</details>"
                      + text[text.index("</pre>") + 6:])
    assert audit_build(build, fingerprints) == []
    museum.write_text(museum.read_text().replace("<details ", "<details open "))
    [leak] = audit_build(build, fingerprints)
    assert "the link to 'museum.html#exhibit-02' comes before" in leak.message


def test_what_a_check_shows_students_is_never_an_answers_alone(book_fingerprints):
    """A check's question and tolerance stand in the download's check cell: a value an answer
    shares with them is no leak (the bridges check's tolerance, 0.005, is also in a PT01
    answer, and the student build was refused for it)."""
    from coursebook.answer_checks.model import cell_checks
    from coursebook.model.notebooks import is_chapter_source, read_chapter

    tolerances = {repr(check.tolerance) for path in sorted(BOOK.glob("*.md"))
                  if is_chapter_source(text := path.read_text(encoding="utf8"))
                  for cell in read_chapter(text).cells for check in cell_checks(cell)}
    assert "0.005" in tolerances
    assert not tolerances & book_fingerprints.short


@pytest.mark.parametrize("folder", ["", "part/"])  # a chapter in a folder too
def test_an_answer_quoting_what_the_student_edition_prints_is_no_leak(tmp_path, folder):
    """rasbt's ch03 solutions quote, as their output, a line the chapter's own cell prints
    (`context_vecs.shape: torch.Size([2, 6, 2])`): the build passed and `make audit` called the
    printed line on the student page a leak. The student edition's expected outputs are
    visible text; an answer's own output, expected for the instructor edition only, is not."""
    from importlib import metadata

    from coursebook.verify.expectations import entry_lines, expectations_path

    book = tmp_path / "book"
    (book / folder).mkdir(parents=True)
    top = (TINY_BOOK / "chapter.md").read_text().split("\n---\n")[0] + "\n---\n"
    printed = "tensor([1.], grad_fn=<CatBackward0>)\nsummed_vec.shape: torch.Size([2, 6, 2])"
    answer_print = "answer_vec = tensor([3.], grad_fn=<AddBackward0>) from answer_cell.shape"
    (book / folder / "chapter.md").write_text(
        top + "# Lab\n\n```{code-cell} ipython3\nprint(summed_vec)\n```\n\n"
        "+++ {\"tags\": [\"answer\"]}\n\nThe result:\n\n```\n" + printed + "\n```\n\n"
        "```{code-cell} ipython3\n:tags: [answer]\nshow(answer_vec)\n```\n\n"
        "+++ {\"tags\": [\"answer\"]}\n\n`" + answer_print + "`\n")
    expected = expectations_path(book / "expected", metadata.version("torch"), folder + "chapter")
    expected.parent.mkdir(parents=True)
    expected.write_text("\n".join(
        entry_lines("cell", "aaaaaaaa", printed, first="print")
        + entry_lines("cell", "bbbbbbbb", answer_print, edition="instructor", first="show")) + "\n")
    build = _clean_build(tmp_path / "out")
    (build / "html" / "chapter.html").write_text(f"<pre>{printed}</pre>")
    found = chapter_fingerprints(book)
    assert audit_build(build, found) == []
    (build / "html" / "chapter.html").write_text(f"<pre>{answer_print}</pre>")
    [leak] = audit_build(build, found)  # the answer's own output is still an answer's
    assert leak.path.name == "chapter.html", leak


def test_an_answers_value_is_looked_for_in_its_chapter_and_on_pages_no_chapter_owns(tmp_path):
    """rasbt's ch03 prints inputs `0.58` and `0.80`, the values of PT01's challenge answer:
    the build stopped at both, though no one reading ch03 can place them. A value is looked
    for in its own chapter and on pages that are no chapter's (the glossary); a passage of
    words or a line of code still everywhere."""
    from coursebook.audit.answer_leaks import answer_overlaps

    chapter = (TINY_BOOK / "chapter.md").read_text().replace(
        ":tags: [answer]\n", "---\ntags: [answer]\nchecks:\n- {name: tiny, ask: the value, "
        "value: tiny_answer_value, answer: 42.125, hint: add}\n---\n", 1)
    other = chapter.split("# A tiny chapter")[0] + "# Another\n\nIts input is 42.125 today.\n"
    sources = {tmp_path / "chapter.md": chapter, tmp_path / "other.md": other}
    assert answer_overlaps(sources)[0] == []
    sources[tmp_path / "glossary.md"] = "# Glossary\n\nA term, 42.125.\n"
    [overlap] = answer_overlaps(sources)[0]
    assert (overlap.visible.path.name, overlap.passage) == ("glossary.md", "42 . 125")
    del sources[tmp_path / "glossary.md"]
    sources[tmp_path / "other.md"] = other.replace("today.", ANSWER_SENTENCE)
    [overlap] = answer_overlaps(sources)[0]  # the answer's prose, in another chapter
    assert overlap.visible.path.name == "other.md"
