"""Running a chapter's notebook, as myst-nb's cache mode would: a run that stops names its
cell, floods are cut.

nbclient's ``CellTimeoutError`` and ``DeadKernelError`` say nothing of where they stopped:
:func:`run_notebook` notes the running cell and how the kernel ended, and makes a dead
kernel a failed run like any other.

Outputs too long for a page: myst-nb merges a cell's streams in time quadratic in a line's
length (a 5 MB line: hours), so before a run is cached an output longer than :data:`LIMIT`
keeps its first and last :data:`KEEP` characters, and a marker line with a digest of the
whole (normalised) output, which the expected outputs verify. The page shows the marker
without the digest.
"""

from __future__ import annotations

import os
import re
import signal
import time
import traceback
from contextlib import nullcontext, suppress
from dataclasses import dataclass
from itertools import groupby
from pathlib import Path, PurePosixPath
from tempfile import TemporaryDirectory
from typing import TYPE_CHECKING

import nbformat

from coursebook.model.notebooks import CHAPTER_SUFFIXES, short_digest, top_matter
from coursebook.model.recordings import recording_name
from coursebook.model.outputs import normalise

if TYPE_CHECKING:
    from myst_nb.core.config import NbParserConfig

TIMEOUT_KEY = "execution_timeout"  # myst-nb's per-chapter setting, under `mystnb:`
# What a kernel provisioner answers for a kernel that ended with no status to be had.
EXIT_STATUS_UNKNOWN = -(1 << 16)
# ... for a kernel whose forkserver ended too (it ends its kernels): another build's, stopped.
SERVER_ENDED = -(1 << 17)
# What a chapter's kernel is started with: not its own start-up notices (running over TCP,
# say) in the build log.
KERNEL_ARGUMENTS = ["--IPKernelApp.log_level=ERROR"]


# Signals that ask a process to stop, not a crash of its own.
_STOPPED_FROM_OUTSIDE = {signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGQUIT}


@dataclass(frozen=True)
class StoppedRun:
    """A run that stopped in a cell (``cell_index``; None: before any cell ran)."""

    error: str  # CellTimeoutError, DeadKernelError or NoSuchKernel, as myst-nb records it
    cell_index: int | None
    timeout: int = 0  # the limit a cell ran past, in seconds
    exit_status: int | None = None  # the dead kernel's: an exit code, or minus a signal
    kernel: str = ""  # the kernel the chapter names, when none of that name is installed

    @property
    def what(self) -> str:
        """What happened, for a message that names the cell before it ("code cell `…` ")."""
        if self.error == "NoSuchKernel":
            return (f"did not run: no kernel named {self.kernel!r} is installed here. Name "
                    "`python3`, the book's kernel, in the chapter's top matter (kernelspec).")
        if self.error == "CellTimeoutError":
            return (f"was still running after {self.timeout} s, the limit for one cell "
                    "(nb_execution_timeout); the cells after it did not run. Make it faster, "
                    "or raise the limit for this chapter in its top matter: "
                    f"`mystnb: {{{TIMEOUT_KEY}: {2 * self.timeout}}}`.")
        return (f"was running when the kernel died ({self._ending}); the cells after it did "
                f"not run. {self._advice}")

    @property
    def _ending(self) -> str:
        if self.exit_status is None:
            return "its exit status is unknown"
        if self.exit_status == SERVER_ENDED:
            return "with the kernel server it came from, as when the build that started it stopped"
        if self.exit_status >= 0:
            return f"exit code {self.exit_status}"
        number = -self.exit_status
        try:
            return f"killed by signal {signal.Signals(number).name} ({number})"
        except ValueError:
            return f"killed by signal {number}"

    @property
    def _advice(self) -> str:
        if self.exit_status == SERVER_ENDED:
            return "Nothing in the cell ended it: build again."
        if self.exit_status == -signal.SIGKILL:
            return ("SIGKILL usually comes from the out-of-memory killer: make the cell use "
                    "less memory (smaller tensors, batches or models), then build again.")
        if self.exit_status is not None and -self.exit_status in _STOPPED_FROM_OUTSIDE:
            return (f"{signal.Signals(-self.exit_status).name} is sent from outside the cell "
                    "(`kill`, a closed terminal, a job scheduler, a machine shutting down), "
                    "unless the cell signals its own process: build again.")
        if self.exit_status is not None and self.exit_status < 0:
            return ("A crash inside compiled code (torch, numpy, …): run the chapter in "
                    "Jupyter to find the call that crashes, then build again.")
        return ("The cell, or a library it calls, ended the Python process (`os._exit`, "
                "`sys.exit` from a thread, …): run the chapter in Jupyter to find it, then "
                "build again.")


def _kernel_manager_noting_its_end(ended: list[int]):
    """nbclient's kernel manager, noting the kernel process's exit status when it died:
    nbclient asks ``is_alive()`` before it shuts a kernel down, also after a dead one."""
    from jupyter_client.manager import AsyncKernelManager

    class KernelManagerNotingItsEnd(AsyncKernelManager):
        async def is_alive(self) -> bool:
            alive = await super().is_alive()
            if not alive and self.has_kernel and self.provisioner is not None:
                status = await self.provisioner.poll()
                if status is not None and status != EXIT_STATUS_UNKNOWN:
                    ended.append(status)
            return alive

    return KernelManagerNotingItsEnd


def run_notebook(notebook: nbformat.NotebookNode, **options):
    """Execute ``notebook`` in place with jupyter-cache's ``single_nb_execution``; returns
    its result and, when the run stopped in a cell, a :class:`StoppedRun`."""
    from jupyter_cache.executors.utils import ExecutionResult, single_nb_execution
    from jupyter_client.kernelspec import NoSuchKernel
    from nbclient.exceptions import CellTimeoutError, DeadKernelError

    running: list[int] = []
    ended: list[int] = []
    started = time.perf_counter()
    try:
        result = single_nb_execution(
            notebook, **options,
            on_cell_execute=lambda cell, cell_index: running.append(cell_index),
            kernel_manager_class=_kernel_manager_noting_its_end(ended),
            # Its outputs are all in once the last cell ends: the kernel is stopped then,
            # not waited for while its Python unloads torch (about 0.5 s a chapter).
            shutdown_kernel="immediate",
            extra_arguments=KERNEL_ARGUMENTS)
    except (DeadKernelError, NoSuchKernel) as error:
        result = ExecutionResult(notebook, options.get("cwd"), time.perf_counter() - started,
                                 error, traceback.format_exc())
    finally:
        cut_long_outputs(notebook)
    cell = running[-1] if running else None
    if isinstance(result.err, NoSuchKernel):
        return result, StoppedRun("NoSuchKernel", None, kernel=result.err.name)
    if isinstance(result.err, DeadKernelError):
        return result, StoppedRun("DeadKernelError", cell, exit_status=ended[-1] if ended else None)
    if isinstance(result.err, CellTimeoutError):
        timeout = notebook.metadata.get("execution", {}).get("timeout", options.get("timeout"))
        return result, StoppedRun("CellTimeoutError", cell, timeout=timeout)
    return result, None


def chapter_settings(settings: NbParserConfig, metadata: dict,
                     source_path: str) -> NbParserConfig | None:
    """myst-nb's settings for a chapter (its top matter's ``mystnb`` over the book's), or None
    when myst-nb would not run it from the cache (myst_nb.core.execute.create_client)."""
    overrides = {key: value for key, value in
                 metadata.get(settings.metadata_key, {}).items() if key != "output_folder"}
    with suppress(Exception):  # myst-nb warns of it as it reads the page
        settings = settings.copy(**overrides)
    if settings.execution_mode != "cache" or excluded_from_execution(settings, source_path):
        return None
    return settings


def executes_when_read(path: Path, settings: NbParserConfig) -> bool:
    """Whether a build runs this page on a cache miss, before it is read: a chapter, not
    recorded, that myst-nb's settings for it (by its top matter alone) run."""
    if path.suffix not in CHAPTER_SUFFIXES:
        return False
    text = path.read_text(encoding="utf8", errors="replace")
    try:
        matter = top_matter(text)
        return (matter is not None and recording_name(matter) is None
                and chapter_settings(settings, matter, str(path)) is not None)
    except Exception:  # noqa: BLE001 - reading the page reports what is wrong with it
        return False


def excluded_from_execution(settings: NbParserConfig, source_path: str) -> bool:
    """Whether myst-nb's ``execution_excludepatterns`` leave the page out (as
    myst_nb.core.execute.create_client matches them)."""
    path = PurePosixPath(Path(source_path).as_posix())
    return any(path.match(pattern) for pattern in settings.execution_excludepatterns)


def run_chapter(notebook: nbformat.NotebookNode, source_path: str, settings: NbParserConfig):
    """:func:`run_notebook` as myst-nb's cache mode runs a chapter with ``settings``: in its
    folder or a temporary one, under its time limit, its errors allowed or not."""
    folder = TemporaryDirectory() if settings.execution_in_temp else nullcontext(
        str(Path(source_path).parent))
    with folder as cwd:
        return run_notebook(notebook, cwd=os.path.abspath(cwd), timeout=settings.execution_timeout,
                            allow_errors=settings.execution_allow_errors, meta_override=True)


LIMIT = 100_000  # characters of one output (a stream, a text result) shown in full
KEEP = 10_000  # characters kept at each end of a longer one
_DIGEST = 16  # hex digits of sha256 in the marker

CUT_MARKER = re.compile(r"^… (?P<what>[\d,]+ lines?|part of one line) cut "
                        r"\((?P<size>[\d,]+) characters(?P<digest>, sha256 [0-9a-f]+)?\) …$",
                        re.M)


def as_displayed(text: str) -> str:
    """The text as a terminal shows it: in each line, a carriage return followed by more
    text wipes what came before it (myst-nb's rule, in linear time)."""
    if "\r" not in text:
        return text
    lines = text.split("\n")
    for number, line in enumerate(lines):
        wiped = line.rfind("\r", 0, len(line) - 1)
        if wiped >= 0:
            lines[number] = line[wiped + 1:]
    return "\n".join(lines)


def cut(text: str) -> str:
    """The text as the book keeps it: unchanged up to :data:`LIMIT` characters; longer,
    as displayed and normalised, its middle replaced by a marker line."""
    if len(text) <= LIMIT:
        return text
    whole = normalise(as_displayed(text))
    if len(whole) <= LIMIT:
        return whole
    head = whole[:KEEP]
    end = head.rfind("\n")
    if end >= KEEP // 2:
        head = head[:end + 1]
    tail = whole[-KEEP:]
    start = tail.find("\n")
    if 0 <= start < KEEP // 2:
        tail = tail[start + 1:]
    middle = whole[len(head):len(whole) - len(tail)]
    lines = middle.count("\n")
    what = f"{lines:,} line{'s' if lines > 1 else ''}" if lines else "part of one line"
    digest = short_digest(whole, _DIGEST)
    marker = f"… {what} cut ({len(middle):,} characters, sha256 {digest}) …"
    if not head.endswith("\n"):
        head += "\n"
    return f"{head}{marker}\n{tail}"


def _stream_of(output: nbformat.NotebookNode) -> object:
    """Adjacent outputs with the same key are one stream's pieces; any other output is alone."""
    if output.get("output_type") == "stream":
        return ("stream", output.get("name"))
    return id(output)


def cut_long_outputs(notebook: nbformat.NotebookNode) -> None:
    """Shorten, in place, each output longer than :data:`LIMIT` (a stream merged first).
    A stream's pieces in a row become one, as Jupyter shows them: myst-nb's
    ``nb_merge_streams`` ends each piece with a newline, a line printed in two pieces too."""
    for cell in notebook.cells:
        if cell.get("cell_type") != "code" or not cell.get("outputs"):
            continue
        joined = []
        # Joined once per run: adding piece by piece copies the growing text each time.
        for _, run in groupby(cell.outputs, key=_stream_of):
            first, *rest = run
            if rest:
                first.text = "".join(piece.text for piece in (first, *rest))
            joined.append(first)
        cell.outputs = joined
        streams = [o for o in cell.outputs if o.get("output_type") == "stream"]
        for name in {o.get("name") for o in streams}:
            pieces = [o for o in streams if o.name == name]
            if sum(len(piece.text) for piece in pieces) > LIMIT:
                pieces[0].text = cut("".join(piece.text for piece in pieces))
                cell.outputs = [o for o in cell.outputs if not any(o is p for p in pieces[1:])]
        for output in cell.outputs:
            data = output.get("data", {})
            if isinstance(data.get("text/plain"), str):
                data["text/plain"] = cut(data["text/plain"])


def without_digest(text: str) -> str:
    """The text as the page shows it: a cut's marker without its digest."""
    if "… " not in text:
        return text
    return CUT_MARKER.sub(lambda found: found[0].replace(found["digest"] or "", ""), text)
