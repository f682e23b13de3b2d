"""The two editions of a chapter, chosen before anything is executed.

A chapter is one MyST Markdown notebook. Cells tagged ``answer`` (code or markdown) are
instructor material: the student edition drops them before execution, so the student
notebook is the one that runs, is cached and is rendered; the instructor edition keeps
them and boxes the markdown ones as instructor answers.
"""

from __future__ import annotations

import copy
import enum
import json
import re

import nbformat
import yaml
from myst_nb.core.read import is_myst_markdown_notebook, read_myst_markdown_notebook
from myst_parser.config.main import MdParserConfig

ANSWER_TAG = "answer"
RAISES_TAG = "raises-exception"
BOOK_ONLY_TAG = "book-only"  # runs in the book (a figure, say), left out of downloads
ANSWER_TITLE = "Instructor answer"
ANSWER_CLASS = "instructor-answer"


class Edition(enum.Enum):
    """Who a build is for; the Sphinx tag ``instructor`` selects the instructor edition."""

    STUDENT = "student"
    INSTRUCTOR = "instructor"

    @classmethod
    def from_tags(cls, tags) -> Edition:
        return cls.INSTRUCTOR if tags.has("instructor") else cls.STUDENT


def cell_tags(cell) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def is_answer(cell) -> bool:
    return ANSWER_TAG in cell_tags(cell)


def is_chapter_source(text: str) -> bool:
    """A page is a chapter notebook when its top matter says so (myst-nb's own rule)."""
    return is_myst_markdown_notebook(text)


def read_chapter(text: str, md_config: MdParserConfig | None = None) -> nbformat.NotebookNode:
    """The chapter as written, every cell included."""
    return read_myst_markdown_notebook(text, config=md_config or MdParserConfig())


def student_notebook(notebook: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The notebook without its answer cells."""
    student = copy.deepcopy(notebook)
    student.cells = [cell for cell in student.cells if not is_answer(cell)]
    return student


def _boxed_answer(source: str) -> str:
    """Wrap a markdown answer in an admonition, leaving a leading heading outside.

    Docutils allows no section inside an admonition, so the heading stays a heading.
    """
    lines = source.strip().splitlines()
    heading = lines[0] if lines and lines[0].startswith("#") else ""
    body = "\n".join(lines[1:] if heading else lines).strip()
    if not body:
        return source
    longest = max((len(run) for run in re.findall(r"^:{3,}", body, re.M)), default=2)
    fence = ":" * (longest + 1)
    boxed = f"{fence}{{admonition}} {ANSWER_TITLE}\n:class: {ANSWER_CLASS}\n\n{body}\n{fence}"
    return f"{heading}\n\n{boxed}" if heading else boxed


def instructor_notebook(notebook: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The notebook with every cell, markdown answers boxed as instructor material.

    Code answers keep their source untouched (it is part of the execution cache key);
    :func:`box_code_answers` boxes their rendered cells instead.
    """
    instructor = copy.deepcopy(notebook)
    for cell in instructor.cells:
        if cell.cell_type == "markdown" and is_answer(cell):
            cell.source = _boxed_answer(cell.source)
    return instructor


def edition_notebook(notebook: nbformat.NotebookNode, edition: Edition) -> nbformat.NotebookNode:
    if edition is Edition.INSTRUCTOR:
        return instructor_notebook(notebook)
    return student_notebook(notebook)


def stamp_environment(notebook: nbformat.NotebookNode, environment: dict[str, str]) -> None:
    """Record the package versions in the first code cell's metadata.

    jupyter-cache hashes code cells with all their metadata, but not the environment;
    with the versions in the hash, a torch upgrade re-executes every chapter.
    """
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.metadata["book_environment"] = dict(environment)
            return


def _fence_for(source: str, char: str = "`") -> str:
    longest = max((len(run) for run in re.findall(f"{re.escape(char)}{{3,}}", source)), default=2)
    return char * (longest + 1)


def _plain(metadata) -> dict:
    """NotebookNode metadata as plain dicts and lists, which YAML can write."""
    return json.loads(json.dumps(metadata))


def notebook_to_myst(notebook: nbformat.NotebookNode) -> str:
    """Write a notebook back as MyST Markdown that myst-nb reads into the same cells."""
    metadata = {key: value for key, value in _plain(notebook.metadata).items()
                if key != "source_map"}
    parts = ["---", yaml.safe_dump(metadata, sort_keys=False).rstrip(), "---", ""]
    for cell in notebook.cells:
        metadata = _plain(cell.metadata)
        if cell.cell_type == "markdown":
            parts.append("+++" + (f" {json.dumps(metadata)}" if metadata else ""))
            parts += [cell.source, ""]
            continue
        directive = "{code-cell} ipython3" if cell.cell_type == "code" else "{raw-cell}"
        fence = _fence_for(cell.source)
        parts.append(fence + directive)
        if metadata:
            parts += ["---", yaml.safe_dump(metadata, sort_keys=False).rstrip(), "---"]
        parts += [cell.source, fence, ""]
    return "\n".join(parts)


# Tags that keep outputs off the page, so a promised error could not be seen.
_HIDING_TAGS = frozenset({"remove-cell", "remove-output"})


def hidden_raises_cells(notebook) -> list[str]:
    """First lines of cells tagged raises-exception whose error would not be shown."""
    found = []
    for cell in notebook.cells:
        tags = set(cell.get("metadata", {}).get("tags", []))
        if RAISES_TAG in tags and tags & _HIDING_TAGS:
            found.append(cell.source.strip().splitlines()[0] if cell.source.strip() else "")
    return found


def box_code_answers(doctree) -> None:
    """Wrap each rendered code answer cell in an *Instructor answer* admonition.

    Done on the doctree, after execution, so that HTML and LaTeX both show the box.
    """
    from docutils import nodes

    for cell in list(doctree.findall(nodes.container)):
        if cell.get("nb_element") == "cell_code" and f"tag_{ANSWER_TAG}" in cell["classes"]:
            box = nodes.admonition(classes=[ANSWER_CLASS])
            box += nodes.title(ANSWER_TITLE, ANSWER_TITLE)
            cell.parent.replace(cell, box)  # replace_self would copy the cell's classes
            box += cell
