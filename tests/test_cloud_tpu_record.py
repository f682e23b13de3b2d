"""The Cloud TPU recording script: a spot VM, its fallbacks, the recording back, the VM
always deleted. Tested with --dry-run (every command printed) and with a stand-in `gcloud`
that logs its calls; no Google Cloud is reached."""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT

SCRIPT = ROOT / "tools" / "cloud_tpu_record.py"

# A stand-in for gcloud: logs each call as one line of JSON and keeps the VMs that exist in
# $FAKE_STATE (one ZONE/NAME a line): `create` makes the VM as soon as it is asked (as Google
# Cloud does while gcloud waits), `delete` removes it (NOT_FOUND when there is none),
# `describe` fails when there is none. It fails `create` in the zones of $FAKE_NO_CAPACITY,
# `ssh` when $FAKE_SSH_FAILS; it sleeps in the calls $FAKE_SLEEPS names (create, upload, ssh,
# copy-back); `scp VM:PATH DEST` writes DEST, as a copy back would.
FAKE_GCLOUD = '''import json, os, sys, time
arguments = sys.argv[1:]
verb = arguments[3]
step = {"scp": "copy-back" if ":" in arguments[4] else "upload"}.get(verb, verb)
with open(os.environ["FAKE_LOG"], "a") as log:
    log.write(json.dumps(arguments) + "\\n")
zone = next(a.split("=", 1)[1] for a in arguments if a.startswith("--zone="))
vm = f"{zone}/{arguments[4]}" if verb in ("create", "delete", "describe") else ""
state = os.environ["FAKE_STATE"]
vms = set(open(state).read().split()) if os.path.exists(state) else set()
def keep(vms):
    with open(state, "w") as out:
        out.write("".join(f"{v}\\n" for v in sorted(vms)))
if verb == "create" and zone in os.environ.get("FAKE_NO_CAPACITY", "").split(","):
    sys.exit("ERROR: There is no more capacity in the zone")
if verb == "create":
    keep(vms | {vm})
if step in os.environ.get("FAKE_SLEEPS", "").split(","):
    with open(os.environ["FAKE_LOG"] + ".waiting", "w") as waiting:
        waiting.write(step)
    try:
        time.sleep(60)
    except KeyboardInterrupt:  # Ctrl-C reaches gcloud too: it stops without a traceback
        sys.exit(130)
if verb == "delete":
    if vm not in vms:
        sys.exit("ERROR: NOT_FOUND")
    keep(vms - {vm})
if verb == "describe" and vm not in vms:
    sys.exit("ERROR: NOT_FOUND")
if verb == "ssh" and os.environ.get("FAKE_SSH_FAILS"):
    sys.exit("record: cell `import jax` failed")
if step == "copy-back":
    with open(arguments[5], "w") as copy:
        copy.write("copied back from " + arguments[4])
'''


def _checkout(tmp_path: Path) -> Path:
    """A committed checkout with the folders the recording comes back to."""
    repository = tmp_path / "checkout"
    if repository.exists():
        return repository
    (repository / "book" / "recordings").mkdir(parents=True)
    (repository / "book" / "bridges.md").write_text("# a chapter\n")
    for command in (["init", "-q"], ["add", "."],
                    ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "c"]):
        subprocess.run(["git", "-C", str(repository), *command], check=True)
    return repository


def _dry_run(*arguments: str) -> list[list[str]]:
    done = subprocess.run([sys.executable, str(SCRIPT), "--dry-run", *arguments],
                          capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return [shlex.split(line) for line in _commands(done.stdout)]


def _commands(text: str) -> list[str]:
    """Printed commands, one per entry (an ssh script spans lines inside its quotes)."""
    commands, current = [], ""
    for line in text.splitlines():
        if not current and line.startswith("#"):
            continue
        current = f"{current}\n{line}" if current else line
        try:
            shlex.split(current)
        except ValueError:  # an open quote: the command goes on
            continue
        commands.append(current)
        current = ""
    return commands


def _verb(command: list[str]) -> str:
    return command[4] if command[:4] == ["gcloud", "compute", "tpus", "tpu-vm"] else command[0]


def _zone(command: list[str]) -> str:
    return next(a.split("=", 1)[1] for a in command if a.startswith("--zone="))


def test_the_script_explains_itself():
    done = subprocess.run([sys.executable, str(SCRIPT), "--help"], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.startswith("usage:")


def test_a_dry_run_prints_every_command_the_fallbacks_and_the_delete():
    commands = _dry_run("--project", "lab-project", "--name", "book-test")
    verbs = [_verb(c) for c in commands]
    assert commands[0][:2] == ["git", "-C"] and commands[0][3:5] == ["bundle", "create"]
    gcloud = [c for c in commands if c[0] == "gcloud"]
    assert all("--project=lab-project" in c and "book-test" in " ".join(c) for c in gcloud)
    creates = [c for c in commands if _verb(c) == "create"]
    # Spot VMs, v6e-1 first (the museum's chip), v5e after, each with its software version.
    assert all("--spot" in c for c in creates)
    kinds = [next(a for a in c if a.startswith("--accelerator-type=")) for c in creates]
    v6e, v5e = "--accelerator-type=v6e-1", "--accelerator-type=v5litepod-1"
    assert set(kinds) == {v6e, v5e} and kinds == sorted(kinds, key=lambda kind: kind == v5e)
    for create in creates:
        version = {"--accelerator-type=v6e-1": "--version=v2-alpha-tpuv6e",
                   "--accelerator-type=v5litepod-1": "--version=v2-alpha-tpuv5-lite"}
        assert version[next(a for a in create if a.startswith("--accelerator-type="))] in create
    # Zone fallback: each create is followed by a delete in its own zone, for what a failed
    # create may leave; several zones are tried.
    for index, command in enumerate(commands):
        if _verb(command) == "create":
            after = commands[index + 1]
            assert _verb(after) == "delete" and _zone(after) == _zone(command)
    assert len({_zone(c) for c in creates}) == len(creates) > 2
    # Then: the bundle up, the recording over ssh, the recording (and smoke report) back, and
    # the delete last.
    assert verbs[-5:] == ["scp", "ssh", "scp", "scp", "delete"]
    ssh = commands[verbs.index("ssh")]
    script = next(a for a in ssh if a.startswith("--command="))
    assert "make recording RECORDING=bridges KIND=tpu" in script
    assert "tpu-smoke" in script and "uv python install 3.13" in script
    back = commands[-3]
    assert back[5] == "book-test:book/book/recordings/bridges-tpu.ipynb"
    assert back[6].endswith("book/recordings/bridges-tpu.ipynb")
    assert _zone(commands[-1]) == _zone(creates[0]) and "--quiet" in commands[-1]


def test_a_candidate_list_replaces_the_default_and_no_smoke_leaves_it_out():
    commands = _dry_run("--candidate", "v6e-1:v2-alpha-tpuv6e:asia-northeast1-b", "--no-smoke")
    creates = [c for c in commands if _verb(c) == "create"]
    assert [_zone(c) for c in creates] == ["asia-northeast1-b"]
    ssh = next(c for c in commands if _verb(c) == "ssh")
    assert "tpu-smoke" not in " ".join(ssh)
    assert [_verb(c) for c in commands][-3:] == ["ssh", "scp", "delete"]


def _fake(tmp_path: Path, **env: str) -> tuple[dict[str, str], Path, Path]:
    """The environment that puts the stand-in gcloud first, its log, and a checkout."""
    bin_folder = tmp_path / "bin"
    bin_folder.mkdir(exist_ok=True)
    # This Python, not `env python3`: a pyenv shim costs ~0.1 s of CPU per call.
    (bin_folder / "gcloud").write_text(f"#!{sys.executable}\n{FAKE_GCLOUD}")
    (bin_folder / "gcloud").chmod(0o755)
    log = tmp_path / "gcloud.log"
    log.unlink(missing_ok=True)
    environment = {**os.environ, "PATH": f"{bin_folder}{os.pathsep}{os.environ['PATH']}",
                   "FAKE_LOG": str(log), "FAKE_STATE": str(tmp_path / "vms"), **env}
    return environment, log, _checkout(tmp_path)


def _calls(log: Path) -> list[list[str]]:
    import json
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def _vms(tmp_path: Path) -> list[str]:
    state = tmp_path / "vms"
    return state.read_text().split() if state.exists() else []


def _run_fake(tmp_path: Path, *arguments: str,
              **env: str) -> tuple[subprocess.CompletedProcess, list[list[str]], Path]:
    environment, log, repository = _fake(tmp_path, **env)
    done = subprocess.run([sys.executable, str(SCRIPT), "--name", "book-test",
                           "--repository", str(repository), *arguments],
                          capture_output=True, text=True, env=environment)
    return done, _calls(log), repository


def test_no_capacity_in_a_zone_falls_back_and_the_recording_comes_back(tmp_path):
    done, calls, repository = _run_fake(tmp_path, FAKE_NO_CAPACITY="us-east5-b")
    assert done.returncode == 0, done.stderr
    steps = [(call[3], _zone(call)) for call in calls]
    # The failed create's delete finds no VM; describe confirms there is none.
    assert steps == [("create", "us-east5-b"), ("delete", "us-east5-b"), ("describe", "us-east5-b"),
                     ("create", "us-east1-d"), ("scp", "us-east1-d"), ("ssh", "us-east1-d"),
                     ("scp", "us-east1-d"), ("scp", "us-east1-d"), ("delete", "us-east1-d")]
    recording = repository / "book" / "recordings" / "bridges-tpu.ipynb"
    assert recording.read_text() == (
        "copied back from book-test:book/book/recordings/bridges-tpu.ipynb")
    assert (repository / "_build" / "tpu-smoke-bridges.json").is_file()


def test_a_failed_recording_still_deletes_the_vm_with_one_line(tmp_path):
    done, calls, repository = _run_fake(tmp_path, FAKE_SSH_FAILS="1")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        "cloud-tpu: the recording failed on book-test: its last lines above say why; the VM "
        f"book-test is deleted ({_zone(calls[0])})")
    assert _vms(tmp_path) == []
    assert calls[-1][3] == "delete" and _zone(calls[-1]) == _zone(calls[0])
    assert not (repository / "book" / "recordings" / "bridges-tpu.ipynb").exists()


def test_no_capacity_anywhere_creates_nothing_and_says_so(tmp_path):
    from conftest import load_tool
    zones = ",".join(c.zone for c in load_tool("cloud_tpu_record").CANDIDATES)
    done, calls, _ = _run_fake(tmp_path, FAKE_NO_CAPACITY=zones)
    assert done.returncode == 1
    assert "no candidate could create a spot TPU VM" in done.stderr.strip().splitlines()[-1]
    # never copied, never ran
    assert {call[3] for call in calls} == {"create", "delete", "describe"}
    assert _vms(tmp_path) == []


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "Ctrl-C"])
@pytest.mark.parametrize("during", ["create", "upload", "ssh", "copy-back"])
def test_a_run_stopped_during_any_gcloud_call_deletes_the_vm(tmp_path, during, stop):
    """SIGTERM (a cancelled CI job) or Ctrl-C (to the whole process group, as a terminal
    sends it) while gcloud runs, the create included: the VM is deleted, and the last line
    says so only once it is gone."""
    environment, log, repository = _fake(tmp_path, FAKE_SLEEPS=during)
    process = subprocess.Popen([sys.executable, str(SCRIPT), "--name", "book-test",
                                "--repository", str(repository)], stderr=subprocess.PIPE,
                               text=True, env=environment, start_new_session=True)
    waiting = Path(f"{log}.waiting")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not waiting.exists():
        time.sleep(0.1)
    assert waiting.read_text() == during
    if stop == signal.SIGINT:
        os.killpg(process.pid, stop)
    else:
        process.send_signal(stop)
    _, stderr = process.communicate(timeout=60)
    calls = _calls(log)
    zone = _zone(calls[0])
    assert process.returncode == 130 and "Traceback" not in stderr
    assert stderr.strip().splitlines()[-1] == (
        f"cloud-tpu: stopped; the VM book-test is deleted ({zone})")
    assert [c[3] for c in calls][-1] in ("delete", "describe") and _vms(tmp_path) == []


def test_the_vms_name_and_how_to_delete_it_come_first(tmp_path):
    """Before any create: the name, and the command that deletes it if this run is killed
    outright (kill -9, a runner that vanishes)."""
    done, calls, _ = _run_fake(tmp_path, "--project", "lab-project")
    assert done.returncode == 0, done.stderr
    first = done.stderr.splitlines()[0]
    assert first.startswith(
        "cloud-tpu: the VM is book-test; if this run is killed, delete it with: ")
    assert shlex.split(first.split("delete it with: ")[1])[2:] == [
        "--name", "book-test", "--delete-only", "--project", "lab-project"]


def test_delete_only_deletes_the_named_vm_wherever_a_candidate_zone_holds_it(tmp_path):
    from conftest import load_tool
    zones = [c.zone for c in load_tool("cloud_tpu_record").CANDIDATES]
    (tmp_path / "vms").write_text(f"{zones[2]}/book-test\n{zones[2]}/another-vm\n")
    done, calls, _ = _run_fake(tmp_path, "--delete-only")
    assert done.returncode == 0, done.stderr
    assert _vms(tmp_path) == [f"{zones[2]}/another-vm"]
    assert [c[3] for c in calls if c[3] == "delete"] == ["delete"]
    assert done.stderr.strip().splitlines()[-1] == (
        f"cloud-tpu: the VM book-test is deleted ({zones[2]})")
    done, calls, _ = _run_fake(tmp_path, "--delete-only")  # nothing left: says so, succeeds
    assert done.returncode == 0 and not [c for c in calls if c[3] == "delete"]
    assert done.stderr.strip().splitlines()[-1] == (
        f"cloud-tpu: no VM named book-test in {len(zones)} zones")


def test_a_delete_that_fails_names_the_command_and_fails(tmp_path):
    """A VM that is still there after its delete: the last line is the command to run."""
    bin_folder = tmp_path / "bin"
    environment, log, repository = _fake(tmp_path, FAKE_SSH_FAILS="1")
    gcloud = bin_folder / "gcloud"
    gcloud.write_text(gcloud.read_text().replace(
        'if verb == "delete":', 'if verb == "delete":\n    sys.exit("ERROR: denied")'))
    done = subprocess.run([sys.executable, str(SCRIPT), "--name", "book-test",
                           "--repository", str(repository), "--delete-attempts", "1"],
                          capture_output=True, text=True, env=environment)
    assert done.returncode == 1 and _vms(tmp_path)
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("cloud-tpu: the VM book-test is still there and keeps billing: "
                           "delete it with: ")
    assert "--delete-only" in last
