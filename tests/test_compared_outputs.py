"""What is compared is what is counted: an HTML display is compared by its HTML, normalised,
never by its repr; an image shown by its repr alone is not compared, nor a widget (its text
is the widget as made, the page shows its last state), and the summary and the
instructor page name it instead of counting it as verified."""

from __future__ import annotations

import platform
import re

import nbformat
import pytest

from coursebook.page_state import CellOutput
from coursebook.verify.chapter_checks import (compared_account, patterns_alone, verified_against,
                                              versions_not_recorded)
from coursebook.verify.expectations import read_expectations, shown_text

HTML_REPR = "<IPython.core.display.HTML object>"


def _cell(*outputs: dict) -> nbformat.NotebookNode:
    return nbformat.v4.new_code_cell("show()", outputs=[
        nbformat.v4.new_output("display_data", data=data) for data in outputs])


def test_an_html_display_is_compared_by_its_html():
    first = shown_text(_cell({"text/html": "<b>loss</b> 0.5", "text/plain": HTML_REPR}))
    changed = shown_text(_cell({"text/html": "<b>loss</b> 0.7", "text/plain": HTML_REPR}))
    assert first == "[text/html] <b>loss</b> 0.5" and changed != first


def test_html_is_normalised_before_it_is_compared():
    laid_out = "<table class='x'  id=t>\n  <tr>\n    <td>1</td>\n  </tr>\n</table>\n"
    assert shown_text(_cell({"text/html": laid_out, "text/plain": HTML_REPR})) == \
        shown_text(_cell({"text/html": '<table id="t" class="x"><tr><td>1</td></tr></table>',
                          "text/plain": HTML_REPR})) == \
        '[text/html] <table class="x" id="t"><tr><td>1</td></tr></table>'


def test_a_widget_is_named_not_counted_by_the_text_it_had_when_made():
    """A tqdm.notebook bar's text/plain is the bar when made (0%); the page shows the widget's
    last state (100%, its times), which the text never holds."""
    bar = {"application/vnd.jupyter.widget-view+json": {"model_id": "c7ad", "version_major": 2},
           "text/plain": "  0%|          | 0/100 [00:00<?, ?it/s]"}
    shown = shown_text(_cell(bar))
    assert "0/100" not in shown
    assert compared_account([_output("a", shown)], []) == (
        "0 of 1 code cells verified", ("; not compared (its text is a repr, not what the page "
                                       "shows): the widget `<widget>` of `plot_a()` (line 7)"))


def test_html_a_script_draws_is_named_not_counted():
    """Flax's `nnx.display(model)` (treescope) shows HTML whose script draws the model from a
    compressed payload that differs on every run: the build compared the payload, called it an
    output that varies, told the author to seed torch and proposed a pattern of `...` and
    `<number>` for it. A drawing a script makes (plotly's, bokeh's alike) is a widget's case."""
    drawn = shown_text(_cell({"text/html": "<script>(()=>{define('treescope')})()</script>",
                              "text/plain": HTML_REPR},
                             {"text/html": '<div style="display:none"><script type="application/'
                              'octet-stream">eNrtvWl628iyKPjfq8</script></div>',
                              "text/plain": HTML_REPR}))
    assert "eNrt" not in drawn
    assert compared_account([_output("a", drawn)], []) == (
        "0 of 1 code cells verified", ("; not compared (its text is a repr, not what the page "
                                       "shows): the widget `<widget>` of `plot_a()` (line 7)"))


@pytest.mark.slow
def test_the_pdf_prints_no_widgets_text_as_it_was_made(tiny_book, tmp_path):
    """LaTeX fell back on a widget's text/plain, the bar as made: the student PDF printed a
    tqdm.notebook bar at 0% where the page shows it done (UvA tutorial 2). LaTeX takes the
    widget's view, which it cannot print: nothing, and no warning."""
    from conftest import run_sphinx, sphinx_command

    view = {"model_id": "c7ad", "version_major": 2, "version_minor": 0}
    chapter = tiny_book / "chapter.md"  # its text "0% at start", which the code does not hold
    chapter.write_text(chapter.read_text().replace("A worked example.\n", (
        "A worked example.\n\n```{code-cell} ipython3\nfrom IPython.display import display\n"
        f"display({{'application/vnd.jupyter.widget-view+json': {view!r}, 'text/plain': "
        "' '.join(['0%', 'at', 'start'])}, raw=True)\n```\n"), 1))
    out = tmp_path / "latex"
    done = run_sphinx(sphinx_command(tiny_book, out, tmp_path / "doctrees", builder="latex",
                                     settings={"nb_execution_cache_path": str(tmp_path / "cache"),
                                               "coursebook_verify_outputs": "0"}))
    assert done.returncode == 0, done.stderr[-3000:]
    tex = "".join(path.read_text() for path in out.glob("*.tex"))
    assert "A worked example" in tex and "at start" not in tex


def _output(key: str, text: str, line: int = 7) -> CellOutput:
    return CellOutput(key=key, index=1, source=f"plot_{key}()", text=text, line=line)


def test_an_image_shown_by_its_repr_alone_is_named_not_counted():
    figure = _output("a", "[image/png] <Figure size 350x250 with 1 Axes>")
    drawn = _output("b", "[image/png] Figure drawing:\n-1\n4.5")  # its data, compared
    printed = _output("c", "loss 0.5\n[image/png] <Figure size 350x250 with 1 Axes>", line=9)
    silent = _output("d", "")
    outputs = [figure, drawn, printed, silent]
    assert compared_account(outputs, []) == (
        "3 of 4 code cells verified",
        "; not compared (its text is a repr, not what the page shows): the image "
        "`<Figure size 350x250 with 1 Axes>` of `plot_a()` (line 7), the image "
        "`<Figure size 350x250 with 1 Axes>` of `plot_c()` (line 9)")


def test_a_cell_exempt_from_verification_is_named_with_its_reason():
    outputs = [_output("a", "loss 0.5"),
               CellOutput("b", 2, "time.time()", "1.7e9", unverified="a clock reading")]
    assert compared_account(outputs, []) == (
        "1 of 2 code cells verified", "; not verified: `time.time()` (a clock reading)")


def test_a_failed_cell_is_not_counted():
    outputs = [_output("a", "loss 0.5"), _output("b", "loss 0.6")]
    assert compared_account(outputs, [outputs[1]])[0] == "1 of 2 code cells verified"


def test_an_output_compared_with_a_pattern_alone_is_named_not_counted(tmp_path):
    """d2l's `print(id(Z))`, accepted as `(varies)` `<number>`, was "verified": any number
    matches (HD, session 27)."""
    path = tmp_path / "chapter.txt"
    path.write_text("=== cell 0000000a (varies) · plot_a()\n    <number>\n"
                    "=== cell 0000000b (varies) · plot_b()\n    tensor(<number>)\n"
                    "=== cell 0000000c · plot_c()\n    <number>\n"
                    "=== cell 0000000d (student) (varies) · plot_d()\n     ...\n"
                    "=== cell 0000000e (varies) · plot_e()\n")  # empty: compared (HR's F3)
    alone = patterns_alone(read_expectations(path), "student")
    assert alone == {"0000000a", "0000000d"} and patterns_alone(None, "student") == set()
    outputs = [_output("0000000a", "140"), _output("0000000b", "tensor(3)"),
               _output("0000000c", "<number>"), _output("0000000d", "x", line=9)]
    assert compared_account(outputs, [], alone) == (
        "2 of 4 code cells verified", "; not compared (its expected output is a pattern alone, "
        "which any output matches): `plot_0000000a()` (line 7), `plot_0000000d()` (line 9)")


def test_outputs_are_verified_against_the_declared_packages_too():
    """A JAX chapter's outputs follow jax, whose version its run's key holds: its instructor
    page said 'verified against torch 2.13.0' alone."""
    from coursebook.execute.shared_cache import key_execution_versions

    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("import nbformat")],
                                        metadata={"coursebook": {"packages": ["nbformat>=5"]}})
    key_execution_versions(notebook, {"python": "3.11"})
    # A chapter whose code names no torch (a JAX lesson's) is not said to follow one: its
    # student page read 'The outputs on this page are those of torch 2.13.0, jax 0.10.2'.
    assert verified_against("2.13.0+cpu", notebook) == f"nbformat {nbformat.__version__}"
    notebook.cells.append(nbformat.v4.new_code_cell("from torchvision import models"))
    assert verified_against("2.13.0+cpu", notebook) == \
        f"torch 2.13.0, nbformat {nbformat.__version__}"
    assert verified_against("2.13.0+cpu", None) == "torch 2.13.0"
    plain = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print(sum([1, 2]))")])
    assert verified_against("2.13.0+cpu", plain) == f"Python {platform.python_version()}"
    # Another torch's file holds its run's key as a digest: the names, no versions (it said
    # 'verified too against torch 2.14.1' alone)
    assert versions_not_recorded(notebook) == ", with nbformat at versions not recorded"
    assert versions_not_recorded(None) == ""


@pytest.mark.slow
def test_a_figure_not_compared_is_named_by_the_build_and_never_passes_pytest_book(
        tiny_book, tmp_path, monkeypatch):
    """The build's summary names it instead of counting it; `pytest book` skips its item,
    saying why, where it said it passed."""
    from bs4 import BeautifulSoup
    from test_pytest_book import _pytest_book

    from conftest import sphinx_build

    chapter = tiny_book / "chapter.md"
    anchor = "A worked example.\n"
    code = ("import matplotlib.pyplot as plt\nplt.figure(figsize=(3.5, 2.5))\n"
            "plt.plot([1, 2])\nplt.show()")
    chapter.write_text(chapter.read_text().replace(anchor, f"{anchor}\n```{{code-cell}} ipython3\n"
                                                   f"{code}\n```\n\n```{{code-cell}} ipython3\n"
                                                   "print(len('ab'))\n```\n", 1))
    chapter.write_text(chapter.read_text().replace(  # what it is verified against, too
        "kernelspec:", "coursebook: {packages: [nbformat]}\nkernelspec:", 1))
    lines, printed = chapter.read_text().splitlines(), "print(len('ab'))"
    line = lines.index("import matplotlib.pyplot as plt") + 1
    cache = tmp_path / "cache"
    for tags in ((), ("instructor",)):  # the editions one after the other: one file
        accepted = sphinx_build(tiny_book, tmp_path / f"accepted{len(tags)}", cache, *tags,
                                settings={"coursebook_accept_outputs": "1"})
        assert accepted.returncode == 0, accepted.log[-3000:]
    # print(len('ab'))'s entry marked as a pattern alone, as d2l's `print(id(Z))` was
    expected = tiny_book / "expected" / "torch-2.13.0" / "chapter.txt"
    entry = re.search(r"(=== cell \w+)( · print\(len\('ab'\)\)\n    )2\n", expected.read_text())
    expected.write_text(expected.read_text().replace(
        entry[0], f"{entry[1]} (varies){entry[2]}<number>\n"))
    # Another torch's file with the same cells (HR's F1: the count is this build's alone).
    other = tiny_book / "expected" / "torch-2.14.1" / "chapter.txt"
    other.parent.mkdir()
    other.write_text((tiny_book / "expected" / "torch-2.13.0" / "chapter.txt").read_text())
    build = sphinx_build(tiny_book, tmp_path / "out", cache, "instructor")
    assert build.returncode == 0, build.log[-3000:]
    summary = next(text for text in build.log.splitlines()
                   if "expected outputs: chapter.md (instructor)" in text)
    account = (f"4 of 6 code cells verified against torch 2.13.0, nbformat {nbformat.__version__}"
               "{}; not compared (its text is a "
               "repr, not what the page shows): the image `<Figure size 350x250 with 1 Axes>` of "
               f"`import matplotlib.pyplot as plt` (line {line}); not compared (its expected "
               f"output is a pattern alone, which any output matches): `{printed}` (line "
               f"{lines.index(printed) + 1})")
    assert summary.endswith(account.format(""))
    # The instructor page says what the summary says, from the same outputs; a student's
    # names the versions as well (a JAX chapter's: jax's).
    student = BeautifulSoup((tmp_path / "accepted0" / "html" / "chapter.html").read_text(),
                            "html.parser")
    assert student.select_one("p.verified-on").get_text() == (
        f"The outputs on this page are those of torch 2.13.0, nbformat {nbformat.__version__}; "
        "another release may print some of them differently.")
    page = BeautifulSoup((tmp_path / "out" / "html" / "chapter.html").read_text(), "html.parser")
    assert page.select_one("p.verified-on").get_text() == account.format(" (this build)") + \
        "; verified too against torch 2.14.1, with nbformat at versions not recorded. See what " \
        "changed between torch versions."
    # the student edition's items (the edition the build accepted), with the skips' reasons
    monkeypatch.setenv("PYTEST_ADDOPTS", "-rs -k student")
    tested = _pytest_book(tiny_book, f"nb_execution_cache_path = {str(cache)!r}")
    assert tested.returncode == 0 and " 2 skipped" in tested.stdout, tested.stdout[-3000:]
    assert ("chapter.md (student): not compared (its text is a repr, not what the page shows): "
            "the image `<Figure size 350x250 with 1 Axes>` of `import matplotlib.pyplot as plt` "
            f"(line {line})") in tested.stdout, tested.stdout[-3000:]
    assert ("chapter.md (student): not compared (its expected output is a pattern alone, which "
            "any output matches): `print(len('ab'))`") in tested.stdout, tested.stdout[-3000:]
