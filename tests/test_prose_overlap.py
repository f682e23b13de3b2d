"""Own words: the book's prose shares no run of words with the course material."""

from __future__ import annotations

import shutil
from pathlib import Path

import nbformat
import pytest


from conftest import BOOK, EXHIBITS, ROOT, book_museum
from coursebook.audit.own_words import (
    SHARED_RUN,
    book_overlaps,
    chapter_passages,
    markdown_passages,
    overlaps,
    prose_words,
    seed_runs,
)

COMMAND = "python tools/prose_overlap.py"


def _copy_of_book(tmp_path: Path) -> Path:
    """The book's pages and exhibits under ``tmp_path``, to plant copies in."""
    for page in BOOK.glob("*.md"):
        (tmp_path / "book").mkdir(exist_ok=True)
        shutil.copy(page, tmp_path / "book" / page.name)
    shutil.copytree(EXHIBITS, tmp_path / "exhibits")
    return tmp_path


def _overlaps(root: Path, seeds: Path) -> list:
    return book_overlaps(root, root / "book", book_museum(root / "exhibits"), seeds)


def _seed_folder(tmp_path: Path, text: str) -> Path:
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    (seeds / "material.txt").write_text(text, encoding="utf8")
    return seeds


SENTENCE = ("Every planted sentence in this test is copied word for word from the material, "
            "and the check must notice it at once.")


def test_the_book_uses_its_own_words(seeds):
    found = _overlaps(ROOT, seeds)
    assert not found, (f"{len(found)} run(s) of {SHARED_RUN}+ words copied from {seeds}; "
                       f"rewrite them in the book's own words (list them with `{COMMAND}`):\n"
                       + "\n".join(map(str, found)))


def test_a_sentence_copied_from_the_real_seeds_is_found(tmp_path, seeds):
    root = _copy_of_book(tmp_path)
    # The museum's own sentences: its longest line that is prose, not code or an error.
    seed = max((line for path in sorted(seeds.glob("*.txt"))
                for line in path.read_text(encoding="utf8").splitlines()
                if len(prose_words(line)) >= SHARED_RUN and "(" not in line and "=" not in line),
               key=len)
    before = set(map(str, _overlaps(root, seeds)))
    chapter = root / "book" / "pt01.md"
    text = chapter.read_text(encoding="utf8")
    chapter.write_text(f"{text}\n{seed}\n", encoding="utf8")
    new = set(map(str, _overlaps(root, seeds))) - before
    assert len(new) == 1 and new.pop().startswith(f"book/pt01.md:{text.count(chr(10)) + 2}: ")


def test_a_planted_copy_is_found_with_its_file_line_and_field(tmp_path):
    root = _copy_of_book(tmp_path)
    seeds = _seed_folder(tmp_path, f"Some material.\n\n{SENTENCE}\n")
    chapter = root / "book" / "pt01.md"
    text = chapter.read_text(encoding="utf8")
    chapter.write_text(text + f"\nA new paragraph. {SENTENCE}\n", encoding="utf8")
    exhibit = next(EXHIBITS.rglob("[0-9]*.toml")).relative_to(ROOT)
    toml = root / exhibit
    toml.write_text(toml.read_text(encoding="utf8").replace(
        'lesson = """\n', f'lesson = """\nIn short: {SENTENCE.lower()} ', 1), encoding="utf8")
    found = _overlaps(root, seeds)
    assert [(o.where, o.seed) for o in found] == [
        (f"book/pt01.md:{text.count(chr(10)) + 2}", "material.txt"),
        (f"{exhibit}: lesson", "material.txt")]
    assert found[0].shown.startswith("Every planted sentence")
    assert len(found[0].shown.split()) == len(SENTENCE.split())


def test_shorter_runs_code_and_headings_are_exempt(tmp_path):
    root = _copy_of_book(tmp_path)
    seeds = _seed_folder(tmp_path, SENTENCE)
    short = " ".join(SENTENCE.split()[:SHARED_RUN - 1])
    chapter = root / "book" / "pt01.md"
    chapter.write_text(chapter.read_text(encoding="utf8") + (
        f"\n{short}\n\n## {SENTENCE}\n\nAn error: `{SENTENCE}`\n\n```text\n{SENTENCE}\n```\n"),
        encoding="utf8")
    assert _overlaps(root, seeds) == []


@pytest.mark.parametrize("top", ["", "---\njupytext:\n  text_representation:\n"
                                 "    format_name: myst\n"
                                 "---\n\n```{code-cell} ipython3\nx = 1\n```\n\n"])
def test_prose_in_an_admonition_with_options_is_named_at_its_own_line(tmp_path, top):
    """The option lines (``:class:``, a YAML block) count: the body's prose is not named at
    the admonition's first option (a plain page, and a chapter's markdown cell)."""
    (tmp_path / "book").mkdir()
    page = tmp_path / "book" / "page.md"
    page.write_text(f"{top}# A page\n\n:::{{note}}\n:class: tip\n:name: a-note\n\n{SENTENCE}\n"
                    f":::\n\n:::{{tip}}\n---\nclass: dropdown\n---\n{SENTENCE}\n:::\n",
                    encoding="utf8")
    seeds = _seed_folder(tmp_path, SENTENCE)
    found = overlaps(chapter_passages(page, tmp_path), seed_runs(seeds.glob("*.txt")))
    lines = [n for n, line in enumerate(page.read_text().splitlines(), 1) if line == SENTENCE]
    assert [o.where for o in found] == [f"book/page.md:{line}" for line in lines]


def test_a_copy_in_a_jupyter_notebook_or_a_percent_script_chapter_is_found(tmp_path):
    """Every chapter format is prose to check (the check once read only `.md` pages)."""
    (tmp_path / "book").mkdir()
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(
        f"# A notebook lesson\n\n{SENTENCE}")], metadata={"kernelspec": {
            "name": "python3", "display_name": "Python 3", "language": "python"}})
    nbformat.write(notebook, tmp_path / "book" / "lesson.ipynb")
    (tmp_path / "book" / "script.py").write_text(
        "# ---\n# jupyter:\n#   kernelspec:\n#     name: python3\n#     display_name: Python 3\n"
        f"# ---\n\n# %% [markdown]\n# {SENTENCE}\n\n# %%\nx = 1\n", encoding="utf8")
    (tmp_path / "exhibits").mkdir()
    found = _overlaps(tmp_path, _seed_folder(tmp_path, SENTENCE))
    assert [o.where for o in found] == ["book/lesson.ipynb:1", "book/script.py:9"]


def test_an_align_environment_is_no_prose_and_a_definition_is():
    """The prose is read with the book's MyST syntax (conf.py's myst_enable_extensions)."""
    text = ("\\begin{align}\nx &= the words of a formula\n\\end{align}\n\n"
            "Term\n: Its definition, in words.\n")
    assert [passage.shown for passage in markdown_passages(text, "page.md")] == [
        ("Term",), ("Its", "definition,", "in", "words.")]
