"""What reading each chapter page left for the later phases, kept by an EnvironmentCollector:
Sphinx drops, merges (parallel reads) and pickles each page's entry."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from docutils import nodes
from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment
from sphinx.environment.collectors import EnvironmentCollector

from coursebook.answer_checks.model import ChapterTeaching
from coursebook.config import book_config
from coursebook.model.notebooks import first_line
from coursebook.model.outputs import BARE_REPR
from coursebook.torch_versions.model import verified_versions


@dataclass(frozen=True)
class CellOutput:  # one code cell of an executed chapter, as verification sees it
    key: str
    index: int  # its number among the cells with expected outputs (not claims' checks), from 1
    source: str
    text: str
    unverified: str = ""
    line: int = 0  # its line in the chapter's file (coursebook.model.cell_notes)

    @property
    def first_line(self) -> str:
        return first_line(self.source)

    @property
    def compared(self) -> bool:
        """An empty output is compared (it must stay empty); an image's or widget's repr is not."""
        return not self.text or bool(BARE_REPR.sub("", self.text).strip())


# The current page's prepared chapter, from source-read to doctree-read.
PREPARED = "coursebook_prepared"


@dataclass
class PageState:
    notebook: nbformat.NotebookNode | None = None  # None: no chapter, or not prepared
    recorded_with: str | None = None  # a recorded chapter's: where its recordings ran
    outputs: list[CellOutput] | None = None  # None: nothing to compare
    failed: bool = False  # read (and reported) again on the next build
    awaited: list[str] = field(default_factory=list)  # inputs not made yet: read again when made
    verified_versions: list[str] | None = None  # torch releases with expected outputs
    not_verified: list[str] = field(default_factory=list)  # for the build log
    claims: tuple[int, int] | None = None  # held, cited (None: checks did not run)
    teaching: ChapterTeaching | None = None
    raised: tuple[str, ...] = ()  # error types its cells raise on purpose (downloads catch them)


def page_states(env: BuildEnvironment) -> dict[str, PageState]:
    return env.__dict__.setdefault("coursebook_page_states", {})


def page_state_of(env: BuildEnvironment, docname: str) -> PageState:
    return page_states(env).setdefault(docname, PageState())


def chapter_notebook(env: BuildEnvironment, docname: str) -> nbformat.NotebookNode | None:
    return getattr(page_states(env).get(docname), "notebook", None)


def chapters_in_reading_order(env: BuildEnvironment) -> list[str]:
    """The chapters reachable from the root document, in reading order (Sphinx's "next")."""
    relations, order = env.collect_relations(), [env.config.root_doc]
    while (following := relations[order[-1]][2]) is not None:
        order.append(following)
    return [docname for docname in order[1:] if chapter_notebook(env, docname) is not None]


def mark_failed(env: BuildEnvironment, docname: str) -> None:
    page_state_of(env, docname).failed = True


class PageStateCollector(EnvironmentCollector):
    def clear_doc(self, app: Sphinx, env: BuildEnvironment, docname: str) -> None:
        page_states(env).pop(docname, None)

    def merge_other(self, app: Sphinx, env: BuildEnvironment, docnames: set[str],
                    other: BuildEnvironment) -> None:
        theirs = page_states(other)
        page_states(env).update({d: theirs[d] for d in docnames if d in theirs})

    def process_doc(self, app: Sphinx, doctree: nodes.document) -> None:
        """Nothing: the source-read and doctree-read hooks fill the state."""

    def get_outdated_docs(self, app: Sphinx, env: BuildEnvironment, added: set[str],
                          changed: set[str], removed: set[str]) -> list[str]:
        """A failed page is read again, and one whose awaited input now exists or whose verified
        versions changed (Sphinx would take a missing dependency for a changed one, each build)."""
        expected_dir = Path(app.srcdir, book_config(app.config).expected_dir)
        return [docname for docname, chapter in page_states(env).items()
                if docname not in added | changed | removed and (
                    chapter.failed or any(Path(path).is_file() for path in chapter.awaited)
                    or (chapter.verified_versions is not None and chapter.verified_versions
                        != verified_versions(expected_dir, docname)))]
