"""A chapter cell that misbehaves stops the build, naming the chapter, the cell and the error."""

import pytest

from conftest import sphinx_build

pytestmark = pytest.mark.slow


def _edit(chapter, old: str, new: str) -> None:
    text = chapter.read_text()
    assert old in text
    chapter.write_text(text.replace(old, new))


def test_the_tiny_book_builds(tiny_book, tmp_path):
    build = sphinx_build(tiny_book, tmp_path / "out", tmp_path / "cache")
    assert build.returncode == 0, build.log


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


def test_a_raises_exception_cell_may_not_hide_its_error(tiny_book, tmp_path):
    _edit(tiny_book / "chapter.md", ":tags: [raises-exception]",
          ":tags: [raises-exception, remove-output]")
    build = sphinx_build(tiny_book, tmp_path / "out", tmp_path / "cache")
    assert build.returncode != 0 and "must show its error" in build.log


def test_open_in_colab_appears_only_when_the_repository_is_set(tiny_book, tmp_path):
    plain = sphinx_build(tiny_book, tmp_path / "plain", tmp_path / "cache")
    assert plain.returncode == 0 and "colab" not in (plain.outdir / "html" / "chapter.html").read_text()
    launched = sphinx_build(tiny_book, tmp_path / "colab", tmp_path / "cache",
                            settings={"coursebook_repository_url": "https://github.com/org/labs.git"})
    page = (launched.outdir / "html" / "chapter.html").read_text()
    assert ("https://colab.research.google.com/github/org/labs/blob/gh-pages/_sources/chapter.ipynb"
            in page)
