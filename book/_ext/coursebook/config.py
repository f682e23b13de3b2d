"""The book's configuration: each field of :class:`BookConfig` a Sphinx config value
``coursebook_<field>``, made once and checked at ``config-inited``; :func:`book_config`."""

from __future__ import annotations

import dataclasses
import platform
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from weakref import WeakKeyDictionary

from sphinx.application import Sphinx
from sphinx.config import Config

from coursebook.model.faults import shown_path
from coursebook.model.machine_kinds import MachineKind, load_machine_kinds
from coursebook.model.runtimes import Runtime, RuntimeFileError, load_runtimes, reader_runtimes
from coursebook.model.versions import installed_version
from coursebook.museum.model import Wing, load_museum
from coursebook.reporting import report_book_error, stop_build

PREFIX = "coursebook_"
# Each build's BookConfig, by the Config it was made from (forked readers inherit it).
_BUILT: WeakKeyDictionary[Config, BookConfig] = WeakKeyDictionary()
_MUSEUM: dict[tuple, dict[str, Wing]] = {}  # the error museum, by its files' state


def _value(default, rebuild: str, doc: str, path: str = ""):
    """``rebuild``: what Sphinx redoes when it changes; ``path``: "file" or "folder" where the
    setting names one the build reads."""
    metadata = {"rebuild": rebuild, "doc": doc, "path": path}
    if isinstance(default, (list, dict)):
        return field(default_factory=lambda: type(default)(default), metadata=metadata)
    return field(default=default, metadata=metadata)


@dataclass(frozen=True)
class BookConfig:
    # --- Sources: exhibits, recordings, expected outputs ---------------------------------
    exhibits_dir: str = _value("exhibits", "env",
                               "the error museum's exhibits, one folder per wing", "folder")
    recordings_dir: str = _value("book/recordings", "env",
                                 "committed recordings of recorded chapters")
    machine_kinds_file: str = _value("", "env", "the machine kinds recorded chapters run on",
                                     "file")
    runtimes_file: str = _value("", "env", "the runtimes the book targets (Colab's among them)",
                                "file")
    expected_dir: str = _value("expected", "", "expected outputs, one folder per torch version")
    allow_stale_recordings: bool = _value(False, "env",
                                          "render a cell changed since its recording, marked")
    # --- Execution: what joins the cache key ---------------------------------------------
    execution_packages: list = _value(["torch"], "env",
                                      "packages whose versions join the cache key")
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
    preview_kernel_imports: list = _value(["torch"], "",
                                          "modules the preview's waiting kernels import ahead")
    # A cold build forks its chapters' kernels from one server (coursebook.execute.kernel_pool).
    kernel_imports: list = _value(["torch"], "",
                                  "modules a cold build's kernel server imports: every chapter's")
    # --- Outputs: pages, downloads, handouts -----------------------------------------------
    repository_url: str = _value("", "html", "the GitHub repository whose branch serves the HTML")
    published_branch: str = _value("gh-pages", "html", "that branch (Colab opens notebooks there)")
    build_date: str = _value("", "", "the date a build names (conf.py: today, UTC)")
    handouts: bool = _value(False, "env", "one LaTeX document per chapter (-t handout)")
    answer_space: bool = _value(False, "env", "ruled answer boxes in the student handout")

    @classmethod
    def register(cls, app: Sphinx) -> None:
        for item in dataclasses.fields(cls):
            default = getattr(cls(), item.name)
            app.add_config_value(PREFIX + item.name, default, item.metadata["rebuild"],
                                 type(default), description=item.metadata["doc"])

    @classmethod
    def of(cls, config: Config) -> BookConfig:
        return cls(**{name: getattr(config, PREFIX + name, default)
                      for name, default in vars(cls()).items()})

    @classmethod
    def build(cls, app: Sphinx, config: Config) -> None:
        """``config-inited``: this build's, checked, its execution versions a config value (a
        change re-reads every page). A runtimes file that cannot be used is one error at its
        line and field: the build goes on without the runtimes, and fails (``-W``)."""
        book = cls.of(config)
        problem = book.problem()
        try:  # the versions, once the settings' types are right
            versions = {} if problem else {"python": platform.python_version(), **{
                name: installed_version(name) for name in book.execution_packages}}
        except metadata.PackageNotFoundError as missing:
            problem = (f"{PREFIX}execution_packages names {missing.name!r}, which this Python "
                       "does not have: run `make venv` (pyproject.toml's dependencies)")
        if problem is not None:
            stop_build("config", (f"{shown_path(Path(app.confdir, 'conf.py'))} (or -D): "
                                  f"{problem}", None))
        config[PREFIX + "execution_versions"] = versions
        try:
            if book.runtimes_file:
                load_runtimes(Path(book.runtimes_file))
        except RuntimeFileError as error:
            error.message += (". Fix it there (the file's header says what each field holds); "
                              "`make refresh-runtimes` then checks the pins.")
            report_book_error(error, "runtimes")
            config[PREFIX + "runtimes_file"] = ""
        _BUILT[config] = cls.of(config)

    def problem(self) -> str | None:
        for item in dataclasses.fields(self):
            value, default = getattr(self, item.name), getattr(BookConfig(), item.name)
            kind = item.metadata["path"]
            expected = (list, tuple) if isinstance(default, list) else type(default)
            if not isinstance(value, expected):
                return (f"{PREFIX}{item.name} is {value!r}, a {type(value).__name__}; it must be "
                        f"a {type(default).__name__} ({item.metadata['doc']}), such as "
                        f"{PREFIX}{item.name} = {default!r}")
            if value and kind and not (Path(value).is_dir() if kind == "folder"
                                       else Path(value).is_file()):
                return (f"{PREFIX}{item.name} is '{value}', and no such {kind} exists; it names "
                        f"{item.metadata['doc']}: give its path, or fix the path")
        return None

    @property
    def torch(self) -> str:
        return self.execution_versions["torch"]

    @property
    def runtimes_path(self) -> Path | None:  # None: tools/runtimes.toml, the data's default
        return Path(self.runtimes_file) if self.runtimes_file else None

    @property
    def machine_kinds(self) -> dict[str, MachineKind]:  # the file read once (lru_cache)
        return load_machine_kinds(Path(self.machine_kinds_file), self.runtimes_path)

    @property
    def reader_runtimes(self) -> tuple[Runtime, ...]:  # whose texts pages show beside ours
        return reader_runtimes(self.runtimes_path) if self.runtimes_path else ()

    def museum(self) -> dict[str, Wing]:
        """The error museum, parsed again only when its files change (every chapter uses it)."""
        files = sorted(Path(self.exhibits_dir).glob("*/*.toml"))
        key = (self.exhibits_dir, self.machine_kinds_file, self.runtimes_file,
               *((str(path), path.stat().st_mtime_ns, path.stat().st_size) for path in files))
        if key not in _MUSEUM:
            _MUSEUM.clear()  # the last one only
            _MUSEUM[key] = load_museum(Path(self.exhibits_dir), self.machine_kinds,
                                       self.reader_runtimes)
        return _MUSEUM[key]


def book_config(config: Config) -> BookConfig:
    """The build's BookConfig (made at config-inited); outside a build, made now."""
    return _BUILT.get(config) or BookConfig.of(config)
