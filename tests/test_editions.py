"""The editions are chosen on the notebook, before execution, from the `answer` tag."""

import re
from pathlib import Path

import nbformat
import pytest
from jupyter_cache.cache.main import JupyterCacheBase

from conftest import BOOK, TINY_BOOK, sphinx_build
from test_faults import CRASH_SIGNS
from coursebook.answer_checks.prepare import CHECK_TAG, NOTE_TAG, SETUP_TAG
from coursebook.execute.shared_cache import key_execution_versions
from coursebook.model.cell_notes import without_notes
from coursebook.model.faults import BookError
from coursebook.model.notebooks import is_answer, is_chapter_source, notebook_to_myst, read_chapter
from coursebook.model.solutions import without_comments
from coursebook.prepare.chapters import edition_chapter
from coursebook.prepare.editions import ANSWER_CLASS, Edition, edition_notebook

PT01 = BOOK / "pt01.md"
CHAPTERS = [path for path in sorted(BOOK.glob("*.md"))
            if is_chapter_source(path.read_text(encoding="utf8"))]


def _cells(notebook):
    """Each cell as it executes: its type, source and metadata (the book's notes aside)."""
    return [(cell.cell_type, cell.source, dict(cell.metadata))
            for cell in without_notes(notebook).cells]


def _cache_hash(notebook) -> str:
    return JupyterCacheBase.create_hashed_notebook(None, notebook)[1]


def test_the_book_has_chapters_with_answers():
    assert CHAPTERS, "no chapter notebook found under book/"
    for path in CHAPTERS:
        if path.stem.startswith("pt"):
            assert any(is_answer(c) for c in read_chapter(path.read_text()).cells), path


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_writing_a_chapter_back_reads_the_same_cells(path):
    chapter = read_chapter(path.read_text(encoding="utf8"))
    assert _cells(read_chapter(notebook_to_myst(chapter))) == _cells(chapter)


def test_a_code_cell_after_an_html_block_is_not_read_into_it():
    # The page's text puts a code cell's fence right under the text above it where it
    # can; an HTML block runs on to the next blank line and would swallow the cell.
    chapter = read_chapter("---\nkernelspec:\n  name: python3\n  display_name: Python 3\n---\n"
                           "\n# T\n\n<div class=\"note\">\nSay it</div>\n\n"
                           "```{code-cell} ipython3\nx = 1\n```\n")
    assert _cells(read_chapter(notebook_to_myst(chapter))) == _cells(chapter)


def test_a_cell_with_several_options_is_written_one_option_a_line_and_reads_back_the_same():
    """myst-nb's form, `:name: value` a line; a key no option may have: all as one mapping."""
    chapter = read_chapter("---\nkernelspec:\n  name: python3\n  display_name: Python 3\n---\n"
                           "\n# T\n\n```{code-cell} ipython3\n:{\"tags\": [a, b], \"raises\": E}\n"
                           "\n:x\n```\n\n"
                           "```{code-cell} ipython3\n:{\"tags\": [c], \"a b\": {k: 1}}\ny\n```\n")
    text = notebook_to_myst(chapter)
    assert ':tags: ["a", "b"]\n:raises: "E"\n\n:x\n' in text
    assert ':{"tags": ["c"], "a b": {"k": 1}}\ny\n' in text
    assert _cells(read_chapter(text)) == _cells(chapter)


@pytest.mark.parametrize("blank", ["", "\n", "\n\n"])
def test_a_cell_with_options_that_ends_in_blank_lines_reads_back_the_same(blank):
    # The reader dropped one blank line at the end of a cell with options on each read:
    # the cache lookup of such a chapter missed and its outputs went uncompared.
    chapter = read_chapter("---\nkernelspec:\n  name: python3\n  display_name: Python 3\n---\n"
                           "\n# T\n\n```{code-cell} ipython3\n:tags: [hide-input]\n\n"
                           f"x = 1\nprint(x)\n{blank}\n```\n\n```{{code-cell}} ipython3\n"
                           f"\n\ny = 2{blank}\n```\n")
    assert _cells(read_chapter(notebook_to_myst(chapter))) == _cells(chapter)


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_student_edition_drops_every_answer_cell_and_comment_and_nothing_else(path):
    chapter = read_chapter(path.read_text(encoding="utf8"))
    student = edition_notebook(chapter, Edition.STUDENT)
    assert not any(is_answer(cell) for cell in student.cells)
    # The answers' checks (coursebook.answer_checks.prepare) are the only cells it adds.
    added = {CHECK_TAG, NOTE_TAG, SETUP_TAG}
    assert [c for c, cell in zip(_cells(student), student.cells)
            if not added & set(cell.metadata.get("tags", []))] == [
        (kind, without_comments(source) if kind == "markdown" else source, metadata)
        for (kind, source, metadata), cell in zip(_cells(chapter), chapter.cells)
        if not is_answer(cell) and (kind != "markdown" or without_comments(source).strip())]


def test_student_edition_drops_comments_and_keeps_each_line():
    """An instructor's note in a comment, HTML's or MyST's `%` line, would reach the student's
    notebook (jupyter_execute), or the page's HTML and sources; code and math showing one
    stay, and so do a `%` not opening a line and IPython's magics (code cells)."""
    text = ("Intro <!-- note one -->, more.\n\n<!-- note\ntwo -->\n% source: https://a.b\n\n"
            ":::{note}\nBody <!-- note three -->\n% note four\n:::\n\n```html\n<!-- shown -->\n"
            "% shown\n```\n\n> A quote\n> % note five\n\n$$\nx % LaTeX's\n% LaTeX's\n$$\n\n"
            "`7 % 3` is 1, 50% of 2\n% note six")
    chapter = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(text),
                                              nbformat.v4.new_code_cell("%%timeit\n% 1")])
    student = [cell.source for cell in edition_notebook(chapter, Edition.STUDENT).cells]
    assert student == [("Intro , more.\n\n\n\n\n\n:::{note}\nBody \n\n:::\n\n```html\n"
                        "<!-- shown -->\n% shown\n```\n\n> A quote\n> \n\n$$\nx % LaTeX's\n"
                        "% LaTeX's\n$$\n\n`7 % 3` is 1, 50% of 2\n"), "%%timeit\n% 1"]
    assert edition_notebook(chapter, Edition.INSTRUCTOR).cells[0].source == text


def test_a_comment_in_a_code_span_stays_and_a_cell_of_a_comment_alone_goes():
    """HR's F9 of 2737357: a code span teaching the syntax lost its comment; HJ's: a cell
    holding a comment alone became empty, which MyST writes as no cell (48 cells read as 47)."""
    taught = "Hide a line with `<!-- a note -->` <!-- not this -->: ``<!--`` opens it."
    chapter = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# T"), nbformat.v4.new_code_cell("1"),
        nbformat.v4.new_markdown_cell("<!-- a note\nfor instructors -->"),
        nbformat.v4.new_code_cell("2"), nbformat.v4.new_markdown_cell(taught)])
    student = edition_notebook(chapter, Edition.STUDENT)
    assert _cells(read_chapter(notebook_to_myst(student))) == _cells(student)
    assert [cell.source for cell in student.cells] == [
        "# T", "1", "2", "Hide a line with `<!-- a note -->` : ``<!--`` opens it."]


def test_instructor_edition_boxes_markdown_answers_and_keeps_code_untouched():
    chapter = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("## Answers\n\nBecause of broadcasting.",
                                      metadata={"tags": ["answer"]}),
        nbformat.v4.new_code_cell("x = 1", metadata={"tags": ["answer"]}),
    ])
    instructor = edition_notebook(chapter, Edition.INSTRUCTOR)
    boxed = instructor.cells[0].source
    assert boxed.startswith("## Answers\n")  # a heading may not sit inside an admonition
    assert "{admonition} Instructor answer" in boxed and f":class: {ANSWER_CLASS}" in boxed
    assert "Because of broadcasting." in boxed
    assert instructor.cells[1].source == "x = 1"


def test_the_editions_are_separate_cache_entries():
    chapter = read_chapter(PT01.read_text(encoding="utf8"))
    student = edition_notebook(chapter, Edition.STUDENT)
    instructor = edition_notebook(chapter, Edition.INSTRUCTOR)
    assert _cache_hash(student) != _cache_hash(instructor)


def test_a_prose_edit_keeps_the_cache_key_and_a_torch_upgrade_changes_it():
    chapter = read_chapter(PT01.read_text(encoding="utf8"))
    key_execution_versions(chapter, {"torch": "2.13.0"})
    key = _cache_hash(chapter)
    edited = read_chapter(PT01.read_text(encoding="utf8"))
    next(c for c in edited.cells if c.cell_type == "markdown").source += " More prose."
    key_execution_versions(edited, {"torch": "2.13.0"})
    assert _cache_hash(edited) == key
    key_execution_versions(edited, {"torch": "2.14.0"})
    assert _cache_hash(edited) != key


def test_an_upgrade_of_a_package_the_chapter_declares_changes_its_cache_key(monkeypatch):
    """A JAX lesson declares `coursebook: {packages: [jax]}`: with another jax installed, the
    build said "14 of 14 code cells verified" of the old jax's cached run, running nothing. A
    blank before the name, which the build's check allows, ended in a traceback (HR's F2)."""
    chapter = read_chapter(PT01.read_text(encoding="utf8"))
    chapter.metadata["coursebook"] = {"packages": [" pytest>=1"]}  # as the build's check reads it
    key_execution_versions(chapter, {"torch": "2.13.0"})
    key = _cache_hash(chapter)
    monkeypatch.setattr("coursebook.prepare.chapter_packages.installed_version",
                        lambda name: "0.0.1" if name == "pytest" else "")
    key_execution_versions(chapter, {"torch": "2.13.0"})
    assert _cache_hash(chapter) != key


def test_a_chapter_notes_what_else_makes_its_text(tmp_path):
    """Sphinx reads a chapter again when one of its inputs changes: every exhibit, the
    machine kinds, the files its cells read (`coursebook: {reads: [...]}`, as prepared), and
    for a recorded chapter its environments and recordings."""
    from types import SimpleNamespace

    from coursebook.config import BookConfig
    from coursebook.prepare.chapters import PreparedChapter, _note_inputs

    (tmp_path / "exhibits" / "wing").mkdir(parents=True)
    for name in ("wing.toml", "01-one.toml"):
        (tmp_path / "exhibits" / "wing" / name).write_text("x = 1\n")
    kinds = tmp_path / "machine-kinds.toml"
    kinds.write_text('[[kind]]\nname = "cpu"\nlabel = "CPU"\nplatform = "cpu"\nprobe = "print()"\n'
                     "stand_in = true\n")
    config = BookConfig(exhibits_dir=str(tmp_path / "exhibits"), machine_kinds_file=str(kinds),
                        recordings_dir=str(tmp_path / "recordings"))
    noted: list[Path] = []
    app = SimpleNamespace(env=SimpleNamespace(
        note_dependency=lambda path: noted.append(Path(path))))
    _note_inputs(app, config, None)
    assert set(noted) == {kinds, *(tmp_path / "exhibits" / "wing").glob("*.toml")}
    noted.clear()
    recorded = nbformat.v4.new_notebook(metadata={"coursebook": {"recording": "tiny"}})
    (tmp_path / "recordings").mkdir()
    (tmp_path / "recordings" / "tiny-cpu.ipynb").write_text("{}")
    read = tmp_path / "data" / "names.txt"
    _note_inputs(app, config, PreparedChapter(recorded, reads={"data/names.txt": read}))
    assert {tmp_path / "recordings" / "tiny-environments.toml",
            tmp_path / "recordings" / "tiny-cpu.ipynb", read} <= set(noted)


def test_a_chapter_is_read_again_when_its_verified_versions_change(tmp_path):
    """Its "verified on" line lists the versions with expected outputs: a version accepted
    later (a new folder) reads the page again; nothing else does."""
    from types import SimpleNamespace

    from conftest import sphinx_config
    from coursebook.config import BookConfig
    from coursebook.page_state import PageState, PageStateCollector, page_states

    (tmp_path / "expected" / "torch-2.13.0").mkdir(parents=True)
    (tmp_path / "expected" / "torch-2.13.0" / "pt01.txt").write_text("")
    app = SimpleNamespace(srcdir=tmp_path, config=sphinx_config(BookConfig()))
    env = SimpleNamespace()
    page_states(env)["pt01"] = PageState(verified_versions=["2.13.0"])
    collector = PageStateCollector()
    assert collector.get_outdated_docs(app, env, set(), set(), set()) == []
    (tmp_path / "expected" / "torch-2.14.1").mkdir()
    (tmp_path / "expected" / "torch-2.14.1" / "pt01.txt").write_text("")
    assert collector.get_outdated_docs(app, env, set(), set(), set()) == ["pt01"]


@pytest.mark.parametrize("chapters, pages", [(2, 4), (3, 4), (1, 6), (2, 5)])
def test_each_reader_reads_its_executing_chapter_last(tmp_path, chapters, pages):
    """With -j 2, chapters that execute are spread over the readers and read last in
    their runs (their kernels start while the pages before them are read)."""
    from types import SimpleNamespace

    from sphinx.util.parallel import make_chunks

    from myst_nb.core.config import NbParserConfig

    from coursebook.execute.kernel_pool import plan_reading
    from coursebook.execute.kernel_pool import executes_when_read

    settings = NbParserConfig(execution_mode="cache")

    chapter_text = (BOOK / "pt01.md").read_text()
    for index in range(chapters):
        # Named to sort after the pages: a spread that ignores which pages execute then
        # puts pages, not chapters, at the runs' ends.
        (tmp_path / f"zchapter{index}.md").write_text(chapter_text)
    for index in range(pages):
        (tmp_path / f"page{index}.md").write_text(f"# Page {index}\n")
    docnames = sorted(path.stem for path in tmp_path.glob("*.md"))
    env = SimpleNamespace(doc2path=lambda docname: tmp_path / f"{docname}.md",
                          mystnb_config=settings)
    plan_reading(SimpleNamespace(parallel=2), env, docnames)

    runs = [[docnames[i] for i in chunk] for chunk in make_chunks(list(range(len(docnames))), 2)]
    executing = [[executes_when_read(tmp_path / f"{d}.md", settings) for d in run] for run in runs]
    assert sum(map(sum, executing)) == chapters
    for run in executing:
        count = sum(run)
        assert count <= -(-chapters // len(runs))  # spread: no run has more than its share
        assert run[len(run) - count:] == [True] * count  # and read after the other pages


@pytest.mark.parametrize("reads, message", [
    ("names.txt", "field coursebook.reads: is 'names.txt' (make it a list of strings)"),
    ("[2024]", "field coursebook.reads[0]: is 2024 (make it a string)"),
    ("[missing.txt]", "top matter 'coursebook: reads' is ['missing.txt']: it must list the files "
     "beside the chapter that its cells read (e.g. [names.txt]), each of them there: correct the "
     "list, or put the file beside the chapter")])
def test_a_files_list_that_is_no_list_of_files_beside_the_chapter_is_one_line(tmp_path, reads,
                                                                               message):
    """`coursebook: {reads: [...]}` keys a chapter's run by the files its cells read (HR's F23):
    a string was read letter by letter, each letter a missing file Sphinx then took for a
    changed one on every build; a number ended in a traceback (`PosixPath / int`)."""
    (tmp_path / "names.txt").write_text("emma\n")
    text = (f"---\njupytext:\n  text_representation: {{format_name: myst}}\nkernelspec: "
            f"{{name: python3}}\ncoursebook: {{reads: {reads}}}\n---\n# T\n\n```{{code-cell}} "
            "ipython3\nprint(1)\n```\n")
    chapter = str(tmp_path / "lab.md")
    with pytest.raises(BookError) as raised:
        edition_chapter(text, chapter, Edition.STUDENT, {}, "2.13.0")
    assert (str(raised.value.path), raised.value.line) == (chapter, 5)  # the `reads` line
    assert raised.value.message == message  # the key, what is wrong, the fix
    listed = text.replace(f"reads: {reads}", "reads: [names.txt]")
    assert edition_chapter(listed, chapter, Edition.STUDENT, {}, "2.13.0").reads == {
        "names.txt": tmp_path / "names.txt"}  # checked, as the build notes and keys them


def test_a_build_that_turns_colon_fences_off_still_cuts_a_colon_fenced_solution(monkeypatch):
    """The book reads Markdown with the build's MyST settings, and always with colon fences and
    math: a `:::{solution}` the parser missed would reach the student edition as text."""
    from types import SimpleNamespace

    from myst_parser.config.main import MdParserConfig

    from coursebook.model import solutions

    monkeypatch.setattr(solutions, "_BOOK", [])
    app = SimpleNamespace(env=SimpleNamespace(
        myst_config=MdParserConfig(enable_extensions={"deflist"})))
    solutions.use_book_markdown(app)
    types = [token.type for token in solutions.markdown_parser().parse(
        ":::{solution} ex-1\nThe answer.\n:::\n\nTerm\n: its definition\n")]
    assert "colon_fence" in types and "dl_open" in types


@pytest.mark.slow
def test_a_book_that_copies_no_sources_publishes_no_raw_chapter(tiny_book, cache_copy, tmp_path):
    """With `html_copy_source = False` Sphinx copies no page file, and the book then writes no
    edition's .md over one either: the theme's source link the book set made Sphinx copy the
    chapter's raw file, answers and all, into the student edition's _sources (hb's find)."""
    student = sphinx_build(tiny_book, tmp_path / "student", cache_copy,
                           settings={"html_copy_source": "0"})
    assert student.returncode == 0, student.log[-3000:]
    published = [path for path in (tmp_path / "student" / "html").rglob("*")
                 if path.is_file() and "tiny answer" in path.read_text(errors="replace")]
    assert not published, published


@pytest.mark.slow
def test_a_solution_the_book_cannot_cut_out_stops_the_student_build_at_it(tiny_book, cache_copy,
                                                                          tmp_path):
    """Markup the book does not read for answers (an included file, an eval-rst block, a
    substitution) or a page that is no chapter may still hold a solution: on a student page
    it stops the build, at it."""
    chapter = tiny_book / "chapter.md"
    (tiny_book / "answer.txt").write_text(":::{solution} ex-tiny\nIncluded answer 4242.\n:::\n")
    chapter.write_text(chapter.read_text().replace("kernelspec:", (
        "myst:\n  enable_extensions: [colon_fence, dollarmath, amsmath, deflist, substitution]\n"
        "  substitutions:\n    sol: |\n      :::{solution} ex-tiny\n      Substituted 4444.\n"
        "      :::\nkernelspec:")).replace("A worked example.", (
            ":::{exercise}\n:label: ex-tiny\nWhat is it?\n:::\n\n```{include} answer.txt\n```"
            "\n\n```{eval-rst}\n.. solution:: ex-tiny\n\n   A reST answer 4343.\n```\n\n"
            "{{ sol }}")))
    index = tiny_book / "index.md"  # a page that is no chapter: nothing is cut out of it
    index.write_text(index.read_text() + "\n:::{exercise}\n:label: ex-page\nWhy?\n:::\n\n"
                     ":::{solution} ex-page\nA page's answer 4545.\n:::\n")
    message = "ERROR: a solution would show on this page of the student edition: the book cuts "
    student = sphinx_build(tiny_book, tmp_path / "student", cache_copy)
    assert student.returncode != 0 and student.log.count(message) == 4, student.log[-3000:]
    assert "answer.txt:2: " + message + "out a `{solution}`" in student.log, student.log[-3000:]
    assert f"index.md:13: {message}solutions out of chapters only" in student.log
    assert not any(sign in student.log for sign in CRASH_SIGNS), student.log[-3000:]
    instructor = sphinx_build(tiny_book, tmp_path / "instructor", cache_copy, "instructor")
    assert instructor.returncode == 0, instructor.log[-3000:]


@pytest.mark.slow
@pytest.mark.parametrize("shown", [" {download}`a file <chapter.md>`.",
                                   "\n\n```{literalinclude} chapter.md\n:language: md\n```\n",
                                   " {download}`the versions <torch-versions.md>`."])
def test_a_download_of_a_page_as_written_stops_the_student_build_at_it(tiny_book, cache_copy,
                                                                        tmp_path, shown):
    """MyST-NB's glue lesson offers itself, `{download}`glue.md``: brought in, the student
    edition copied the chapter as written, its answer cells and all, into _downloads/, and
    built (only `make audit` found it); a `{literalinclude}` of it put them on the page itself
    (HR's G13); so did a download of a page the edition leaves out (the instructor's
    appendix: HR's G9). Each stops that build at its line; the instructor's builds."""
    (tiny_book / "torch-versions.md").write_text("---\norphan: true\n---\n# Versions\n")
    chapter = tiny_book / "chapter.md"
    chapter.write_text(chapter.read_text().replace("A worked example.",
                                                   "A worked example." + shown))
    student = sphinx_build(tiny_book, tmp_path / "student", cache_copy)
    assert student.returncode != 0, student.log[-3000:]
    line = 20 if shown.startswith("\n") else 18  # the directive's, below the paragraph
    page = "torch-versions.md" if "versions" in shown else "chapter.md"
    # A page this edition leaves out has no page to link (HR's G9, its wording).
    fix = ("take it out: the student edition leaves that page out, so it has no page to link"
           if page == "torch-versions.md" else "link the page instead (its own download")
    assert f"chapter.md:{line}: ERROR: this gives students `{page}`, a page of the book as " \
        f"written, its answers and `{{only}} instructor` blocks included: {fix}" in student.log, \
        student.log[-3000:]
    instructor = sphinx_build(tiny_book, tmp_path / "instructor", cache_copy, "instructor")
    assert instructor.returncode == 0, instructor.log[-3000:]


PNG = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000"
                    "1f15c4890000000d49444154789c6360f8cfc0f01f0005fe02fe0dd5a5bc0000000049454e44ae426082")


@pytest.mark.slow
def test_a_file_only_an_answer_names_stops_the_student_build_where_a_page_shows_it(
        tiny_book, tmp_path):
    """What an answer's run left beside the chapter (the figure it saved, the module its
    `%%writefile` wrote; the instructor's build and the author's run leave them) was on the
    student page: build passing, `make audit` finding nothing. Data it reads is the chapter's
    when listed in `coursebook: reads`."""
    chapter = tiny_book / "chapter.md"
    (tiny_book / "fit.png").write_bytes(PNG)
    (tiny_book / "solution.py").write_text("def solve():\n    return 42\n")
    (tiny_book / "data.csv").write_text("a,b\n1,2\n")
    text = chapter.read_text().replace("kernelspec:", "coursebook:\n  reads: [data.csv]\n"
                                       "kernelspec:").replace("A worked example.", (
        "A worked example.\n\n![The fit](fit.png)\n\n```{literalinclude} solution.py\n```\n\n"
        "Its {download}`data <data.csv>`.")).replace('print("tiny answer:", tiny_answer_value)', (
            'print("tiny answer:", tiny_answer_value)\nopen("data.csv").read()\n'
            'import matplotlib.pyplot as plt\nplt.savefig("fit.png")\n```\n\n'
            "```{code-cell} ipython3\n:tags: [answer]\n%%writefile solution.py\ndef solve():\n"
            "    return 42\n```\n\n```{code-cell} ipython3\nimport solution\nsolution.solve()"))
    chapter.write_text(text)
    lines = text.splitlines()
    student = sphinx_build(tiny_book, tmp_path / "student", tmp_path / "cache")
    message = ("ERROR: the student edition shows `{}`, which only an answer's code names "
               "(chapter.md:{})")
    assert student.returncode != 0 and student.log.count("student edition shows") == 2, \
        student.log[-3000:]
    assert "this gives students" not in student.log  # solution.py is a module, no page
    for name, shown, named in (("fit.png", "![The fit](fit.png)", 'plt.savefig("fit.png")'),
                               ("solution.py", "```{literalinclude} solution.py",
                                "%%writefile solution.py")):
        assert (f"chapter.md:{lines.index(shown) + 1}: "
                + message.format(name, lines.index(named) + 1)) in student.log, student.log[-3000:]
    # A cell students run that reads it (a run of the answer left it) is told to need answers.
    assert (f"chapter.md:{lines.index('import solution') + 1}: ERROR: code cell `import "
            "solution` reads `solution.py`, which only an answer's code names (line "
            f"{lines.index('%%writefile solution.py') + 1}): what a run of it left there, which "
            "this edition does not run: tag this cell `needs-answers`") in student.log, \
        student.log[-3000:]
    assert not any(sign in student.log for sign in CRASH_SIGNS), student.log[-3000:]


ONLY_HEADING = ("````{only} instructor\nAfter the lab.\n\n## Instructor notes\n\nStack along "
                "dimension one.\n````")


@pytest.mark.parametrize("around", ["{}", "`````{{only}} html\n{}\n`````",
                                    "::::{{note}}\n{}\n::::"])
def test_a_heading_inside_an_only_block_is_refused_at_its_line(around):
    """MyST places a heading's section outside an `{only}` block, the text after it too: an
    `{only} instructor` block with a heading was on every student page and in the search
    index (and the sidebar of every page), build and `make audit` passing; so was one inside
    another block (an `{only} html`, a `{note}`: HR's G16). A code block's `# comment` in it
    is no heading."""
    text = (TINY_BOOK / "chapter.md").read_text().replace("A worked example.",
                                                          around.format(ONLY_HEADING))
    read_chapter(text.replace("## Instructor notes", "```{code-block} python\n# a comment\n```"),
                 strict=True)
    with pytest.raises(BookError) as raised:
        read_chapter(text, strict=True)
    assert raised.value.line == text.splitlines().index("## Instructor notes") + 1
    assert raised.value.message.startswith("a heading inside an `{only}` block: MyST places its "
                                           "section outside the block, so every edition shows")


@pytest.mark.slow
@pytest.mark.parametrize("page", ["chapter", "index"])
def test_a_heading_inside_an_only_block_stops_the_build_at_it(tiny_book, cache_copy, tmp_path,
                                                              page):
    """In a chapter, and on a page that is no chapter (the home page's notes for instructors)."""
    source = tiny_book / f"{page}.md"
    text = source.read_text()
    text = (text.replace("A worked example.", f"A worked example.\n\n{ONLY_HEADING}")
            if page == "chapter" else f"{text}\n{ONLY_HEADING}\n")
    source.write_text(text)
    student = sphinx_build(tiny_book, tmp_path / "student", cache_copy)
    line = text.splitlines().index("## Instructor notes") + 1
    assert student.returncode != 0 and f"{page}.md:{line}: ERROR: a heading inside an " \
        "`{only}` block" in student.log, student.log[-3000:]
    assert "Stack along" not in (tmp_path / "student" / "html" / f"{page}.html").read_text()


def test_the_student_edition_leaves_out_the_only_blocks_its_build_does_not_show():
    """At any depth (in a `{note}`), each line kept (its place); a block shown stays."""
    from sphinx.util.tags import Tags

    text = ("A.\n\n::::{note}\n:::{only} instructor\nThe class finds 42.\n:::\n::::\n\n"
            "```{only} html\nOpen it.\n```\n")
    chapter = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(text)])
    [cell] = edition_notebook(chapter, Edition.STUDENT, shown=Tags(["html"]).eval_condition).cells
    assert cell.source == text.replace(":::{only} instructor\nThe class finds 42.\n:::", "\n\n")
    [cell] = edition_notebook(chapter, Edition.INSTRUCTOR, shown=lambda _: False).cells
    assert cell.source == text  # Sphinx leaves them out of its pages


@pytest.mark.parametrize("pasted", ["{glue:}`tiny_glued`", "{glue:text}`tiny_glued:.1f`",
                                    "\n```{glue:figure} tiny_glued\n```\n"])
def test_a_student_page_pasting_what_only_an_answer_glues_is_refused_at_it(pasted):
    """The student edition runs no answer: myst-nb stopped its build at a bare "No key
    'tiny_glued' found in glue data"; it would have pasted the answer's value for students."""
    text = (TINY_BOOK / "chapter.md").read_text().replace("A worked example.", (
        f"A worked example: {pasted}")).replace('print("tiny answer:", tiny_answer_value)', (
            'print("tiny answer:", tiny_answer_value)\nfrom myst_nb import glue\n'
            'glue("tiny_glued", tiny_answer_value * 1000 + 777, display=False)'))
    from coursebook.prepare.chapters import refuse_pasted_answers

    refuse_pasted_answers(edition_chapter(text, "chapter.md", Edition.INSTRUCTOR, {}, "2.13.0"),
                          "chapter.md")
    with pytest.raises(BookError) as raised:
        refuse_pasted_answers(edition_chapter(text, "chapter.md", Edition.STUDENT, {}, "2.13.0"),
                              "chapter.md")
    lines = text.splitlines()
    glued = next(n for n, line in enumerate(lines, 1) if line.startswith('glue("tiny_glued"'))
    assert raised.value.line == next(n for n, line in enumerate(lines, 1) if "{glue" in line)
    assert raised.value.message == (
        f"this pastes `tiny_glued`, which only an answer glues (line {glued}): the student "
        "edition runs no answer, so its page has no value to paste (and would show students "
        "the answer's): paste it in an answer cell, or in an `{only} instructor` block")


@pytest.mark.slow
def test_an_only_instructor_block_may_paste_what_an_answer_glues(tiny_book, tmp_path):
    """An instructor's note pasting the value an answer glues (myst-nb's glue): the student
    edition, which runs no answer, stopped at myst-nb's bare "No key 'tiny_glued' found in
    glue data" for a note no student would see; without the glue, the note was in the run's
    notebook, which myst-nb's `{nb-download}` gives students. A block the build does not show
    is left out of the page myst-nb reads."""
    chapter = tiny_book / "chapter.md"
    chapter.write_text(chapter.read_text().replace("A worked example.", (
        "A worked example, as a {nb-download}`notebook <chapter.ipynb>`.")).replace(
            "A cell whose error", (  # a cell of its own
        "````{only} instructor\nThe class should find {glue:}`tiny_glued`.\n````\n\n"
        "+++\n\nA cell whose error")).replace('print("tiny answer:", tiny_answer_value)', (
            'print("tiny answer:", tiny_answer_value)\nfrom myst_nb import glue\n'
            'glue("tiny_glued", tiny_answer_value * 1000 + 777, display=False)')))
    instructor = sphinx_build(tiny_book, tmp_path / "instructor", tmp_path / "cache",
                              "instructor", settings={"coursebook_accept_outputs": "1"})
    assert instructor.returncode == 0, instructor.log[-3000:]
    assert "The class should find 42777." in re.sub(r"<[^>]+>", "", (
        tmp_path / "instructor" / "html" / "chapter.html").read_text())
    student = sphinx_build(tiny_book, tmp_path / "student", tmp_path / "cache")
    assert student.returncode == 0, student.log[-3000:]
    assert list((tmp_path / "student" / "html" / "_downloads").rglob("chapter.ipynb"))
    assert not [path for folder in ("html", "jupyter_execute")  # what it publishes, and runs
                for path in (tmp_path / "student" / folder).rglob("*")
                if path.is_file() and b"class should find" in path.read_bytes()]


SUBSTITUTED = ("myst:\n  enable_extensions: [colon_fence, dollarmath, amsmath, deflist, "
               "substitution]\n  substitutions:\n"
               "    ans: The tripled weights give a sum of forty-two exactly.\n"
               "    seen: a worked example\nkernelspec:")


def test_the_student_edition_keeps_no_substitution_only_answers_use():
    """An answer showing its text through a substitution (`{{ ans }}`): the top matter's
    value stayed in the student edition's notebook, which the run keeps (jupyter_execute/)."""
    text = (TINY_BOOK / "chapter.md").read_text().replace("kernelspec:", SUBSTITUTED).replace(
        "A worked example.", "{{ seen }}.").replace("## Tiny answers\n", "## Tiny answers\n\n"
                                                   "{{ ans }}\n")
    student = edition_chapter(text, "chapter.md", Edition.STUDENT, {}, "2.13.0").notebook
    assert student.metadata["myst"]["substitutions"] == {"seen": "a worked example"}
    instructor = edition_chapter(text, "chapter.md", Edition.INSTRUCTOR, {}, "2.13.0").notebook
    assert set(instructor.metadata["myst"]["substitutions"]) == {"ans", "seen"}


@pytest.mark.slow
def test_a_substitution_only_answers_use_is_in_no_student_file(tiny_book, cache_copy, tmp_path):
    """myst-nb's `{nb-download}` gives students the run's notebook, its top matter and all."""
    chapter = tiny_book / "chapter.md"
    chapter.write_text(chapter.read_text().replace("kernelspec:", SUBSTITUTED).replace(
        "A worked example.", "{{ seen }}, as a {nb-download}`notebook <chapter.ipynb>`.").replace(
            "## Tiny answers\n", "## Tiny answers\n\n{{ ans }}\n"))
    student = sphinx_build(tiny_book, tmp_path / "student", cache_copy)
    assert student.returncode == 0, student.log[-3000:]
    assert list((tmp_path / "student" / "html" / "_downloads").rglob("chapter.ipynb"))
    assert not [path for folder in ("html", "jupyter_execute")
                for path in (tmp_path / "student" / folder).rglob("*")
                if path.is_file() and b"forty-two exactly" in path.read_bytes()]


@pytest.mark.slow
@pytest.mark.parametrize("page, entry", [("solutions.md", "Answers <solutions.md>\n"),
                                         ("solutions/one.md", ":glob:\n\nsolutions/*\n")],
                         ids=["entry", "glob"])
def test_a_page_only_an_unshown_toctree_lists_stops_the_student_build(tiny_book, cache_copy,
                                                                       tmp_path, page, entry):
    """Sphinx builds every page it finds: a page of solutions listed only by a toctree inside an
    `{only} instructor` block was in the student edition (its page, its source, its search
    entries), rc 0, `make audit` 0 leaks (a page that is no chapter is visible text); listed by
    a glob, Sphinx's bare warning only, and rc 0 without -W. It now stops each student build
    at the page, -W or not; left out in conf.py, it builds (its entry, in the block, is then no
    reference to a missing page)."""
    (tiny_book / page).parent.mkdir(exist_ok=True)
    (tiny_book / page).write_text("# Solutions\n\nStack along dimension one.\n")
    index = tiny_book / "index.md"
    index.write_text(index.read_text() + f"\n````{{only}} instructor\n```{{toctree}}\n{entry}"
                     "```\n````\n")
    student = sphinx_build(tiny_book, tmp_path / "student", cache_copy,
                           strict=":glob:" not in entry)
    assert student.returncode != 0 and f"{page}: ERROR: no toctree this edition shows lists " \
        "this page" in student.log and "isn't included in any toctree" not in student.log, \
        student.log[-3000:]
    assert f"`if not INSTRUCTOR: exclude_patterns.append({page!r})`" in student.log
    again = sphinx_build(tiny_book, tmp_path / "student", cache_copy)  # reads no page
    assert again.returncode != 0 and f"{page}: ERROR: no toctree" in again.log, again.log[-3000:]
    excluded = sphinx_build(tiny_book, tmp_path / "excluded", cache_copy, settings={
        "exclude_patterns": f"_build,_ext,recordings,expected,{page}"})  # as conf.py would
    assert excluded.returncode == 0, excluded.log[-3000:]
    assert not [path for path in (tmp_path / "excluded" / "html").rglob("*")
                if path.is_file() and b"dimension one" in path.read_bytes()]
    instructor = sphinx_build(tiny_book, tmp_path / "instructor", cache_copy, "instructor")
    assert instructor.returncode == 0, instructor.log[-3000:]
    assert "dimension one" in (tmp_path / "instructor" / "html" / page).with_suffix(
        ".html").read_text()


@pytest.mark.slow
def test_a_file_an_only_instructor_block_offers_is_no_student_download(tiny_book, cache_copy,
                                                                        tmp_path):
    """Sphinx copies a `{download}`'s file as it reads the role, whatever block holds it: the
    instructor's answers offered in an `{only} instructor` block, in a chapter or on the home
    page, were in the student edition's _downloads/, rc 0, `make audit` 0 leaks."""
    (tiny_book / "answers.txt").write_text("Stack along dimension one.\n")
    offer = "\n````{only} instructor\nThe {download}`answers <answers.txt>`.\n````\n"
    for page in ("chapter.md", "index.md"):
        path = tiny_book / page
        path.write_text(path.read_text().replace("A worked example.", f"A worked example.{offer}")
                        if page == "chapter.md" else path.read_text() + offer)
    student = sphinx_build(tiny_book, tmp_path / "student", cache_copy)
    assert student.returncode == 0, student.log[-3000:]
    assert not list((tmp_path / "student" / "html").rglob("answers.txt"))
    instructor = sphinx_build(tiny_book, tmp_path / "instructor", cache_copy, "instructor")
    assert instructor.returncode == 0 and list(
        (tmp_path / "instructor" / "html" / "_downloads").rglob("answers.txt"))
