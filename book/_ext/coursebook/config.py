"""The book's configuration: one typed object, registered once, read everywhere.

Each field of :class:`BookConfig` is a Sphinx config value ``coursebook_<field>`` (set in
``conf.py`` or with ``-D``); its metadata says what Sphinx must redo when it changes
(``"env"``: read every page again; ``"html"``: write every page again; ``""``: nothing,
the value is read afresh on every build). :func:`book_config` gives the typed view of a
build's config, so no module spells a config name or casts its value.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.config import Config

from coursebook.model.machine_kinds import MachineKind, load_machine_kinds
from coursebook.model.museum import Wing, load_museum
from coursebook.model.runtimes import Runtime, RuntimeFileError, load_runtimes, reader_runtimes
from coursebook.reporting import report_book_error

PREFIX = "coursebook_"


def _value(default, rebuild: str, doc: str):
    metadata = {"rebuild": rebuild, "doc": doc}
    if isinstance(default, (list, dict)):
        return field(default_factory=lambda: type(default)(default), metadata=metadata)
    return field(default=default, metadata=metadata)


def _default(item: dataclasses.Field):
    return item.default_factory() if item.default is dataclasses.MISSING else item.default


@dataclass(frozen=True)
class BookConfig:
    """Everything the extension reads from ``conf.py``."""

    # --- Sources: exhibits, recordings, expected outputs ---------------------------------
    exhibits_dir: str = _value("exhibits", "env", "the error museum's exhibits, one folder per wing")
    recordings_dir: str = _value("book/recordings", "env", "committed recordings of recorded chapters")
    machine_kinds_file: str = _value("", "env", "the machine kinds recorded chapters run on")
    runtimes_file: str = _value("", "env", "the runtimes the book targets (Colab's among them)")
    expected_dir: str = _value("expected", "", "expected outputs, one folder per torch version")
    allow_stale_recordings: bool = _value(False, "env", "render a cell changed since its recording, marked")
    # --- Execution: what joins the cache key ---------------------------------------------
    execution_packages: list = _value(["torch"], "env", "packages whose versions join the cache key")
    execution_versions: dict = _value({}, "env", "set at config-inited from execution_packages")
    # --- Verification ----------------------------------------------------------------------
    accept_outputs: bool = _value(False, "", "take this build's outputs as the expected ones")
    # Off: no comparison (the bench measures its cost); the build is then unverified.
    verify_outputs: bool = _value(True, "", "compare outputs with the expected ones")
    # Off only to show what the locks prevent (tests/test_concurrency.py).
    cache_locks: bool = _value(True, "", "lock each cache key while it executes")
    # The live preview (`make preview`): a failed build writes no page, so the server
    # keeps the last good ones.
    preview: bool = _value(False, "", "a failed build stops before writing any page")
    preview_kernel_imports: list = _value(["torch"], "", "modules the preview's waiting kernels import ahead")
    # A cold build forks its chapters' kernels from one server (coursebook.execute.kernel_pool_start).
    kernel_imports: list = _value(["torch"], "", "modules a cold build's kernel server imports: every chapter's")
    # --- Outputs: pages, downloads, handouts -----------------------------------------------
    repository_url: str = _value("", "html", "the GitHub repository whose branch serves the HTML")
    published_branch: str = _value("gh-pages", "html", "that branch (Colab opens notebooks there)")
    build_date: str = _value("", "", "the date a build names (conf.py: today, UTC)")
    handouts: bool = _value(False, "env", "one LaTeX document per chapter (-t handout)")
    answer_space: bool = _value(False, "env", "ruled answer boxes in the student handout")

    @classmethod
    def register(cls, app: Sphinx) -> None:
        for item in dataclasses.fields(cls):
            default = _default(item)
            app.add_config_value(PREFIX + item.name, default, item.metadata["rebuild"],
                                 type(default), description=item.metadata["doc"])

    @classmethod
    def of(cls, config: Config) -> BookConfig:
        return cls(**{item.name: getattr(config, PREFIX + item.name)
                      for item in dataclasses.fields(cls)})

    @classmethod
    def from_namespace(cls, namespace: dict) -> BookConfig:
        """From ``conf.py``'s names, outside a build (pytest, tools): defaults where unset."""
        return cls(**{item.name: namespace[PREFIX + item.name]
                      for item in dataclasses.fields(cls) if PREFIX + item.name in namespace})

    @property
    def torch(self) -> str:
        """The torch version this build executes with."""
        return self.execution_versions["torch"]

    @cached_property
    def machine_kinds(self) -> dict[str, MachineKind]:
        return load_machine_kinds(Path(self.machine_kinds_file),
                                  Path(self.runtimes_file) if self.runtimes_file else None)

    @cached_property
    def reader_runtimes(self) -> tuple[Runtime, ...]:
        """The runtimes readers use whose texts the pages show beside the build's."""
        return reader_runtimes(Path(self.runtimes_file)) if self.runtimes_file else ()

    def museum(self) -> dict[str, Wing]:
        return load_museum(Path(self.exhibits_dir), self.machine_kinds, self.reader_runtimes)


def check_runtimes_file(app: Sphinx) -> None:
    """``builder-inited``: a runtimes file that cannot be used is one error naming its
    file, line and field; the build goes on without the runtimes and fails (``-W``)."""
    path = BookConfig.of(app.config).runtimes_file
    if not path:
        return
    try:
        load_runtimes(Path(path))
    except RuntimeFileError as error:
        error.message += (". Fix it there (the file's header says what each field holds); "
                          "`make refresh-runtimes` then checks the pins.")
        report_book_error(error, "runtimes")
        app.config[PREFIX + "runtimes_file"] = ""


def book_config(config: Config) -> BookConfig:
    """The typed view of a build's config."""
    return BookConfig.of(config)
