"""The markup books use: sphinx-exercise's exercises and solutions (a solution is an answer:
dropped from the student edition everywhere, boxed in the instructor's, audited like any
answer), sphinxcontrib-bibtex's {cite}, numbered figures and {numref}, and myst-nb options
a chapter sets in its own top matter."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import nbformat
from docutils import nodes
import pytest
from book_environment import sphinx_command

from conftest import CHAPTER_TOP, TINY_BOOK, book_conf_with, run_sphinx
from coursebook.audit.answer_leaks import audit_build, chapter_fingerprints
from coursebook.model.cell_notes import without_notes
from coursebook.model.notebooks import is_answer, notebook_to_myst, read_chapter
from coursebook.model.solutions import SolutionError
from coursebook.prepare.editions import ANSWER_CLASS, Edition, edition_notebook

TOP = CHAPTER_TOP

# Each solution holds words no other text does, for the audit to look for.
CHAPTER = TOP.format(
    extra="mystnb:\n  number_source_lines: true\n  execution_in_temp: true\n") + """
# Exercises

Gradients follow the chain rule {cite}`rumelhart1986`, as {numref}`fig-arrow` shows
and {prf:ref}`thm-chain` states.

:::{prf:theorem} Chain rule
:label: thm-chain
The derivative of $f(g(x))$ is $f'(g(x))\\,g'(x)$.
:::

:::{prf:proof}
The basalt orchard argument: a change of $x$ moves $g$, which moves $f$.
:::

```{figure} arrow.svg
:name: fig-arrow

An arrow from the loss back to the weights.
```

:::{exercise}
:label: ex-double
Double the tensor `torch.ones(2)`.
:::

::::{solution} ex-double
:class: dropdown
Multiply it by two: the quartzite heron answers the doubling exercise.

:::{prf:proof}
The obsidian ferry shows twice a tensor doubles each of its elements.
:::
::::

Now {numref}`ex-code` asks for code.

```{exercise}
:label: ex-code
Print the product of six and seven.
```

````{solution-start} ex-code
````

The saffron lighthouse explains why forty-two is printed.

```{code-cell} ipython3
print("gated answer", 6 * 7)
```

```{solution-end}
```

```{code-cell} ipython3
print("visible", 1 + 1)
```

```{code-cell} ipython3
_ = open("written-by-a-cell.txt", "w").write("a saved model")
```

```{bibliography}
```
"""

BIBLIOGRAPHY = """@article{rumelhart1986,
  author = {Rumelhart, David E. and Hinton, Geoffrey E. and Williams, Ronald J.},
  title = {Learning representations by back-propagating errors},
  journal = {Nature},
  volume = {323},
  pages = {533--536},
  year = {1986},
}
"""

ANSWER_WORDS = ("quartzite heron", "obsidian ferry", "saffron lighthouse", "gated answer")


def _cells(text: str):
    return [(cell.cell_type, is_answer(cell), cell.source) for cell in read_chapter(text).cells]


def test_a_solution_is_read_as_answer_cells_and_the_text_around_it_is_not():
    cells = _cells(CHAPTER)
    answers = [source for _, answer, source in cells if answer]
    assert answers[0].startswith("::::{solution} ex-double") and answers[0].endswith("::::")
    # The gated solution: its start, its prose, its code cell and its end, all answers.
    assert [kind for kind, answer, _ in cells if answer] == ["markdown"] * 3 + ["code", "markdown"]
    assert answers[1].startswith("````{solution-start}")
    assert answers[-1].startswith("```{solution-end}")
    visible = " ".join(source for _, answer, source in cells if not answer)
    assert "{exercise}" in visible and "print(\"visible\"" in visible
    assert not any(words in visible for words in ANSWER_WORDS)


def test_a_chapter_with_solutions_written_back_reads_the_same_cells():
    chapter = read_chapter(CHAPTER)
    again = read_chapter(notebook_to_myst(chapter))
    assert [(c.cell_type, c.source, dict(c.metadata)) for c in without_notes(again).cells] == [
        (c.cell_type, c.source, dict(c.metadata)) for c in without_notes(chapter).cells]


def test_the_instructor_boxes_a_solution_but_not_a_gated_solutions_start_and_end():
    instructor = edition_notebook(read_chapter(CHAPTER), Edition.INSTRUCTOR)
    boxed = [cell.source for cell in instructor.cells if f":class: {ANSWER_CLASS}" in cell.source]
    assert any("quartzite heron" in text for text in boxed)
    assert any("saffron lighthouse" in text for text in boxed)
    assert not any("solution-start" in text or "solution-end" in text for text in boxed)
    student = edition_notebook(read_chapter(CHAPTER), Edition.STUDENT)
    assert not any(words in cell.source for cell in student.cells for words in ANSWER_WORDS)


def test_the_student_edition_knows_the_names_its_left_out_answers_define():
    """What a cell students run cannot read: each name a solution's code binds (a def, an
    import's alias), at its line; the instructor's edition leaves none out."""
    from coursebook.prepare.chapters import edition_chapter

    chapter = CHAPTER.replace('print("gated answer", 6 * 7)', 'import math as m\ndef product():\n'
                              '    total = 6 * 7\n    return total\nsquares = [k * k for k in [1]]'
                              ).replace('print("visible", 1 + 1)',
                                        ':tags: [needs-answers]\nsix = product() / 7')
    line = chapter.splitlines().index("import math as m") + 1
    student = edition_chapter(chapter, "chapter.md", Edition.STUDENT, {}, "2.13.0")
    # A def's own names (`total`) and a comprehension's (`k`) are none (HR's F12); a cell the
    # student edition does not run, as it needs the answers, is left out too (HR's F18).
    assert student.left_out == {"m": line, "product": line + 1, "squares": line + 4,
                                "six": chapter.splitlines().index("six = product() / 7") + 1}
    assert edition_chapter(chapter, "chapter.md", Edition.INSTRUCTOR, {}, "2.13.0").left_out == {}


def test_a_cell_that_needs_the_answers_is_shown_not_run_in_the_student_edition():
    """MIT's lab 1 tests each blank the student fills in (`assert matrix.ndim == 2`) in the
    cell after it: without the answers the student edition stopped there. Tagged
    `needs-answers`, that edition shows it without running it, and never calls it verified
    (nor holds it to raising)."""
    from coursebook.prepare.chapters import edition_chapter
    from coursebook.verify.expectations import UNVERIFIED_KEY

    chapter = CHAPTER.replace('```{code-cell} ipython3\nprint("visible", 1 + 1)',
                              '```{code-cell} ipython3\n:tags: [needs-answers, raises-exception]\n'
                              ':raises: AssertionError\nprint("visible", 1 + 1)')

    def tested(edition: Edition):
        [cell] = [cell for cell in edition_chapter(chapter, "chapter.md", edition, {}, "2.13.0")
                  .notebook.cells if '"visible"' in cell.source]
        return cell.metadata["tags"], cell.metadata.get(UNVERIFIED_KEY), cell.metadata.get("raises")

    # Not run, it cannot raise: the error it teaches is no promise there (HR's F21).
    assert tested(Edition.STUDENT) == (["needs-answers", "skip-execution"],
                                       "not run: it needs the answers this edition lacks", None)
    assert tested(Edition.INSTRUCTOR) == (["needs-answers", "raises-exception"], None,
                                          "AssertionError")


def test_a_cell_its_author_tagged_skip_execution_is_never_called_verified():
    """Flax's lessons tag cells myst-nb's `skip-execution` (shown, never run): the build
    counted such a cell among the verified ("4 of 4"), its output the empty one expected."""
    from coursebook.prepare.chapters import edition_chapter
    from coursebook.verify.expectations import UNVERIFIED_KEY

    chapter = CHAPTER.replace('```{code-cell} ipython3\nprint("visible", 1 + 1)',
                              '```{code-cell} ipython3\n:tags: [skip-execution]\n'
                              'print("visible", 1 + 1)')
    for edition in Edition:
        [cell] = [cell for cell in edition_chapter(chapter, "chapter.md", edition, {}, "2.13.0")
                  .notebook.cells if '"visible"' in cell.source]
        assert cell.metadata.get(UNVERIFIED_KEY) == "not run: tagged `skip-execution`"


def test_a_role_of_a_domain_the_book_lacks_is_named_at_its_line():
    """NTNU's ODE lecture cross-referenced with sphinx-proof's `{prf:ref}` before the book
    added it; a role of a domain still missing (sphinxcontrib-matlabdomain's `{mat:func}`, in
    an exercise's text too): Sphinx says `unknown role name`, naming no file or line, and
    reads it as the standard domain's role. A role shown as code is none (HR's F15); one in a
    domain's directive is one; the chapter's `{prf:ref}` is none."""
    from coursebook.prepare.chapters import unknown_domain_roles

    chapter = CHAPTER.replace("Now {numref}`ex-code` asks for code.",
                              "Now {mat:func}`ex-code` asks, as {py:func}`print` does (the role "
                              "`` {mat:func}`x` `` quoted).\n\n```md\n{mat:func}`shown`\n```\n\n"
                              "Again,\n{mat:func}`ex-double`.\n\n:::{prf:remark}\nSee "
                              "{mat:func}`ex-code`.\n:::\n\nUse `a code\nspan` and\nthen "
                              "{mat:func}`ex-code`.").replace(
                                  "Double the tensor", "As {mat:func}`ex-code`, double the tensor")
    problems = unknown_domain_roles(read_chapter(chapter), "chapter.md",
                                    {"py", "std", "prf"}.__contains__)
    lines = chapter.splitlines()
    assert [lines[problem.line - 1][:12] for problem in problems] == [
        "As {mat:func", "Now {mat:fun", "{mat:func}`e", "See {mat:fun", "then {mat:fu"]
    assert str(problems[0]).startswith("chapter.md:") and "no extension of the book adds the " \
        "`mat` domain's roles: write it with MyST's own (`{ref}`, `{numref}`) or as text" \
        in str(problems[0]), str(problems[0])


@pytest.mark.parametrize("text, line", [
    ("```{solution-start} ex\n```\n\nNever closed.", "```{solution-start} ex"),
    ("::::{exercise}\n:label: ex\nAsk.\n\n:::{solution} ex\nInside.\n:::\n::::", "::::{exercise}"),
])
def test_a_solution_that_cannot_be_cut_out_is_named_and_read_as_an_answer(text, line):
    chapter = TOP.format(extra="") + "\n# T\n\n" + text + "\n"
    with pytest.raises(SolutionError) as raised:
        read_chapter(chapter, strict=True)
    assert chapter.splitlines()[raised.value.line - 1] == line
    # Read anyway (as the audits read every page): all of it is taken as an answer.
    cells = read_chapter(chapter).cells
    assert not is_answer(cells[0]) and all(is_answer(cell) for cell in cells[1:])


@pytest.mark.parametrize("setting, fix", [
    ("enable_extensions: [dollarmath, substitution]", "list amsmath, colon_fence, deflist too"),
    ("fence_as_directive: [solution]", "remove it"), ("commonmark_only: true", "remove it")])
def test_a_chapter_whose_myst_settings_read_its_markup_otherwise_is_refused_at_the_key(
        setting, fix):
    """myst-parser puts a chapter's `myst:` settings in the book's place for its page, while
    the book cuts answers by its own reading: without colon fences the instructor's box showed
    `:::{solution}` as text; a `fence_as_directive` solution reached the student page, its
    downloads and search index, the build and `make audit` passing."""
    from coursebook.prepare.chapters import edition_chapter

    chapter = CHAPTER.replace("mystnb:", f"myst:\n  {setting}\n  substitutions: {{a: b}}\n"
                              "mystnb:", 1)
    with pytest.raises(SolutionError) as raised:
        edition_chapter(chapter, "lesson.md", Edition.STUDENT, {}, "2.13.0")
    key = setting.split(":")[0]
    assert str(raised.value) == (
        f"lesson.md:{chapter.splitlines().index('  ' + setting) + 1}: top matter `myst: {key}` "
        "would have this page read its markup otherwise than the book, which leaves the answers "
        f"out of the student edition by its own reading: {fix}")
    kept = chapter.replace(setting, "enable_extensions: [colon_fence, dollarmath, amsmath, "
                           "deflist, substitution]")  # the book's and more: read alike
    assert edition_chapter(kept, "lesson.md", Edition.STUDENT, {}, "2.13.0").notebook.cells


@pytest.mark.parametrize("mode", ["off", "auto", "force", "inline"])
def test_a_chapter_that_sets_its_own_execution_mode_is_refused_at_the_key(mode):
    """MyST-NB's lessons document a page's own `mystnb: execution_mode`: with `off` (YAML's
    false unquoted), the chapter ran nothing and the build verified nothing, said nothing, and
    succeeded (rc 0, no summary line), its pages showing code without outputs."""
    from coursebook.prepare.chapters import edition_chapter

    chapter = CHAPTER.replace("mystnb:\n", f"mystnb:\n  execution_mode: {mode}\n", 1)
    with pytest.raises(SolutionError) as raised:
        edition_chapter(chapter, "lesson.md", Edition.STUDENT, {}, "2.13.0")
    assert str(raised.value) == (
        f"lesson.md:{chapter.splitlines().index(f'  execution_mode: {mode}') + 1}: top matter "
        "`mystnb: execution_mode` would have this chapter run otherwise than the book runs and "
        "verifies every chapter (its cache, each output compared): remove it")
    kept = chapter.replace(f"execution_mode: {mode}", "execution_mode: cache")  # the book's
    assert edition_chapter(kept, "lesson.md", Edition.STUDENT, {}, "2.13.0").notebook.cells


_STUB = ("def squares(n):\n    # *****START OF YOUR CODE*****\n    pass\n"
         "    # *****END OF YOUR CODE*****")


@pytest.mark.parametrize("cell, mark", [
    ("```{code-cell} ipython3\ndef squares(n):\n    ### BEGIN SOLUTION\n    return [i ** 2 for i "
     "in range(1, n + 1)]\n    ### END SOLUTION\n```", "    ### BEGIN SOLUTION"),  # nbgrader
    ("```{code-cell} ipython3\nassert squares(1) == [1]\n### BEGIN HIDDEN TESTS\nassert squares(2)"
     " == [1, 4]\n### END HIDDEN TESTS\n```", "### BEGIN HIDDEN TESTS"),
    ("Write the sum.\n\n### BEGIN SOLUTION\n$\\sum_i i^2$\n### END SOLUTION", "### BEGIN SOLUTION"),
    ("Write the sum.\n\n=== BEGIN MARK SCHEME ===\n1 mark for the sum\n=== END MARK SCHEME ===",
     "=== BEGIN MARK SCHEME ==="),  # nbgrader's task cell
    ("```{code-cell} ipython3\nx = 2 # SOLUTION\n```", "x = 2 # SOLUTION"),  # otter's
    ("```{code-cell} ipython3\n" + _STUB.replace("pass", "return [i * i for i in range(n)]")
     + "\n```", "    # *****START OF YOUR CODE*****"),  # CS231n's, a solution inside
    ("```{code-cell} ipython3\n" + _STUB.replace("pass", "#" * 75 + "\n    return [n]")
     + "\n```", "    # *****START OF YOUR CODE*****"),  # its banner: read once (it hung)
])
def test_a_graders_mark_of_a_solution_in_a_cell_students_see_stops_the_build_at_it(cell, mark):
    """A graded assignment copied in by hand (nbgrader's, otter-grader's, CS231n's source
    notebook): its solutions reached the student pages, downloads and search index, since
    nothing tagged them, and `make audit` found 0 leaks. The mark is refused at its line; in
    an `answer` cell, or around CS231n's stub (`pass`), it is allowed."""
    from coursebook.prepare.chapters import edition_chapter

    chapter = TOP.format(extra="") + "\n# T\n\n" + cell + "\n"
    with pytest.raises(SolutionError) as raised:
        edition_chapter(chapter, "lesson.md", Edition.STUDENT, {}, "2.13.0")
    line = chapter.splitlines().index(mark) + 1
    assert str(raised.value) == (
        f"lesson.md:{line}: `{mark.strip()}`, a grader's mark of a solution, in a cell the "
        "student edition shows: bring the lesson in with `make chapter FROM=`, which makes each "
        "marked solution an `answer` cell after the students' stub")
    answer = chapter.replace("ipython3\n", "ipython3\n:tags: [answer]\n").replace(
        "Write the sum.\n", "Write the sum.\n\n+++ {\"tags\": [\"answer\"]}\n")
    stub = TOP.format(extra="") + "\n# T\n\n```{code-cell} ipython3\n" + _STUB + "\n```\n"
    assert read_chapter(answer, strict=True).cells and read_chapter(stub, strict=True).cells


def test_a_cell_nbgrader_marks_as_a_solution_stops_the_build_at_it():
    """nbgrader's written answers carry no mark in their text: its metadata says so."""
    notebook = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("What does `f` compute?"),
        nbformat.v4.new_markdown_cell("The Fibonacci numbers.", metadata={
            "nbgrader": {"solution": True, "grade": True, "points": 1}})])
    with pytest.raises(SolutionError) as raised:
        read_chapter(nbformat.writes(notebook), strict=True)
    assert raised.value.line == 2 and raised.value.message.startswith(
        "nbgrader's `solution: true`, a grader's mark of a solution, in a cell the student")


def _build(src: Path, conf: Path, out: Path, *tags: str) -> subprocess.CompletedProcess:
    command = sphinx_command(src, out / "html", out / "doctrees", tags=tags, conf=conf,
                             settings={"coursebook_accept_outputs": "1"})
    return run_sphinx(command)


def _book_with(tmp_path: Path, chapter: str) -> tuple[Path, Path]:
    """The tiny book with ``chapter`` as its page exercises.md: its sources and conf folder."""
    src = tmp_path / "src"
    shutil.copytree(TINY_BOOK, src)
    (src / "exercises.md").write_text(chapter, encoding="utf8")
    (src / "arrow.svg").write_text('<svg xmlns="http://www.w3.org/2000/svg" width="40" '
                                   'height="10"><path d="M0 5h35" stroke="black"/></svg>')
    (src / "index.md").write_text((src / "index.md").read_text().replace(
        "chapter\n", "chapter\nexercises\n"))
    (tmp_path / "refs.bib").write_text(BIBLIOGRAPHY)
    return src, book_conf_with(tmp_path / "conf",
                               f"bibtex_bibfiles = [{str(tmp_path / 'refs.bib')!r}]")


@pytest.mark.slow
def test_exercises_citations_and_numbered_figures_build_and_no_solution_reaches_students(
        tmp_path):
    src, conf = _book_with(tmp_path, CHAPTER)
    # Accepting writes the expected outputs the new chapter lacks; the student edition first.
    builds = {edition: _build(src, conf, tmp_path / edition, *tags)
              for edition, tags in (("student", ()), ("instructor", ("instructor",)))}
    for edition, build in builds.items():
        assert build.returncode == 0, f"{edition}:\n{(build.stdout + build.stderr)[-3000:]}"
    student = (tmp_path / "student" / "html" / "exercises.html").read_text()
    instructor = (tmp_path / "instructor" / "html" / "exercises.html").read_text()
    # {cite}, {numref} and {prf:ref} resolved: the citation's label, the figure's and the
    # theorem's numbers; a proof outside the answers is the lecture's (both editions).
    for edition, page in (("student", student), ("instructor", instructor)):
        assert "Rumelhart" in page and "Fig. 1" in page and "Exercise 2" in page
        assert page.count("Theorem 1") == 2 and "basalt orchard" in page
        assert not list((tmp_path / edition / "html").glob("prf-*.html"))  # no Proof Index
        # The download: the theorem and its proof as the page shows them, no label.
        download = (tmp_path / edition / "html" / "_sources" / "exercises.ipynb").read_text()
        assert "Theorem 1 (Chain rule)" in download and "Theorem 1 states" in download
        assert "*Proof.* The basalt orchard" in download and "thm-chain" not in download
        assert "linenos" in page  # the chapter's own number_source_lines
    # Its own execution_in_temp: the file a cell wrote is not left in the book's sources.
    assert not list(src.rglob("written-by-a-cell.txt"))
    # No solution anywhere in the student edition: pages, sources, notebooks, search index.
    assert audit_build(tmp_path / "student" / "html", chapter_fingerprints(src)) == []
    built = " ".join(path.read_text(errors="replace")
                     for path in (tmp_path / "student" / "html").rglob("*") if path.is_file())
    assert not any(words in built for words in ANSWER_WORDS)
    # The instructor's: every solution, each boxed as an answer.
    assert all(words in instructor for words in ANSWER_WORDS)
    assert instructor.count(ANSWER_CLASS) >= 2


@pytest.mark.slow
def test_a_proof_reference_to_what_only_an_answer_holds_stops_the_student_edition_at_its_line(
        tmp_path):
    """sphinx-proof's own warning named `exercises.rst`, and no line (a parallel read, the
    book's, stopped at the first `{prf:...}` until the book gave its domain a merge)."""
    chapter = CHAPTER.replace(":::{prf:proof}\nThe obsidian", ":::{prf:lemma}\n:label: lem-twice\n"
                              "Twice is a sum.\n:::\n\n:::{prf:proof}\nThe obsidian").replace(
        "Now {numref}`ex-code` asks", "After {prf:ref}`lem-twice`, {numref}`ex-code` asks").replace(
        "Print the product", "As {prf:ref}`lem-twice`: print the product")
    src, conf = _book_with(tmp_path, chapter)
    build = _build(src, conf, tmp_path / "student")
    lines = chapter.splitlines()
    assert build.returncode != 0
    for text in ("After {prf:ref}`lem-twice`, {numref}`ex-code` asks for code.",
                 "As {prf:ref}`lem-twice`: print the product of six and seven."):  # each place
        assert (f"exercises.md:{lines.index(text) + 1}: ERROR: {{prf:ref}}`lem-twice`: nothing "
                "in this edition is labelled `lem-twice` (a typo, another lecture's label, or "
                "one in an answer, which the student edition lacks)" in build.stderr), (
                    build.stderr[-3000:])


def test_a_gated_solution_written_with_a_space_before_its_brace_is_one_too():
    """`::: {solution-start} label`, as some courses write it, is the same marker."""
    chapter = TOP.format(extra="") + """
# T

::: {solution-start} ex-space
:class: dropdown
:::

The umber kestrel answer.

::: {solution-end}
:::

After.
"""
    cells = read_chapter(chapter).cells
    assert [is_answer(cell) for cell in cells] == [False, True, True, True, False]
    instructor = edition_notebook(read_chapter(chapter), Edition.INSTRUCTOR)
    boxed = [cell.source for cell in instructor.cells if f":class: {ANSWER_CLASS}" in cell.source]
    assert len(boxed) == 1 and "umber kestrel" in boxed[0]


def test_a_rule_inside_a_block_is_drawn_not_refused():
    """nbdev's show_doc prints Markdown that opens with a rule (`---`): in the cell's output
    block docutils refused it ("Transition must be child of <document> or <section>"), which
    stopped the build at the cell; a rule in a note's text too. The page draws it."""
    from docutils.frontend import get_default_settings
    from docutils.parsers.rst import Parser
    from docutils.transforms.misc import Transitions
    from docutils.utils import new_document

    from coursebook.render.html_pages import NestedRules

    document = new_document("chapter.md", get_default_settings(Parser))
    output = nodes.container("", nodes.transition(), nodes.paragraph("", "say_hello"))
    document += nodes.section("", nodes.title("", "Directives"), nodes.paragraph("", "A"),
                              nodes.transition(), nodes.paragraph("", "B"), output)
    for transform in (NestedRules, Transitions):
        transform(document).apply()
    assert not list(document.findall(nodes.system_message))
    assert [rule.astext() for rule in document.findall(nodes.raw)] == ["<hr>"]
    assert len(list(document.findall(nodes.transition))) == 1  # a section's own: as it was
