"""`make chapter`: a new chapter from the skeleton, listed in the contents, never overwriting
one; and (slow) a new chapter accepted and built in both editions, not yet verified on Colab,
passes the checks `make test-fast` runs on the book's runtimes."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import warnings
from pathlib import Path

import pytest
import yaml

from conftest import BOOK, ROOT, load_tool, sphinx_build
from coursebook.model.notebooks import cell_tags, is_chapter_source, read_chapter

tool = load_tool("new_chapter")


def _book(tmp_path: Path) -> Path:
    """A copy of the book's pages (the chapters' sources and the home page)."""
    book = tmp_path / "book"
    book.mkdir()
    for page in BOOK.glob("*.md"):
        shutil.copy(page, book)
    return book


def _new_name(book: Path) -> str:
    """A chapter name the book does not have yet (it may have a PT02 of its own)."""
    return next(f"pt{n:02}" for n in range(2, 100) if not (book / f"pt{n:02}.md").exists())


def _toctree(index: Path) -> list[str]:
    body = tool._TOCTREE.search(index.read_text())["body"]
    return [line.strip() for line in body.splitlines() if line.strip() and not line.startswith(":")]


def test_a_chapter_is_written_from_the_skeleton_and_listed_after_the_last_core_chapter(tmp_path,
                                                                                      capsys):
    book = _book(tmp_path)
    name = _new_name(book)
    before = _toctree(book / "index.md")
    assert tool.main([name, "A new chapter: training loops", "--book", str(book)]) == 0
    out = capsys.readouterr().out
    for command in ("make preview", "make accept-outputs", "make instructor", "make test-fast"):
        assert command in out
    text = (book / f"{name}.md").read_text()
    assert is_chapter_source(text) and f"({name})=\n# A new chapter: training loops\n" in text
    cells = read_chapter(text).cells
    code = [c for c in cells if c.cell_type == "code"]
    assert "remove-cell" in cell_tags(code[0]) and "%xmode Minimal" in code[0].source
    assert any("answer" not in cell_tags(c) for c in code[1:])  # a first cell, the check's
    assert [c.cell_type for c in cells if "answer" in cell_tags(c)] == ["markdown", "code"]
    # After the last chapter that is not recorded (one that needs a TPU stays last).
    recorded = _recorded(book)
    chapters = [n for n in before if (book / f"{n}.md").is_file() and n not in recorded
                and is_chapter_source((book / f"{n}.md").read_text())]
    after = _toctree(book / "index.md")
    assert after.index(name) == before.index(chapters[-1]) + 1
    assert [n for n in after if n != name] == before


def test_an_existing_chapter_is_never_overwritten(tmp_path, capsys):
    book = _book(tmp_path)
    name = _new_name(book)
    assert tool.main([name, "A new chapter", "--book", str(book)]) == 0
    (book / f"{name}.md").write_text("the author's work")
    index = (book / "index.md").read_text()
    capsys.readouterr()
    assert tool.main([name, "Another title", "--book", str(book)]) == 1
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and f"{name}.md exists: nothing written" in error
    assert (book / f"{name}.md").read_text() == "the author's work"
    assert (book / "index.md").read_text() == index


@pytest.mark.parametrize("name, title", [("", "A title"), ("PT 02", "A title"), ("pt99", " ")])
def test_a_bad_name_or_title_is_one_line_and_writes_nothing(tmp_path, capsys, name, title):
    book = _book(tmp_path)
    assert tool.main([name, title, "--book", str(book)]) == 1
    assert capsys.readouterr().err.count("\n") == 1
    assert sorted(p.name for p in book.iterdir()) == sorted(p.name for p in BOOK.glob("*.md"))


def test_the_skeleton_opens_as_the_first_chapter_does():
    """The one template (tools/chapter-template.md) keeps PT01's top matter and first cell."""
    skeleton, first = tool.chapter_text("x", "X"), (BOOK / "pt01.md").read_text()
    top = yaml.safe_load(skeleton.split("---")[1])
    assert top.items() <= yaml.safe_load(first.split("---")[1]).items()
    first_code = [next(c for c in read_chapter(text).cells if c.cell_type == "code")
                  for text in (skeleton, first)]
    assert first_code[0].source == first_code[1].source


def test_make_help_lists_the_chapter_command():
    listed = subprocess.run(["make", "-s", "help"], capture_output=True, text=True, cwd=ROOT).stdout
    assert "make chapter " in listed and "NAME=" in listed


@pytest.mark.slow
def test_a_new_chapter_is_accepted_built_and_not_yet_verified_on_colab(tiny_book, tmp_path):
    """The first-chapter walk-through on the tiny book: the skeleton, `make accept-outputs`
    (both editions), the builds, then the fast tests' checks of expected outputs and runtimes,
    without a Colab replica."""
    from test_expectations import unstated_reasons
    from test_runtimes import NotYetVerified, State, declared_standings, fail_on_stale

    from coursebook.model.versions import release
    from coursebook.verify.expectations import EDITIONS, expectations_path, read_expectations

    assert tool.new_chapter("pt02", "PT02: A first chapter", tiny_book).chapter.is_file()
    cache = tmp_path / "cache"
    builds = {}
    for accept in (True, False):  # accept-outputs, then the builds a person runs next
        for edition, tags in (("student", ()), ("instructor", ("instructor",))):
            build = sphinx_build(tiny_book, tmp_path / edition, cache, *tags,
                                 settings={"coursebook_accept_outputs": "1"} if accept else {})
            assert build.returncode == 0, build.log[-3000:]
            builds[edition] = build
    torch_version = release(__import__("torch").__version__)
    expected = read_expectations(expectations_path(tiny_book / "expected", torch_version, "pt02"))
    assert all(expected.by_edition[edition] for edition in EDITIONS)
    for edition, build in builds.items():
        assert "expected outputs: pt02.md" in build.log
        assert "expected outputs: pt02: not yet verified on Colab" in build.log
    instructor = (tmp_path / "instructor" / "html" / "pt02.html").read_text()
    student = (tmp_path / "student" / "html" / "pt02.html").read_text()
    assert "not yet verified on Colab" in instructor and "accept-outputs-runtime" in instructor
    assert "not yet verified" not in student and "accept-outputs" not in student
    # What `make test-fast` holds the book's chapters to.
    assert unstated_reasons((tiny_book / "pt02.md").read_text()) == []
    found = [s for s in declared_standings(tiny_book) if s.chapter == "pt02"]
    assert found and all(s.state is State.NOT_YET for s in found)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        fail_on_stale(found)  # passes
    assert {type(w.message) for w in said} == {NotYetVerified}


# --- Placement: after the last chapter that runs here, in the contents and the reading order ---

def _recorded(book: Path) -> list[str]:
    from coursebook.model.notebooks import top_matter
    from coursebook.model.recordings import recording_name

    return [n for n in _toctree(book / "index.md") if (book / f"{n}.md").is_file()
            and is_chapter_source((book / f"{n}.md").read_text())
            and recording_name(top_matter((book / f"{n}.md").read_text())) is not None]


def _reading_order(index: Path) -> list[str]:
    return [line.split("*")[1] for line in index.read_text().splitlines()
            if line[:1].isdigit() and ". *" in line]


def test_a_new_chapter_goes_before_a_recorded_one_in_the_contents_and_the_reading_order(
        tmp_path, capsys):
    book = _book(tmp_path)
    recorded = _recorded(book)
    assert recorded, "the book has a recorded chapter (the TPU bridges) to stay last"
    name = _new_name(book)
    order = _reading_order(book / "index.md")
    assert tool.main([name, "A new chapter", "--book", str(book)]) == 0
    after = _toctree(book / "index.md")
    assert after.index(name) < min(after.index(r) for r in recorded)
    chapters = [n for n in after if (book / f"{n}.md").is_file()
                and is_chapter_source((book / f"{n}.md").read_text())]
    # The reading order names it at its place among the chapters, the items after it renumbered.
    now = _reading_order(book / "index.md")
    assert now == order[:chapters.index(name)] + ["A new chapter"] + order[chapters.index(name):]
    numbers = [int(line.split(".")[0]) for line in (book / "index.md").read_text().splitlines()
               if line[:1].isdigit() and ". *" in line]
    assert numbers == list(range(1, len(now) + 1))
    assert "reading order" in capsys.readouterr().out


def test_after_names_the_entry_a_chapter_follows(tmp_path, capsys):
    book = _book(tmp_path)
    first = _toctree(book / "index.md")[0]
    name = _new_name(book)
    assert tool.main([name, "Early", "--after", first, "--book", str(book)]) == 0
    assert _toctree(book / "index.md")[:2] == [first, name]
    assert _reading_order(book / "index.md")[1] == "Early"
    assert tool.main(["pt99", "Nowhere", "--after", "no-such-page", "--book", str(book)]) == 1
    assert "AFTER=no-such-page" in capsys.readouterr().err and not (book / "pt99.md").exists()


def test_a_listed_chapter_whose_top_matter_the_build_refuses_is_one_line(tmp_path, capsys):
    """Where it goes asks each listed chapter whether it is recorded: as the build reads it."""
    book = _book(tmp_path)
    first = book / "pt01.md"
    text = first.read_text()
    first.write_text(text.replace(text[text.index("coursebook:"):text.index("\n---")],
                                  "coursebook: jax", 1))
    assert tool.main(["pt99", "Nowhere", "--book", str(book)]) == 1
    line = first.read_text().splitlines().index("coursebook: jax") + 1
    assert capsys.readouterr().err == (f"chapter: {first}:{line}: field coursebook: is 'jax' "
                                       "(make it a table)\n")
    assert not (book / "pt99.md").exists()


# --- make chapter FROM=: a lesson written elsewhere, in the book's form ------------------------

def _notebook_lesson(path: Path) -> Path:
    import nbformat

    path.write_text(nbformat.writes(nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("[![logo](https://example.org/l.png)](https://example.org)"),
        nbformat.v4.new_markdown_cell("# Gradients by hand\n\nWe fit a line."),
        nbformat.v4.new_code_cell("!pip install -q timed-decorator einops==0.8.0\nimport torch",
                                  outputs=[nbformat.v4.new_output("stream", text="Collecting")]),
        nbformat.v4.new_code_cell("%pip install rich -r needs.txt --index-url https://x.org\n"
                                  "!apt-get install -y graphviz"),
        nbformat.v4.new_code_cell("print(torch.ones(2))", metadata={"id": "xyz", "colab": {}}),
        nbformat.v4.new_code_cell("torch.ones(2) @ torch.ones(3)", outputs=[nbformat.v4.new_output(
            "error", ename="RuntimeError", evalue="size mismatch", traceback=[])]),
    ], metadata={"kernelspec": {"name": "some-env", "display_name": "Some env"}})))
    return path


def test_a_notebook_comes_in_as_a_chapter_and_the_tool_says_what_changed_and_what_is_left(
        tmp_path, capsys):
    book = _book(tmp_path)
    lesson = _notebook_lesson(tmp_path / "02_Gradients.ipynb")
    assert tool.main(["--from", str(lesson), "--book", str(book)]) == 0
    out = capsys.readouterr().out
    chapter = book / "lesson-02-gradients.md"  # its name made of the file's
    assert chapter.is_file(), out
    text = chapter.read_text()
    assert is_chapter_source(text)
    top = yaml.safe_load(text.split("---")[1])
    assert top["kernelspec"]["name"] == "python3"
    # No `mystnb: {execution_in_temp: true}` (HR's G15): every chapter runs in a temporary
    # folder of its own already; the setting only hid the chapter's folder, so a file put
    # beside the chapter later and listed in its reads was not there (FileNotFoundError).
    assert set(top) == {"jupytext", "kernelspec"} and "execution_in_temp" not in out, out
    cells = read_chapter(text).cells
    code = [c for c in cells if c.cell_type == "code"]
    assert "remove-cell" in cell_tags(code[0]) and "%xmode Minimal" in code[0].source
    assert [c.source for c in code[1:]] == ["import torch", "print(torch.ones(2))",
                                            "torch.ones(2) @ torch.ones(3)"]
    assert all(not c.metadata.get("id") and not c.get("outputs") for c in code)
    # A saved error is taken as the lesson: tagged, and said so.
    assert [cell_tags(c) for c in code[1:]] == [[], [], ["raises-exception"]]
    assert code[3].metadata["raises"] == "RuntimeError"  # the build holds it to that error
    # Its options as myst-nb documents them: one `:name: value` a line.
    assert ':tags: ["raises-exception"]\n:raises: "RuntimeError"\ntorch.ones(2) @' in text
    assert f"({chapter.stem})=\n# Gradients by hand" in text
    assert chapter.stem in _toctree(book / "index.md")
    assert "Gradients by hand" in _reading_order(book / "index.md")
    # What changed, and what is left: the packages the install lines named, by name.
    assert "took out 3 install line(s)" in out and "dropped the saved outputs of 2" in out
    assert "einops==0.8.0, rich, -r needs.txt\n" in out and ": graphviz\n" in out
    assert "cell 6 (`torch.ones(2) @ torch.ones(3)`: RuntimeError)" in out  # Jupyter's 6th
    assert "timed-decorator, einops==0.8.0, rich" in out and "raises-exception" in out
    assert "https://x.org" not in out


def test_a_lesson_brings_its_images_and_pasted_attachments_beside_the_chapter(tmp_path, capsys):
    """A lesson's own images (`![X-OR](res/x-or.png)` beside it, an image pasted into a cell
    as an attachment) were left behind: each its own 'image file not readable' to fix. An
    attachment whose name has a space (a screenshot's) was copied under that name, which a
    Markdown image cannot show."""
    import base64

    import nbformat

    book, folder = _book(tmp_path), tmp_path / "course"
    (folder / "res").mkdir(parents=True)
    (folder / "res" / "x-or.png").write_bytes(b"\x89PNG x-or")
    pasted = nbformat.v4.new_markdown_cell("Pasted: ![image.png](attachment:image.png)")
    pasted["attachments"] = {"image.png": {"image/png": base64.b64encode(b"\x89PNG p").decode()}}
    again = nbformat.v4.new_markdown_cell("Again: ![image.png](attachment:image.png)")
    again["attachments"] = {"image.png": {"image/png": base64.b64encode(b"\x89PNG q").decode()}}
    shot = nbformat.v4.new_markdown_cell("Shot: ![Screen Shot 1.png](attachment:Screen%201.png)")
    shot["attachments"] = {"Screen 1.png": {"image/png": base64.b64encode(b"\x89PNG s").decode()}}
    lesson = folder / "logic.ipynb"
    lesson.write_text(nbformat.writes(nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# Logic\n\n![X-OR](res/x-or.png) and "
                                      "![web](https://example.org/w.png)"),
        pasted, again, shot,
        nbformat.v4.new_markdown_cell("![gone](res/gone.png)"),
        nbformat.v4.new_code_cell("print(1)"),
    ])))
    assert tool.main(["--from", str(lesson), "--book", str(book)]) == 0
    out, text = capsys.readouterr().out, (book / "logic.md").read_text()
    assert "![X-OR](logic/res/x-or.png)" in text and "(https://example.org/w.png)" in text
    assert (book / "logic" / "res" / "x-or.png").read_bytes() == b"\x89PNG x-or"
    shown = [line.split("(")[1].rstrip(")") for line in text.splitlines()
             if line.startswith(("Pasted:", "Again:", "Shot:"))]
    assert [(book / path).read_bytes() for path in shown] == [b"\x89PNG p", b"\x89PNG q",
                                                              b"\x89PNG s"]
    assert "Shot: ![Screen Shot 1.png](logic/cell-4-Screen-1.png)" in text, text
    assert "attachment:" not in text
    assert "copied the images the lesson shows (4) into logic/" in out
    assert "res/gone.png" in out.split("Still to do:")[1]


def test_a_lessons_html_images_come_in_as_markdown_images_or_are_named_at_cell_and_line(
        tmp_path, capsys):
    """An image a lesson shows in HTML (`<img src=…>`, as Colab lessons do) stayed raw HTML,
    said nowhere: a file beside the lesson reached neither the page (Sphinx copies no file
    raw HTML names) nor the download. It is a Markdown image now (its file copied beside the
    chapter; an address on the web kept); one among other HTML is named at its cell and line,
    and an image after a multi-line `<img>` at the lesson's line (the line was counted after the
    `<img>` was written on one line, naming a line above it). A file name with a space was
    written as `![](my pic.png)`, no image, its file neither copied nor named; it is copied
    under a name Sphinx finds (it looks an image up by its percent-encoded address)."""
    import nbformat

    book, folder = _book(tmp_path), tmp_path / "course"
    (folder / "res").mkdir(parents=True)
    (folder / "res" / "flow.png").write_bytes(b"\x89PNG flow")
    (folder / "res" / "my pic.png").write_bytes(b"\x89PNG mine")
    lesson = folder / "flow.ipynb"
    lesson.write_text(nbformat.writes(nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# Flow\n\nThe steps:\n\n<p align=\"center\">\n"
                                      "<img src=\"res/flow.png\" width=900 alt=\"The steps\"/>\n"
                                      "</p>\n\nAs in the picture."),
        nbformat.v4.new_markdown_cell("A logo <img src='https://example.org/l.png' alt=logo> "
                                      "and\n<img src=\"res/gone.png\">, then a table:\n\n<table>"
                                      "\n<tr><td><img src=\"res/flow.png\"></td></tr></table>"),
        nbformat.v4.new_code_cell("print(1)"),
        nbformat.v4.new_markdown_cell("<p align=\"center\">\n<img src=\"res/flow.png\"\n"
                                      "     width=600/>\n</p>\n\nSee <img\nsrc=\"res/a.png\"> "
                                      "and\n![b](res/b.png)."),
        nbformat.v4.new_markdown_cell("<img src=\"res/my pic.png\" alt=\"Mine\"> and "
                                      "![again](<res/my pic.png>)"),
        nbformat.v4.new_markdown_cell("The talk:\n\n<div class=\"video\">\n<iframe "
                                      "src=\"https://example.org/v\"></iframe></div>"),
        nbformat.v4.new_raw_cell(".. math::\n\n   y = 2x"),
    ])))
    assert tool.main(["--from", str(lesson), "--book", str(book)]) == 0
    out, text = capsys.readouterr().out, (book / "flow.md").read_text()
    assert "![](flow/res/flow.png)\n\nSee ![](res/a.png) and\n![b](res/b.png)." in text, text
    assert "The steps:\n\n![The steps](flow/res/flow.png)\n\nAs in the picture." in text, text
    assert (book / "flow" / "res" / "flow.png").read_bytes() == b"\x89PNG flow"
    assert "A logo ![logo](https://example.org/l.png) and\n![](res/gone.png)," in text, text
    assert "wrote the 6 image(s) the lesson showed in HTML" in out, out
    assert "![Mine](flow/res/my-pic.png) and ![again](flow/res/my-pic.png)" in text, text
    assert (book / "flow" / "res" / "my-pic.png").read_bytes() == b"\x89PNG mine"
    to_do = out.split("Still to do:")[1]
    assert "  - cell 2, line 2: res/gone.png: an image the lesson shows but does not hold" \
        in to_do, to_do
    # on one line, as rasbt's multi-line <table> cover is told
    assert re.search(r"\n  - cell 2, line 4: an image inside other HTML \(`<table> <tr><td><img "
                     r"[^\n]*`\), left as it is", to_do), to_do
    assert "  - cell 4, line 6: res/a.png: an image" in to_do, to_do
    assert "  - cell 4, line 8: res/b.png: an image" in to_do, to_do
    # what a handout typeset without network, or a download, cannot show, named too
    assert "  - cell 2, line 1: https://example.org/l.png: an image on the web, which no PDF " \
        "(a lab's handout) shows: it is typeset without the network" in to_do, to_do
    assert "  - cell 6, line 4: an embedded page or video (`<iframe>`), which no PDF or " \
        "download shows" in to_do, to_do
    # a raw cell was left out, said nowhere
    assert "  - cell 7: a raw cell (`.. math::`), left out: no page, PDF or download of the " \
        "book shows one" in to_do, to_do


def test_an_image_no_pdf_shows_is_told_to_be_saved_as_a_png_or_pdf(tmp_path, capsys):
    """JAX's thinking_in_jax shows Colab's badge, an SVG on the web: the tool said to save it
    beside the chapter, where the PDF's build stops at it again (an SVG); an SVG or GIF
    beside the lesson was copied unsaid, and the PDF's build stopped at it."""
    (tmp_path / "res").mkdir()
    for image in ("graph.svg", "spin.gif", "plot.png"):
        (tmp_path / "res" / image).write_bytes(b"image")
    _, said = _brought_in(tmp_path, capsys, "badges.md", MYST_PLACES.replace(
        "The [previous lesson](intro.html).",
        "![Open](https://example.org/badge.svg) ![web](https://example.org/w.png)\n\n"
        "![graph](res/graph.svg) ![spin](res/spin.gif) ![plot](res/plot.png)"))
    to_do = said.split("Still to do:")[1]
    assert "line 9: https://example.org/badge.svg: an image on the web, which no PDF (a lab's " \
        "handout) shows: it is typeset without the network (the build stops at it): save it " \
        "as a PNG or PDF in badges/, beside the chapter, and change its link, or take it out" \
        in to_do, to_do
    assert "https://example.org/w.png: an image on the web, which no PDF (a lab's handout) " \
        "shows: it is typeset without the network (the build stops at it): save it in " \
        "badges/, beside the chapter" in to_do, to_do
    told = re.findall(r"line \d+: (\S+): an image of a kind no PDF \(a lab's handout\) shows "
                      r"\(the build of one stops at it\): save it as a PNG or PDF", to_do)
    assert told == ["badges/res/graph.svg", "badges/res/spin.gif"], to_do


def test_an_image_inside_a_directive_is_copied_or_told(tmp_path, capsys):
    """An image in a ```{note} (commonmark reads its body as a code block) was neither copied
    nor told (found testing QuantEcon's included admonitions): the build stopped at it. One in
    a code block stays as it is, text."""
    (tmp_path / "res").mkdir()
    (tmp_path / "res" / "x.png").write_bytes(b"\x89PNG x")
    book, said = _brought_in(tmp_path, capsys, "notes.md", MYST_PLACES.replace(
        "The [previous lesson](intro.html).",
        "```{note}\n![x](res/x.png)\n```\n\n```{warning}\n:class: dropdown\n\n![z](res/z.png)\n"
        "```\n\n```{code-block} markdown\n![c](res/c.png)\n```"))
    to_do = said.split("Still to do:")[1]
    assert re.findall(r"line (\d+): (\S+): an image the lesson shows but does not hold", to_do) \
        == [("16", "res/z.png"), ("29", "res/gone.png")], to_do
    text = (book / "notes.md").read_text()
    assert "```{note}\n![x](notes/res/x.png)\n```" in text and "![c](res/c.png)" in text, text
    assert (book / "notes" / "res" / "x.png").read_bytes() == b"\x89PNG x"


def test_a_lesson_whose_cells_import_what_the_book_lacks_is_told_before_the_build(tmp_path,
                                                                                  capsys):
    """NYU-DLSP20's autograd lesson imports torchviz, its tensor lesson `res.plot_lib` (a
    module beside it): each was first told by a failed build, one cell at a time. A module
    under a namespace installed here (sphinxcontrib, which several packages share) was never
    named: its top level was found. A module of a package the environment lacks is named by
    its package (torchviz.dot is torchviz's, excused here by its install line). UvA's PyTorch
    lab loads `%load_ext tensorboard`, which was not named (IPython's own autoreload is none);
    `%reload_ext` loads one too. IPython passes a comment after such a magic on as part of its
    argument (`No module named 'x  # c'`, matplotlib's "unrecognized arguments"): named too."""
    import nbformat

    book, folder = _book(tmp_path), tmp_path / "course"
    (folder / "res").mkdir(parents=True)
    (folder / "res" / "plot_lib.py").write_text("def set_default(): pass\n")
    lesson = folder / "graphs.ipynb"
    lesson.write_text(nbformat.writes(nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# Graphs"),
        nbformat.v4.new_code_cell("%matplotlib inline\nimport torch, numpy as np\n"
                                  "from no_such_module_here import make_dot\ntorch.ones?"),
        nbformat.v4.new_code_cell("from res.plot_lib import set_default\nfrom . import near"),
        nbformat.v4.new_code_cell("def f():\n    import also_not_a_module"),
        nbformat.v4.new_code_cell("!pip install torchviz\nfrom torchviz.dot import make_dot\n"
                                  "from not_installed_here.models.bert import Model"),
        nbformat.v4.new_code_cell("from google.colab import drive\nimport google.cloud.storage\n"
                                  "import sphinxcontrib.no_such_builder"),
        nbformat.v4.new_code_cell("%load_ext autoreload\n%load_ext no_such_extension_here\n"
                                  "%reload_ext no_such_reloaded_one  # a comment"),
        nbformat.v4.new_code_cell("%matplotlib inline  # plots in the page\nx = '#'"),
    ])))
    assert tool.main(["--from", str(lesson), "--book", str(book)]) == 0
    to_do = capsys.readouterr().out.split("Still to do:")[1]
    assert ("the book's environment lacks: no_such_module_here, also_not_a_module, "
            "not_installed_here, google.cloud, sphinxcontrib.no_such_builder, "
            "no_such_extension_here, no_such_reloaded_one (" in to_do), to_do
    assert "cell 6, line 1: the cell imports google.colab (`from google.colab import drive`)" \
        in to_do, to_do
    comments = re.findall(r"(cell \d+, line \d+): `(%.+?)`: IPython passes the comment on", to_do)
    assert comments == [("cell 7, line 3", "%reload_ext no_such_reloaded_one  # a comment"),
                        ("cell 8, line 1", "%matplotlib inline  # plots in the page")], to_do
    assert "make chapter-packages" in to_do
    assert "res (beside the lesson)" in to_do
    assert not any(name in to_do for name in ("torch,", "numpy", "near"))


def test_a_lacking_module_is_named_by_the_package_that_installs_it(tmp_path, capsys):
    """jax-ai-stack's neural_net_basics imports sklearn: the tool said to declare `sklearn`,
    whose package on PyPI refuses to install ('use scikit-learn'), so `make chapter-packages`
    failed as told. A module an install line names pinned (`einops==0.8.0`), or by its
    package's name (`scikit-learn` for sklearn), was asked for again."""
    import nbformat

    book, lesson = _book(tmp_path), tmp_path / "basics.ipynb"
    lesson.write_text(nbformat.writes(nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# Basics"),
        nbformat.v4.new_code_cell("!pip install -q scikit-learn einops==0.8.0\n"
                                  "import sklearn, einops, cv2\nfrom skimage import io"),
    ])))
    assert tool.main(["--from", str(lesson), "--book", str(book)]) == 0
    to_do = capsys.readouterr().out.split("Still to do:")[1]
    [lacking] = [line for line in to_do.splitlines() if "environment lacks" in line]
    assert "lacks: opencv-python (for cv2), scikit-image (for skimage) (" in lacking, lacking
    assert "the install lines named, as docs/authoring.md says: scikit-learn, einops==0.8.0" \
        in to_do, to_do
    # Colab lessons install OpenCV's headless build (the review's H10)
    assert load_tool("import_chapter")._unimportable(
        {"cv2": None}, ["opencv-python-headless"], None) == ([], [])


def _line_of(lesson: str, fragment: str) -> int:
    """The line (from 1) of the lesson's one line holding ``fragment``."""
    [line] = [n for n, held in enumerate(lesson.splitlines(), 1) if fragment in held]
    return line


SPHINX_GALLERY = '''"""
Gradients
=========

Use :func:`torch.autograd.grad` on ``y``, a `Legendre polynomial`_ (see :ref:`second-part`).

.. _Legendre polynomial:
    https://example.org/legendre
"""
import torch

###############################################################################
# .. _second-part:
#
# A second part
# -------------
#
# See `the docs <https://pytorch.org/docs>`_ and `the forum <https://discuss.pytorch.org>`__,
# or `the next tutorial <next_tutorial.html>`_.
#
# .. note::
#    Gradients add up.
#
# .. image:: /_static/img/graph.png

print(torch.ones(1))

###############################################################################
# A third part
# ------------
#
# As :ref:`elsewhere <other-lesson>`, and :ref:`sphx_glr_beginner_basics_intro.py`.

print(2)
'''

PERCENT = '''# %% [markdown]
# # Percent lesson
# Some prose.

# %%
print(1 + 1)
'''


# As VS Code writes one: its magics not commented (jupytext calls the format hydrogen).
HYDROGEN = PERCENT.replace("print(1 + 1)", "%time total = 1 + 1\nprint(total)")


@pytest.mark.parametrize("suffix, source, expected", [
    # The sections' levels are the script's, counted over all its blocks (jupytext counts
    # them per block: each section was a second chapter title); a note is an admonition,
    # an anonymous link leaves no `_`, a reference to a section of the script is MyST's.
    (".py", SPHINX_GALLERY, ["(lesson)=\n# Gradients", "{func}`torch.autograd.grad`",
                             "[the docs](https://pytorch.org/docs) and [the forum](https://"
                             "discuss.pytorch.org),", ":::{note}\nGradients add up.\n:::",
                             "a [Legendre polynomial](https://example.org/legendre) (see "
                             "{ref}`second-part`).", "(second-part)=\n## A second part",
                             "## A third part"]),
    # a raw docstring (sphinx-gallery's own examples, for their math) came in as one code cell;
    # blocks split at `# %%` (as sphinx-gallery allows) were read as a percent script's code
    (".py", f"r{SPHINX_GALLERY}", ["(lesson)=\n# Gradients", "## A third part"]),
    (".py", SPHINX_GALLERY.replace("#" * 79, "# %%"), ["(lesson)=\n# Gradients",
                                                      "(second-part)=\n## A second part"]),
    (".py", PERCENT, ["# Percent lesson", "Some prose."]),
    (".py", HYDROGEN, ["# Percent lesson", "%time total = 1 + 1\nprint(total)"]),
])
def test_a_script_comes_in_as_a_chapter(tmp_path, capsys, suffix, source, expected):
    book = _book(tmp_path)
    lesson = tmp_path / f"lesson{suffix}"
    lesson.write_text(source)
    assert tool.main(["--from", str(lesson), "--book", str(book)]) == 0
    text = (book / "lesson.md").read_text()
    assert is_chapter_source(text) and all(part in text for part in expected), text
    code = [c.source for c in read_chapter(text).cells if c.cell_type == "code"]
    assert code[-1].startswith(("print(", "%time"))
    # a link to a page of the lesson's own site is named (the build stops at it, no fix said)
    said = capsys.readouterr().out
    assert ("the links to pages of the lesson's own site, which the book does not have (the "
            f"build stops at each): line {_line_of(SPHINX_GALLERY, 'next_tutorial.html')} "
            "(`next_tutorial.html`)\n") in said \
        or source is not SPHINX_GALLERY, said
    # a reference to a section of the lesson's site: a MyST one (the build stops at it), said
    # (a label may hold dots: sphinx-gallery's own)
    assert "{ref}`elsewhere <other-lesson>`, and {ref}`sphx_glr_beginner_basics_intro.py`" \
        in text or source is not SPHINX_GALLERY, text
    assert ("references to sections or pages of the lesson's site, which the book does not have "
            "(the build stops at each): line {0} (`other-lesson`), line {0} "
            "(`sphx_glr_beginner_basics_intro.py`)\n").format(
                _line_of(SPHINX_GALLERY, "other-lesson")) \
        in said or source is not SPHINX_GALLERY, said
    # an `.. image::` (rst2md's `file://` address) is the lesson's file, not one on the web
    assert f"line {_line_of(SPHINX_GALLERY, 'graph.png')}: _static/img/graph.png: an image " \
        "the lesson shows but does not hold" in said or source is not SPHINX_GALLERY, said


def test_a_gallery_script_with_a_metadata_header_keeps_it_and_is_told_of_it(tmp_path, capsys):
    """jupytext reads a `# ---` header into a raw cell before its own `%matplotlib inline`:
    the header, no page shows, is named at its line; the script's first block is the title."""
    book = _book(tmp_path)
    lesson = tmp_path / "lesson.py"
    lesson.write_text("# ---\n# title: My tutorial\n# ---\n" + SPHINX_GALLERY)
    assert tool.main(["--from", str(lesson), "--book", str(book)]) == 0
    said = capsys.readouterr().out
    assert "line 1: a raw cell (`---`), left out" in said, said
    cells = read_chapter((book / "lesson.md").read_text()).cells
    assert "(lesson)=\n# Gradients" in cells[0].source
    assert "%matplotlib inline" not in [cell.source for cell in cells]


# A percent script opening with its module docstring, before its first `# %%` (as written by
# hand or in VS Code): sphinx-gallery splits blocks at `# %%` too, but defines no typed cells
# and needs a reST title in the docstring; jupytext reads the docstring as the first code cell.
PERCENT_DOCSTRING = '''"""
Training a classifier
=====================

Run it as a script, or open it as a notebook.
"""

# %% [markdown]
# # Training a classifier
#
# The loss falls as the model learns.

# %%
# the data first
total = 1 + 1
print(total)
'''
JUPYTEXT_HEADER = """# ---
# jupyter:
#   jupytext:
#     text_representation: {extension: .py, format_name: percent}
# ---
"""


COMMENTS = "# # Training a classifier\n#\n# The loss falls as the model learns."
CODE = "# the data first\ntotal = 1 + 1\nprint(total)"


@pytest.mark.parametrize("lesson, code", [
    (PERCENT_DOCSTRING, [CODE]),  # typed cells: jupytext's
    # no reST title in the docstring: no sphinx-gallery script
    (PERCENT_DOCSTRING.replace("=" * 21 + "\n", "").replace(" [markdown]", ""), [COMMENTS, CODE]),
    # a jupytext header names the format
    (JUPYTEXT_HEADER + PERCENT_DOCSTRING.replace(" [markdown]", ""), [COMMENTS, CODE]),
])
def test_a_percent_script_opening_with_a_docstring_is_read_as_jupytext_reads_it(
        tmp_path, capsys, lesson, code):
    """Since 0185871 a docstring first meant a sphinx-gallery script: the docstring came in as
    prose, a `# %%` cell's comments as prose and a markdown cell's text through rst2md."""
    book, said = _brought_in(tmp_path, capsys, "lesson.py", lesson)
    cells = read_chapter((book / "lesson.md").read_text()).cells
    docstring = lesson[lesson.index('"""'):lesson.rindex('"""') + 3]
    assert [cell.source for cell in cells if cell.cell_type == "code"
            and "remove-cell" not in cell_tags(cell)] == [docstring, *code], cells
    # the docstring cell shows its string as its output: the author is told, at its line
    assert (f"line {lesson[:lesson.index(docstring)].count(chr(10)) + 1}: a cell holding only "
            "a string (a script's docstring)") in said, said


def test_a_notebook_cell_showing_a_string_is_no_docstring(tmp_path, capsys):
    """A lesson teaching strings shows one as a cell's value; only a script's is a docstring."""
    import nbformat

    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("'hello'")])
    said = _brought_in(tmp_path, capsys, "strings.ipynb", nbformat.writes(notebook))[1]
    assert "a cell holding only" not in said and "strings" in said, said


def _brought_in(tmp_path: Path, capsys, lesson_name: str, text: str) -> tuple[Path, str]:
    """A lesson of this text brought into a copy of the book: the book, what the tool said."""
    book, lesson = _book(tmp_path), tmp_path / lesson_name
    lesson.write_text(text)
    assert tool.main(["--from", str(lesson), "--book", str(book)]) == 0
    return book, capsys.readouterr().out


def test_a_line_of_display_math_is_no_heading(tmp_path, capsys):
    """NTNU's ODE lecture writes `y(b) - y(a)\\n=\\n\\int ...\\n=` in a `$$` block, which
    commonmark reads as headings underlined by `=`: the tool made one a section (`## \\int
    ...`), dropping its `=`, and took another for the lesson's first heading."""
    math = ("$$\nu(b) - u(a)\n=\n\\int_a^b u'(t)\\,dt\n=\n\\int_a^b f(t)\\,dt\n$$\n\n"
            ":::{math}\na\n=\nb\n:::")  # MyST's colon fence too (HR's F7)
    book, said = _brought_in(tmp_path, capsys, "ode.md", MYST_PLACES.replace(
        "The [previous lesson](intro.html).", f"{math}\n\n# Steps"))
    text = (book / "ode.md").read_text()
    assert math in text and "\n## Steps\n" in text and "# Places" in text, text
    assert "no title" not in said, said


def test_a_cell_reading_what_only_an_answer_defines_is_told_to_need_the_answers(tmp_path,
                                                                                capsys):
    """NTNU's ODE lecture times `lotka_volterra`, which only an exercise's gated solution
    defines: the student edition stops there. The tool names the cell and the tag that has
    that edition show it without running it; a name a `%%timeit` body binds is its own, and so
    is one a cell binds before it reads it."""
    solved = ("```{exercise}\n:label: ex-f\nWrite f.\n```\n\n````{solution-start} ex-f\n````\n\n"
              "```{code-cell} ipython3\ndef f(x):\n    return 2 * x\nk = 3\n```\n\n"
              "```{solution-end}\n```\n\n```{code-cell} ipython3\n%%timeit\nk = 1\n"
              "k + f(k)\n```\n\n"
              "```{code-cell} ipython3\ntwice = f(2)\n```\n\n"
              "```{code-cell} ipython3\nprint(twice)\n```\n\n"  # needs the one above (HR's F18)
              "```{code-cell} ipython3\nk = 4\nprint(k)\n```")  # its own `k` (MIT lab 1's `y`)
    lesson = MYST_PLACES.replace("The [previous lesson](intro.html).", solved)
    said = _brought_in(tmp_path, capsys, "times.md", lesson)[1]
    told = re.findall(r"line (\d+): `(\w+)` is defined only by an answer above, or a cell that "
                      r"needs one, which the student edition does not run \(it stops here\): tag "
                      r"the cell `needs-answers`", said)
    lines = lesson.splitlines()
    assert [(lines[int(line) - 1], name) for line, name in told] == [
        ("k + f(k)", "f"), ("twice = f(2)", "f"), ("print(twice)", "twice")], said


@pytest.mark.parametrize("answered", [False, True])
def test_a_cell_running_an_exercises_blank_is_told_to_need_the_answers(tmp_path, capsys,
                                                                       answered):
    """udlbook's Chap06/6_2 leaves `compute_loss` to the student (`# TODO`, `return 0`) and
    prints it in the next cell: the tool said nothing, so the student page showed the
    blank's 0 as verified, and no answer was asked for. A cell that calls the blank, or a
    def that does, is told; a parameter of the blank's name is not the blank; so is a name
    a blank that is no Python assigns (MIT's `x = # TODO`: the student edition stopped at
    the next cell's NameError, told to "tag it raises-exception"). Without answers, the
    tool asks for them, tagged as completing each exercise. A TODO after working code and a
    raise in a branch are the author's notes, no blanks."""
    import nbformat

    sources = ["import math", "def area(r):\n    # TODO -- the circle's area\n    return 0",
               "print(area(2))", "def doubled(r):\n    return 2 * area(r)",
               "def apply(area):\n    return area(1)", "shown = apply(abs)", "print(doubled(1))",
               "print(shown, math.pi)", "print(len(area.__name__))",
               "r = 2\nside = # TODO: the square's side", "print(side)",  # MIT's: no Python
               "def mean(t):\n    raise NotImplementedError('write mean')", "print(mean([1]))",
               # only what the TODO's statement binds is a blank, no import, no data beside it;
               # a base class's method that a subclass overrides is none (HR's F10, F19)
               "import numpy as np\n# TODO: write g\ndef g(x):\n    return 0", "print(np.pi)",
               "data = [1, 2]\ndef h(x):\n    # TODO: the square\n    return 0", "print(data)",
               "class Base:\n    def forward(self, x):\n        raise NotImplementedError",
               "class Lin(Base):\n    def forward(self, x):\n        return x",
               "print(Lin().forward(1))",
               # the author's own notes in working code are none (autodidax's: its `grad`
               # cells were told to need answers, and the lesson to lack them)
               "def vspace(a):\n    return abs(a)  # TODO handle integers?",
               "def dtype(d):\n    if d == 1:\n        return 'f'\n    else:\n"
               "        raise NotImplementedError('no type for', d)",
               "def rule(d):\n    if d: raise NotImplementedError  # TODO\n    return d",
               "print(vspace(1), dtype(1), rule(0))",
               # a placeholder of any kind is a blank (HR's G3): an attribute's, a literal,
               # MIT 6.S191's TODO strings, a docstring's TODO
               "class Net:\n    def __init__(self):\n        self.fc = None  # TODO: a layer",
               "def lr():\n    return 0.0  # TODO: choose a rate",
               "def loss(y):\n    return ce('''TODO''', '''TODO''')  # TODO",
               "def sq(x):\n    '''TODO: the square'''\n    return x",
               "print(Net(), lr(), loss(1), sq(2))"]
    cells = [nbformat.v4.new_code_cell(source) for source in sources]
    if answered:
        cells.insert(2, nbformat.v4.new_code_cell("def area(r):\n    return math.pi * r ** 2",
                                                  metadata={"tags": ["answer"]}))
    said = _brought_in(tmp_path, capsys, "blanks.ipynb",
                       nbformat.writes(nbformat.v4.new_notebook(cells=cells)))[1]
    at = 2 + answered  # the answer's cell, where there is one, shifts those below it
    told = re.findall(r"cell (\d+), line (\d+): `(\w+)` is, or calls, what the student writes at "
                      r"cell (\d+) \(an exercise\), which the student edition runs blank", said)
    assert told == [(str(at + 1), "1", "area", "2"), (str(at + 5), "1", "doubled", "2"),
                    (str(at + 7), "1", "area", "2"), (str(at + 9), "1", "side", str(at + 8)),
                    (str(at + 11), "1", "mean", str(at + 10)),
                    (str(at + 27), "1", "Net", str(at + 23))], said
    asked = re.findall(r"the lesson leaves exercises to the student \(a `TODO` or `raise "
                       r"NotImplementedError`: (.*?)\) and "
                       r"gives no answer: after each, write its answer as a code cell tagged "
                       r"`answer` and `completes-exercise`", said)
    assert asked == ([] if answered else [
        f"cell 2, cell {at + 8}, cell {at + 10}, cell {at + 12}, cell {at + 14}, "
        f"cell {at + 23}, cell {at + 24}, cell {at + 25}, cell {at + 26}"]), said
    assert "`Lin`" not in said and "`vspace`" not in said and "`dtype`" not in said, said


def test_a_lectures_colon_fences_and_its_collapsed_solutions(tmp_path, capsys):
    """A Markdown lecture with sphinx-design's colon fences (`::::{tab-set}`): jupytext takes
    a line opening with `:::` for pandoc's, and the tool ended in a PandocError traceback
    (without pandoc; with it, pandoc would have rewritten the MyST). A `{dropdown}` titled as
    a solution (a Jupyter Book lesson's `:::{dropdown} Solution`, nested in a `{note}`) came in
    silently: every student's page opens it with a click. Each such block is told at its line;
    one titled otherwise is not."""
    tabs = "::::{tab-set}\n:::{tab-item} PyTorch\nTensors.\n:::\n::::"
    lecture = (f"# Fences\n\n{tabs}\n\n::::{{note}}\nWhat is 2 + 2?\n\n:::{{dropdown}} Solution\n"
               "Four.\n:::\n::::\n\n```{dropdown} More reading\nA book.\n```\n\n"
               "<details><summary>Click for the answer</summary>Four.</details>\n\n"
               "```python\nx = 1\n```\n")
    book, said = _brought_in(tmp_path, capsys, "fences.md", lecture)
    assert tabs in (book / "fences.md").read_text(), (book / "fences.md").read_text()
    told = re.findall(r"line (\d+): `([^`]+)` shows a solution to every student \(a click "
                      r"opens it; the downloads and search index hold it\): make it a markdown "
                      r"cell tagged `answer`", said)
    lines = lecture.splitlines()
    assert [(lines[int(line) - 1], shown) for line, shown in told] == [
        (":::{dropdown} Solution", ":::{dropdown} Solution"),
        ("<details><summary>Click for the answer</summary>Four.</details>",
         "<details><summary>Click for the answer</summary>Four.</details>")], said


def test_a_lessons_open_in_colab_badges_are_taken_out(tmp_path, capsys):
    """udlbook's notebooks open with Colab's badge linked to the lesson's own notebook there:
    the tool kept it and said to save the SVG as a PNG beside the chapter; on the page it
    opened the lesson's notebook, not this edition's (the book's own button does). JAX's
    lessons put Kaggle's badge beside Colab's: it stayed, with that advice. Another linked
    image stays."""
    import nbformat

    colab = "https://colab.research.google.com"
    kaggle = ("[![Open in Kaggle](https://kaggle.com/static/images/open-in-kaggle.svg)](https://"
              "kaggle.com/kernels/welcome?src=https://github.com/o/r/blob/main/l.ipynb)")
    cells = [nbformat.v4.new_markdown_cell(
                 f'<a href="{colab}/github/o/r/blob/main/l.ipynb" target="_parent"><img src="'
                 f'{colab}/assets/colab-badge.svg" alt="Open In Colab"/></a>'),
             nbformat.v4.new_markdown_cell("# Steps\n\n[![Open](" + colab + "/assets/colab-badge"
                                           ".svg)](" + colab + "/drive/1x) " + kaggle + " Read "
                                           "on.\n\n[![plot](res/p.png)](https://example.org/p)"),
             nbformat.v4.new_code_cell("x = 1")]
    (tmp_path / "res").mkdir()
    (tmp_path / "res" / "p.png").write_bytes(b"image")
    book, said = _brought_in(tmp_path, capsys, "badged.ipynb",
                             nbformat.writes(nbformat.v4.new_notebook(cells=cells)))
    text = (book / "badged.md").read_text()
    assert "colab" not in text and "kaggle" not in text and " Read on." in text, text
    assert "[![plot](badged/res/p.png)]" in text, text
    assert "took out the lesson's 3 badge(s) opening it in Colab or Kaggle: each opened the " \
        "lesson's own notebook, not this edition's" in said, said
    assert "colab-badge" not in said and "open-in-kaggle" not in said, said


def test_a_lessons_own_label_of_its_title_is_not_written_twice(tmp_path, capsys):
    """JAX's lessons label their title with their own name (`(jit-compilation)=`), which the
    tool writes above the title too: the two stopped the build ("Duplicate explicit target
    name")."""
    book, _ = _brought_in(tmp_path, capsys, "places.md",
                          MYST_PLACES.replace("# Places", "(places)=\n# Places"))
    assert (book / "places.md").read_text().count("(places)=") == 1


def test_a_lessons_download_of_itself_is_told(tmp_path, capsys):
    """MyST-NB's lessons offer themselves, `{nb-download}`glue.ipynb`` and `{download}`glue.md``:
    brought in as `mystnb-glue`, unsaid, the build stopped at them ("download file not
    readable"), and the chapter's own name would give students its answers. A data file's
    download, and one shown as an example, are not told."""
    _, said = _brought_in(tmp_path, capsys, "glue.md", MYST_PLACES.replace(
        "The [previous lesson](intro.html).",
        "Get it as **{nb-download}`glue.ipynb`** and {download}`its text <glue.md>`; "
        "{download}`data.csv`.\n\n```md\n{download}`other.md`\n```"))
    told = re.findall(r"line (\d+): `(.*?)` downloads a page", said)
    assert told == [("9", "{nb-download}`glue.ipynb`"),
                    ("9", "{download}`its text <glue.md>`")], said


def test_a_lecture_of_prose_alone_gets_no_hidden_first_cell(tmp_path, capsys):
    """A Jupyter Book lesson of prose (an autoencoder workshop's notes): the hidden first cell
    came after the lecture's one markdown cell, last, and its download ended in `%xmode
    Minimal`, a cell with nothing to run after it."""
    book, said = _brought_in(tmp_path, capsys, "prose.md", "# Prose\n\nOnly words.\n")
    assert "%xmode" not in (book / "prose.md").read_text(), (book / "prose.md").read_text()
    assert "- added the book's top matter\n" in said, said


def test_a_book_folder_without_its_index_is_refused_in_one_line(tmp_path, capsys):
    """`--book` naming a folder without index.md ended in a FileNotFoundError traceback, after
    the lesson had been read; nothing is written."""
    lesson = tmp_path / "lesson.md"
    lesson.write_text(MYST_PLACES)
    (tmp_path / "elsewhere").mkdir()
    assert tool.main(["--from", str(lesson), "--book", str(tmp_path / "elsewhere")]) == 1
    said = capsys.readouterr().err
    assert said == f"chapter: --book {tmp_path / 'elsewhere'}: no index.md there: give the " \
        "book's sources (book/)\n", said
    assert not list((tmp_path / "elsewhere").iterdir())


def test_a_tensorboard_cell_is_told_at_its_line(tmp_path, capsys):
    """UvA's PyTorch lab ends with `%tensorboard --logdir ...`: nothing named it, though its
    output is a frame of localhost, which no reader of the page has."""
    import nbformat

    _, said = _brought_in(tmp_path, capsys, "board.ipynb", nbformat.writes(
        nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("%load_ext tensorboard"),
                                        nbformat.v4.new_code_cell("x = 1\n%tensorboard"),
                                        nbformat.v4.new_code_cell('s = """\n%tensorboard\n"""')])))
    # A line of a string is no magic.
    assert re.findall(r"(cell \d+, line \d+): `%tensorboard` starts", said) == ["cell 2, line 2"]


def test_neuromatchs_solution_cells_are_answers_and_its_exercise_cells_raise(tmp_path, capsys):
    """Neuromatch's notebooks mark a solution `# to_remove solution` (its tools drop such cells
    from the student notebook): 14 came in untagged, so the student page showed them all; the
    exercise above each raises NotImplementedError, which the build refused as untagged."""
    import nbformat

    cells = ['raise NotImplementedError("Student exercise: compute v")\nv = ...',
             "# to_remove solution\nv = 2 * 3\nprint(v)",
             '# to_remove explanation\n"""v doubles."""', "# to_remove, not a solution\nw = 1",
             'def f():\n    raise NotImplementedError("in a function: f() is never called")',
             # the name a traceback prints (torch.OutOfMemoryError); an exception in a variable
             'raise torch.cuda.OutOfMemoryError("demo")', 'problem = KeyError(1)\nraise problem',
             "w = # a blank to fill in: no Python (MIT's labs), nothing else named it",
             "%%time\nw = 1"]
    book, said = _brought_in(tmp_path, capsys, "nma.ipynb", nbformat.writes(
        nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])))
    chapter = read_chapter((book / "nma.md").read_text())
    tagged = [(cell.source, cell_tags(cell), cell.metadata.get("raises"))
              for cell in chapter.cells[2:]]  # after the title and the hidden first cell
    assert tagged == [
        (cells[0], ["raises-exception"], "NotImplementedError"),
        ("v = 2 * 3\nprint(v)", ["answer"], None), ('"""v doubles."""', ["answer"], None),
        (cells[3], [], None), (cells[4], [], None),
        (cells[5], ["raises-exception"], "OutOfMemoryError"),
        (cells[6], ["raises-exception"], None), (cells[7], ["raises-exception"], "SyntaxError"),
        (cells[8], [], None)], tagged
    assert ("tagged `answer` the 2 cell(s) marked `# to_remove solution` or `# to_remove "
            "explanation` (Neuromatch's: its student notebooks leave them out): cell 2, cell 3"
            ) in said, said
    assert "tagged `raises-exception` the 4 cell(s) that raise at their top level" in said, said
    assert ("cell 6 (`OutOfMemoryError`), cell 7 (`problem`: any error), cell 8 (`SyntaxError`)"
            ) in said, said


def test_a_folder_outside_the_one_the_cells_run_in_is_named(tmp_path, capsys):
    """UvA's labs 3-17 keep datasets and checkpoints in `../data` and `../saved_models/...`:
    built, the cells wrote beside the temporary folder they ran in (/tmp/saved_models/), where
    the checkpoint stayed after the build, for the next build to find; the tool said nothing.
    So with Flax's `/tmp/my-checkpoints/` (the next build printed 'Found pretrained model'
    where the first trained, and was told to seed)."""
    import nbformat

    cells = ['DATASET_PATH = "../data"\nCHECKPOINT_PATH = "../saved_models/tutorial3"',
             'import os\nroot = os.path.expanduser("~/datasets")\nnote = "... and so on"',
             'torch.save(model, f"../models/{name}.pt")\nopen("data/x.txt")',
             # Flax's checkpointing guides: the machine's temporary folder (a build refuses it)
             "ckpt_dir = '/tmp/my-checkpoints/'\nnot_there = '/tmpfiles/x'"]
    _, said = _brought_in(tmp_path, capsys, "lab3.ipynb", nbformat.writes(
        nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])))
    assert re.findall(r"(cell \d+, line \d+): `([^`]+)` names a folder outside", said) == [
        ("cell 1, line 1", "../data"), ("cell 1, line 2", "../saved_models/tutorial3"),
        ("cell 2, line 2", "~/datasets"), ("cell 3, line 1", "../models/"),
        ("cell 4, line 1", "/tmp/my-checkpoints/")], said
    assert "name one inside it (`saved_models/tutorial3`)" in said, said
    assert "name one inside it (`my-checkpoints/`)" in said, said


def test_a_cell_importing_widgets_is_told_at_its_line(tmp_path, capsys):
    """UvA's PyTorch lab trains under `tqdm.notebook` bars: widgets, which the page drew with
    scripts from cdnjs and jsdelivr (blank offline) and the build never compared; the tool
    said nothing. A text bar (`from tqdm import tqdm`) is no widget."""
    import nbformat

    cells = ["import numpy as np\nfrom tqdm.notebook import tqdm", "import ipywidgets as widgets",
             "from tqdm import tqdm", "from tqdm.auto import trange, tqdm",
             "from tqdm import notebook", "from tqdm import tqdm_notebook as bar"]
    _, said = _brought_in(tmp_path, capsys, "bars.ipynb", nbformat.writes(
        nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])))
    assert re.findall(r"(cell \d+, line \d+) \(`([\w.]+)`\)",
                      said.split("modules that show widgets")[1]) == [
        ("cell 1, line 2", "tqdm.notebook.tqdm"), ("cell 2, line 1", "ipywidgets"),
        ("cell 4, line 1", "tqdm.auto.trange"), ("cell 5, line 1", "tqdm.notebook"),
        ("cell 6, line 1", "tqdm.tqdm_notebook")], said


def test_a_title_asked_for_replaces_the_lessons_own(tmp_path, capsys):
    """`make chapter NAME=uva02 TITLE="UvA 2" FROM=` UvA's PyTorch lab gave its page two
    titles: the one asked for, then the lesson's `# Tutorial 2: ...` as a second `#`."""
    book, lesson = _book(tmp_path), tmp_path / "lab.md"
    lesson.write_text("# Lesson title\n\nText.\n\n## Part\n\nMore.\n")
    assert tool.main(["lab9", "Lab 9: Given", "--from", str(lesson), "--book", str(book)]) == 0
    text = (book / "lab9.md").read_text()
    assert [line for cell in read_chapter(text).cells if cell.cell_type == "markdown"
            for line in cell.source.splitlines() if line.startswith("# ")] == ["# Lab 9: Given"]
    assert "Text.\n\n## Part" in text
    assert "titled it `# Lab 9: Given` in place of the lesson's title `# Lesson title`" in \
        capsys.readouterr().out


@pytest.mark.parametrize("title", [None, "Lab 9: Given"])
def test_a_lesson_whose_hash_headings_are_its_sections_gets_one_title(tmp_path, capsys, title):
    """A lesson with several `#` headings (HR's s25 F8): the title asked for took the place of
    the first one, a section's, whose heading was lost; without one, the page had several `#`
    titles. A `#` line in a code block is no heading (it was taken for the lesson's title)."""
    import nbformat

    lesson = tmp_path / "parts.ipynb"
    lesson.write_text(nbformat.writes(nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("```python\n# a comment, no title\n```\n\n# Setup\n\n"
                                      "Text.\n\n## Detail"),
        nbformat.v4.new_code_cell("print(1)"),
        nbformat.v4.new_markdown_cell("> # Quoted, no heading of the page\n\n- # Listed, none"),
        nbformat.v4.new_markdown_cell("Training\nin two lines\n========\n\n## Loss\n\n"
                                      "###### Deepest")])))
    asked = [title] if title else []
    assert tool.main(["parts", *asked, "--from", str(lesson), "--book", str(_book(tmp_path))]) == 0
    text = (tmp_path / "book" / "parts.md").read_text()
    headings = [line for cell in read_chapter(text).cells if cell.cell_type == "markdown"
                for line in cell.source.splitlines()
                if line.startswith("#") and "," not in line]
    assert "> # Quoted, no heading of the page\n\n- # Listed, none" in text, text
    sections = ["## Training in two lines", "### Loss", "#### Deepest"]  # MyST: no H3 to H6
    assert headings == ([f"# {title}", "## Setup", "### Detail"] if title
                        else ["# Setup", "## Detail"]) + sections, text
    assert "```python\n# a comment, no title\n```" in text
    assert f"made the lesson's {'' if title else 'later '}`#` headings sections" in \
        capsys.readouterr().out


def test_a_lesson_ending_in_a_rule_comes_in_without_it(tmp_path, capsys):
    """UvA's PyTorch lab ends in `---`: the build refused the chapter with docutils' "Document
    may not end with a transition", naming no fix. A rule inside the page stays."""
    import nbformat

    book, said = _brought_in(tmp_path, capsys, "ruled.ipynb", nbformat.writes(
        nbformat.v4.new_notebook(cells=[
            nbformat.v4.new_markdown_cell("# Ruled\n\nAbove.\n\n---\n\nBelow."),
            nbformat.v4.new_code_cell("print(1)"),
            nbformat.v4.new_markdown_cell("Thanks.\n\n---")])))
    text = (book / "ruled.md").read_text()
    assert "Above.\n\n---\n\nBelow." in text and text.endswith("\nThanks.\n"), text
    assert "took out the rule (`---`) the lesson ends with" in said


def test_a_lesson_without_a_title_keeps_its_sections_levels(tmp_path, capsys):
    """Its first heading, a section's (`## The basics`), was made the title: the `###` under
    it then followed a `#`, which the build refuses (MyST: non-consecutive header level)."""
    book, said = _brought_in(tmp_path, capsys, "untitled.py",
                             "# %% [markdown]\n# Welcome.\n#\n# ## The basics\n#\n"
                             "# ### Tensors\n\n# %%\nprint(1)\n")
    text = (book / "untitled.md").read_text()
    assert "(untitled)=\n# untitled\n" in text and "\n## The basics\n\n### Tensors" in text, text
    assert "the lesson has no title (its first heading is not `# …`): the chapter's is its " \
           "name; write one in its `# untitled` line and in book/index.md's reading order, " \
           "whose item names it so" in said  # makemore's: `*makemore-part1-bigrams*.` there


def test_python_in_fenced_blocks_of_a_lessons_prose_is_named(tmp_path, capsys):
    """A d2l lecture's code (```{.python .input}) is no cell to jupytext: it came in as prose,
    never run, and its chapter built green with nothing of it verified, said nowhere."""
    _, said = _brought_in(tmp_path, capsys, "autograd.md",
                          "# Autograd\n\nText.\n\n```{.python .input  n=1}\nimport torch\n```\n\n"
                          "```bash\nls\n```\n\n```python\nx = 1\n```\n")
    assert "the Python in fenced blocks of prose is shown, never run or verified: make each " \
           "block the lesson runs a code cell (```{code-cell} ipython3), leave those it only " \
           "shows: line 5\n" in said  # ```python is a cell
    import nbformat

    # rasbt's ch03 solutions paste each ```python block's output under it in a bare fence
    # (`tensor([[[-9.1476e-02, ...`): shown as the block's output, compared with nothing.
    cells = [("markdown", "# Solutions\n\n```python\nprint(2 + 2)\n```"),
             ("markdown", "It prints:\n\n```\n4\n```"), ("code", "x = 1"),
             ("markdown", "```\nno python above\n```")]
    (tmp_path / "rasbt").mkdir()
    _, said = _brought_in(tmp_path / "rasbt", capsys, "solutions.ipynb", nbformat.writes(
        nbformat.v4.new_notebook(cells=[getattr(nbformat.v4, f"new_{kind}_cell")(source)
                                        for kind, source in cells])))
    assert "shows: cell 1, line 3; and the output pasted under such a block (a bare fence), " \
           "which nothing compares: take it out where its block becomes a code cell: cell 2, " \
           "line 3\n" in said, said


# d2l-en's source of a section (chapter_preliminaries/autograd.md): its four frameworks' tabs.
D2L_TABS = """```{.python .input}
%load_ext d2lbook.tab
tab.interact_select(['mxnet', 'pytorch', 'tensorflow', 'jax'])
```

# Automatic Differentiation
:label:`sec_autograd`

```{.python .input}
%%tab mxnet
from mxnet import np
```

```{.python .input  n=7}
%%tab pytorch
import torch
```

:begin_tab:`mxnet, pytorch`
Before we calculate the gradient
:end_tab:

:begin_tab:`tensorflow`
A tape records it.
:end_tab:

```{.python .input}
#@tab all
x = torch.arange(4.0)
```

```{.python .input}
%%tab all
class Net:
    def __init__(self):
        if tab.selected('mxnet'):
            self.w = np.zeros(2)
        if tab.selected("pytorch", "jax"):
            self.w = torch.zeros(2)
b = torch.rand(2)
```

```{.python .input}
x.requires_grad_(True)
a = torch.randn(size=())
```
"""


def test_a_d2l_sources_pytorch_tab_comes_in(tmp_path, capsys):
    """d2l-en's .md files hold four frameworks' code and prose in tabs: every block came in as
    prose, 52 for autograd.md, each named to be made a code cell by hand (mxnet's, jax's and
    TensorFlow's too), and the other frameworks' prose with its `:begin_tab:` marks showed
    on the page. The PyTorch tab comes in, as d2l-book writes it, each line at its number
    (linear-regression-concise.md's `if tab.selected('pytorch'):` branches too)."""
    book, said = _brought_in(tmp_path, capsys, "autograd.md", D2L_TABS)
    cells = read_chapter((book / "autograd.md").read_text()).cells
    assert [cell.source for cell in cells if cell.cell_type == "code"][1:] == [
        "import torch", "x = torch.arange(4.0)", "class Net:\n    def __init__(self):\n"
        "        self.w = torch.zeros(2)\nb = torch.rand(2)",
        "x.requires_grad_(True)\na = torch.randn(size=())"]
    prose = "".join(cell.source for cell in cells if cell.cell_type == "markdown")
    assert "Before we calculate the gradient" in prose and "tape" not in prose, prose
    assert not re.search("mxnet|tab|input|```", prose), prose
    assert f"line {_line_of(D2L_TABS, 'randn')} (`torch.randn(size=())`)" in said, said
    # its `tab.selected` branches: PyTorch's body kept, each line noted where the lesson has it
    assert f"line {_line_of(D2L_TABS, 'rand(2)')} (`torch.rand(2)`)" in said, said
    assert "fenced blocks" not in said, said


def test_a_d2l_lessons_marks_come_in_as_myst(tmp_path, capsys):
    """d2l's notebooks keep d2l-book's marks, which came in as text the page showed
    (`:label:`, `:numref:`, `[**...**]`): labels, references and citations are MyST's now, the
    slides' marks as d2l's pages have them, each line at its number."""
    import nbformat

    book = _book(tmp_path)
    lesson = tmp_path / "ndarray.ipynb"
    prose = ["# Data\n:label:`sec_data`\n\n[**A tensor**] holds (**numbers**)(~~ on slides~~).",
             ("$$x = 1$$\n:eqlabel:`eq_one`\n\n![A cube](cube.png)\n:width:`40px`\n"
              ":label:`fig_cube`\n\nSee :numref:`sec_data`, :numref:`fig_cube`, :eqref:`eq_one`"
              ", :numref:`sec_other`, [**a link**](https://example.org) and :cite:`Smith.2020`.")]
    lesson.write_text(nbformat.writes(nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell(prose[0]), nbformat.v4.new_code_cell("x = 1"),
        nbformat.v4.new_markdown_cell(prose[1])])))
    assert tool.main(["--from", str(lesson), "--book", str(book)]) == 0
    said = capsys.readouterr().out
    cells = [cell.source for cell in read_chapter((book / "ndarray.md").read_text()).cells
             if cell.cell_type == "markdown"]
    assert cells == ["(sec_data)=\n(ndarray)=\n# Data\n\nA tensor holds numbers.",
                     ("$$x = 1$$ (eq_one)\n\n\n![A cube](cube.png)\n\n\n\nSee {ref}`sec_data`, "
                      "{ref}`fig_cube`, {eq}`eq_one`, {ref}`sec_other`, [**a link**]"
                      "(https://example.org) and {cite:p}`Smith.2020`.")], cells
    # a place is still the lesson's line: the image is on line 4 of its cell
    assert "cell 3, line 4: cube.png: an image the lesson shows but does not hold" in said
    assert "references to sections or pages of the lesson's site, which the book does not " \
           "have (the build stops at each): cell 3, line 8 (`sec_other`)\n" in said, said
    assert "make each a `{figure}` with that `:name:`" in said and ": `fig_cube`\n" in said
    assert "to book/references.bib" in said and "or write them as text: Smith.2020\n" in said
    # a d2l notebook with slide marks only: d2l-book's metadata tells
    lesson = tmp_path / "lookup.ipynb"
    lesson.write_text(nbformat.writes(nbformat.v4.new_notebook(
        metadata={"required_libs": []},
        cells=[nbformat.v4.new_markdown_cell("# Docs\n\nRun (**a test**).")])))
    assert tool.main(["--from", str(lesson), "--book", str(book)]) == 0
    assert "\nRun a test.\n" in (book / "lookup.md").read_text()
    # a Colab notebook's note on its `!pip` cell (linear-regression-scratch.ipynb): taken out
    # with the install line, not left above the title
    lesson = tmp_path / "scratch.ipynb"
    colab = [nbformat.v4.new_markdown_cell(
        "The following additional libraries are needed to run this\nnotebook. Note that running "
        "on Colab is experimental, please report a Github\nissue if you have any problem."),
        nbformat.v4.new_code_cell("!pip install d2l==1.0.3\n"),
        nbformat.v4.new_markdown_cell("# Scratch\n:label:`sec_scratch`\n\nText.")]
    lesson.write_text(nbformat.writes(nbformat.v4.new_notebook(metadata={"required_libs": []},
                                                               cells=colab)))
    assert tool.main(["--from", str(lesson), "--book", str(book)]) == 0
    assert "took out d2l's note on Colab and the libraries to install, which the page showed " \
           "above its title" in capsys.readouterr().out
    assert "Colab" not in (book / "scratch.md").read_text().split("# Scratch")[0]
    # a mark pairs with the next closing one (a link's is no mark), and only a d2l lesson's
    # prose loses them (a `:ref:` is any Sphinx writer's)
    for name, prose, written in [
            ("links.ipynb", "See [**the docs**](https://x.org) and [**a tensor**]. :numref:`a`",
             "See [**the docs**](https://x.org) and a tensor. {ref}`a`"),
            ("bold.ipynb", "Shapes (**Note**: 2) differ; the sum (**adds**), :ref:`a`.",
             "Shapes (**Note**: 2) differ; the sum (**adds**), :ref:`a`.")]:
        lesson = tmp_path / name
        lesson.write_text(nbformat.writes(nbformat.v4.new_notebook(
            cells=[nbformat.v4.new_markdown_cell(f"# Marks\n\n{prose}")])))
        assert tool.main(["--from", str(lesson), "--book", str(book)]) == 0
        assert f"\n{written}\n" in (book / name.replace(".ipynb", ".md")).read_text()


def test_a_cell_that_waits_for_someone_at_the_keyboard_is_told_and_not_held_to_its_error(
        tmp_path, capsys):
    """PDSH's 01.06 (errors and debugging) runs `%debug` and `%pdb on`: a build has no one to
    answer, so the first stopped the build and the second, tagged for the ZeroDivisionError it
    saved, was accepted with the kernel's StdinNotImplementedError in its output."""
    import nbformat

    error = nbformat.v4.new_output("error", ename="ZeroDivisionError", evalue="", traceback=[])
    book, said = _brought_in(tmp_path, capsys, "debugging.ipynb", nbformat.writes(
        nbformat.v4.new_notebook(cells=[
            nbformat.v4.new_code_cell("%debug"),
            nbformat.v4.new_code_cell("%xmode Plain\n%pdb on\n1 / 0", outputs=[error]),
            nbformat.v4.new_code_cell("%pdb OFF\n%pdb on  # why\nmodel.input(1)\n"
                                      "print('input() here')  # input()\nname = input('name? ')"),
            nbformat.v4.new_code_cell("1 / 0", outputs=[error]),
            nbformat.v4.new_code_cell("import getpass\nkey = getpass.getpass('key: ')"),
            nbformat.v4.new_code_cell("%%debug\nx = 1"),
            # JAX's custom-derivative lesson defines a backward pass that calls pdb, run only
            # in its prose: the cell runs (the tool said it stopped the build)
            nbformat.v4.new_code_cell("import pdb\ndef debug_bwd(x, g):\n    pdb.set_trace()\n"
                                      "    return g\nask = lambda: input('?')")])))
    waits = re.findall(r"cell (\d+), line (\d+): `(.+?)` waits for someone at the keyboard", said)
    assert waits == [("1", "1", "%debug"), ("2", "2", "%pdb"), ("3", "5", "input("),
                     ("5", "2", "getpass("), ("6", "1", "%debug")], said
    assert "cell 3, line 2: `%pdb on  # why`: IPython passes the comment on" in said
    code = [cell for cell in read_chapter((book / "debugging.md").read_text()).cells
            if cell.cell_type == "code"]
    assert [cell_tags(cell) for cell in code[2:5]] == [[], [], ["raises-exception"]]


def test_a_command_this_machine_lacks_is_told_before_the_build(tmp_path, capsys, monkeypatch):
    """`!nvidia-smi` (mrdbourke's fundamentals) came in unsaid; the build then stops at it. An
    import whose drawings run `dot` is no line to take out (HR's F2)."""
    monkeypatch.setenv("PATH", str(tmp_path))  # no `dot`
    _, said = _brought_in(tmp_path, capsys, "gpu.py", "# %% [markdown]\n# # GPU\n\n# %%\n"
                          "import graphviz\n\n# %%\n!coursebook-no-such-command -L\n")
    assert "line 8: it runs `coursebook-no-such-command`, which this machine lacks (the build " \
           "stops at it): take the line out" in said
    assert "line 5: a module it imports draws by running `dot`, which this machine lacks (the " \
           "build stops at it): install `dot` (apt install graphviz)\n" in said, said


# A sphinx-gallery script: a comment above its docstring, a heading and a link target that
# Markdown writes in fewer lines, a note's body indented, directives rst2md rewrites.
GALLERY_PLACES = '''# -*- coding: utf-8 -*-
"""Places
======

The `previous lesson <intro.html>`_ and a `Target`_.

.. _Target: https://example.org/target

See `the next lesson <next.html>`_.
"""

import torch

######################################################################
# A section
# ---------
#
# .. note::
#    See `the third lesson <third.html>`_.
#
# .. image:: /_static/img/gone.png
#
# .. image:: https://example.org/web.png
#
# .. raw:: html
#
#    <iframe src="https://example.org/video"></iframe>
#
# .. code-block:: python
#
#    x = 1

print(torch.ones(1))
'''

# A percent script: its cells numbered nowhere in it, one starting after a blank line.
PERCENT_PLACES = '''# %% [markdown]
# # Places
#
# The [previous lesson](intro.html).

# %%
import os

# %% [markdown]
#
# ![gone](res/gone.png) and ![web](https://example.org/web.png)
#
# <iframe src="https://example.org/video"></iframe>
#
# ```python
# x = 1
# ```

# %% [raw]
# .. math::

# %%
print(os.sep)
# !coursebook-no-such-command -L
'''

# A Markdown lecture: jupytext splits its prose at two blank lines, cells it does not show.
MARKDOWN_PLACES = """# Places

The [previous lesson](intro.html).


Then ![gone](res/gone.png) and ![web](https://example.org/web.png).

```{.python .input}
x = 1
```

<iframe src="https://example.org/video"></iframe>
"""

# A MyST lecture: its cells cut where the build cuts them (top matter, `+++`, code cells).
MYST_PLACES = """---
jupytext:
  text_representation: {extension: .md, format_name: myst}
kernelspec: {name: python3, display_name: Python 3}
---

# Places

The [previous lesson](intro.html).

```{code-cell} ipython3
print(1)
```

+++

Then ![gone](res/gone.png).

```{code-cell} ipython3
!coursebook-no-such-command -L
```
"""


GALLERY_WHERE = {"intro.html": "{} (`intro.html`)", "next.html": "{} (`next.html`)",
                 "third.html": "{} (`third.html`)",
                 "gone.png": "{}: _static/img/gone.png: an image the lesson",
                 "web.png": "{}: https://example.org/web.png: an image on the",
                 "<iframe": "{}: an embedded page or video (`<iframe>`)",
                 "code-block:: python": "leave those it only shows: {}\n"}


@pytest.mark.parametrize("name, lesson, places", [
    ("places.py", GALLERY_PLACES, GALLERY_WHERE),
    ("places.py", GALLERY_PLACES.replace("#" * 70, "# %%"), GALLERY_WHERE),
    ("places.py", PERCENT_PLACES, {"intro.html": "{} (`intro.html`)",
                                   "gone.png": "{}: res/gone.png: an image the lesson",
                                   "web.png": "{}: https://example.org/web.png: an image on the",
                                   "<iframe": "{}: an embedded page or video (`<iframe>`)",
                                   "```python": "leave those it only shows: {}\n",
                                   ".. math::": "{}: a raw cell (`.. math::`)",
                                   "no-such-command": "{}: it runs `coursebook-no-such-command`"}),
    ("places.md", MARKDOWN_PLACES, {"intro.html": "{} (`intro.html`)",
                                    "gone.png": "{}: res/gone.png: an image the lesson",
                                    "web.png": "{}: https://example.org/web.png: an image on the",
                                    "<iframe": "{}: an embedded page or video (`<iframe>`)",
                                    "{.python": "leave those it only shows: {}\n"}),
    ("places.md", MYST_PLACES, {"intro.html": "{} (`intro.html`)",
                                "gone.png": "{}: res/gone.png: an image the lesson",
                                "no-such-command": "{}: it runs `coursebook-no-such-command`"}),
])
def test_each_place_a_script_or_lecture_is_told_at_is_its_own_line(tmp_path, capsys, name,
                                                                     lesson, places):
    """The report named a script's places by jupytext's cells ("cell 4, line 5"), which the
    script numbers nowhere (a sphinx-gallery script's first was jupytext's own `%matplotlib
    inline`), and lines within the Markdown rst2md wrote (a heading's underline, a link
    target taken out: every line below was off); a lecture's by the cells jupytext splits its
    prose into, or the build's reader. Each is the lesson's own line now, holding what is
    named."""
    _, said = _brought_in(tmp_path, capsys, name, lesson)
    to_do = said.split("Still to do:")[1]
    for fragment, place in places.items():
        assert place.format(f"line {_line_of(lesson, fragment)}") in to_do, (fragment, to_do)
    assert not re.search(r"cell \d", to_do), to_do


R_KERNEL = {"display_name": "R", "language": "R", "name": "ir"}


@pytest.mark.parametrize("name, text", [
    ("plain.py", "x = 1\n"),
    # an R lesson came in as a Python chapter: `x <- 5` runs there as `x < -5`
    ("plain.ipynb", json.dumps({"cells": [{"cell_type": "code", "execution_count": None,
                                           "id": "r1", "metadata": {}, "outputs": [],
                                           "source": "x <- 5"}],
                                "metadata": {"kernelspec": R_KERNEL}, "nbformat": 4,
                                "nbformat_minor": 5})),
    ("plain.md", ("---\njupytext:\n  text_representation: {extension: .md, format_name: myst}\n"
                  f"kernelspec: {R_KERNEL}\n---\n\n# R\n\n```{{code-cell}} r\nx <- 5\n```\n")),
])
def test_a_file_that_is_no_lesson_is_one_line_and_writes_nothing(tmp_path, capsys, name, text):
    book = _book(tmp_path)
    lesson = tmp_path / name
    lesson.write_text(text)
    assert tool.main(["--from", str(lesson), "--book", str(book)]) == 1
    said = capsys.readouterr().err
    assert said.count("\n") == 1 and not (book / "plain.md").exists(), said
    assert name.endswith(".py") or "a lesson in R (its kernel: ir)" in said, said


# --- Expected outputs: an edited cell's diff; one chapter's accept leaves the others ---------

def test_an_edited_cells_message_shows_the_diff_against_the_entry_it_replaced():
    from coursebook.page_state import CellOutput
    from coursebook.verify.expectations import Expectations, compare

    expected = Expectations()
    expected.by_edition["student"] = {"aaaa": "one", "bbbb": "loss 26.1\nend", "cccc": "three"}
    outputs = [CellOutput("aaaa", 1, "a", "one"), CellOutput("eeee", 2, "b2", "loss 28.1\nend"),
               CellOutput("cccc", 3, "c", "three")]
    [mismatch] = compare(expected, "student", outputs)
    message = mismatch.diff(Path("x.txt"))
    assert "against the entry of the code it replaced" in message
    assert "-loss 26.1" in message and "+loss 28.1" in message and " end" in message
    # A cell added, not edited, has no entry to compare with: its output is shown.
    outputs.insert(1, CellOutput("ffff", 2, "new", "new cell"))
    assert [m.replaced for m in compare(expected, "student", outputs)] == [None, None]


def test_accepting_the_same_outputs_from_another_run_rewrites_nothing(tmp_path):
    from coursebook.page_state import CellOutput
    from coursebook.verify.expectations import accept, read_expectations, write_expectations

    path = tmp_path / "pt01.txt"
    outputs = [CellOutput("aaaaaaaa", 1, "print(1)", "1")]
    assert write_expectations(path, accept(None, "student", outputs, "run-here")[0],
                              lambda: ["aaaaaaaa"], ["# header"])
    before = path.read_text()
    # Another machine (its platform is part of the run's digest) prints the same.
    again, _ = accept(read_expectations(path), "student", outputs, "run-elsewhere")
    assert not write_expectations(path, again, lambda: ["aaaaaaaa"], ["# another header"])
    assert path.read_text() == before


MYST_LECTURE = '''---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
kernelspec:
  name: lecture-env
  display_name: Lecture env
---

# Sums

```{code-cell} ipython3
:tags: [hide-output]
!pip install --upgrade lecturetools
```

```{exercise-start}
:label: sums-ex
```

Add one and two.

```{exercise-end}
```

```{solution-start} sums-ex
:class: dropdown
```

```{code-cell} ipython3
print(1 + 2)
```

```{solution-end}
```
'''


def test_a_myst_lecture_comes_in_with_its_solutions_as_answers(tmp_path, capsys):
    book = _book(tmp_path)
    lesson = tmp_path / "sums.md"
    lesson.write_text(MYST_LECTURE)
    assert tool.main(["--from", str(lesson), "--book", str(book)]) == 0
    assert "lecturetools" in capsys.readouterr().out
    cells = read_chapter((book / "sums.md").read_text()).cells
    code = [c for c in cells if c.cell_type == "code"]
    assert [c.source for c in code[1:]] == ["print(1 + 2)"]  # the install cell is gone
    assert "answer" in cell_tags(code[1])  # the gated solution's code: an answer


def test_a_lectures_references_to_its_own_site_and_works_are_named(tmp_path, capsys):
    """A MyST lecture's references to the lesson's other pages and sections (and theorems:
    NTNU's ODE lecture's 5 `{prf:ref}` of other lectures), and the works it cites, came in
    unsaid (QuantEcon's lectures hold 172 `{doc}` and 165 `{cite}`): the build stopped at
    each. Those the chapter or the book holds (a page, a label, a directive's `:label:`, a
    figure's name, a key of book/references.bib) are left. A figure's caption and
    name (myst-nb's cell options) were dropped: its `{numref}` stopped the build."""
    book = _book(tmp_path)
    (book / "references.bib").write_text("@book{Known2020,\n  title = {A book},\n}\n")
    (book / "extra.md").write_text("(extra-label)=\n# Extra\n")
    lesson = tmp_path / "supply.md"
    prose = ("(here)=\nSee {doc}`intro_supply_demand`, {doc}`index`, {ref}`here`, {ref}`Extra "
             "<extra-label>`, {ref}`other-lecture`, {numref}`fig_line`, {eq}`eq:demand`, "
             "{eq}`eq:supply`, {cite}`Known2020,Other2021`, {prf:ref}`exa-growth`, {prf:ref}`"
             "Its <thm-own>` and {cite:t}`Third`.\n\n```{math}\n:label: eq:demand\nq = 1\n```"
             "\n\n$$\nq = 2\n$$(eq:supply)\n\n:::{prf:theorem}\n:label: thm-own\nIt.\n:::")
    figure = ("```{code-cell} ipython3\n---\nmystnb:\n  figure:\n    caption: A line\n"
              "    name: fig_line\n---\nprint(1)")
    lesson.write_text(MYST_PLACES.replace("The [previous lesson](intro.html).", prose)
                      .replace("```{code-cell} ipython3\nprint(1)", figure))
    assert tool.main(["--from", str(lesson), "--book", str(book)]) == 0
    said = capsys.readouterr().out
    assert "the book does not have (the build stops at each): line 10 (`intro_supply_demand`), " \
           "line 10 (`other-lecture`), line 10 (`exa-growth`)\n" in said, said
    assert "or write them as text: Other2021, Third\n" in said, said
    # myst-nb's own cell options stay: the figure keeps its caption and the name it is cited by
    [cell] = [cell for cell in read_chapter((book / "supply.md").read_text()).cells
              if cell.source == "print(1)"]
    assert cell.metadata["mystnb"] == {"figure": {"caption": "A line", "name": "fig_line"}}


def test_a_lectures_glossary_terms_the_book_lacks_are_named(tmp_path, capsys):
    """JAX's key-concepts lesson looks up five terms in its site's glossary (`{term}`Tracer``,
    `{term}`transformations <transformation>``): unsaid, the build stopped at each ("term not
    in glossary"). A term book/glossary.md defines (any case) or the lesson's own glossary does
    is left; its blanks folded, as Sphinx folds them (HR's F5: a wrapped term was told)."""
    _, said = _brought_in(tmp_path, capsys, "concepts.md", MYST_PLACES.replace(
        "The [previous lesson](intro.html).",
        "With {term}`JIT` and {term}`transformations <transformation>`, a {term}`Tracer`, a\n"
        "{term}`pytree`, {term}`eager\nmode` and {term}`Jupyter  kernel`.\n\n```{glossary}\n"
        ":sorted:\n\npytree\n  A tree of arrays.\n```"))
    assert "the terms the lesson looks up in its site's glossary, which the book's lacks (the " \
           "build stops at each): line 9 (`transformation`), line 9 (`Tracer`)\n" in said, said


def test_a_file_a_lecture_includes_is_written_in(tmp_path, capsys):
    """QuantEcon's lecture-jax lectures open with ```{include} _admonition/gpu.md```: the tool
    said nothing, and the build stopped at it (CRITICAL: file not found, book/_admonition/gpu.md).
    Copied beside the chapter, a Markdown file would be a page of the book: its text is written
    in, the images it shows copied as the lesson's are (HR's F13), and the lines after it
    still named at the lesson's lines. One the lesson does not hold is named."""
    (tmp_path / "_admonition").mkdir()
    (tmp_path / "_admonition" / "gpu.md").write_text("**GPU**: use one.\n\n![chip](chip.png)\n")
    (tmp_path / "_admonition" / "chip.png").write_bytes(b"\x89PNG chip")
    (tmp_path / "_admonition" / "one.md").write_text("![none](none.png)\n")
    book, said = _brought_in(tmp_path, capsys, "newton.md", MYST_PLACES.replace(
        "The [previous lesson](intro.html).",
        "```{include} _admonition/gpu.md\n```\n\nText.\n\n```{include} _admonition/gone.md\n```"
        "\n\n```{include} _admonition/gpu.md\n```\n\n![lost](lost.png)\n\n```{include} "
        "_admonition/one.md\n```\n\n![after](after.png)"))
    assert "includes (`{include}`: beside the chapter, a Markdown file is a page of the book): " \
           "_admonition/gpu.md at line 9, _admonition/gpu.md at line 17, _admonition/one.md at " \
           "line 22\n" in said, said
    to_do = said.split("Still to do:")[1]
    assert "line 14: `{include} _admonition/gone.md`: a file the lesson does not hold beside " \
           "it (the build stops at it)" in to_do, said
    # a one-line file's lines (one fewer than its directive's) at the directive's, and after it
    assert re.findall(r"line (\d+): (\S+): an image the lesson shows but does not", to_do) == [
        ("20", "lost.png"), ("22", "_admonition/none.png"), ("25", "after.png"),
        ("33", "res/gone.png")], to_do
    text = (book / "newton.md").read_text()
    shown = "**GPU**: use one.\n\n![chip](newton/_admonition/chip.png)"
    assert f"# Places\n\n{shown}\n\nText.\n\n```{{include}} _admonition/gone.md\n```\n\n" \
           f"{shown}\n\n![lost](lost.png)" in text, text
    assert (book / "newton" / "_admonition" / "chip.png").read_bytes() == b"\x89PNG chip"
    assert not list(book.rglob("gpu.md"))


def test_a_lectures_links_to_its_own_labels_stay_and_its_index_entries_go(tmp_path, capsys):
    """QuantEcon's lectures link their own labels in Markdown (`[Exercise 1](ex_label)`, which
    the page resolves, as MyST does): once told as links to the lesson's own site. Their index
    entries (`{index}` blocks, a title's `{index}` role) showed nowhere: the book has no index."""
    book = _book(tmp_path)
    lesson = tmp_path / "loops.md"
    lesson.write_text(MYST_PLACES.replace("# Places\n", "# {index}`Loops <single: Loops>`\n\n"
                                          "```{index} single: Python; Loops\n```\n\n(ex_label)=\n")
                      .replace("The [previous lesson](intro.html).",
                               "As [Exercise 1](ex_label) asks, see the [previous lesson]"
                               "(intro.html)."))
    assert tool.main(["--from", str(lesson), "--book", str(book)]) == 0
    said = capsys.readouterr().out
    assert "the build stops at each): line 14 (`intro.html`)\n" in said, said
    assert "took out the lesson's 2 index entries" in said, said
    text = (book / "loops.md").read_text()
    assert "(loops)=\n# Loops\n\n(ex_label)=\n\nAs [Exercise 1](ex_label) asks" in text, text
    assert "index" not in text, text


def test_a_quoted_name_is_the_lessons_label_and_a_link_with_a_colon_is_a_reference(tmp_path,
                                                                                   capsys):
    """jupyter-book's glue page names a figure `:name: "fig-boot"` (MyST drops the quotes, the
    page resolves it): told as a reference to the lesson's site. Its `[see](explain:migration)`
    is a reference MyST does not find (no URL scheme it knows), which the build stops at: not
    told."""
    _, said = _brought_in(tmp_path, capsys, "pasted.md", MYST_PLACES.replace(
        "The [previous lesson](intro.html).",
        "```{glue:figure} mean_fig\n:name: \"fig-mean\"\n\nThe mean.\n```\n\n"
        "See {ref}`the figure <fig-mean>` and [the guide](explain:guide).\n\n"
        "````md\nWrite {ref}`a-label` to link.\n````\n\n"
        "```{code-block} md\nOr {ref}`b-label`.\n```"))
    assert "the build stops at each): line 15 (`explain:guide`)\n" in said, said
    assert not {"fig-mean", "a-label", "b-label"} & set(re.findall(r"[\w-]+", said)), said


def test_an_error_saved_on_a_gpu_is_told_not_to_raise_on_the_books_cpu(tmp_path, capsys):
    """mrdbourke's fundamentals saved `tensor_on_gpu.numpy()`'s error on Colab's GPU: tagged
    `raises-exception`, the CPU build stopped at it ('tagged `raises-exception` but did not
    raise ... drop the tag if it is meant to succeed'), and the tool had not said why."""
    errors = [("TypeError", "can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu()"),
              ("AssertionError", "Torch not compiled with CUDA enabled"),  # a CPU's: it raises
              ("RuntimeError", "Expected all tensors to be on the same device, but found at "
                               "least two devices, cuda:0 and cpu!")]
    _, said = _brought_in(tmp_path, capsys, "gpu.ipynb", json.dumps({
        "nbformat": 4, "nbformat_minor": 4, "metadata": {}, "cells": [
            {"cell_type": "code", "metadata": {}, "execution_count": 1, "source": f"x{n} = 1",
             "outputs": [{"output_type": "error", "ename": name, "evalue": value,
                          "traceback": []}]} for n, (name, value) in enumerate(errors)]}))
    assert re.findall(r"(cell \d+): its saved error is a GPU's \(`([^`]*)`\), which the book's "
                      r"builds lack \(the CPU build of torch\)", said) == [
        ("cell 1", "TypeError: can't convert cuda:0 device type tensor to numpy"),
        ("cell 3", "RuntimeError: Expected all tensors to be on the same device, but found at "
                   "least two devices, cuda:0 and cpu!")], said


def test_a_cell_naming_its_error_without_the_tag_is_told():
    """mrdbourke's fundamentals: the tool wrote `raises: TypeError` (a GPU's error); the CPU
    build said 'did not raise ... drop the tag', and with the tag dropped `raises` stayed,
    holding the cell to nothing and read by nothing, said nowhere."""
    import nbformat
    from docutils import nodes

    from coursebook.model.cell_notes import place_at
    from coursebook.verify.chapter_checks import cell_problems

    def problems(tags: list[str], metadata: dict) -> list[str]:
        doctree = nodes.container()
        doctree += nodes.container(nb_element="cell_code", cell_index=0,
                                   cell_metadata={"tags": tags, **metadata})
        cell = place_at(nbformat.v4.new_code_cell("t.numpy()"), 9)
        return [found.message for found in cell_problems(doctree, [cell], True, None)]

    [tagged] = problems(["raises-exception"], {"raises": "TypeError"})
    assert tagged.endswith("or drop the tag and its `raises` if it is meant to succeed."), tagged
    assert problems([], {"raises": "TypeError"}) == [
        "code cell `t.numpy()` names the error it teaches (`raises: TypeError`) but is not "
        "tagged `raises-exception`, and raised nothing: take `raises` out, or tag it."]
    assert problems([], {}) == []


def test_headings_that_skip_a_level_are_lifted_under_their_section(tmp_path, capsys):
    """mrdbourke's exercises put `###` questions under their `#` title: brought in as they
    were, each stopped the build (MyST: 'Non-consecutive header level increase; H1 to H3')."""
    book, said = _brought_in(tmp_path, capsys, "lab.ipynb", json.dumps({
        "nbformat": 4, "nbformat_minor": 4, "metadata": {}, "cells": [
            {"cell_type": "markdown", "metadata": {}, "source": source} for source in [
                "# Lab\n\n### One\n\ntext", "Two\n---\n\n##### Deep\n\n```\n### code\n```",
                "## Three\n\n#### Four\n\n### Five"]]}))
    text = (book / "lab.md").read_text()
    assert re.findall(r"^#+ (?!An error).*$|^Two\n---$", text, re.M) == [
        "# Lab", "## One", "Two\n---", "### Deep", "### code", "## Three", "### Four", "### Five"]
    assert "lifted 3 heading(s) that skipped a level" in said, said


def test_cells_that_draw_random_numbers_before_any_seed_are_named(tmp_path, capsys):
    """QuantEcon's functions lecture draws with `uniform()` unseeded: accept-outputs ran it
    twice, both runs drew 3 for `binomial_rv(10, 0.5)` and took that as expected, which most
    later builds refuse. Each cell's first draw before its module is seeded is named; a seeded
    module, a seeded generator and its methods are not."""
    book = _book(tmp_path)
    cells = ["import numpy as np\nfrom random import uniform as draw",
             "rng = np.random.default_rng(1)\nrng.normal()\nnp.random.default_rng(0).normal()",
             "x = 1\nprint(np.random.randn(2))\nprint(np.random.rand())",
             "np.random.seed(0)\nprint(np.random.rand())", "draw()"]
    lesson = tmp_path / "draws.md"
    lesson.write_text(MYST_PLACES.split("The [previous")[0] + "".join(
        f"```{{code-cell}} ipython3\n{cell}\n```\n\n" for cell in cells))
    assert tool.main(["--from", str(lesson), "--book", str(book)]) == 0
    said = capsys.readouterr().out
    assert "seed the random numbers before the first draw (`np.random.seed(0)`, `random.seed(0)`)" \
        in said, said
    assert "as expected: line 22 (`np.random.randn(2)`), line 32 (`draw()`)\n" in said, said
    assert "the generator" not in said  # np.random.seed returns None
    # torch.manual_seed returns its generator: as a cell's last line (d2l's ndarray, seeded as
    # told), the page showed `<torch._C.Generator at 0x…>`
    lesson = tmp_path / "torch_draws.md"
    # Karpathy's makemore draws with `generator=g`, a torch.Generator of its own, whose seed is
    # fixed when made (67280421310721, unless seeded): all 9 of its draws were told to be
    # seeded, and accept-outputs refused them; only the default generator's draws are drawn so.
    lesson.write_text(MYST_PLACES.split("The [previous")[0] + "".join(
        f"```{{code-cell}} ipython3\n{cell}\n```\n\n" for cell in [
            "import torch\ng = torch.Generator().manual_seed(7)\ntorch.rand(2, generator=g)",
            "torch.multinomial(torch.ones(3), 2, generator=torch.Generator())",
            "torch.randn(2, generator=torch.default_generator)", "torch.randn(2)"]))
    assert tool.main(["--from", str(lesson), "--book", str(book)]) == 0
    said = capsys.readouterr().out
    assert "seed the random numbers before the first draw (`torch.manual_seed(0)`; not as a "\
        "cell's last line, whose value, the generator, the page would show): " in said, said
    assert re.findall(r"(line \d+) \(`(torch[^`]*)`\)", said) == [
        ("line 20", "torch.randn(2, generator=torch.default_generator)"),
        ("line 24", "torch.randn(2)")], said
    # A draw in a function's body draws where it is called (rasbt's SelfAttention_v1 draws in
    # `__init__`, defined above the seed that precedes making it): once told at the definition.
    lesson = tmp_path / "deferred_draws.md"
    lesson.write_text(MYST_PLACES.split("The [previous")[0] + "".join(
        f"```{{code-cell}} ipython3\n{cell}\n```\n\n" for cell in [
            "import torch\ndef noise():\n    return torch.randn(2)",
            "class Net:\n    def __init__(self):\n        self.w = noise()\n\nnet = Net()",
            "class Seeded:\n    def __init__(self):\n        self.w = torch.rand(2)\n\n"
            "torch.manual_seed(0)\nSeeded()"]))
    assert tool.main(["--from", str(lesson), "--book", str(book)]) == 0
    said = capsys.readouterr().out
    assert re.findall(r"(line \d+) \(`([^`]*)`\)", said) == [("line 20", "Net()")], said


def test_the_default_generator_and_a_reseeded_one_draw_unseeded():
    """HR's F1: `generator=None` (the default generator, what a helper passes on), an alias of
    torch.default_generator and a generator after `g.seed()` (a seed drawn at random) were all
    taken as seeded; `torch.manual_seed` does not seed a generator of one's own."""
    import nbformat

    cells = ["import torch\nd = torch.default_generator\ntorch.rand(2, generator=None)",
             "torch.rand(2, generator=d)",
             "g = torch.Generator()\ng.seed()\ntorch.manual_seed(0)\ntorch.rand(2, generator=g)",
             "torch.rand(2, generator=None)\ntorch.rand(2, generator=d)",
             "g.manual_seed(1)\ntorch.rand(2, generator=g)", "torch.seed()\ntorch.rand(2)",
             # a name bound again to a new generator: its seed fixed again (HR's s29 F2)
             "g.seed()\ng = torch.Generator()\ntorch.rand(2, generator=g)"]
    told = load_tool("import_chapter").unseeded_draws(map(nbformat.v4.new_code_cell, cells))
    assert [(cells.index(cell.source), line, call) for _, cell, line, call in told] == [
        (0, 3, "torch.rand(2, generator=None)"), (1, 1, "torch.rand(2, generator=d)"),
        (2, 4, "torch.rand(2, generator=g)"), (5, 2, "torch.rand(2)")]
    # a function's seeds and draws, in order, where it is called (HR's s29 F3: only the first
    # was kept, so `set_seed()` seeded `random` alone and accept-outputs refused the outputs)
    cells = ["import random\nimport numpy as np\nimport torch\ndef set_seed(s=0):\n"
             "    random.seed(s)\n    np.random.seed(s)\n    torch.manual_seed(s)",
             "def late():\n    np.random.seed()\n    return np.random.rand()",
             "set_seed()\nprint(torch.rand(2), np.random.rand())\nlate()",
             # a default argument draws where its function is defined (HR's s29 F4), never again
             "torch.seed()\n\ndef noisy(x=torch.rand(2)):\n    return x\n\nset_seed()\nnoisy()"]
    told = load_tool("import_chapter").unseeded_draws(map(nbformat.v4.new_code_cell, cells))
    assert [(cells.index(cell.source), line, call) for _, cell, line, call in told] == [
        (2, 3, "late()"), (3, 3, "torch.rand(2)")]
    # a layer draws its weights when made, nn.init and a tensor's in-place methods draw too
    # (the blitz's LeNet, made unseeded: `net = Net()` was not told, the seed put before the
    # first draw told, `torch.randn(1, 1, 32, 32)`, and accept-outputs' second run differed)
    cells = ["import torch\nfrom torch import nn\nclass Net(nn.Module):\n"
             "    def __init__(self):\n        super().__init__()\n"
             "        self.fc = nn.Linear(2, 1)", "net = Net()\nprint(net)",
             "w = torch.empty(3)\nnn.init.xavier_uniform_(w, generator=torch.Generator())\n"
             "torch.nn.init.normal_(w)", "torch.manual_seed(0)\nw.uniform_(-1, 1)\nNet()",
             "torch.seed()\ntorch.empty(2).bernoulli_(0.5)"]
    told = load_tool("import_chapter").unseeded_draws(map(nbformat.v4.new_code_cell, cells))
    assert [(cells.index(cell.source), line, call) for _, cell, line, call in told] == [
        (1, 1, "Net()"), (2, 3, "torch.nn.init.normal_(w)"),
        (4, 2, "torch.empty(2).bernoulli_(0.5)")]


def test_a_lectures_figures_from_its_own_folder_come_beside_the_chapter(tmp_path, capsys):
    """QuantEcon's lectures show their figures with MyST's `{figure} /_static/...` (the path
    from the lectures' folder, Sphinx's root there): once neither copied nor named, and the
    build stopped at each. A `{figure}` or `{image}` the lesson's folder holds comes in as a
    Markdown image does, whatever the book holds at that path (HR's F5); one with an absolute
    path that only the book holds is the book's own, and one neither holds is told (short_path's
    four were taken for the book's, which has none)."""
    book = _book(tmp_path)
    (book / "_static" / "pics").mkdir(parents=True)
    (book / "_static" / "logo.png").write_bytes(b"logo")
    (book / "_static" / "pics" / "a.png").write_bytes(b"the book's")
    (tmp_path / "_static" / "pics").mkdir(parents=True)
    (tmp_path / "_static" / "pics" / "a.png").write_bytes(b"a")
    (tmp_path / "pics").mkdir()
    (tmp_path / "pics" / "b.png").write_bytes(b"b")
    lesson = tmp_path / "figs.md"
    lesson.write_text(MYST_PLACES.replace("The [previous lesson](intro.html).", (
        "```{figure} /_static/pics/a.png\n:scale: 80\n\nA.\n```\n\n```{image} pics/b.png\n```"
        "\n\n```{figure} /_static/logo.png\n```\n\n```{figure} /_static/pics/gone.png\n```")))
    assert tool.main(["--from", str(lesson), "--book", str(book)]) == 0
    said = capsys.readouterr().out
    assert "copied the images the lesson shows (2) into figs/" in said and "logo" not in said, said
    assert re.search(r"line 21: /_static/pics/gone.png: an image the lesson shows but does not "
                     r"hold", said), said
    text = (book / "figs.md").read_text()
    assert "```{figure} figs/_static/pics/a.png\n" in text
    assert "```{image} figs/pics/b.png\n" in text
    assert "```{figure} /_static/logo.png\n" in text
    assert (book / "figs" / "_static" / "pics" / "a.png").read_bytes() == b"a"


def test_a_cell_showing_the_folder_the_cells_run_in_is_no_output_that_varies(tmp_path, capsys):
    """QuantEcon's python_essentials shows `%pwd`: a new temporary folder on each run, which
    the tool told the author to take out or mark `(varies)`; the run now shows it as the
    notebook's folder (test_faults), the same on every run: nothing to say."""
    book = _book(tmp_path)
    lesson = tmp_path / "folders.md"
    cells = ["%pwd", "import os\nwhere = os.getcwd()\nprint(os.getcwd())", "!pwd"]
    lesson.write_text(MYST_PLACES.split("The [previous")[0] + "".join(
        f"```{{code-cell}} ipython3\n{cell}\n```\n\n" for cell in cells))
    assert tool.main(["--from", str(lesson), "--book", str(book)]) == 0
    said = capsys.readouterr().out
    assert "folder the cells run in" not in said and "differs between runs" not in said, said


def test_a_cell_timing_a_statement_is_named(tmp_path, capsys):
    """JAX's jit-compilation lesson times five statements with `%timeit`: unsaid, each came up
    only after accept-outputs' two runs (2 min 44 s), refused as varying."""
    book = _book(tmp_path)
    lesson = tmp_path / "timings.md"
    cells = ["!pip install -q numpy\n%timeit sum(range(9))", "%%timeit\nsum(range(9))",
             "t = %timeit -o sum(range(9))\n%time x = 1", "print('no time')",
             "%timeit -n1 -q -o sum(range(9))",  # -q: quiet, it prints nothing
             # d2l's image-classification-dataset times its loader; a clock read kept, unshown
             "import time\ntic = time.time()\nsum(range(9))\nf'{time.time() - tic:.2f} sec'",
             "for _ in range(2):\n    print(time.perf_counter_ns())\n    time.sleep(0)"]
    lesson.write_text(MYST_PLACES.split("The [previous")[0] + "".join(
        f"```{{code-cell}} ipython3\n{cell}\n```\n\n" for cell in cells))
    assert tool.main(["--from", str(lesson), "--book", str(book)]) == 0
    said = capsys.readouterr().out
    assert re.findall(r"line \d+: `[^`]+` shows how long a statement took", said) == [
        "line 11: `%timeit sum(range(9))` shows how long a statement took",
        "line 15: `%%timeit` shows how long a statement took",
        "line 20: `t = %timeit -o sum(range(9))` shows how long a statement took",
        "line 21: `%time x = 1` shows how long a statement took",
        "line 36: `f'{time.time() - tic:.2f} sec'` shows how long a statement took",
        "line 41: `print(time.perf_counter_ns())` shows how long a statement took"], said


def test_a_cell_showing_the_date_and_time_is_named(tmp_path, capsys):
    """nbdev's directives page shows `datetime.datetime.now()` twice: unsaid, each came up
    only at accept-outputs' second run, refused as varying. A date kept, unshown, is none; one
    kept, then shown in its cell (`print(stamp)`, a last line `stamp`), is named where shown."""
    cells = ["import datetime\ndatetime.datetime.now()", "start = datetime.date.today()",
             "print(f'ran on {datetime.date.today()}')",
             "import time\nwhen = time.ctime()\nprint('ran', when)",
             "stamp = datetime.datetime.now()\nx = 1\nstamp"]
    text = MYST_PLACES.split("The [previous")[0] + "".join(
        f"```{{code-cell}} ipython3\n{cell}\n```\n\n" for cell in cells)
    _, said = _brought_in(tmp_path, capsys, "dates.md", text)
    assert re.findall(r"line \d+: `[^`]+` shows the date and time it ran", said) == [
        "line 11: `datetime.datetime.now()` shows the date and time it ran",
        "line 19: `print(f'ran on {datetime.date.today()}')` shows the date and time it ran",
        "line 25: `print('ran', when)` shows the date and time it ran",
        "line 31: `stamp` shows the date and time it ran"], said


def test_a_cell_showing_an_objects_id_is_named(tmp_path, capsys):
    """d2l's ndarray prints `id(Z)` (an address, new on each run): unsaid, it came up only at
    accept-outputs' second run. Its `id(Y) == before` shows a bool, the same on each run."""
    text = MYST_PLACES.split("The [previous")[0] + "".join(
        f"```{{code-cell}} ipython3\n{cell}\n```\n\n" for cell in
        ["Y = [1]\nbefore = id(Y)\nid(Y) == before", "Z = [2]\nprint('id(Z):', id(Z))",
         # micrograd's draw_dot names its graph's nodes by id(): what the cell shows is none
         "def draw(root):\n    g.edge(str(id(root)), 'x')\n    return g\nid(Z)\nZ"])
    _, said = _brought_in(tmp_path, capsys, "ids.md", text)
    line = text.splitlines().index("print('id(Z):', id(Z))") + 1
    assert re.findall(r"line \d+: `[^`]+` shows an object's id\(\).*", said) == [
        f"line {line}: `print('id(Z):', id(Z))` shows an object's id() (where it lies in memory), "
        "which differs between runs and machines (the build refuses it as an output that "
        "varies): take it out, or mark its expected output `(varies)` as the build then says"], said


def test_a_cell_that_downloads_is_named(tmp_path, capsys):
    """d2l's image-classification-dataset fetches Fashion-MNIST (`download=True`) into d2l's
    default root, `../data`: outside the temporary folder the cells run in, and no network on
    a CI build; the tool said nothing. `download=False` and other calls are not told. It
    then said to pass `download=False` and have the data "there": in a temporary folder,
    new on each run (the tool's `execution_in_temp: true`), no file is ever there, and a
    student's Colab, without the data, stops at `download=False` (pytorch/tutorials'
    quickstart, torchvision's FashionMNIST `Dataset not found`): the files go in book/,
    listed as files the chapter reads."""
    text = MYST_PLACES.split("The [previous")[0] + "".join(
        f"```{{code-cell}} ipython3\n{cell}\n```\n\n" for cell in
        ["import torchvision\ntrain = torchvision.datasets.FashionMNIST(\n    root=root, "
         "train=True, download=True)", "val = FashionMNIST(root, download=False)\nprint(val)"])
    _, said = _brought_in(tmp_path, capsys, "fashion.md", text)
    line = text.splitlines().index("train = torchvision.datasets.FashionMNIST(") + 1
    assert re.findall(r"line \d+: `[^`]+` downloads from the web.*", said) == [
        f"line {line}: `train = torchvision.datasets.FashionMNIST(` downloads from the web as it "
        "runs: a build without the network (CI's) stops at it. Keep `download=True` "
        "(torchvision's datasets fetch nothing where their files are already; a student's Colab "
        "fetches them), put the files it fetches in book/ at the path its root names (not "
        "outside it, as d2l's `../data`), list them in the top matter (`coursebook: {reads: "
        "[...]}`), or take the cell out"], said


def test_a_cell_that_fetches_into_a_cache_of_its_own_is_named(tmp_path, capsys):
    """Raschka's LLMs-from-scratch ch02 calls `tiktoken.get_encoding("gpt2")`, which fetches
    GPT-2's files from the web into tiktoken's cache: this machine, without the network,
    raised ConnectionError there; the tool said nothing. Hugging Face's, torch.hub's and
    scipy.datasets' (through pooch) fetches alike; a call that only shares a word
    (`model.load(path)`), or one that reads a folder (`from_pretrained('./my-model')`), is not
    told."""
    cells = ["import tiktoken\nenc = tiktoken.get_encoding('gpt2')",
             "from transformers import AutoModel\nm = AutoModel.from_pretrained('gpt2')",
             "import torch\nhub = torch.hub.load('pytorch/vision', 'resnet18')\nm.load('w.pt')",
             "mine = AutoModel.from_pretrained('./my-model')",  # a folder: saved, not fetched
             # JAX's convolutions lesson: scipy's sample images come through pooch's cache
             "from scipy import datasets\nimage = datasets.face().mean(-1)"]
    text = MYST_PLACES.split("The [previous")[0] + "".join(
        f"```{{code-cell}} ipython3\n{cell}\n```\n\n" for cell in cells)
    _, said = _brought_in(tmp_path, capsys, "tokens.md", text)
    assert re.findall(r"line (\d+): `([^`]+)` fetches from the web as it runs", said) == [
        ("11", "enc = tiktoken.get_encoding('gpt2')"),
        ("16", "m = AutoModel.from_pretrained('gpt2')"),
        ("21", "hub = torch.hub.load('pytorch/vision', 'resnet18')"),
        ("31", "image = datasets.face().mean(-1)")], said


def test_a_pretrained_model_a_cell_fetches_is_named(tmp_path, capsys):
    """Hugging Face's course (chapter 1, section 3) builds `pipeline("sentiment-analysis")`,
    which fetches a model into the hub's cache; torchvision's transfer-learning lessons ask
    for `weights=` (an enum or its name) and timm's for `pretrained=True`, which fetch into
    torch.hub's: the tool said nothing, the build then stopped at each without the network. A
    weighting that only shares the word (`random.choices(xs, weights=[1, 2])`, k-NN's
    `weights='distance'`), or a lesson's own `pipeline(steps)`, is not told."""
    cells = ["from transformers import pipeline\nclassifier = pipeline('sentiment-analysis')",
             "from torchvision.models import resnet50, ResNet50_Weights\n"
             "m = resnet50(weights=ResNet50_Weights.DEFAULT)",
             "import torchvision\nr = torchvision.models.resnet18(weights='IMAGENET1K_V1')",
             "import timm\nt = timm.create_model('resnet18', pretrained=True)",
             "import random\nx = random.choices([1, 2], weights=[1, 2])\n"
             "mine = resnet50(weights=None)",
             # the review's H15: k-NN's weighting, numpy's, a lesson's own pipeline
             "knn = KNeighborsClassifier(n_neighbors=3, weights='distance')\n"
             "mean = np.average(x, weights='w')\nsteps = pipeline(steps)"]
    text = MYST_PLACES.split("The [previous")[0] + "".join(
        f"```{{code-cell}} ipython3\n{cell}\n```\n\n" for cell in cells)
    _, said = _brought_in(tmp_path, capsys, "pretrained.md", text)
    assert [found for _, found in re.findall(r"line (\d+): `([^`]+)` fetches from the web as "
                                             r"it runs", said)] == [
        "classifier = pipeline('sentiment-analysis')",
        "m = resnet50(weights=ResNet50_Weights.DEFAULT)",
        "r = torchvision.models.resnet18(weights='IMAGENET1K_V1')",
        "t = timm.create_model('resnet18', pretrained=True)"], said


def test_a_cell_that_opens_with_blank_lines_is_told_at_its_own_lines(tmp_path, capsys):
    """Lightning's percent scripts (mnist-hello-world) open cells with blank lines, which
    IPython drops as it reads a cell: the tool told MNIST's download in `prepare_data` two
    lines high, quoting the `def` line above it (and a chapter's messages that read a cell as
    the kernel does, a missing program's, would be as high)."""
    from coursebook.model.notebooks import parsed_cell

    assert parsed_cell("\n  \nx = 1\n!ls\n").body[1].lineno == 4
    _, said = _brought_in(tmp_path, capsys, "hello.py", PERCENT.replace(
        "print(1 + 1)", "\n\nclass Data:\n    def prepare_data(self):\n"
        "        MNIST('.', train=True, download=True)"))
    assert "line 10: `MNIST('.', train=True, download=True)` downloads" in said, said


def test_a_notebook_in_the_book_comes_in_where_it_was_listed(tmp_path, capsys):
    """The build's refusal of a `.ipynb` page names `make chapter FROM=` it: the chapter
    takes the page's place, and the tool says to delete the notebook."""
    book = _book(tmp_path)
    lesson = _notebook_lesson(book / "gradients.ipynb")
    index = (book / "index.md").read_text()
    first = _toctree(book / "index.md")[0]
    (book / "index.md").write_text(index.replace(f"\n{first}\n", f"\n{first}\ngradients\n"))
    listed = (book / "index.md").read_text()
    assert tool.main(["--from", str(lesson), "--book", str(book)]) == 0
    out = capsys.readouterr().out
    assert (book / "gradients.md").is_file() and (book / "index.md").read_text() == listed
    assert "table of contents already, left where it is" in out
    assert f"delete {lesson}: {book / 'gradients.md'} replaces it" in out


# A gallery block with a figure and a directive rst2md writes no Markdown for.
GALLERY_FIGURE = '''"""
Shapes
======
"""
import torch

###############################################################################
# The graph:
#
# .. figure:: /_static/img/shape.png
#    :alt: a graph
#
#    The graph after the forward pass,
#    its caption.
#
# .. figure:: /_static/img/other.png
#
#     A caption four spaces in.
#
# .. figure:: /_static/img/third.png
#
# .. tip:: Print a shape,
#    then its size.
#
# .. literalinclude:: shapes.py
#
# .. |pi| replace:: 3.14
#
# .. code-block:: rst
#
#    .. seealso:: shown as code, on purpose

print(torch.ones(2).shape)
'''


def test_a_gallery_figure_is_an_image_and_other_rest_directives_are_named(tmp_path, capsys):
    """A `.. figure::`, a `.. tip::` and a `.. literalinclude::` reached the page as text, and
    the tool said nothing; then a figure's caption was a loose indented text (at four spaces,
    a code block) (HR's s25 F4): it is the paragraph under the image."""
    book = _book(tmp_path)
    lesson = tmp_path / "shapes.py"
    lesson.write_text(GALLERY_FIGURE)
    assert tool.main(["--from", str(lesson), "--book", str(book)]) == 0
    text, said = (book / "shapes.md").read_text(), capsys.readouterr().out
    assert ".. figure::" not in text and "![a graph](_static/img/shape.png)" in text, text
    assert "\n\nThe graph after the forward pass,\nits caption.\n" in text, text
    assert "\n\nA caption four spaces in.\n" in text and "](_static/img/third.png)" in text, text
    assert f"line {_line_of(GALLERY_FIGURE, 'shape.png')}: _static/img/shape.png: an image " \
        "the lesson shows but does not hold" in said, said
    assert ":::{tip}\nPrint a shape,\nthen its size.\n:::" in text, text  # an admonition MyST has
    assert f"line {_line_of(GALLERY_FIGURE, 'literalinclude::')}: `.. literalinclude::`: " \
        "reStructuredText that is no Markdown (the page shows it as text)" in said, said
    assert f"line {_line_of(GALLERY_FIGURE, 'replace::')}: `.. |pi| replace::`" in said, said
    assert "showed in HTML" not in said, said  # rst2md wrote the HTML, not the lesson
    assert "```rst\n.. seealso:: shown as code" in text and "seealso::`" not in said, said


# The blitz's neural_networks_tutorial.py: a literal block under `::` alone and one under a
# paragraph ending `::`, a block quote five spaces in, and the indented blocks of a directive
# and of a list item.
GALLERY_BLOCKS = '''"""
Blocks
======
"""
import torch

###############################################################################
# A graph that ``looks``\\ like this:
#
# ::
#
#     input -> conv2d\\ relu
#           -> loss
#
# Descent (SGD):
#
#      ``weight = weight - learning_rate * gradient``
#
# In code::
#
#     w = w - lr * g
#
# .. note::
#
#     A note.
#
# - an item
#
#     its second paragraph
#
# .. code:: python
#
#     lr = 0.01
#
# .. Note::
#
#       As `Backprop`_ said, ``x``_ and `x`, `y <https://pytorch.org>`_.

print(torch.ones(2).shape)
'''


def test_a_gallery_literal_block_and_block_quote_are_markdowns(tmp_path, capsys):
    """rst2md leaves both as they are: the page showed a paragraph `::` above the graph (a
    code block by luck: four spaces in), `In code::` with its colons, and the quoted
    ``weight = ...`` as a code block with its backticks; none was named."""
    book = _book(tmp_path)
    lesson = tmp_path / "blocks.py"
    lesson.write_text(GALLERY_BLOCKS)
    assert tool.main(["--from", str(lesson), "--book", str(book)]) == 0
    text = (book / "blocks.md").read_text()
    assert "::" not in text.replace(".. note::", "").replace(":::", ""), text
    assert "``looks``like this:\n\n\n```\ninput -> conv2d\\ relu\n      -> loss\n```" in text, text
    assert "In code:\n\n```\nw = w - lr * g\n```" in text, text
    assert "\n\n> ``weight = weight - learning_rate * gradient``\n\n" in text, text
    assert ":::{note}\nA note.\n:::" in text and "- an item\n\n    its second" in text, text
    # `.. code::`, `.. Note::` (reST's names ignore case) were named, left as text
    assert "```python\nlr = 0.01\n```" in text, text
    assert ":::{note}\nAs `Backprop`_ said, ``x``_" in text, text
    said = capsys.readouterr().out  # its reference to a section's title is named, not a code
    assert re.findall(r"line (\d+): (\S+): reStructuredText that is no Markdown", said) == [
        (str(_line_of(GALLERY_BLOCKS, "Backprop")), "`Backprop`_")], said


def _nbformat_4_4(cells: list[str]) -> str:
    """A notebook as Jupyter saved one before nbformat 4.5: its cells have no id."""
    return json.dumps({"nbformat": 4, "nbformat_minor": 4, "metadata": {}, "cells": [
        {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
         "source": source} for source in cells]})


def test_a_file_beside_the_lesson_that_its_cells_read_comes_beside_the_chapter(tmp_path, capsys):
    """Karpathy's makemore lesson reads `names.txt` beside it: the tool said nothing, gave it
    `execution_in_temp: true`, and the build stopped at the cell (FileNotFoundError)."""
    (tmp_path / "lab" / "data").mkdir(parents=True)
    (tmp_path / "lab" / "data" / "words.txt").write_text("ab\ncd\n")
    (tmp_path / "lab" / "lists.txt").write_text("ef\n")
    (tmp_path / "outside.txt").write_text("not beside it\n")
    (tmp_path / "lab" / "helpers.ipynb").write_text("{}")
    lesson = _nbformat_4_4(["w = open('data/words.txt').read()",
                            "s = 'lists.txt'\nprint('absent.txt', '../outside.txt')",
                            "x = 1\n%run helpers.ipynb"])
    book, said = _brought_in(tmp_path, capsys, "lab/lab.ipynb", lesson)
    assert (book / "data" / "words.txt").read_text() == "ab\ncd\n"
    assert (book / "lists.txt").read_text() == "ef\n"
    assert not (book / "absent.txt").exists() and not (book / "helpers.ipynb").exists()
    assert "cell 3, line 2: `helpers.ipynb` beside the lesson, not copied" in said, said
    text = (book / "lab.md").read_text()
    top = yaml.safe_load(text.split("---")[1])
    assert "mystnb" not in top  # its cells run among links to the chapter's folder
    assert top["coursebook"] == {"reads": ["data/words.txt", "lists.txt"]}  # the build keys them
    assert "(data/words.txt at cell 1, line 1, lists.txt at cell 2, line 1) beside the " \
        "chapter, in book/" in said and "listed them in `coursebook: {reads: [...]}`" in said, said
    assert "where a student gets the files the cells read (data/words.txt, lists.txt):" in said
    assert "git add book/lab.md book/data/ book/lists.txt book/index.md" in said, said
    # A file of that name in the book, other than the lesson's: nothing written.
    (tmp_path / "lab" / "lists.txt").write_text("gh\n")
    assert tool.main(["lab2", "--from", str(tmp_path / "lab" / "lab.ipynb"), "--book",
                      str(book)]) == 1
    assert "lists.txt exists, and the lesson's lists.txt differs: nothing written" in \
        capsys.readouterr().err
    assert not (book / "lab2.md").exists() and (book / "lists.txt").read_text() == "ef\n"


def test_a_file_the_lessons_cells_write_is_not_data_to_copy(tmp_path, capsys):
    """PyTorch's quickstart saves `model.pth` and loads it back: where the author had run the
    lesson, its model.pth beside it was copied into book/ as data the cells read, listed in
    `reads` (the run keyed by it), and the report asked the prose to say where students get
    it. A file a cell writes (a writing call's, open(..., 'w')'s, %%writefile's) is the
    lesson's own, also where a later cell reads it; a file it only reads is still data, and
    so is one it reads before it writes it back (an update in place), or inside the writing
    call (HR's F19: its file was not copied): the written file is the call's file argument.
    A write back is told at its line: the build refuses it (HR's F21)."""
    (tmp_path / "lab" / "going_modular").mkdir(parents=True)
    for name in ("model.pth", "fig.png", "log.txt", "going_modular/train.py", "words.txt",
                 "cifar_net.pth", "scores.csv", "poem.txt", "data.txt", "best.pt",
                 "preds.csv", "out.txt", "notes.txt"):
        (tmp_path / "lab" / name).write_text("left by the author's run\n")
    lesson = _nbformat_4_4([
        "torch.save(model.state_dict(), 'model.pth')",
        "model.load_state_dict(torch.load('model.pth'))\nplt.savefig('fig.png')",
        "with open('log.txt', mode='w') as log:\n    log.write('1')\nprint(open('log.txt').read())",
        "%%writefile going_modular/train.py\nprint('trained')",
        "print(open('words.txt').read())",
        "PATH = './cifar_net.pth'\ntorch.save(net.state_dict(), PATH)",
        "scores = pd.read_csv('scores.csv')\nscores.to_csv('scores.csv')",
        "Path('loud.txt').write_text(Path('poem.txt').read_text().upper())",
        "np.save('x.npy', np.loadtxt('data.txt'))",
        "torch.save(m, os.path.join(root, 'best.pt'))\n"
        "m = torch.load(os.path.join(root, 'best.pt'))",
        "preds.to_csv(out / 'preds.csv')\npreds = pd.read_csv(out / 'preds.csv')",
        "with Path('out.txt').open('w') as f:\n    f.write('x')",  # its receiver (HR's G2)
        "with Path('notes.txt').open(mode='a') as f:\n    f.write('x')",
        "print(open('out.txt').read(), open('notes.txt').read())"])
    book, said = _brought_in(tmp_path, capsys, "lab/lab.ipynb", lesson)
    top = yaml.safe_load((book / "lab.md").read_text().split("---")[1])
    assert top["coursebook"] == {"reads": ["words.txt", "scores.csv", "poem.txt", "data.txt"]}
    assert all((book / name).is_file() for name in ("scores.csv", "poem.txt", "data.txt"))
    assert (book / "words.txt").is_file() and not any(
        (book / name).exists() for name in ("model.pth", "fig.png", "log.txt", "going_modular",
                                            "cifar_net.pth", "best.pt", "preds.csv",
                                            "out.txt", "notes.txt"))
    assert "(words.txt at cell 5, line 1, scores.csv at cell 7, line 1, poem.txt at cell 8, " \
        "line 1, data.txt at cell 9, line 1)" in said, said
    assert "cell 7, line 2: writes `scores.csv` back, which its cells read as data (copied, " \
        "listed in `coursebook: reads`): the build refuses that, as the chapter's copy would " \
        "change and its next run read the changed one: write the result at another path" \
        in said, said
    assert said.count("` back, which") == 1, said
    # A Colab lesson's /content/ paths: a build (as root in CI) would write them there.
    lesson = _nbformat_4_4(["%%writefile /content/train.py\nprint('trained')",
                            "x = 1\ntorch.save(model, '/content/model.pt')",
                            "open('/dev/null', 'w').write('not kept')",
                            "torch.save(m, os.path.join('/content', 'models', 'm.pt'))",
                            "df.to_csv('out.csv', sep='/')",
                            "torch.save(m, os.path.join('/content/drive', run, 'best.pt'))",
                            "torch.save(m, Path('/content') / 'm.pt')"])
    (tmp_path / "colab").mkdir()
    said = _brought_in(tmp_path / "colab", capsys, "colab.ipynb", lesson)[1]
    assert "cell 1, line 1: writes `/content/train.py`, outside the chapter's folder: a build " \
        "would write it on the machine that builds the book; name it relative to the chapter " \
        "(`train.py`)" in said, said
    assert "cell 2, line 2: writes `/content/model.pt`" in said and "/dev/null`" not in said
    # The file argument alone (HR's note on 5d30fc1: "writes `/content`", "writes `/`").
    assert re.findall(r"writes `(/[^`]*)`", said) == [
        "/content/train.py", "/content/model.pt", "/content/models/m.pt",
        "/content/drive/…/best.pt", "/content/m.pt"], said  # an unknown folder under one (HR's G1)


def test_a_cell_reading_a_name_only_a_later_cell_defines_is_told_at_its_line(tmp_path, capsys):
    """Karpathy's makemore lesson shows `P.shape` (its cell 19) before `P = ...` (its cell 24):
    saved after running its cells out of order. The tool was silent; the build stopped at a
    NameError. The nbformat 4.4 notebook (no cell ids) also printed nbformat's
    MissingIDFieldWarning into the tool's report."""
    lesson = _nbformat_4_4(["import torch\nN = torch.ones(2)",
                            "def f():\n    return P + later()\n\nprint(len(N), sum(N))\nP.shape",
                            "N.sum()\nQ = [n for n in N]",
                            "P = N / N.sum()\nsum = 0\ndef later():\n    return 1"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _, said = _brought_in(tmp_path, capsys, "lab.ipynb", lesson)
    # Read when called, not defined (f's body), a builtin (sum, until cell 4 rebinds it),
    # defined above (N): not told.
    assert re.findall(r"(cell \d+, line \d+): `(\w+)` is read before any cell above defines it "
                      r"\((cell \d+) does", said) == [("cell 2, line 5", "P", "cell 4")], said


def test_names_a_timed_statement_binds_or_reads_count_where_it_runs(tmp_path, capsys):
    """QuantEcon's newtons_method (lecture-jax) binds `p` in a `%%time` cell, then reads it:
    the tool said `p` was read before any cell defined it and to move the cell below a later
    one (the lesson ran in order). %timeit runs its statement in a function: what it binds is
    gone after it, what it reads is read there."""
    lesson = _nbformat_4_4(["%%time\np = 1", "print(p)", "%time q = 2\nprint(q)",
                            "x = 0\n%timeit -n1 -r1 r = later()", "print(r)",
                            "r = 3\ndef later():\n    return 4"])
    _, said = _brought_in(tmp_path, capsys, "lab.ipynb", lesson)
    assert re.findall(r"(cell \d+, line \d+): `(\w+)` is read before any cell above defines it "
                      r"\((cell \d+) does", said) == [("cell 4, line 2", "later", "cell 6"),
                                                ("cell 5, line 1", "r", "cell 6")], said


def problem(error: str, left_out: dict[str, int] | None = None, printed: str = "",
            chapter: str = "lab.md", source: str = "import a") -> str:
    """What the build says of a cell of ``source`` at line 7 of ``chapter`` that printed
    ``printed`` and raised ``error`` untagged."""
    import nbformat
    from docutils import nodes

    from coursebook.model.cell_notes import place_at
    from coursebook.verify.chapter_checks import cell_problems

    doctree, shown = nodes.container(source=chapter), nodes.container(
        nb_element="cell_code", cell_index=0, cell_metadata={"tags": []})
    shown += nodes.literal_block(printed, printed, classes=["output", "stream"])
    shown += nodes.literal_block(error, error, classes=["traceback"])
    doctree += shown
    [found] = cell_problems(doctree, [place_at(nbformat.v4.new_code_cell(source), 7)],
                            False, None, left_out=left_out)
    return found.message


def test_a_cell_whose_module_is_missing_is_told_to_declare_its_package():
    """Karpathy's micrograd lesson imports graphviz, which the book lacks: the build said
    "Fix the cell", not how (the package declared, then `make chapter-packages`). A name only
    an answer defines (NTNU's ODE lecture's `lotka_volterra`, MIT lab 1's `matrix`) is no
    error to tag, which would fail the instructor edition: the answer is named."""

    said = problem("ModuleNotFoundError: No module named 'graphviz.backend'")
    assert "Declare the package that installs graphviz in its top matter: `coursebook: " \
        "{packages: [...]}`, then `make chapter-packages`; or tag it" in said, said
    # a notebook chapter has no top matter: its metadata, as JSON (a script's jupytext header)
    said = problem("ModuleNotFoundError: No module named 'graphviz'", chapter="lab.ipynb")
    assert 'installs graphviz in its metadata: `"coursebook": {"packages": ["..."]}`' in said
    said = problem("ModuleNotFoundError: No module named 'graphviz'", chapter="lab.py")
    assert "in its jupytext header: `jupyter: {coursebook: {packages: [...]}}`" in said
    assert "Fix the cell, or tag it" in problem("NameError: name 'graphviz' is not defined")
    # UvA's tutorial 2 trains under tqdm.notebook bars: without ipywidgets, "Fix the cell".
    said = problem("ImportError: IProgress not found. Please update jupyter and ipywidgets. See "
                   "https://ipywidgets.readthedocs.io/en/stable/user_install.html")
    assert "show a text bar (`from tqdm import tqdm`), or declare ipywidgets in its top " \
        "matter: `coursebook: {packages: [...]}`, then `make chapter-packages`" in said, said
    assert "raises-exception" not in said and "Fix the cell" not in said
    said = problem("NameError: name 'graphviz' is not defined", {"graphviz": 12})
    assert "`graphviz` is defined at line 12, by an answer or a cell that needs one, which this " \
        "edition does not run: tag this cell `needs-answers` (this edition then shows it " \
        "without running it), or define the name in a cell students run too." in said
    assert "raises-exception" not in said, said
    # pytorch/tutorials' quickstart offline: torchvision prints urllib's error, then raises
    # its own; the build said "Fix the cell, or tag it raises-exception", which a build with
    # the network would then refuse (the cell no longer raises).
    offline = [problem("RuntimeError: Error downloading t.gz", printed="Failed to download (trying"
                       " next):\n<urlopen error [Errno -3] Temporary failure in name resolution>"),
               problem("ConnectionError: HTTPSConnectionPool(host='x.org', port=443): Max "
                       "retries exceeded with url: /t.gz"),
               # QuantEcon's pandas lecture: yfinance fetches with curl (curl_cffi)
               problem("DNSError: Failed to perform, curl: (6) Could not resolve host: "
                       "query2.finance.yahoo.com. See https://curl.se/libcurl/c/libcurl-errors"
                       ".html first for more details."),
               # rasbt's LLMs-from-scratch ch02: tiktoken fetches its encoding into its own
               # cache (TMPDIR/data-gym-cache, the run's own unless TIKTOKEN_CACHE_DIR names
               # one), at no path the cell reads: the advice was that
               problem("ConnectionError: HTTPSConnectionPool(host='openaipublic.blob.core."
                       "windows.net', port=443): Max retries exceeded with url: /gpt-2/encodings/"
                       "main/vocab.bpe (Caused by NameResolutionError(\"...: Failed to resolve "
                       "'openaipublic.blob.core.windows.net' ([Errno -2] Name or service not "
                       "known)\"))")]
    for said in offline:
        # A chapter runs among its folder's files (make chapter FROM= no longer hides them
        # with `execution_in_temp: true`: HR's G15), so no setting is asked for.
        assert "It reached for the network, which a build may lack (CI's has none): put what it " \
            "fetches beside the chapter, at the path the cell reads, listed in its top matter: " \
            "`coursebook: {reads: [...]}`; what a library fetches into a cache of its own " \
            "(`tiktoken.get_encoding`'s, a hub's models) have in that cache on each machine " \
            "that builds (tiktoken's in the home: `TIKTOKEN_CACHE_DIR=$HOME/.cache/tiktoken`, " \
            "as a run's temporary folder goes with it); or take the call out." in said, said
        assert "raises-exception" not in said, said
    assert "network" not in problem("RuntimeError: Error downloading t.gz")
    # pytorch/tutorials' autograd lesson imports torchvision, which `make chapter-packages`
    # installs from PyPI beside the book's CPU torch: its operators do not load ('Fix the
    # cell, or tag it raises-exception', where no line of the cell is at fault)
    said = problem("RuntimeError: operator torchvision::nms does not exist")
    assert "torchvision's compiled operators did not load: the torchvision installed was not " \
        "built for this torch (its CUDA build beside torch's CPU one, say): install the one " \
        "built for it (PyTorch's own index has each), then build again." in said, said
    assert "raises-exception" not in said, said
    # pytorch/tutorials' per-sample-grads lesson sets `device = 'cuda'`: told to fix the cell
    # or tag it raises-exception, which a GPU's run would refuse (it does not raise there)
    for error in ("AssertionError: Torch not compiled with CUDA enabled",
                  "RuntimeError: Found no NVIDIA driver on your system. Please check that you "
                  "have an NVIDIA GPU and installed a driver",
                  "RuntimeError: No CUDA GPUs are available"):
        said = problem(error)
        assert "It asked for a GPU or TPU, which no build of the book has (it builds with " \
            "torch's CPU build): let it run without one (`device = 'cuda' if " \
            "torch.cuda.is_available() else 'cpu'`, JAX's default device), or record the " \
            "chapter on one (docs/recorded-chapters.md)." in said, said
        assert "raises-exception" not in said, said
    # A lab's test of an exercise that raises until written (Neuromatch's, CS231n's): tagged
    # raises-exception, as told, it stops the instructor edition, where the answer runs.
    # PyTorch raises it for a misspelt `forward` too (HR's F21): said as a possibility
    for said in [problem("NotImplementedError: write mean"), problem(
            'NotImplementedError: Module [Net] is missing the required "forward" function')]:
        assert "If it ran an exercise left to the student (its raise stays until they write " \
            "it), tag this cell `needs-answers` (this edition then shows it without running " \
            "it), with the answer in a cell above tagged `answer`; else fix the cell (torch " \
            "raises it for a misspelt `forward` in an nn.Module)." in said, said
        assert "raises-exception" not in said, said


def test_colabs_module_a_hubs_fetch_offline_and_a_jax_gpu_are_told_their_cause():
    """A lesson's `from google.colab import drive` was told to declare 'the package that
    installs google' (none installs Colab's own module); torch.hub's load without the network
    ('no internet connection') and JAX's `jax.devices('gpu')` on a CPU were told "Fix the
    cell, or tag it raises-exception", which a build with the network, or a GPU's, refuses."""
    try:  # the error as this Python raises it: 'google' (hr3's H7: no namespace package)
        import google.colab  # noqa: F401
    except ModuleNotFoundError as missing:
        error = f"ModuleNotFoundError: {missing}"
    for raised in (error, "ModuleNotFoundError: No module named 'google.colab'"):
        said = problem(raised, source="from google.colab import drive")
        assert said.endswith("google.colab is Colab's own module, which no package installs: "
                             "take the cell out (the book builds without Colab)."), said
    # google is also protobuf's namespace: a cell that imports no google.colab is told to declare
    said = problem("ModuleNotFoundError: No module named 'google'", source="import google.protobuf")
    assert "Declare the package that installs google" in said, said
    said = problem("RuntimeError: It looks like there is no internet connection and the repo "
                   "could not be found in the cache (/root/.cache/torch/hub)")
    assert "It reached for the network, which a build may lack" in said, said
    for error in ("RuntimeError: Unknown backend: 'gpu' requested, but no platforms that are "
                  "instances of gpu are present. Platforms present are: cpu",
                  "RuntimeError: Unknown backend: 'tpu' requested, but no platforms that are "
                  "instances of tpu are present. Platforms present are: cpu"):
        said = problem(error)
        assert "It asked for a GPU or TPU, which no build of the book has" in said, said
        assert "raises-exception" not in said, said


def test_a_file_read_at_a_machines_own_path_is_told_to_come_beside_the_chapter():
    """A Kaggle lesson reads `/kaggle/input/titanic/train.csv`, a Colab one
    `/content/drive/MyDrive/data.csv`: the build said "Fix the cell, or tag it
    raises-exception", which a build where the file is would refuse (the cell runs there)."""
    said = problem("FileNotFoundError: [Errno 2] No such file or directory: "
                   "'/kaggle/input/titanic/train.csv'")
    assert said.endswith("    It reads `/kaggle/input/titanic/train.csv`, at a path of the "
                         "machine it was written on, which no build has: put the file beside "
                         "the chapter, listed in its top matter: `coursebook: {reads: [...]}`, "
                         "and read it there, by a relative path (`train.csv`)."), said
    assert "raises-exception" not in said, said
    said = problem("FileNotFoundError: [Errno 2] No such file or directory: 'train.csv'")
    assert "Fix the cell, or tag it `raises-exception`" in said, said  # its own folder's


@pytest.mark.slow
def test_an_edit_of_a_file_a_brought_in_chapter_reads_runs_it_again(tiny_book, tmp_path, capsys):
    """makemore reads names.txt beside it: with names.txt edited, the build took the cached
    run (the old file's outputs) and called them verified."""
    (tmp_path / "lesson").mkdir()
    (tmp_path / "lesson" / "words.txt").write_text("ab cd\n")
    lesson = tmp_path / "lesson" / "lab.ipynb"
    lesson.write_text(_nbformat_4_4(["print(len(open('words.txt').read().split()), 'words')"]))
    assert tool.main(["--from", str(lesson), "--book", str(tiny_book)]) == 0
    assert "reads: [words.txt]" in (tiny_book / "lab.md").read_text()
    cache = tmp_path / "cache"
    for settings in ({"coursebook_accept_outputs": "1"}, {}):  # accepted, then verified
        build = sphinx_build(tiny_book, tmp_path / "out", cache, settings=settings)
        assert build.returncode == 0, build.log[-3000:]
    accepted = next((tiny_book / "expected").rglob("lab.txt")).read_text()
    assert "\n    2 words\n" in accepted
    # Its hash, by which another torch's outputs go stale when the file is edited.
    assert "\n# Files the cells read (a hash of each): words.txt " in accepted, accepted
    # Edited, the same output: verified, and the old hash said (HR's F11), not left silent.
    (tiny_book / "words.txt").write_text("xy zw\n")
    build = sphinx_build(tiny_book, tmp_path / "out", cache)
    assert build.returncode == 0 and "lab.txt holds old hashes of words.txt (files its cells " \
        "read): `make accept-outputs` writes them" in build.log, build.log[-3000:]
    (tiny_book / "words.txt").write_text("ab cd ef\n")
    build = sphinx_build(tiny_book, tmp_path / "out", cache)
    assert build.returncode != 0 and "-2 words\n    +3 words" in build.log, build.log[-3000:]


def test_a_labs_solutions_notebook_comes_in_as_answers_after_the_exercises_it_solves(
        tmp_path, capsys):
    import nbformat

    def notebook(path, *cells):
        path.write_text(nbformat.writes(nbformat.v4.new_notebook(cells=[
            nbformat.v4.new_markdown_cell(cell) if isinstance(cell, str) else
            nbformat.v4.new_code_cell(cell[1], metadata={"id": cell[0]} if cell[0] else {})
            for cell in cells])))
        return path

    book = _book(tmp_path)
    lab = notebook(tmp_path / "lab.ipynb", ("a", "import math"), ("b", "total = # TODO"),
                   ("c", "# TODO: later"), "Add them.")
    # Colab's ids pair the cells: in order, the solution of `b` would be taken for `a`'s.
    solved = notebook(tmp_path / "lab_sol.ipynb", ("b", "total = 1 + 2"), ("a", "import math"),
                      ("c", "# TODO: later"), "Add them.", "Or sum([1, 2]).")
    assert tool.main(["--from", str(lab), "--solutions", str(solved), "--book", str(book)]) == 0
    out = capsys.readouterr().out
    code = [c for c in read_chapter((book / "lab.md").read_text()).cells if c.cell_type == "code"]
    assert [(c.source, "answer" in cell_tags(c)) for c in code[1:]] == [
        ("import math", False), ("total = # TODO", False), ("total = 1 + 2", True),
        ("# TODO: later", False)]  # the exercise stays; a cell alike comes once
    # Marked as completing its stub: the lines it shares with it are the stub's, shown anyway.
    assert cell_tags(code[3]) == ["answer", "completes-exercise"]
    assert f"1 code cells of {solved} that differ from the lab's are `answer` cells" in out
    assert f"cell 3: an exercise (a TODO) whose cell in {solved} is the same: no answer" in out
    assert "\n  - lab_sol.ipynb cell 5: prose the lab does not hold, left out" in out  # alone
    # Without ids in common, in order; a count that differs too: refused, nothing written.
    other = notebook(tmp_path / "other.ipynb", (None, "x = 1"), (None, "y = 2"))
    assert tool.main(["--from", str(other), "--solutions", str(lab), "--book", str(book)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{lab} does not pair with {other}: 3 code cells and 2" in err
    # rasbt's ch03 exercise-solutions.ipynb stands alone: brought in as a chapter of its own
    # (as this told once), every student would see it (HR's F18); as answers, none
    assert err.endswith("give the lab's own solutions, or paste each after its exercise as a "
                        "code cell tagged `answer` and `completes-exercise` (only the instructor "
                        "edition shows it; a chapter of its own would show students all)\n"), err
    assert not (book / "other.md").exists()
    # Solutions without their lab: refused, not a skeleton chapter.
    assert tool.main(["x", "X", "--solutions", str(solved), "--book", str(book)]) == 1
    assert capsys.readouterr().err == f"chapter: SOLUTIONS={solved} without FROM=: give the lab " \
        f"it solves (make chapter FROM=lab.ipynb SOLUTIONS={solved})\n"
    assert not (book / "x.md").exists()


def test_a_graded_assignments_solutions_come_in_as_answers_after_the_students_stubs(
        tmp_path, capsys):
    """nbgrader's, otter-grader's and CS231n's source notebooks mark their solutions (nbgrader's
    docs' ps1, otter's assign-full-example-v1): brought in, they came in untouched, so the
    student edition showed every solution, and `make audit` found none. Each marked solution
    is an answer cell after the form its grader gives students; hidden tests are answers, the
    tests students run need the answers; no mark is left where students see one. Code after
    otter's `y = ...` that reads `y` may raise in both editions (each runs that form): said."""
    import nbformat

    def code(source, **grading):
        return nbformat.v4.new_code_cell(source, metadata={"nbgrader": grading} if grading else {})

    raw = nbformat.v4.new_raw_cell
    cells = [
        code("def double(x):\n    ### BEGIN SOLUTION\n    return 2 * x\n    ### END SOLUTION",
             solution=True, grade=False),
        code("assert double(1) == 2\n### BEGIN HIDDEN TESTS\nassert double(3) == 6\n"
             "### END HIDDEN TESTS", solution=False, grade=True, points=1),
        nbformat.v4.new_markdown_cell("Twice its input.", metadata={"nbgrader": {
            "solution": True, "grade": True}}),
        code("def triple(x):\n    return 3 * x", solution=True, grade=True),
        nbformat.v4.new_markdown_cell("Comment it.\n=== BEGIN MARK SCHEME ===\n1 mark: comments\n"
                                      "=== END MARK SCHEME ===", metadata={"nbgrader": {
                                          "task": True, "points": 1}}),
        raw("# BEGIN QUESTION\nname: q1"), raw("# BEGIN SOLUTION"),
        code("y = 4 # SOLUTION\nz = y + 1\nprint(y) # SOLUTION NO PROMPT\nif True:\n"
             "    # BEGIN SOLUTION\n    w = 5\n    # END SOLUTION\ndef f():\n"
             "    # BEGIN SOLUTION NO PROMPT\n    return 1\n    # END SOLUTION\n"
             '    """ # BEGIN PROMPT\n    pass\n    """; # END PROMPT\nprint(z)  # IGNORE'),
        nbformat.v4.new_markdown_cell("**SOLUTION**: seven."),
        raw("# END SOLUTION"), raw("# BEGIN TESTS"),
        code('""" # BEGIN TEST CONFIG\npoints: 1\n""" # END TEST CONFIG\ndef test_z(z):\n'
             "    assert z == 5\n\ntest_z(z)  # IGNORE"),
        code('""" # BEGIN TEST CONFIG\nhidden: true\n""" # END TEST CONFIG\nassert w == 5'),
        raw("# END TESTS"), raw("# END QUESTION"),
        code("def loss(x):\n    # *****START OF YOUR CODE (DO NOT DELETE/MODIFY THIS LINE)*****\n"
             "    out = x.sum()\n    # *****END OF YOUR CODE (DO NOT DELETE/MODIFY THIS LINE)*****"
             "\n    return out")]
    book, said = _brought_in(tmp_path, capsys, "graded.ipynb",
                             nbformat.writes(nbformat.v4.new_notebook(cells=cells)))
    text = (book / "graded.md").read_text()
    read = [(cell.source, cell_tags(cell)) for cell in read_chapter(text, strict=True).cells[2:]]
    start, end = ("    # *****START OF YOUR CODE (DO NOT DELETE/MODIFY THIS LINE)*****\n",
                  "    # *****END OF YOUR CODE (DO NOT DELETE/MODIFY THIS LINE)*****\n")
    assert read == [
        ("def double(x):\n    # YOUR CODE HERE\n    raise NotImplementedError()", []),
        ("def double(x):\n    return 2 * x", ["answer", "completes-exercise"]),
        ("assert double(1) == 2", ["needs-answers"]),
        ("assert double(1) == 2\nassert double(3) == 6", ["answer", "completes-exercise"]),
        ("YOUR ANSWER HERE", []), ("Twice its input.", ["answer"]),
        ("# YOUR CODE HERE\nraise NotImplementedError()", ["raises-exception"]),
        ("def triple(x):\n    return 3 * x", ["answer", "completes-exercise"]),
        ("Comment it.", []), ("Comment it.\n1 mark: comments", ["answer"]),
        ("y = ...\nz = y + 1\nif True:\n    ...\ndef f():\n    pass",  []),
        ("y = 4\nz = y + 1\nprint(y)\nif True:\n    w = 5\ndef f():\n    return 1",
         ["answer", "completes-exercise"]),
        ("**SOLUTION**: seven.", ["answer"]),
        ("def test_z(z):\n    assert z == 5\n\ntest_z(z)", ["needs-answers"]),
        ("assert w == 5", ["answer"]),
        (f"def loss(x):\n{start}    pass\n{end}    return out", []),
        (f"def loss(x):\n{start}    out = x.sum()\n{end}    return out",
         ["answer", "completes-exercise"])], read
    assert "raw cell" not in said and ("the 10 cell(s) a grader marks (nbgrader's, otter-grader's, "
                                       "CS231n's) are as its students get them") in said, said
    graded = ": cell 1, cell 2, cell 3, cell 4, cell 5, cell 8, cell 9, cell 12, cell 13, cell 16\n"
    assert graded in said, said
    to_do = said.split("Still to do:")[1]
    assert "cell 8: `z = y + 1` reads what the students' form leaves `...`" in to_do, to_do
    assert "`print(z)`" not in to_do and "`def f" not in to_do, to_do


def test_a_quarto_callout_around_a_code_cell_closes_in_its_own_cell(tmp_path, capsys):
    """nbdev's directives page opens a Quarto callout (`::: {.callout-note}`) in one markdown
    cell and closes it (`:::`) in the one after a code cell, as Quarto reads a notebook: one
    document. Written as MyST, the block held the code cell, which myst-nb refuses as nested
    (the build stopped eleven times); its class read as `{.callout-note`. A cell closing one
    and opening the next (one per example) kept the next open and unconverted, and one that
    closed it too was a literal block."""
    import nbformat

    cells = [nbformat.v4.new_markdown_cell("# Directives\n\n::: {.callout-note collapse=\"true"
                                           "\"}\n\n##### Example\n\nThe cell below prints:"),
             nbformat.v4.new_code_cell("print('shown')"),
             nbformat.v4.new_markdown_cell(":::\n\nA second one.\n\n::: {.callout-tip}\nTwo:"),
             nbformat.v4.new_code_cell("print('two')"),
             nbformat.v4.new_markdown_cell(":::\n\nAfter the box.\n\n::: {.callout-warning}\n"
                                           "Mind it.\n:::"),
             nbformat.v4.new_code_cell("x = 1")]
    book, said = _brought_in(tmp_path, capsys, "callout.ipynb",
                             nbformat.writes(nbformat.v4.new_notebook(cells=cells)))
    chapter = read_chapter((book / "callout.md").read_text())
    assert [c.source for c in chapter.cells if c.cell_type == "code"][1:] == [
        "print('shown')", "print('two')", "x = 1"]
    prose = [c.source for c in chapter.cells if c.cell_type == "markdown"]
    assert prose[0].endswith(":::{note}\n\n##### Example\n\nThe cell below prints:\n:::"), prose
    assert prose[1:] == ["A second one.\n\n:::{tip}\nTwo:\n:::",
                         "After the box.\n\n:::{warning}\nMind it.\n:::"], prose
    assert "closed in its own cell each block (`:::`) the lesson opens there and closes in a " \
        "later markdown cell" in said and "the lesson's 3 Quarto callout(s)" in said, said


def test_nbdevs_and_quartos_cell_directives_become_the_books_tags(tmp_path, capsys):
    """nbdev's pages (and fastbook's chapters) hide a cell with `#|hide` (`#hide`), its code
    with `#|echo: false`, its output with `#|output: false`, and fold its code with
    `#|code-fold: true`: the book showed each cell whole, the directive as a comment. A cell
    they never run (`#| eval: false`: a download, a long training) the book runs: said."""
    import nbformat

    cells = [nbformat.v4.new_markdown_cell("# Directives"),
             nbformat.v4.new_code_cell("#|hide\nimport os"),
             nbformat.v4.new_code_cell("#| echo: false\n#|filter_stream Warning\nprint(1)"),
             nbformat.v4.new_code_cell("#hide_output\nx = 2\nx"),
             nbformat.v4.new_code_cell("#|code-fold: true\n\nprint(3)"),
             nbformat.v4.new_code_cell("#|exec_doc\nprint(4)  #|hide_line"),
             nbformat.v4.new_code_cell("#| eval: false\nprint(5)")]
    book, said = _brought_in(tmp_path, capsys, "directives.ipynb",
                             nbformat.writes(nbformat.v4.new_notebook(cells=cells)))
    code = [c for c in read_chapter((book / "directives.md").read_text()).cells
            if c.cell_type == "code"][1:]
    assert [(c.source, cell_tags(c)) for c in code] == [
        ("import os", ["remove-cell"]), ("#|filter_stream Warning\nprint(1)", ["remove-input"]),
        ("x = 2\nx", ["remove-output"]), ("print(3)", ["hide-input"]),
        ("#|exec_doc\nprint(4)  #|hide_line", []), ("#| eval: false\nprint(5)", [])]
    assert "wrote as the book's tags the directives of nbdev or Quarto (`#|hide`, `#| echo: " \
        "false`, …) that hide or fold 4 cell(s), or their code or output: cell 2 (`remove-cell`)" \
        in said, said
    to_do = said.split("Still to do:")[1]
    assert "cell 7: `#| eval: false`: nbdev and Quarto never run the cell; the book runs every " \
        "cell" in to_do and "cell 6:" not in to_do, to_do


def test_a_cell_reading_from_the_web_is_told_at_its_line(tmp_path, capsys):
    """QuantEcon's pandas lecture reads its data from addresses on the web (`pd.read_csv(
    'https://…')`, `requests.get(url)`): nothing was said, and a build without the network
    stopped at the first such cell, then at the next one on the next build. An address made
    (an f-string, `base + 'b.csv'`) or given as `url=` was not named."""
    import nbformat

    cells = [nbformat.v4.new_markdown_cell("# Pandas"),
             nbformat.v4.new_code_cell("import pandas as pd\ndf = pd.read_csv("
                                       "'https://example.org/data/test_pwt.csv')"),
             nbformat.v4.new_code_cell("url = 'https://example.org/u.csv'\nn = 3"),
             nbformat.v4.new_code_cell("import requests\nsource = requests.get(url).content"),
             nbformat.v4.new_code_cell("print('https://example.org')\n"
                                       "from IPython.display import IFrame\n"
                                       "IFrame('https://example.org/v', 400, 300)"),
             nbformat.v4.new_code_cell("t = 'a'\nd = pd.read_csv(f'https://example.org/{t}.csv')\n"
                                       "e = pd.read_csv('https://example.org/{}'.format(t))"),
             nbformat.v4.new_code_cell("base = url + '/'\nb = pd.read_csv(base + 'b.csv')\n"
                                       "r = requests.get(url='https://example.org/r')")]
    said = _brought_in(tmp_path, capsys, "pandas.ipynb",
                       nbformat.writes(nbformat.v4.new_notebook(cells=cells)))[1]
    told = re.findall(r"(cell \d+, line \d+): `([^`]*)` reads from the web as it runs", said)
    assert told == [("cell 2, line 2", "df = pd.read_csv('https://example.org/data/test_pwt.csv')"),
                    ("cell 4, line 2", "source = requests.get(url).content"),
                    ("cell 6, line 2", "d = pd.read_csv(f'https://example.org/{t}.csv')"),
                    ("cell 6, line 3", "e = pd.read_csv('https://example.org/{}'.format(t))"),
                    ("cell 7, line 2", "b = pd.read_csv(base + 'b.csv')"),
                    ("cell 7, line 3", "r = requests.get(url='https://example.org/r')")], said
    assert "a build without the network (CI's) stops at it: put what it reads in book/" in said


def test_a_module_the_lessons_cells_write_is_no_package_to_declare(tmp_path, capsys):
    """QuantEcon's names lecture writes `mathfoo.py` with `%%file`, then imports it: the tool
    said to declare the packages mathfoo and mod (a package of that name may be on PyPI). A
    package the cells write (`pkg/__init__.py`, `pkg/core.py`) is imported by its folder's name."""
    import nbformat

    cells = [nbformat.v4.new_markdown_cell("# Names"),
             nbformat.v4.new_code_cell("%%file mathfoo.py\npi = 'foobar'"),
             nbformat.v4.new_code_cell("import mathfoo\nimport coursebook_absent_module"),
             nbformat.v4.new_code_cell("%%writefile -a mod.py\nx = 1"),
             nbformat.v4.new_code_cell("import mod"),
             nbformat.v4.new_code_cell("%%file pkgfoo/__init__.py\nx = 1"),
             nbformat.v4.new_code_cell("%%writefile pkgbar/core.py\nx = 1"),
             nbformat.v4.new_code_cell("import pkgfoo\nfrom pkgbar import core")]
    said = _brought_in(tmp_path, capsys, "names.ipynb",
                       nbformat.writes(nbformat.v4.new_notebook(cells=cells)))[1]
    assert "the book's environment lacks: coursebook_absent_module (docs/" in said, said


@pytest.mark.parametrize("raw, shown", [("", '$P_3(x)=\\frac{1}{2}$ and ``"quoted"``'),
                                        ("r", '$P_3(x)=\\\\frac{1}{2}$ and ``\\"quoted\\"``')])
def test_a_gallery_docstring_comes_in_as_python_reads_it(tmp_path, capsys, raw, shown):
    """pytorch/tutorials' polynomial lessons write :math:`\\\\frac{1}{2}` in a docstring that
    is not raw, which Python (and sphinx-gallery, which reads the docstring's value) reads as
    `\\frac`: the chapter kept `\\\\frac`, which MathJax reads as a line break and `frac`."""
    docstring = ('"""\nPolynomials\n===========\n\n:math:`P_3(x)=\\\\frac{1}{2}` and '
                 '``\\"quoted\\"``, see `next <next_tutorial.html>`_.\n"""\n')
    book, said = _brought_in(tmp_path, capsys, "poly.py",
                             f"{raw}{docstring}\nimport torch\nprint(torch.ones(2))\n")
    assert shown in (book / "poly.md").read_text(), (book / "poly.md").read_text()
    assert "line 5 (`next_tutorial.html`)" in said, said  # its line, either way


def test_colabs_own_test_is_no_import_that_fails(tmp_path, capsys):
    """pytorch/tutorials' nn_tutorial asks `try: import google.colab` / `except ImportError:
    pyplot.show()`, which runs anywhere: the tool said 'the cell imports google.colab
    (`from matplotlib import pyplot`) ... or the build fails', at the cell's first line."""
    import nbformat

    cells = [nbformat.v4.new_code_cell(source) for source in (
        "from matplotlib import pyplot\ntry:\n    import google.colab\nexcept ImportError:\n"
        "    pyplot.show()",
        "x = 1\nif x:\n    from google.colab import drive")]
    said = _brought_in(tmp_path, capsys, "colab.ipynb",
                       nbformat.writes(nbformat.v4.new_notebook(cells=cells)))[1]
    assert re.findall(r"(cell \d+.*?): the cell imports google.colab \((.*?)\)", said) == [
        ("cell 2, line 3", "`from google.colab import drive`")], said


def test_a_directive_in_a_gallery_block_quote_is_named_and_a_figure_there_an_image(tmp_path,
                                                                                    capsys):
    """pytorch/tutorials' nnft_tutorial holds a `.. figure::` in a block quote (four spaces
    in, under a bold line), which the page showed as text, `> .. figure:: /_static/...`,
    and the tool did not name; then named it, unconverted, where a figure flush left is an
    image: it is one too, its caption under it (the quote ends above it). Another
    directive there is named."""
    script = ('"""\nTorch users\n===========\n\n**Simpler:**\n\n    Reuse a layer.\n\n'
              '    .. figure:: /_static/img/torch-nn.png\n       :alt: nn\n\n       nn\n\n'
              '    More quoted.\n\n    .. literalinclude:: nn.py\n"""\nimport torch\n')
    book, said = _brought_in(tmp_path, capsys, "nnft.py", script)
    text = (book / "nnft.md").read_text()
    assert ".. figure::" not in text and "![nn](_static/img/torch-nn.png)\n\nnn\n" in text, text
    assert "> More quoted." in text and "figure::`" not in said, said
    assert "line 9: _static/img/torch-nn.png: an image the lesson shows but does not " in said
    assert "line 16: `.. literalinclude::`: reStructuredText that is no Markdown" in said, said


def test_a_gallery_block_quote_of_two_paragraphs_stays_a_quote(tmp_path, capsys):
    """A block quote whose first paragraph is one line: the blank line between its
    paragraphs, written `>`, was read by rst2md as that line's heading underline, and the
    page showed a heading, `## > First quoted.`."""
    script = ('"""\nTorch users\n===========\n\n**Simpler:**\n\n    First quoted.\n\n'
              '    Second quoted.\n"""\nimport torch\n')
    text = (_brought_in(tmp_path, capsys, "quote.py", script)[0] / "quote.md").read_text()
    assert "\n> First quoted.\n>\n> Second quoted.\n" in text and "## >" not in text, text


def test_a_gallerys_build_setup_runs_shown_nowhere(tmp_path, capsys):
    """pytorch/tutorials' hyperparameter tuning lesson holds, between its imports, a
    `# sphinx_gallery_start_ignore` block 'only needed to run with sphinx-build', which
    sphinx-gallery runs and leaves out of its page and downloads, and a config comment
    (`# sphinx_gallery_thumbnail_number = 2`): both reached the student page as code."""
    script = ('"""\nTuning\n======\n"""\nimport torch\n# sphinx_gallery_start_ignore\n'
              '# Only needed to run with sphinx-build.\nimport sys\n'
              '# sphinx_gallery_end_ignore\nfrom torch import nn\n\n'
              '# sphinx_gallery_thumbnail_number = 2\nprint(nn.Linear)\n')
    book, said = _brought_in(tmp_path, capsys, "tuning.py", script)
    cells = [(c.source, c.metadata.get("tags", [])) for c in read_chapter(
        (book / "tuning.md").read_text()).cells if c.cell_type == "code"][1:]
    assert cells == [("import torch", []), ("# Only needed to run with sphinx-build.\n"
                                            "import sys", ["remove-cell", "book-only"]),
                     ("from torch import nn\n\nprint(nn.Linear)", [])], cells
    assert "shows nowhere, cells no page or download shows (`remove-cell`, `book-only`): " \
        "line 7\n" in said, said


def test_a_time_torchs_timer_took_is_named_where_it_shows(tmp_path, capsys):
    """pytorch/tutorials' jacobians and per-sample-grads lessons time with torch's own
    Timer and show it later (`print(no_vmap_timer)`, then `get_perf(...)`'s percent in the
    next cell): nothing was said, and the build told the author to seed them."""
    import nbformat

    cells = [nbformat.v4.new_code_cell(source) for source in (
        "from torch.utils.benchmark import Timer\nslow = Timer(stmt='f(x)').timeit(500)\n"
        "fast = Timer(stmt='g(x)').blocked_autorange()\nprint(slow)",
        "get_perf(slow, 'f', fast, 'g')\nprint('done')")]
    said = _brought_in(tmp_path, capsys, "timer.ipynb",
                       nbformat.writes(nbformat.v4.new_notebook(cells=cells)))[1]
    assert re.findall(r"(cell \d+, line \d+): `[^`]+` shows how long a statement took", said) \
        == ["cell 1, line 4", "cell 2, line 1"], said


def test_a_jupyter_book_toggle_comes_in_as_a_dropdown(tmp_path, capsys):
    """Jupyter Book's hiding lesson folds text in sphinx-togglebutton's `{toggle}`, which the
    book does not load: brought in as it was, the build stopped at "Unknown directive type:
    'toggle'" and the tool said nothing. It is now sphinx-design's `{dropdown}` (which the
    book loads and whose downloads fold it too), `:show:` its `:open:`; one quoted in a code
    block (the lesson's example of the markup) stays as written."""
    example = "````md\n```{toggle}\nQuoted.\n```\n````"
    text = ("# Hiding\n\n" + example + "\n\n```{toggle}\nHidden.\n```\n\n"
            ":::{toggle} Click to reveal!\n:show:\nShown.\n:::\n")
    book, said = _brought_in(tmp_path, capsys, "hiding.md", text)
    chapter = (book / "hiding.md").read_text()
    assert example in chapter and "```{dropdown}\nHidden.\n```" in chapter, chapter
    assert ":::{dropdown} Click to reveal!\n:open:\nShown.\n:::" in chapter, chapter
    assert "wrote the lesson's 2 `{toggle}` block(s) (sphinx-togglebutton's, which the book does " \
        "not load) as sphinx-design's `{dropdown}`" in said, said
