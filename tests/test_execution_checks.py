"""A chapter cell that misbehaves stops the build, naming the chapter, the cell and the error."""

import os

import pytest
from book_environment import sphinx_command

from conftest import run_sphinx, sphinx_build

pytestmark = pytest.mark.slow


def _edit(chapter, old: str, new: str) -> None:
    text = chapter.read_text()
    assert old in text
    chapter.write_text(text.replace(old, new))


def test_an_unexpected_error_fails_the_build(tiny_book, tmp_path):
    _edit(tiny_book / "chapter.md", "print((weights * 3).grad_fn)",
          "print((weights * 3).grad_fn)\nweights.no_such_method()")
    build = sphinx_build(tiny_book, tmp_path / "out", tmp_path / "cache")
    assert build.returncode != 0
    assert "chapter.md:21: ERROR: code cell `import torch` raised an error" in build.log
    assert "AttributeError: 'Tensor' object has no attribute 'no_such_method'" in build.log
    # The failure is not forgotten: an incremental rebuild fails again.
    again = sphinx_build(tiny_book, tmp_path / "out", tmp_path / "cache")
    assert again.returncode != 0 and "raised an error" in again.log


def test_a_raises_exception_cell_that_does_not_raise_fails_the_build(tiny_book, tmp_path):
    _edit(tiny_book / "chapter.md", "(weights * 2).backward()", "(weights * 2).sum().backward()")
    build = sphinx_build(tiny_book, tmp_path / "out", tmp_path / "cache")
    assert build.returncode != 0
    assert ("ERROR: code cell `(weights * 2).sum().backward()` is tagged `raises-exception` "
            "but did not raise") in build.log
    # Its notebook ran without error and was cached; the cached run fails the check too.
    again = sphinx_build(tiny_book, tmp_path / "out2", tmp_path / "cache")
    assert again.executed == 0 and "did not raise" in again.log and again.returncode != 0


def test_a_run_that_goes_on_past_errors_names_each_misbehaving_cell(tiny_book, tmp_path):
    """myst-nb's execution_allow_errors: the cells after an unexpected error ran, and are
    checked too."""
    _edit(tiny_book / "chapter.md", "kernelspec:",
          "mystnb:\n  execution_allow_errors: true\nkernelspec:")
    _edit(tiny_book / "chapter.md", "print((weights * 3).grad_fn)",
          "print((weights * 3).grad_fn)\nweights.no_such_method()")
    _edit(tiny_book / "chapter.md", "(weights * 2).backward()", "(weights * 2).sum().backward()")
    build = sphinx_build(tiny_book, tmp_path / "out", tmp_path / "cache")
    assert build.returncode != 0
    assert "chapter.md:23: ERROR: code cell `import torch` raised an error" in build.log
    assert ("ERROR: code cell `(weights * 2).sum().backward()` is tagged `raises-exception` "
            "but did not raise") in build.log
    # Without allowed errors that run would have stopped: not kept, as a failed run is not
    # (an error the machine caused is not told again from the cache).
    again = sphinx_build(tiny_book, tmp_path / "out2", tmp_path / "cache")
    assert again.executed == 1 and "chapter.md:23: ERROR: code cell `import torch`" in again.log


def test_a_raises_exception_cell_may_not_hide_its_error(tiny_book, tmp_path):
    _edit(tiny_book / "chapter.md", ":tags: [raises-exception]",
          ":tags: [raises-exception, remove-output]")
    build = sphinx_build(tiny_book, tmp_path / "out", tmp_path / "cache")
    assert build.returncode != 0 and "must show its error" in build.log


def test_a_cell_that_waits_for_input_is_refused_at_its_line_tagged_or_not(tiny_book, tmp_path):
    """No build answers input(), getpass or a debugger (ipykernel raises StdinNotImplementedError):
    a `%pdb on` cell tagged for the error it then raises was accepted with the debugger's
    session as its expected output."""
    chapter = tiny_book / "chapter.md"
    chapter.write_text(chapter.read_text() + (
        "\n```{code-cell} ipython3\n:tags: [raises-exception]\nname = input('Your name? ')\n```\n"
        "\n```{code-cell} ipython3\n---\ntags: [raises-exception]\nraises: ZeroDivisionError\n"
        "---\n%pdb on\n1 / 0\n```\n"
        "\n```{code-cell} ipython3\nimport getpass\ngetpass.getpass()\n```\n"))
    lines = chapter.read_text().splitlines()
    build = sphinx_build(tiny_book, tmp_path / "out", tmp_path / "cache")
    refused = [line for line in build.log.splitlines() if "waits for input" in line]
    assert refused == [f"{chapter}:{lines.index(first) + 1}: ERROR: code cell `{first}` waits for "
                       "input, which no build gives: remove the call. [coursebook.execution]"
                       for first in ("name = input('Your name? ')", "%pdb on", "import getpass")], \
        build.log[-3000:]
    assert build.returncode != 0 and "raised" not in build.log


def test_open_in_colab_appears_only_when_the_repository_is_set(tiny_book, tmp_path, cache_copy):
    # (The tiny book's cold build, which executes it, is conftest's tiny_cache: it passes.)
    plain = sphinx_build(tiny_book, tmp_path / "plain", cache_copy)
    assert plain.returncode == 0
    assert "colab" not in (plain.outdir / "html" / "chapter.html").read_text()
    launched = sphinx_build(tiny_book, tmp_path / "colab", cache_copy,
                            settings={"coursebook_repository_url": "https://github.com/org/labs.git"})
    page = (launched.outdir / "html" / "chapter.html").read_text()
    assert ("https://colab.research.google.com/github/org/labs/blob/gh-pages/_sources/chapter.ipynb"
            in page)


def _build_log_in_order(srcdir, out, cache) -> tuple[int, str]:
    """A build's exit status and its log as a terminal shows it: status and errors in the
    order they were printed."""
    command = sphinx_command(srcdir, out / "html", out / "doctrees",
                             settings={"nb_execution_cache_path": str(cache)})
    done = run_sphinx(command, env={**os.environ, "TMPDIR": str(out)}, merged=True)
    return done.returncode, done.stdout


def test_a_failing_assert_shows_what_the_cell_printed_and_where_its_report_is(tiny_book, tmp_path):
    _edit(tiny_book / "chapter.md", "print((weights * 3).grad_fn)",
          "print((weights * 3).grad_fn)\nfor step in range(12):\n    print('step', step)\n"
          "assert weights.sum() == 3, 'the weights'")
    build = sphinx_build(tiny_book, tmp_path / "out", tmp_path / "cache")
    assert build.returncode != 0
    message = build.log[build.log.index("ERROR: code cell `import torch` raised an error"):]
    assert "AssertionError: the weights" in message
    # The tail of what it printed (13 lines: the last 10), then the report that keeps the run.
    printed = message[message.index("It printed:"):].splitlines()
    assert printed[1].strip() == "… (3 lines above)" and printed[11].strip() == "step 11"
    report = tmp_path / "out" / "reports" / "html" / "chapter.err.log"
    assert f"The whole run's traceback: {report}" in message and report.is_file()


def test_the_summary_counts_passed_cells_after_the_errors_and_numbers_code_cells(
        tiny_book, tmp_path, cache_copy):
    expected = tiny_book / "expected" / "torch-2.13.0" / "chapter.txt"
    _edit(expected, "    <MulBackward0 object at 0x…>", "    <AddBackward0 object at 0x…>")
    status, log = _build_log_in_order(tiny_book, tmp_path / "out", cache_copy)
    assert status != 0
    lines = log.splitlines()
    # The second code cell (the chapter's fourth cell, markdown counted).
    error = next(i for i, line in enumerate(lines) if "ERROR: code cell 2 `import torch`" in line)
    summary = next(i for i, line in enumerate(lines)
                   if "expected outputs: chapter.md (student)" in line)
    assert error < summary, log[-3000:]
    assert lines[summary].endswith(
        "2 of 3 code cells verified against torch 2.13.0 (1 failed, above)")
