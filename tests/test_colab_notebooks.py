"""The Colab notebooks (the recorder's and the TPU smoke test's): read as JSON for what can
be checked without running them (the token's only paths, the cells they share), and their
cells run here, twice each as a person may, against a local repository, with stand-ins for
Colab's modules, make and apt-get. Only the TPU itself is not here: its cell is seen to stop."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from conftest import MACHINE_KINDS_FILE, ROOT

RECORDER = ROOT / "tools" / "record_on_colab.ipynb"
SMOKE = ROOT / "tools" / "tpu_smoke.ipynb"
NOTEBOOKS = [RECORDER, SMOKE]
SHARED = ["settings", "helpers-note", "helpers", "device-note", "device", "clone-note", "clone",
          "venv-note", "venv"]
TOKEN = "ghp_plantedTOKEN0123456789"


def _cells(path: Path) -> dict[str, nbformat.NotebookNode]:
    notebook = nbformat.read(path, as_version=4)
    nbformat.validate(notebook)
    return {cell.id: cell for cell in notebook.cells}


def _code(path: Path) -> str:
    return "\n".join(c.source for c in _cells(path).values() if c.cell_type == "code")


# --- Read as JSON ------------------------------------------------------------------------

@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_the_notebook_is_saved_without_outputs_and_is_python(path):
    cells = _cells(path).values()
    assert all(not c.get("outputs") and not c.get("execution_count")
               for c in cells if c.cell_type == "code")
    code = _code(path)
    compile(code, path.name, "exec")  # no shell escapes (!, %): each child goes through run()
    assert nbformat.read(path, 4).metadata["accelerator"] == "TPU"


def test_the_two_notebooks_share_their_first_cells_word_for_word():
    recorder, smoke = _cells(RECORDER), _cells(SMOKE)
    assert [recorder[i].source for i in SHARED] == [smoke[i].source for i in SHARED]


def token_uses(code: str) -> list[str]:
    """How each cell uses TOKEN besides reading it from Colab's Secrets, testing it and
    putting it into a child's environment: each such use is a way for it to leak."""
    tree = ast.parse(code)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    leaks = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Name) and node.id == "TOKEN"):
            continue
        parent = parents[node]
        if isinstance(node.ctx, ast.Store):
            ok = isinstance(parent, ast.Assign) and ast.unparse(parent.value) in (
                "userdata.get('GITHUB_TOKEN')", "None")
        else:
            ok = (isinstance(parent, (ast.If, ast.Assert)) and parent.test is node
                  or isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.Not)
                  or isinstance(parent, ast.Assign) and parent.value is node
                  and ast.unparse(parent.targets[0]) == "env['GITHUB_TOKEN']")
        if not ok:
            leaks.append(f"line {node.lineno}: {ast.unparse(parent)[:80]}")
    return leaks


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_the_token_goes_only_into_gits_environment(path):
    code = _code(path)
    assert token_uses(code) == []
    assert "x-access-token:" not in code  # never user:token@ in a URL
    calls = [ast.unparse(node.func) for node in ast.walk(ast.parse(code))
             if isinstance(node, ast.Call)]
    assert [c for c in calls if c.startswith(("subprocess.", "os.system", "os.popen"))] == [
        "subprocess.Popen"]  # run() alone starts children, and shows what they print
    # Seen failing: the token put into a URL, a command, a message.
    for planted in ('source = f"https://x:{TOKEN}@github.com/o/n"',
                    'run(["git", "push", TOKEN])', 'print("token", TOKEN)'):
        assert token_uses(code + "\n" + planted) != []


def test_the_recorder_notebook_records_with_the_tpu_kind_and_hands_the_recording_back():
    code = _code(RECORDER)
    assert '"make", "recording"' in code and '"KIND=tpu"' in code
    assert 'f"PYTHON={sys.executable}"' in code and '"tools/check_venv.py"' in code
    assert "files.download(recording)" in code and '"push", "origin"' in code
    from coursebook.model.machine_kinds import load_machine_kinds
    for pattern in load_machine_kinds(MACHINE_KINDS_FILE)["tpu"].device_files:
        assert f'glob.glob("{pattern}")' in code  # it looks for the TPU where the recorder does


# --- Run here ----------------------------------------------------------------------------

COLAB = {  # stand-ins for google.colab: the secret from the test, a download as a line
    "google/colab/__init__.py": "",
    "google/colab/userdata.py": "import os\n\n\ndef get(name):\n"
                                "    return os.environ['FAKE_SECRET']\n",
    "google/colab/files.py": "import os\n\n\ndef download(path):\n"
                             "    assert os.path.isfile(path), path\n"
                             "    print('downloaded', path)\n",
}
# The repository the notebooks clone: a Makefile whose `recording` writes a recording, and
# a tpu_smoke.py that writes a report (each tested on its own elsewhere).
REPOSITORY = {
    "Makefile": "recording:\n\t@echo recording $(RECORDING) on $(KIND)\n"
                "\t@echo '{}' > book/recordings/$(RECORDING)-tpu.ipynb\n",
    "book/recordings/.keep": "",
    "tools/tpu_smoke.py": "import json, sys\nprint('[jax] importing jax', file=sys.stderr)\n"
                          "open(sys.argv[sys.argv.index('--output') + 1], 'w').write("
                          "json.dumps({'report': 'tpu-smoke'}))\n"
                          "print(json.dumps({'report': 'tpu-smoke'}))\n",
}
# git that logs each command line it is given, then runs the real git.
GIT_LOG = '#!/bin/sh\nprintf "%s\\n" "$*" >> "$FAKE_GIT_LOG"\nexec {git} "$@"\n'
DRIVER = """
import json, os, sys
cells = {c["id"]: "".join(c["source"]) for c in json.load(open(sys.argv[1]))["cells"]}
namespace = {}
for name in sys.argv[3:]:
    for attempt in (1, 2):  # every cell twice, in one runtime
        try:
            exec(cells[name], namespace)
        except (SystemExit, AssertionError) as stop:
            print(f"STOPPED {name}: {stop}")
            sys.exit(0)
        if name == "settings":
            namespace.update(REPOSITORY=sys.argv[2], CLONE=os.path.abspath("clone"))
print("ALL RAN")
"""


# A check_venv.py that passes at once: the real one creates an environment with pip (seconds
# of CPU; tests/test_recordings.py runs it), and the notebooks run it in every attempt.
VENV_WORKS = "print('venv check passed')\n"


def _world(tmp_path: Path, check_venv: str | None = None) -> dict:
    """A remote to clone and push to, stand-ins on the paths, the environment to run in;
    ``check_venv``: the text of its tools/check_venv.py (the real one by default)."""
    source = tmp_path / "source"
    check_venv = check_venv or (ROOT / "tools" / "check_venv.py").read_text()
    for name, text in {**REPOSITORY, "tools/check_venv.py": check_venv}.items():
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        (source / name).write_text(text)
    remote = tmp_path / "remote.git"
    for command in (["init", "-q", "-b", "main", str(source)],
                    ["-C", str(source), "add", "."],
                    ["-C", str(source), "-c", "user.name=t", "-c", "user.email=t@t",
                     "commit", "-qm", "c"],
                    ["clone", "-q", "--bare", str(source), str(remote)]):
        subprocess.run(["git", *command], check=True)
    for name, text in COLAB.items():
        (tmp_path / "fakes" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "fakes" / name).write_text(text)
    bin_folder = tmp_path / "bin"
    bin_folder.mkdir()
    (bin_folder / "git").write_text(GIT_LOG.format(git=shutil.which("git")))
    (bin_folder / "git").chmod(0o755)
    return {**os.environ, "PYTHONPATH": str(tmp_path / "fakes"), "FAKE_SECRET": TOKEN,
            "FAKE_GIT_LOG": str(tmp_path / "git.log"),
            "PATH": f"{bin_folder}{os.pathsep}{os.environ['PATH']}"}


def _run_cells(tmp_path: Path, notebook: Path, cells: list[str], env: dict) -> str:
    (tmp_path / "driver.py").write_text(DRIVER)
    done = subprocess.run([sys.executable, str(tmp_path / "driver.py"), str(notebook),
                           str(tmp_path / "remote.git"), *cells], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout + done.stderr


@pytest.mark.parametrize("path, cells", [
    (RECORDER, ["settings", "helpers", "clone", "venv", "record", "download", "push"]),
    (SMOKE, ["settings", "helpers", "clone", "venv", "smoke", "report"])],
    ids=["recorder", "smoke"])
def test_every_cell_runs_twice_and_the_token_shows_nowhere(tmp_path, path, cells):
    env = _world(tmp_path, check_venv=VENV_WORKS)
    output = _run_cells(tmp_path, path, cells, env)
    assert output.rstrip().endswith("ALL RAN"), output[-3000:]
    assert output.count("venv check passed") == 2, output[-3000:]
    commands = (tmp_path / "git.log").read_text()
    assert "clone --depth 1 --branch main" in commands
    assert TOKEN not in output and TOKEN not in commands  # not printed, not on a command line
    clone = tmp_path / "clone"
    assert TOKEN not in (clone / ".git" / "config").read_text()
    if path == RECORDER:
        assert output.count("recording bridges on tpu") == 2
        assert "downloaded book/recordings/bridges-tpu.ipynb" in output
        pushed = subprocess.run(["git", "-C", str(tmp_path / "remote.git"), "log", "--format=%s",
                                 "recording/bridges-tpu"], capture_output=True, text=True).stdout
        assert pushed.splitlines() == ["Recording of bridges on a Colab TPU", "c"]  # one commit
    else:
        assert output.count("[jax] importing jax") == 2 and '{"report": "tpu-smoke"}' in output


def test_git_gets_the_token_from_its_credential_helper(tmp_path):
    """What a push to GitHub would ask: git's credential helper answers with the token,
    read from git's environment alone."""
    env = _world(tmp_path)
    code = _cells(RECORDER)["helpers"].source + (
        "\nimport subprocess\n"
        "done = subprocess.run(['git', 'credential', 'fill'],"
        " input='protocol=https\\nhost=github.com\\n\\n',"
        " capture_output=True, text=True, env=git_environment())\n"
        "print(done.stdout.replace(TOKEN, 'THE-TOKEN'))\n"
        "print('inherited' if 'GITHUB_TOKEN' in os.environ else 'kept')\n")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          cwd=tmp_path)
    assert "username=x-access-token\npassword=THE-TOKEN\n" in done.stdout, done.stderr
    assert done.stdout.rstrip().endswith("kept")  # the notebook's own process never exports it


def test_child_output_is_shown_as_it_comes(tmp_path):
    env = _world(tmp_path)
    code = _cells(RECORDER)["helpers"].source + """
import pathlib, sys
go = pathlib.Path("go")
class Answering:
    def write(self, text):
        if "first" in text:  # shown while the child runs: it may go on
            go.touch()
        real.write(text)
    def flush(self):
        pass
real, sys.stdout = sys.stdout, Answering()
run([sys.executable, "-c", "import os, time\\nprint('first', flush=True)\\n"
     "for _ in range(3000):\\n    if os.path.exists('go'):\\n        break\\n    time.sleep(0.1)\\n"
     "print('second, after first was shown' if os.path.exists('go') else 'second, first unseen')"])
"""
    # No clock: the child waits (up to 300 s) until the notebook has shown its first line.
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          cwd=tmp_path)
    assert "second, after first was shown" in done.stdout, done.stdout + done.stderr


def test_the_tpu_cell_stops_on_a_machine_without_one(tmp_path):
    if any(Path(p).exists() for p in ("/dev/accel0", "/dev/vfio/0")):
        pytest.skip("this machine has a TPU")
    env = _world(tmp_path)
    output = _run_cells(tmp_path, RECORDER, ["settings", "helpers", "device"], env)
    assert "STOPPED device: No TPU in this runtime" in output


@pytest.mark.parametrize("install, stops", [
    ("exit 0", "STOPPED venv: `"),          # installed, yet the check still fails: its line
    ("echo 'E: Unable to locate package'; exit 100",
     "STOPPED venv: `apt-get -qq install -y python")],
    ids=["install-ran", "install-failed"])
def test_a_failed_apt_get_update_is_said_and_the_install_still_tried(tmp_path, install, stops):
    env = _world(tmp_path)
    fake = tmp_path / "bin" / "apt-get"
    fake.write_text('#!/bin/sh\n'
                    'if [ "$2" = update ]; then echo "E: Failed to fetch"; exit 100; fi\n'
                    f'echo "apt-get $*" >> "{tmp_path}/apt.log"\n{install}\n')
    fake.chmod(0o755)
    # This Python's venv package, hidden as Colab's Python 3.13 lacks it.
    hidden = tmp_path / "fakes" / "ensurepip"
    hidden.mkdir()
    (hidden / "__init__.py").write_text('raise ImportError("No module named ensurepip")\n')
    output = _run_cells(tmp_path, RECORDER, ["settings", "helpers", "clone", "venv"], env)
    assert "E: Failed to fetch" in output and "apt-get update failed" in output
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    assert (tmp_path / "apt.log").read_text() == f"apt-get -qq install -y python{version}-venv\n"
    assert stops in output and "ALL RAN" not in output
