"""A chapter's run as myst-nb's cache mode runs it, naming the cell it stopped in (nbclient's
errors do not), its floods cut (docs/authoring.md, "Long output"): myst-nb merges streams in
time quadratic in a line's length (a 5 MB line: hours)."""

from __future__ import annotations

import html
import os
import re
import signal
import time
import traceback
from dataclasses import dataclass

import nbformat

from coursebook.execute.kernel_forkserver import KERNEL_ARGUMENTS, PIP_REFUSED, READ, WROTE
from coursebook.execute.shared_cache import READS, in_key
from coursebook.model.notebooks import short_digest, top_matter_setting
from coursebook.model.outputs import normalise
from coursebook.prepare.chapter_packages import COMMAND as PACKAGES_COMMAND
from coursebook.process.interrupt import remove_folder, short_temporary_folder

# What a kernel provisioner answers for a kernel that ended with no status to be had, and
# for one whose forkserver ended too (it ends its kernels): another build's, stopped.
EXIT_STATUS_UNKNOWN, SERVER_ENDED = -(1 << 16), -(1 << 17)


class RefusedRun(Exception):
    """A cell read an unlisted file, wrote outside its run, or ran pip to change anything."""


@dataclass(frozen=True)
class StoppedRun:
    """A run that stopped in a cell (``cell_index``; None: before any cell ran)."""

    error: str  # CellTimeoutError, DeadKernelError, NoSuchKernel (myst-nb's names), RefusedRun's
    cell_index: int | None
    timeout: int = 0  # the limit a cell ran past, in seconds
    exit_status: int | None = None  # the dead kernel's: an exit code, or minus a signal
    kernel: str = ""  # the kernel the chapter names, when none of that name is installed
    file: str = ""  # the file beside the chapter it read unlisted, or would write (RefusedRun)
    command: str = ""  # the pip command it ran, refused (PipRefused)
    prompt: str = ""  # a timed-out cell's last line, a question a program it runs may ask
    chapter: str = ""  # its file, whose kind says where its settings go (a MyST page's: "")

    @property
    def what(self) -> str:
        """What happened, after a message's "code cell `…` "."""
        if self.error == "NoSuchKernel":
            return (f"did not run: no kernel named {self.kernel!r} is installed here. Name "
                    "`python3`, the book's kernel, "
                    f"{top_matter_setting(self.chapter, 'kernelspec: {name: python3}')}.")
        if self.error == "PipRefused":
            return (f"runs `{self.command}`, which pip refused: a build changes no environment, "
                    "as a chapter's code runs with the builder's rights. Take it out, declare "
                    "the package " + top_matter_setting(
                        self.chapter, "coursebook: {packages: [NAME]}")
                    + f" and run `{PACKAGES_COMMAND}`.")
        if self.error == "UnlistedRead":
            return (f"reads `{self.file}`, beside the chapter, which the top matter's "
                    "'coursebook: reads' does not list, so an edit of it would not run the "
                    "chapter again: list it " + top_matter_setting(
                        self.chapter, f"coursebook: {{reads: [{self.file}]}}"))
        if self.error == "WroteListed":
            return (f"changes `{self.file}`, which the top matter's 'coursebook: reads' lists, "
                    "through the link its run makes, which would change the copy its next run "
                    "reads (refused): write the result at another path")
        if self.error == "WroteThroughLink":
            return (f"changes `{self.file}` beside the chapter, through the link its run makes to "
                    "what is there (the book's sources): refused. Write at another path, which "
                    "its run keeps; delete the file if an earlier run left it.")
        if self.error == "WroteOutside":
            return (f"changes `{self.file}`, outside the folder its run makes (the machine a build "
                    "runs on, as root in CI): refused. Write in that folder, at a relative path "
                    f"(`{os.path.basename(self.file)}`), which its run keeps.")
        if self.error == "CellTimeoutError":
            return (f"was still running after {self.timeout} s, the limit for one cell "
                    "(nb_execution_timeout); the cells after it did not run. " + (
                        f"It printed `{self.prompt}` last: if a program it runs asks there "
                        "(`input()`), it waits for an answer no build types: take the question "
                        "out, or answer it in the cell (`!echo | python train.py`). Else make"
                        if self.prompt else "Make") + " it faster, "
                    "or raise the limit for this chapter " + top_matter_setting(
                        self.chapter, f"mystnb: {{execution_timeout: {2 * self.timeout}}}") + ".")
        status, advice = self.exit_status, (
            "The cell, or a library it calls, ended the Python process (`os._exit`, `sys.exit` "
            "from a thread, …): run the chapter in Jupyter to find it, then build again.")
        if status is None:
            ending = "its exit status is unknown"
        elif status == SERVER_ENDED:
            ending = ("with the kernel server it came from, as when the build that started it "
                      "stopped")
            advice = "Nothing in the cell ended it: build again."
        elif status >= 0:
            ending = f"exit code {status}"
        else:
            try:
                ending = f"killed by signal {signal.Signals(-status).name} ({-status})"
            except ValueError:
                ending = f"killed by signal {-status}"
            if status == -signal.SIGKILL:
                advice = ("SIGKILL usually comes from the out-of-memory killer: make the cell use "
                          "less memory (smaller tensors, batches or models), then build again.")
            elif -status in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGQUIT):
                advice = (f"{signal.Signals(-status).name} is sent from outside the cell (`kill`, "
                          "a closed terminal, a job scheduler, a machine shutting down), unless "
                          "the cell signals its own process: build again.")
            else:
                advice = ("A crash inside compiled code (torch, numpy, …): run the chapter in "
                          "Jupyter to find the call that crashes, then build again.")
        return (f"was running when the kernel died ({ending}); the cells after it did not run. "
                f"{advice}")


def kernel_manager_class(ended: list[int] | None = None):
    """nbclient's kernel manager, over Unix sockets in a folder of its own: a TCP port it
    picks may be bound by another process first (CI: "Address already in use"). It notes a
    dead kernel's exit status in ``ended``, as nbclient asks ``is_alive()`` before shutdown."""
    from jupyter_client.manager import AsyncKernelManager
    from traitlets import default

    class KernelManagerOverUnixSockets(AsyncKernelManager):
        @default("transport")
        def _unix_sockets(self) -> str:
            return "ipc"

        @default("ip")
        def _socket_prefix(self) -> str:
            self.socket_folder = short_temporary_folder("kernel-")
            return str(self.socket_folder / "socket")

        async def start_kernel(self, **kw) -> None:
            # Its own temporary folder, gone with it: a file a run leaves there (a checkpoint)
            # is found by no later run (the machine's is refused: kernel_forkserver.kept_outside).
            self.temporary = short_temporary_folder("run-")
            env = {**kw.pop("env", os.environ), "TMPDIR": str(self.temporary)}  # a caller's too
            await super().start_kernel(**kw, env=env)

        async def is_alive(self) -> bool:
            alive = await super().is_alive()
            if ended is not None and not alive and self.has_kernel:
                status = await self.provisioner.poll()
                if status is not None and status != EXIT_STATUS_UNKNOWN:
                    ended.append(status)
            return alive

        async def cleanup_resources(self, restart: bool = False) -> None:
            await super().cleanup_resources(restart)
            for folder in ("socket_folder", "temporary"):
                if not restart and getattr(self, folder, None):
                    remove_folder(getattr(self, folder))

    return KernelManagerOverUnixSockets


# A cell that runs another program, which may ask (the kernel's own input() is refused).
_RUNS_PROGRAM = re.compile(r"^[ \t]*(?:[\w.]+[ \t]*=[ \t]*)?!|^\s*%%(?:bash|sh|script)\b"
                           r"|\bsubprocess\.|\bos\.system\(", re.M)


def open_line(cell: nbformat.NotebookNode) -> str:
    """The line a program the cell runs printed last and left open, or ended after a question
    (`Enter your name:`), not redrawn in place (a progress bar's)."""
    text = "".join(output.get("text", "") for output in cell.get("outputs", ())
                   if output.get("output_type") == "stream")
    *_, before, asked, end, line = re.split(r"(\r?\n|\r)", "\n\n" + text)
    if not line and end != "\r" and asked.rstrip().endswith((":", "?")):
        end, line = before, asked
    return line.strip() if end != "\r" and _RUNS_PROGRAM.search(cell.source) else ""


def run_notebook(notebook: nbformat.NotebookNode, chapter: str = "", **options):
    """Execute ``chapter``'s notebook in place: jupyter-cache's result, where it stopped."""
    from jupyter_cache.executors.utils import ExecutionResult, single_nb_execution
    from jupyter_client.kernelspec import NoSuchKernel
    from nbclient.exceptions import CellTimeoutError, DeadKernelError

    running: list[int] = []
    ended: list[int] = []
    told: dict[tuple[str, str], int] = {}  # (READ or WROTE, a file under its folder): its cell
    pip_refused: list[tuple[int, str]] = []  # (its cell, a pip command refused)
    started, begun = time.perf_counter(), time.time()

    def note(cell, cell_index: int, execute_reply: dict) -> None:
        for said in execute_reply["content"].get("payload", ()):
            if said.get("source") == PIP_REFUSED:
                pip_refused.append((cell_index, said["command"]))
            # a read one changed since the run began is the run's own, however written (C++)
            elif said.get("source") in (READ, WROTE) and said.get("mtime", 0) < begun:
                told[said["source"], said["file"]] = cell_index

    try:
        result = single_nb_execution(
            notebook, **options,
            on_cell_execute=lambda cell, cell_index: running.append(cell_index),
            on_cell_executed=note,
            kernel_manager_class=kernel_manager_class(ended),
            # Its outputs are all in once the last cell ends: the kernel is stopped then,
            # not waited for while its Python unloads torch (about 0.5 s a chapter).
            shutdown_kernel="immediate", extra_arguments=KERNEL_ARGUMENTS)
    except (DeadKernelError, NoSuchKernel) as error:
        result = ExecutionResult(notebook, options.get("cwd"), time.perf_counter() - started,
                                 error, traceback.format_exc())
    finally:
        cut_long_outputs(notebook)
        # A run among links reaches the chapter's own folder through them.
        name_the_folder(notebook, options.get("cwd") or os.getcwd(), os.path.dirname(chapter))
    cell = running[-1] if running else None
    if isinstance(result.err, NoSuchKernel):
        return result, StoppedRun("NoSuchKernel", None, kernel=result.err.name, chapter=chapter)
    if pip_refused:  # what fails after it (an import of the package) follows from it
        stopped = StoppedRun("PipRefused", pip_refused[0][0], command=pip_refused[0][1],
                             chapter=chapter)
        if result.err is None:
            result.err, result.exc_string = RefusedRun(stopped.what), stopped.what
        return result, stopped
    if isinstance(result.err, DeadKernelError):
        return result, StoppedRun("DeadKernelError", cell, chapter=chapter,
                                  exit_status=ended[-1] if ended else None)
    if isinstance(result.err, CellTimeoutError):
        timeout = notebook.metadata.get("execution", {}).get("timeout", options.get("timeout"))
        return result, StoppedRun("CellTimeoutError", cell, timeout=timeout, chapter=chapter,
                                  prompt=open_line(notebook.cells[cell]))
    listed = {os.path.normpath(name) for name in in_key(notebook, READS)}
    # An unlisted read: an edit of the file would keep the run cached. A write the kernel
    # refused (it raised there, or later cells ran, having caught it), through a link into
    # the chapter's folder or outside the run's (by a relative path too: `../x`).
    refused = sorted((index, "UnlistedRead" if source == READ else "WroteOutside"
                      if os.path.isabs(name) or name.split(os.sep)[0] == os.pardir
                      else "WroteListed" if name in listed
                      else "WroteThroughLink", name)
                     for (source, name), index in told.items()
                     if source == WROTE or name not in listed)
    if refused:
        stopped = StoppedRun(refused[0][1], refused[0][0], file=refused[0][2], chapter=chapter)
        result.err, result.exc_string = RefusedRun(stopped.what), stopped.what
        return result, stopped
    return result, None


LIMIT = 100_000  # characters of one output (a stream, a text result) shown in full
KEEP = 10_000  # characters kept at each end of a longer one
CUT_MARKER = re.compile(r"^… (?P<what>[\d,]+ lines?|part of one line) cut "
                        r"\((?P<size>[\d,]+) characters(?P<digest>, sha256 [0-9a-f]+)?\) …$",
                        re.M)


def as_displayed(text: str) -> str:
    """The text as a terminal shows it, ``\\r`` wiping its line (myst-nb's rule, in linear time)."""
    if "\r" not in text:
        return text
    return "\n".join(line[line.rfind("\r", 0, len(line) - 1) + 1:]
                     for line in text.split("\n"))


def cut(text: str) -> str:
    """The text; longer than :data:`LIMIT`, as displayed and normalised, its middle cut."""
    if len(text) <= LIMIT:
        return text
    whole = normalise(as_displayed(text))
    if len(whole) <= LIMIT:
        return whole
    head, tail = whole[:KEEP], whole[-KEEP:]
    end, start = head.rfind("\n"), tail.find("\n")
    if end >= KEEP // 2:
        head = head[:end + 1]
    if 0 <= start < KEEP // 2:
        tail = tail[start + 1:]
    middle = whole[len(head):len(whole) - len(tail)]
    lines = middle.count("\n")
    what = f"{lines:,} line{'s' if lines > 1 else ''}" if lines else "part of one line"
    marker = f"… {what} cut ({len(middle):,} characters, sha256 {short_digest(whole, 16)}) …"
    if not head.endswith("\n"):
        head += "\n"
    return f"{head}{marker}\n{tail}"


# What a page shows for the folder the cells ran in: a build's (a temporary one, linked to the
# chapter's in the builder's checkout) means nothing to a reader, and differs between runs.
NOTEBOOK_FOLDER = "<notebook folder>"


def name_the_folder(notebook: nbformat.NotebookNode, *folders: str) -> None:
    """Each of ``folders`` as :data:`NOTEBOOK_FOLDER` in the notebook's outputs, in place."""
    paths = sorted({path for folder in folders if folder for path in (
        os.path.abspath(folder), os.path.realpath(folder))}, key=len, reverse=True)
    named = re.compile(f"(?:{'|'.join(map(re.escape, paths))})" + r"(?![\w.-])")
    for output in (output for cell in notebook.cells for output in cell.get("outputs", ())):
        for place in (output, output.get("data", {})):  # a stream's, an error's, a result's
            for key, text in place.items():
                if isinstance(text, str) and key.startswith(("text", "evalue")):  # a tag in HTML:
                    place[key] = named.sub(html.escape(NOTEBOOK_FOLDER) if key in (
                        "text/html", "text/markdown") else NOTEBOOK_FOLDER, text)
        if "traceback" in output:
            output.traceback = [named.sub(NOTEBOOK_FOLDER, line) for line in output.traceback]


def cut_long_outputs(notebook: nbformat.NotebookNode) -> None:
    """Shorten, in place, each output longer than :data:`LIMIT`, a cell's streams merged first
    as the page shows them (myst-nb's ``nb_merge_streams``; a piece left apart was compared
    twice), joined as Jupyter shows them (myst-nb ends each piece with a newline)."""
    for cell in notebook.cells:
        if cell.get("cell_type") != "code" or not cell.get("outputs"):
            continue
        outputs, streams = [], {}
        for output in cell.outputs:
            stream = output.get("output_type") == "stream"
            if not (stream and output.name in streams):
                outputs.append(output)
            if stream:
                streams.setdefault(output.name, []).append(output)
        for first, *rest in streams.values():  # joined once: piece by piece copies the text
            if rest:
                first.text = "".join(piece.text for piece in (first, *rest))
            first.text = cut(first.text)
        at = next((at for at, pair in enumerate(zip(outputs, outputs[1:])) if [
            output.get("name") for output in pair] == ["stderr", "stdout"]), None)
        if at is not None:
            outputs[at:at + 2] = outputs[at + 1], outputs[at]
        cell.outputs = outputs
        for output in cell.outputs:
            data = output.get("data", {})
            if isinstance(data.get("text/plain"), str):
                data["text/plain"] = cut(data["text/plain"])


def without_digest(text: str) -> str:
    """The text as the page shows it: a cut's marker without its digest."""
    if "… " not in text:
        return text
    return CUT_MARKER.sub(lambda found: found[0].replace(found["digest"] or "", ""), text)
