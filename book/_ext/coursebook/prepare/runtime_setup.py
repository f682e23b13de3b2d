"""A chapter's set-up cells (``{runtime-setup} RUNTIME``, ``{runtime-restart} RUNTIME MODULE``),
made from a runtime and the machine kinds (docs/recorded-chapters.md)."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat

from coursebook.model.faults import BookError, shown_path
from coursebook.model.machine_kinds import MachineKind
from coursebook.model.notebooks import RESTART_TAG, code_cell, replace_markers
from coursebook.model.runtimes import RUNTIMES_FILE, Runtime, load_runtimes

_MARKER = re.compile(r"^(`{3,}|:{3,})\{runtime-setup\}[ \t]+([^\n]+)\n\1[ \t]*$", re.M)
_RESTART = re.compile(r"^(`{3,}|:{3,})\{runtime-restart\}[ \t]+(\S+)[ \t]+(\S+)[ \t]*\n"
                      r"(?::tags:[ \t]*\[([^\]\n]*)\][ \t]*\n)?\1[ \t]*$", re.M)
# Where pip finds a ``+cpu`` build of torch (PyPI has only its default build).
_LOCAL_INDEXES = {"cpu": "https://download.pytorch.org/whl/cpu"}


class RuntimeSetupError(BookError):
    """A marker that names no usable runtime."""


def _runtime_kinds(marker: str, runtime_name: str, machine_kinds: dict[str, MachineKind] | None,
                   runtimes_file: Path) -> tuple[Runtime, MachineKind, list[str]]:
    """The runtime a marker names, its accelerator kind, and the lines that set the variables
    of the kind the notebook finds itself on (the accelerator's, else the stand-in's)."""
    if machine_kinds is None:
        raise RuntimeSetupError(f"a {{{marker}}} cell is made from the machine kinds, "
                                "and none were given")
    runtimes = load_runtimes(runtimes_file)
    if runtime_name not in runtimes:
        raise RuntimeSetupError(f"{{{marker}}} names runtime '{runtime_name}', not one of "
                                f"{shown_path(runtimes_file)} ({', '.join(runtimes)})")
    kinds = [kind for kind in machine_kinds.values() if kind.runtime == runtime_name]
    accelerator = next((b for b in kinds if b.device_files), None)
    stand_in = next((b for b in kinds if b.stand_in), None)
    if accelerator is None or stand_in is None:
        raise RuntimeSetupError(f"{{{marker}}} {runtime_name}: the machine kinds need an "
                                "accelerator kind with device_files and a stand-in kind with "
                                f"runtime = '{runtime_name}'")
    devices = " + ".join(f"glob.glob({pattern!r})" for pattern in accelerator.device_files)
    return runtimes[runtime_name], accelerator, [
        f"on_device = bool({devices})",
        f"settings = {accelerator.environment!r} if on_device else {stand_in.environment!r}",
        "for name, value in settings.items():",
        "    os.environ.setdefault(name, value)"]


def setup_code(runtime_name: str, machine_kinds: dict[str, MachineKind],
               runtimes_file: Path = RUNTIMES_FILE) -> str:
    runtime, accelerator, on_device = _runtime_kinds("runtime-setup", runtime_name,
                                                     machine_kinds, runtimes_file)
    pins = {**runtime.packages, **runtime.adds}
    indexes = sorted({_LOCAL_INDEXES[v.split("+")[1]] for v in pins.values()
                      if "+" in v and v.split("+")[1] in _LOCAL_INDEXES})
    options = [option for index in indexes for option in ("--extra-index-url", index)]
    device_only = ", ".join(runtime.device_only)
    return "\n".join([
        f"# This notebook's packages: {runtime.title} and what the book adds to it, pinned.",
        f"# With a {accelerator.short_label}, only what the image lacks is installed; without one,",
        "# every pin that differs" + (f" (but {device_only}, which only a "
                                      f"{accelerator.short_label} uses)" if device_only else "")
        + ", and the bridges are told to use the CPU.",
        "# It installs only on Colab; elsewhere it prints the pip commands this notebook needs.",
        "import glob, os, subprocess, sys",
        "from importlib import metadata",
        "",
        f"pins = {pins!r}",
        f"adds = {list(runtime.adds)!r}  # the packages the book adds to the runtime",
        f"device_only = {list(runtime.device_only)!r}",
        *on_device,
        "",
        "def release(name):",
        "    try:",
        "        return metadata.version(name).split('+')[0]",
        "    except metadata.PackageNotFoundError:",
        "        return None",
        "",
        f"indexes = {options!r}",
        "missing = [f'{name}=={version}' for name, version in pins.items()",
        "           if release(name) != version.split('+')[0]",
        "           and (on_device or name not in device_only)]",
        "commands = []",
        "if missing:",
        "    commands.append(['install', *missing, *indexes])",
        "    # The added packages once more, last: another package may ship files of the same",
        "    # name, and the added package's own files must be the ones Python imports.",
        "    commands.append(['install', '--no-deps', '--force-reinstall',",
        "                     *(f'{name}=={pins[name]}' for name in adds)])",
        "if not commands:",
        "    print('Every pinned package is installed.')",
        "elif 'google.colab' in sys.modules:",
        "    print('Installing', ' '.join(missing))",
        "    for command in commands:",
        "        subprocess.run([sys.executable, '-m', 'pip', *command, '-q'], check=True)",
        "else:",
        "    print('Not on Colab, so nothing is installed here. This notebook needs:')",
        "    for command in commands:",
        "        print('  pip', ' '.join(command))",
    ])


def restart_code(runtime_name: str, holder: str, machine_kinds: dict[str, MachineKind],
                 runtimes_file: Path = RUNTIMES_FILE) -> str:
    """On the device, stop if ``holder`` (which takes it when imported) is in the process."""
    _, accelerator, on_device = _runtime_kinds("runtime-restart", runtime_name, machine_kinds,
                                               runtimes_file)
    device = accelerator.short_label
    return "\n".join([
        f"# The cells below need a process in which {holder} never took the {device}: with a",
        f"# {device}, restart the runtime here (Colab: Runtime > Restart session), then run this",
        "# cell and the ones after it. Without one, nothing holds a device: the notebook goes on.",
        "import glob, os, sys",
        "",
        *on_device,
        f"if on_device and {holder!r} in sys.modules:",
        f"    raise RuntimeError('{holder} holds the {device} in this process: restart the "
        "runtime, then run this cell and the ones after it')",
    ])


def place_runtime_setup(notebook: nbformat.NotebookNode,
                        machine_kinds: dict[str, MachineKind] | None, source_path: str,
                        runtimes_file: str = "") -> None:
    runtimes = Path(runtimes_file) if runtimes_file else RUNTIMES_FILE

    def restart_cell(marker) -> list[nbformat.NotebookNode]:
        tags = [tag.strip().strip("'\"") for tag in (marker.group(4) or "").split(",")]
        return [code_cell(restart_code(marker[2], marker[3], machine_kinds, runtimes),
                          "remove-cell", RESTART_TAG, *(tag for tag in tags if tag))]

    try:
        replace_markers(notebook, _MARKER, lambda marker: [code_cell(
            setup_code(marker[2].strip(), machine_kinds, runtimes), "remove-cell")])
        replace_markers(notebook, _RESTART, restart_cell)
    except RuntimeSetupError as error:
        raise RuntimeSetupError(error.message, source_path) from None
