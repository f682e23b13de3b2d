"""Lab handouts: one PDF per chapter and edition, answer boxes, covers with QR codes.

Fast tests check the answer boxes on the chapters themselves; the slow ones build the
handouts of both editions once (sharing the execution cache of the `built` editions, so
they must execute nothing) and read the PDFs: the handouts of the chapters that show each
kind of cover and the most answer boxes (every chapter's pages typeset in tests/test_pdf.py's
book PDFs, each chapter's LaTeX is written here). A handout is typeset once (--single-pass):
the second pass latexmk runs resolves its links and bookmarks, which no test reads, and sets
the same lines (measured on the book's handouts: the same words on each line, within 0.2 pt).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest

from conftest import BOOK, load_tool, sphinx_build, tool_in_process
from test_student_pages import build_talk, known_commits
from coursebook.prepare.answer_space import (LABEL, MAX_LINES, MIN_LINES, answer_lines,
                                             answer_space_cell, answers)
from coursebook.audit.answer_leaks import audit_build, chapter_fingerprints
from coursebook.prepare.editions import Edition, edition_notebook
from coursebook.render.downloads import page_url
from coursebook.model.notebooks import is_answer, is_chapter_source, read_chapter
from coursebook.model.recordings import recording_name

CHAPTERS = sorted(p for p in BOOK.glob("*.md") if is_chapter_source(p.read_text()))
PUBLISHED_URL = "https://labs.example.org/book/"
REPOSITORY_URL = "https://github.com/example/labs"


def chapter(path: Path) -> nbformat.NotebookNode:
    return read_chapter(path.read_text(encoding="utf8"))


def _typeset() -> list[Path]:
    """A recorded chapter and one that is not (their covers say different things), each the
    one of its kind with the most answers: a lualatex run costs seconds whatever the chapter."""
    kinds: dict[bool, Path] = {}
    for path in sorted(CHAPTERS, key=lambda path: len(list(answers(chapter(path))))):
        kinds[recording_name(chapter(path)) is not None] = path
    return sorted(kinds.values())


TYPESET = _typeset()


def markdown(text: str, answer: bool = True) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_markdown_cell(text)
    if answer:
        cell.metadata["tags"] = ["answer"]
    return cell


def code(text: str, answer: bool = True) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell(text)
    if answer:
        cell.metadata["tags"] = ["answer"]
    return cell


# --- Fast: the boxes, on the chapters' notebooks ------------------------------------------

def boxes(notebook: nbformat.NotebookNode) -> list[str]:
    return [cell.source for cell in notebook.cells if cell.source.startswith("```{raw} latex")]


def test_a_run_of_answers_splits_at_each_bold_lead_in_or_heading():
    notebook = nbformat.v4.new_notebook(cells=[
        markdown("Question one and two.", answer=False),
        markdown("### Solutions\n\n**1.** The first."), code("first = 1"),
        markdown("More on the first."),
        markdown("**2. The second.** It says more."), code("second = 2"),
        code("student = 0", answer=False),
        code("third = 3"),
    ])
    found = [(start, len(cells)) for start, cells in answers(notebook)]
    assert found == [(1, 3), (4, 2), (7, 1)]


def test_the_student_handout_has_one_box_per_answer_and_no_answer_cell():
    for path in CHAPTERS:
        notebook = chapter(path)
        spaced = edition_notebook(notebook, Edition.STUDENT, answer_spaces=True)
        assert len(boxes(spaced)) == len(list(answers(notebook))), path.name
        assert not any(is_answer(cell) for cell in spaced.cells)
    assert any(list(answers(chapter(path))) for path in CHAPTERS), "no chapter has answers"


def test_the_boxes_leave_the_cached_notebook_unchanged():
    """jupyter-cache hashes code cells only: the handout reuses the student's outputs."""
    for path in CHAPTERS:
        notebook = chapter(path)
        student = edition_notebook(notebook, Edition.STUDENT)
        spaced = edition_notebook(notebook, Edition.STUDENT, answer_spaces=True)
        assert ([(c.source, c.metadata) for c in spaced.cells if c.cell_type == "code"]
                == [(c.source, c.metadata) for c in student.cells if c.cell_type == "code"])


def test_a_box_holds_none_of_the_answer_it_replaces():
    """Its words are those of the box of an answer that has none (its LaTeX, its label)."""
    def words(text: str) -> set[str]:
        return set(re.findall(r"[A-Za-z]{3,}", text))

    allowed = words(answer_space_cell([markdown("")]).source)
    for path in CHAPTERS:
        spaced = edition_notebook(chapter(path), Edition.STUDENT, answer_spaces=True)
        assert [box for box in boxes(spaced) if not words(box) <= allowed] == [], path.name


@pytest.mark.parametrize("cells, lines", [
    ([markdown("Yes.")], MIN_LINES),
    ([code("\n".join(f"x{i} = {i}" for i in range(10)))], 10),
    ([markdown("word " * 130)], 10),  # 650 characters: ten handwritten lines
    ([markdown("word " * 2000)], MAX_LINES),
])
def test_a_box_is_sized_from_its_answer_within_bounds(cells, lines):
    assert answer_lines(cells) == lines


def test_a_box_draws_one_rule_per_line():
    six_lines = code("\n".join(f"x{i} = {i}" for i in range(6)))
    latex = answer_space_cell([markdown("**2.**"), six_lines]).source
    assert latex.count(r"\hrule") == 7 and "Your answer (2)" in latex
    # Each rule spans the box: a bare \hrule in a \vbox is as wide as that vbox, nothing.
    assert latex.count(r"\hrule width \hsize") == 7


def test_a_chapter_page_address():
    assert page_url(PUBLISHED_URL, "pt01") == "https://labs.example.org/book/pt01.html"
    assert page_url("", "pt01") == ""


def test_the_tool_explains_handouts(capsys):
    """In this process, as the slow tests run the tool (a Python's start and imports less:
    test_faults starts each tool as a program)."""
    with pytest.raises(SystemExit) as done:
        load_tool("build_pdf").main(["--help"])
    assert done.value.code == 0 and "--handouts" in capsys.readouterr().out


# --- Slow: the handouts of the real book, both editions -----------------------------------

def build_handouts(edition: str, source: Path, build: Path, cache: Path, *options: str,
                   chapters: list[str] = ()):
    """test_pdf.build_pdf's, with --handouts."""
    arguments = [edition, "--handouts", "--single-pass", "--source", str(source),
                 "--build", str(build), *(f"--chapter={name}" for name in chapters),
                 f"--sphinx-option=-Dnb_execution_cache_path={cache}",
                 *(f"--sphinx-option={option}" for option in options)]
    return tool_in_process("build_pdf", arguments)


@pytest.fixture(scope="module")
def handouts(built, tmp_path_factory):
    """Both editions' handouts of the TYPESET chapters, from the execution cache the `built`
    editions filled."""
    cache = built["student"].outdir.parent / "cache"
    root = tmp_path_factory.mktemp("handouts")
    urls = (f"-Dhtml_baseurl={PUBLISHED_URL}",
            f"-Dcoursebook_repository_url={REPOSITORY_URL}")
    editions = ("student", "instructor")
    with ThreadPoolExecutor(2) as pool:  # both at once: most of the time is lualatex's
        results = dict(zip(editions, pool.map(
            lambda edition: build_handouts(edition, BOOK, root, cache, *urls,
                                           chapters=[path.stem for path in TYPESET]),
            editions)))
    return root, results


def pdf_text(pdf: Path) -> str:
    return subprocess.run(["pdftotext", "-layout", str(pdf), "-"], capture_output=True,
                          text=True, check=True).stdout


@pytest.mark.slow
@pytest.mark.parametrize("edition", ["student", "instructor"])
def test_the_handouts_build_and_pass_their_checks(handouts, edition):
    root, results = handouts
    code, log = results[edition]
    assert code == 0, log[-3000:]
    assert "Executing notebook" not in log  # the same cache: nothing ran again
    # The log names the LaTeX folder (not Sphinx's `make latexpdf`) and says what the answer
    # audit found, also when it finds nothing.
    assert "The LaTeX files are in" in log and "latexpdf" not in log
    assert (f"handouts: answer audit of {len(TYPESET)} student handout(s): no answer found"
            in log) == (edition == "student"), log[-3000:]
    assert sorted((root / edition / "pdf" / "handouts").glob("*.pdf")) == [
        root / edition / "pdf" / "handouts" / f"{path.stem}.pdf" for path in TYPESET]
    # Every chapter's LaTeX is written (one Sphinx run); the chapters asked for are typeset.
    latex = root / edition / "latex-handouts"
    assert all((latex / f"{path.stem}.tex").is_file() for path in CHAPTERS)
    commits = known_commits()
    for path in TYPESET:
        pdf = root / edition / "pdf" / "handouts" / f"{path.stem}.pdf"
        cover = pdf_text(pdf).split("\f")[0]
        assert f"{edition.capitalize()} edition" in cover
        # The build's date and commit are the team's: a student's cover has neither.
        built = re.search(r"Built on \d{4}-\d\d-\d\d from commit \S+", cover)
        assert bool(built) == (edition == "instructor") and ("Built on" in cover) == bool(built)
        # A student's cover names the chapter, not how the book verifies or records it; the
        # line under the title says once where the outputs come from (the cover said it too).
        if edition == "student":
            assert not [word for word in ("verified", "stand-in", "recorded with", "Kernel")
                        if word in " ".join(cover.split())], cover
            assert " ".join(pdf_text(pdf).split()).count("The outputs ") == 1, cover
            assert build_talk(" ".join(cover.split())) == [], cover
            assert not [commit for commit in commits if commit in cover], cover


@pytest.mark.slow
def test_the_student_handouts_have_a_box_per_answer_and_hold_no_answer(handouts):
    root, _ = handouts
    for path in TYPESET:
        text = pdf_text(root / "student" / "pdf" / "handouts" / f"{path.stem}.pdf")
        assert text.count(LABEL) == len(list(answers(chapter(path)))), path.name
        instructor = pdf_text(root / "instructor" / "pdf" / "handouts" / f"{path.stem}.pdf")
        assert LABEL not in instructor
    found = chapter_fingerprints(BOOK)
    assert audit_build(root / "student" / "pdf" / "handouts", found) == []
    assert audit_build(root / "instructor" / "pdf" / "handouts", found)


@pytest.mark.slow
def test_the_qr_codes_decode_to_the_configured_addresses(handouts, tmp_path):
    from coursebook.render.downloads import colab_url

    root, _ = handouts
    assert shutil.which("zbarimg"), "zbarimg not found: apt-get install zbar-tools"
    for path in TYPESET:
        pdf = root / "student" / "pdf" / "handouts" / f"{path.stem}.pdf"
        subprocess.run(["pdftoppm", "-r", "200", "-f", "1", "-l", "1", "-png", str(pdf),
                        str(tmp_path / path.stem)], check=True)
        image = next(tmp_path.glob(f"{path.stem}*.png"))
        decoded = subprocess.run(["zbarimg", "--quiet", "--raw", "--nodbus", str(image)],
                                 capture_output=True, text=True).stdout.split()
        assert sorted(decoded) == sorted([page_url(PUBLISHED_URL, path.stem),
                                          colab_url(REPOSITORY_URL, "gh-pages", path.stem)])


def test_a_short_cell_is_kept_on_one_page_with_its_output_and_a_long_one_may_break():
    from docutils import nodes

    from coursebook.render.handouts import KEEP_TOGETHER_LINES, keep_short_cells_together

    def cell(lines: int) -> nodes.container:
        block = nodes.literal_block("", "\n".join(["x"] * lines))
        return nodes.container("", block, nb_element="cell_code")

    document = nodes.section("", cell(3), cell(KEEP_TOGETHER_LINES + 1))
    from conftest import sphinx_config
    from coursebook.config import BookConfig

    app = SimpleNamespace(config=sphinx_config(BookConfig(handouts=True)),
                          builder=SimpleNamespace(name="latex"))
    keep_short_cells_together(app, document, "chapter")
    kept = [node.astext() for node in document.children if isinstance(node, nodes.raw)]
    assert kept == ["\\needspace{6\\baselineskip}\n"]


@pytest.mark.slow
def test_a_chapter_the_book_lacks_is_one_line_naming_the_books(tiny_book, tmp_path, cache_copy):
    """A chapter asked for that the book lacks is one line naming the book's (a title of
    LaTeX specials, typeset: test_pdf_characters' planted_book)."""
    code, log = build_handouts("student", tiny_book, tmp_path / "none", cache_copy,
                               chapters=["chapter", "pt99"])
    problems = [line for line in log.splitlines() if line.startswith("pdf: ")]
    assert code == 2 and problems == ["pdf: no chapter pt99 in the book: --chapter takes a "
                                      "chapter's name, one of chapter."], log[-3000:]


@pytest.mark.slow  # a LaTeX build (no kernel: the cells are the cached run's)
def test_an_image_no_pdf_shows_stops_the_latex_build_at_its_line(tiny_book, tmp_path,
                                                                  cache_copy):
    """An SVG beside a chapter (as `make chapter FROM=` copies a lesson's) reached the LaTeX
    files, and lualatex stopped on it with no place: 'Unknown graphics extension: .svg'; an
    image on the web was fetched while typesetting (offline: 'Could not fetch remote image',
    no chapter named)."""
    from conftest import run_sphinx, sphinx_command

    chapter = tiny_book / "chapter.md"
    (tiny_book / "chapter").mkdir()
    (tiny_book / "chapter" / "graph.svg").write_text(
        '<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"/>\n')
    web = "https://example.org/plot.png"
    chapter.write_text(chapter.read_text().replace(
        "A worked example.\n", f"A worked example.\n\n![The graph](chapter/graph.svg)\n\n"
        f"![A plot]({web})\n", 1))
    line = chapter.read_text().splitlines().index("![The graph](chapter/graph.svg)") + 1
    latex = run_sphinx(sphinx_command(tiny_book, tmp_path / "latex", tmp_path / "doctrees",
                                      builder="latex",
                                      settings={"nb_execution_cache_path": str(cache_copy)}))
    shown = latex.stdout + latex.stderr
    assert latex.returncode != 0 and "Traceback" not in shown, shown[-3000:]
    assert f"chapter.md:{line}: WARNING: the image chapter/graph.svg (image/svg+xml) is of a " \
           "kind no PDF shows: save it as a PNG or PDF beside the chapter and show that file" \
        in shown, shown[-3000:]
    # one on the web: fetched while typesetting, it failed offline in lines with no place
    assert f"chapter.md:{line + 2}: WARNING: the image {web} is on the web: a PDF is typeset " \
           "without the network; save it beside the chapter and show that file" in shown, \
        shown[-3000:]
    assert "Could not fetch remote image" not in shown, shown[-3000:]


def test_an_image_of_a_type_the_machine_does_not_know_stops_the_latex_build(monkeypatch):
    """A .webp was let through to LaTeX where the machine's mimetypes lacks it (Python 3.11
    without /etc/mime.types), as was any type no table knows: lualatex then stopped with no
    place. Each is now named, as an SVG is; one LaTeX includes and one chosen among
    candidates go on."""
    import mimetypes
    from types import SimpleNamespace

    from docutils import nodes
    from docutils.utils import new_document

    from coursebook.render import handouts

    # A machine whose mimetypes knows only Python's own table (3.11's has no .webp).
    monkeypatch.setattr(mimetypes, "guess_type", mimetypes.MimeTypes(filenames=()).guess_type)
    warned = []
    monkeypatch.setattr(handouts, "logging", SimpleNamespace(getLogger=lambda name: SimpleNamespace(
        warning=lambda message, *args, **kwargs: warned.append(message % args))))
    document = new_document("chapter.md")
    uris = ["chapter/graph.webp", "chapter/plot.qoi", "chapter/photo.jpeg", "chapter/plot.png",
            "chapter/plot.*"]
    for uri in uris:
        document += nodes.paragraph("", "", nodes.image(uri=uri))

    class Probe(handouts.ImagesNoPdfShows):
        app = SimpleNamespace(builder=SimpleNamespace(
            supported_image_types=["application/pdf", "image/png", "image/jpeg"]))

    Probe(document).run()
    assert [node["uri"] for node in document.findall(nodes.image)] == uris[2:]
    assert [message.split(" (")[0] for message in warned] == [
        "the image chapter/graph.webp", "the image chapter/plot.qoi"], warned
    assert all(message.endswith("is of a kind no PDF shows: save it as a PNG or PDF beside "
                                "the chapter and show that file") for message in warned), warned


def test_a_figure_the_pdf_would_print_as_its_text_stops_the_latex_build(monkeypatch):
    """d2l draws its plots as SVG alone (d2l.use_svg_display): LaTeX takes no SVG, so myst-nb
    chose the output's text and d2l's linear-regression handout printed `<Figure size 350x250
    with 1 Axes>` where the training curve was, silently. Now named at the cell; other text not."""
    from types import SimpleNamespace

    from docutils import nodes
    from docutils.utils import new_document

    from coursebook.render import handouts

    warned = []
    monkeypatch.setattr(handouts, "logging", SimpleNamespace(getLogger=lambda name: SimpleNamespace(
        warning=lambda message, *args, **kwargs: warned.append(message % args))))
    document = new_document("chapter.md")
    for text in ["<Figure size 350x250 with 1 Axes>", "tensor([1.])", "<Figure size 1 print"]:
        document += nodes.literal_block(text, text, classes=["output", "text_plain"])
    code = "<Figure size 3x2 with 1 Axes>"  # in a code block: no output
    document += nodes.literal_block(code, code)

    class Probe(handouts.ImagesNoPdfShows):
        app = SimpleNamespace(builder=SimpleNamespace(supported_image_types=["image/png"]))

    Probe(document).run()
    assert warned == [
        "its figure has no image a PDF shows (SVG alone, or none), so the PDF prints `<Figure "
        "size 350x250 with 1 Axes>` in its place: draw PNG too, `backend_inline."
        "set_matplotlib_formats('svg', 'png')` (matplotlib_inline's; d2l sets SVG alone as it "
        "draws: `d2l.use_svg_display = lambda: backend_inline.set_matplotlib_formats('svg', "
        "'png')`)"], warned


@pytest.mark.slow
def test_a_hand_written_answer_space_outside_a_handout_is_named_at_its_line(tiny_book,
                                                                          cache_copy, tmp_path):
    """The box is the handout build's (its LaTeX alone draws it): an HTML build told of one
    an author wrote stops at its line, not in a writer's traceback."""
    page = tiny_book / "chapter.md"
    page.write_text(page.read_text() + "\n:::{answer-space} 5\n:::\n")
    line = page.read_text().splitlines().index(":::{answer-space} 5") + 1
    build = sphinx_build(tiny_book, tmp_path / "out", cache_copy)
    assert build.returncode != 0
    assert f"chapter.md:{line}: WARNING: Unknown directive type: 'answer-space'" in build.log, \
        build.log[-3000:]
    assert "Traceback" not in build.log and "NotImplementedError" not in build.log


def test_a_handout_names_another_chapter_once_per_paragraph(monkeypatch):
    """A reference into another chapter reads "section (in chapter)" on a handout, but the
    handouts read "The TPU bridges: torchax and torch_xla (in The TPU bridges: torchax and
    torch_xla)" where the reference is the chapter itself, and repeated "(in The error museum:
    the PyTorch wing)" after each exhibit of one list (PT01's, the museum's). The chapter is
    named once per paragraph, and not after its own title."""
    from docutils import nodes
    from docutils.utils import new_document
    from sphinx import addnodes

    from coursebook.render import handouts as module

    monkeypatch.setattr(module, "book_config", lambda config: SimpleNamespace(handouts=True))
    labels = {"bridges": ("bridges", "bridges", "The TPU bridges"),
              "museum-03": ("museum", "m3", "03/09 · Calling backward() twice"),
              "museum-04": ("museum", "m4", "04/09 · Calling backward() on x * 2"),
              "pt01-update": ("pt01", "u", "4. Updating the parameters")}
    titles = {"bridges": "The TPU bridges", "museum": "The error museum", "pt01": "PT01"}

    def ref(target: str) -> addnodes.pending_xref:
        return addnodes.pending_xref("", nodes.inline("", target), reftype="ref",
                                     reftarget=target, refexplicit=False)

    document = new_document("handout")
    paragraphs = [
        nodes.paragraph("", "", nodes.Text("The chapter "), ref("bridges"), nodes.Text(".")),
        nodes.paragraph("", "", nodes.Text("In the error museum: "), ref("museum-03"),
                        nodes.Text("; "), ref("museum-04"), nodes.Text(".")),
        nodes.paragraph("", "", nodes.Text("Taught in: "), ref("pt01-update"), nodes.Text(".")),
        nodes.paragraph("", "", nodes.Text("Also: "), ref("museum-04"), nodes.Text("."))]
    document.extend(paragraphs)
    env = SimpleNamespace(get_domain=lambda name: SimpleNamespace(labels=labels),
                          titles={name: nodes.title("", title) for name, title in titles.items()})
    transform = SimpleNamespace(config=None, env=env, document=document,
                                app=SimpleNamespace(builder=SimpleNamespace(docnames=["x"])))
    module.OtherChapterReferences.run(transform)
    assert [paragraph.astext() for paragraph in paragraphs] == [
        "The chapter The TPU bridges.",
        "In the error museum: 03/09 · Calling backward() twice (in The error museum); "
        "04/09 · Calling backward() on x * 2.",
        "Taught in: 4. Updating the parameters (in PT01).",
        "Also: 04/09 · Calling backward() on x * 2 (in The error museum)."]
