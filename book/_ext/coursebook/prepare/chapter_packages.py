"""The pages to read, checked before any is: each decodes, and no chapter installs packages, as
its code runs with the builder's rights (docs/authoring.md, "Packages a chapter needs")."""

from __future__ import annotations

import ast
import os
import re
import shutil
import sys
from importlib import metadata
from pathlib import Path

import nbformat
from sphinx.application import Sphinx

from coursebook.model.cell_notes import cell_line, line_within
from coursebook.model.faults import BookError
from coursebook.model.notebooks import (CHAPTER_SUFFIXES, TOP_MATTER_PLACES, chapter_settings,
                                        is_chapter_source, parsed_cell, read_chapter,
                                        top_matter_line, top_matter_setting)
from coursebook.model.versions import installed_version
from coursebook.reporting import stop_build

COMMAND = "make chapter-packages"
_OTHERS = "conda|mamba|micromamba|apt|apt-get"  # installers, pip and uv aside
# what changes an environment, not what reads one (`!pip show torch`, `!pip list`)
_CHANGES = "install|uninstall|remove|update|upgrade|create|sync|add"
_INSTALLER = (rf"(?:sudo\s+)?(?:pip[\d.]*|{_OTHERS}|uv\s+pip"
              r"|(?:python[\d.]*|[\"']?\{sys\.executable\}[\"']?|\S*/python[\d.]*)\s+-m\s+pip)"
              rf"(?![\w.-])(?=.*\b(?:{_CHANGES})\b)")
# A line that runs an installer: a shell escape or magic, a command line from Python
# (`os.system("pip install ...")`, or, but for pip, `subprocess.run(["conda", "install"])`), or a
# shell cell's line. pip run any other way is refused as it runs (execute/pip_refusal.py).
_INSTALL_LINE = re.compile(
    rf"^[ \t]*[!%][ \t]*{_INSTALLER}.*$|^.*\b(?:system|run|call|check_call|check_output|Popen"
    rf"|getoutput)\(\s*(?:f?[\"'][ \t]*{_INSTALLER}|\[\s*[\"'](?:sudo[\"']\s*,\s*[\"'])?"
    rf"(?:{_OTHERS}|uv)[\"'].*[\"'](?:{_CHANGES})[\"']).*$", re.M)
_SHELL_CELL = re.compile(r"\A\s*%%(?:bash|sh|script)\b")
_SHELL_INSTALL_LINE = re.compile(rf"^[ \t]*{_INSTALLER}.*$", re.M)
# Modules whose drawings run a program pip does not install (graphviz in Karpathy's micrograd:
# `ExecutableNotFound: failed to execute PosixPath('dot')`), and what installs it.
_PROGRAMS = dict.fromkeys(["graphviz", "pydot"], ("dot", "apt install graphviz"))
# A line that may hold a shell escape (`!ls`, `files = !ls`) or import one of those modules.
_MAY_RUN = re.compile(rf"^[ \t]*(?:[\w.]+[ \t]*=[ \t]*)?!|\b(?:{'|'.join(_PROGRAMS)})\b", re.M)
# bash's builtins and keywords (`compgen -bk`): no file on PATH runs them.
_SHELL_BUILTINS = frozenset(
    ". : [ alias bg bind break builtin caller cd command compgen complete compopt continue "
    "declare dirs disown echo enable eval exec exit export false fc fg getopts hash help "
    "history jobs kill let local logout mapfile popd printf pushd pwd read readarray readonly "
    "return set shift shopt source suspend test times trap true type typeset ulimit umask "
    "unalias unset wait if then else elif fi case esac for select while until do done in "
    "function time { } ! [[ ]] coproc".split())


def decoded(path: Path) -> str | BookError:
    """A page's text with universal newlines, as Sphinx reads it, or the place of a bad byte."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        column = error.start - (data.rfind(b"\n", 0, error.start) + 1) + 1
        return BookError(f"the file is not valid UTF-8: byte 0x{data[error.start]:02x} in "
                         f"column {column} (byte offset {error.start}) cannot be decoded. "
                         "Save the file as UTF-8 (in most editors: save with encoding, "
                         "UTF-8) and check the text at that place.", path, line)


def missing_commands(notebook: nbformat.NotebookNode) -> list[tuple[int, str, str]]:
    """Each shell escape's (``!ls``) and drawing module's program not on the kernels' PATH: its
    line, the command, how to install a module's; IPython finds the escapes, as the kernel."""
    found = []
    for cell in notebook.cells:
        if cell.cell_type != "code" or not _MAY_RUN.search(cell.source) \
                or (tree := parsed_cell(cell.source)) is None:  # no Python: the kernel says where
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                found += [(cell_line(cell, node.lineno - 1), *program) for program in {
                    _PROGRAMS.get((getattr(node, "module", None) or a.name).partition(".")[0])
                    for a in node.names} if program and shutil.which(program[0]) is None]
            match node:  # an escape, as IPython writes it: get_ipython().system('ls -l')
                case ast.Call(func=ast.Attribute(attr="system" | "getoutput"),
                              args=[ast.Constant(value=str(line)), *_]):
                    command = (line.split() or [""])[0].rstrip(";|&")
                    if command and command not in _SHELL_BUILTINS \
                            and not re.search(r"[{$/=]", command) \
                            and not re.match(rf"\s*{_INSTALLER}", line) \
                            and shutil.which(command) is None:
                        found.append((cell_line(cell, node.lineno - 1), command, ""))
    return found


def installed(requirement: str):
    """A declared package's requirement (ValueError: not one) and its version here (None: none)."""
    # Here, not at the top: a build that reads no chapter parses no requirement.
    from packaging.requirements import Requirement

    wanted = Requirement(requirement)
    try:
        return wanted, installed_version(wanted.name)
    except metadata.PackageNotFoundError:
        return wanted, None


def _missing(requirement: str) -> str | None:
    try:
        wanted, version = installed(requirement)
    except ValueError:  # packaging's InvalidRequirement: pip would refuse it too
        return f"'{requirement}', not a pip requirement (NAME, or NAME>=VERSION): correct it"
    if version is None:
        return f"{requirement}, which the book's environment lacks: run `{COMMAND}`"
    if wanted.specifier and not wanted.specifier.contains(version, prereleases=True):
        return (f"{requirement}, and the book's environment has {wanted.name} {version}: "
                f"run `{COMMAND}`")
    return None


def chapter_package_errors(path: Path, text: str) -> list[BookError]:
    if not is_chapter_source(text):
        return []
    notebook = read_chapter(text)  # its metadata is the top matter
    try:  # every key of its `coursebook:`, checked once, before anything reads one
        settings = chapter_settings(notebook.metadata, path, text)
    except BookError as error:
        return [error]
    where = TOP_MATTER_PLACES.get(path.suffix, "top matter")
    errors = [BookError(
        f"a cell installs packages (`{found[0].strip()}`): a build installs nothing, as a "
        "chapter's code runs with the builder's rights. Remove the line, declare the package "
        f"{top_matter_setting(str(path), 'coursebook: {packages: [NAME]}')} and run `{COMMAND}`.",
        path, line_within(cell, found.start()))
        for cell in notebook.cells if cell.cell_type == "code"
        for found in (_SHELL_INSTALL_LINE if _SHELL_CELL.match(cell.source)
                      else _INSTALL_LINE).finditer(cell.source)]
    if settings.recording is None:  # a recorded chapter's cells run on its machines
        errors += [BookError((
            f"the module imported here draws by running `{command}`, which the machine that "
            "builds the book lacks (not on PATH): each drawing would show its error. Install "
            f"`{command}` where the book is built ({how})." if how else
            f"a cell runs `{command}`, which the machine that builds the book lacks (not on "
            "PATH): the cell would show the shell's 'command not found', not its output. Take "
            f"the line out, or install `{command}` where the book is built."), path, line)
            for line, command, how in missing_commands(notebook)]
    errors += [BookError(f"{where} 'coursebook: packages' declares {why}.",
                         path, top_matter_line(text, "coursebook", "packages"))
               for requirement in settings.packages if (why := _missing(requirement)) is not None]
    return errors


def check_pages_to_read(app: Sphinx, env, docnames: list[str]) -> None:
    """``env-before-read-docs``, first: every page decodes, no chapter installs or lacks a
    package, or the build stops."""
    pages = {path: decoded(path) for path in (Path(env.doc2path(name)) for name in docnames)}
    if errors := [text for text in pages.values() if isinstance(text, BookError)]:
        stop_build("source", *((error.message, error.location) for error in errors))
    if errors := [error for path, text in pages.items() if path.suffix in CHAPTER_SUFFIXES
                  for error in chapter_package_errors(path, text)]:
        stop_build("packages", *((error.message, error.location) for error in errors))


def put_environment_first_on_path() -> None:
    """This environment's ``bin`` first on the kernels' PATH: ``!python`` is the book's."""
    bin_dir = str(Path(sys.executable).parent)
    rest = [entry for entry in os.environ.get("PATH", "").split(os.pathsep) if entry != bin_dir]
    os.environ["PATH"] = os.pathsep.join([bin_dir, *rest])


def install_cell(notebook: nbformat.NotebookNode) -> nbformat.NotebookNode | None:
    """A download's first cell: the declared packages, installed (None: it declares none)."""
    packages = chapter_settings(notebook.metadata).packages
    if not packages:
        return None
    quoted = " ".join(f"'{package}'" if re.search(r"[<>=!~;\[ ]", package) else package
                      for package in packages)
    return nbformat.v4.new_code_cell(
        f"# The packages this notebook needs.\n%pip install -q {quoted}")


def setup(app: Sphinx) -> None:
    put_environment_first_on_path()
    app.connect("env-before-read-docs", check_pages_to_read)

