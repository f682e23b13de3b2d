#!/usr/bin/env python3
"""Record a chapter on a spot Cloud TPU VM made for it, bring the recording back, delete the VM.

It needs the Google Cloud CLI (`gcloud`), logged in to a project with the Cloud TPU API on
and TPU quota (spot). It bundles this checkout's commit (git bundle: a private repository
needs no credentials on the VM), then:

  1. creates a spot TPU VM, trying each candidate (accelerator type, software version, zone)
     in turn until one has capacity: v6e-1 first (the museum's chip), then v5e
     (v5litepod-1); a failed create is followed by a delete in its zone, so that nothing it
     left behind keeps billing;
  2. copies the bundle to it; over ssh installs Python 3.13 (the runtime's: the image's
     Python is 3.10, older than the recorder's floor) with uv, clones the bundle, runs the
     TPU smoke test (tools/tpu_smoke.py; --no-smoke leaves it out) and
     `make recording RECORDING=NAME KIND=tpu`;
  3. copies book/recordings/NAME-tpu.ipynb (and the smoke test's report) back here;
  4. deletes the VM, whatever happened before (a failure, Ctrl-C, SIGTERM).

With --dry-run it prints every command (gcloud's and the local git bundle), the fallbacks
included, and runs none. The gcloud flags are those of the Cloud SDK reference:
https://cloud.google.com/sdk/gcloud/reference/compute/tpus/tpu-vm/create (--zone,
--accelerator-type, --version, --spot), .../tpu-vm/ssh (--command), .../tpu-vm/scp and
.../tpu-vm/delete; the software versions per TPU are those of
https://cloud.google.com/tpu/docs/runtimes and the zones those of
https://cloud.google.com/tpu/docs/regions-zones.
"""

from __future__ import annotations

import argparse
import datetime
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Candidate:
    """One way to get a TPU: its accelerator type, the TPU software version, a zone."""

    accelerator: str
    version: str
    zone: str

    @classmethod
    def parse(cls, text: str) -> Candidate:
        parts = text.split(":")
        if len(parts) != 3 or not all(parts):
            raise argparse.ArgumentTypeError(f"{text!r} is not TYPE:VERSION:ZONE "
                                             "(v6e-1:v2-alpha-tpuv6e:us-east5-b)")
        return cls(*parts)


# v6e (Trillium) first, the chip the museum's TPU texts came from; then v5e. Software
# versions: cloud.google.com/tpu/docs/runtimes ("PyTorch and JAX"); zones:
# cloud.google.com/tpu/docs/regions-zones.
CANDIDATES = tuple(
    [Candidate("v6e-1", "v2-alpha-tpuv6e", zone)
     for zone in ("us-east5-b", "us-east1-d", "us-central1-b", "europe-west4-a")] +
    [Candidate("v5litepod-1", "v2-alpha-tpuv5-lite", zone)
     for zone in ("us-central1-a", "us-west4-a", "us-south1-a")])
DELETE_RETRY_SECONDS = 30
RUNTIME_PYTHON = "3.13"  # tools/runtimes.toml, colab-tpu: the recording's runtime


class Failed(Exception):
    """A step failed: one line says which, after the VM is deleted."""


@dataclass
class Plan:
    """Every command of one recording, built from the options."""

    name: str
    recording: str
    project: str
    repository: Path
    bundle: Path
    smoke: bool
    candidates: tuple[Candidate, ...] = ()  # given with --candidate: where the VM may be


    def gcloud(self, verb: str, *arguments: str, zone: str) -> list[str]:
        project = [f"--project={self.project}"] if self.project else []
        return ["gcloud", "compute", "tpus", "tpu-vm", verb, *arguments, f"--zone={zone}",
                *project]

    def bundle_command(self) -> list[str]:
        return ["git", "-C", str(self.repository), "bundle", "create", str(self.bundle), "HEAD"]

    def create(self, candidate: Candidate) -> list[str]:
        return self.gcloud("create", self.name, f"--accelerator-type={candidate.accelerator}",
                           f"--version={candidate.version}", "--spot", zone=candidate.zone)

    def delete(self, zone: str) -> list[str]:
        return self.gcloud("delete", self.name, "--quiet", zone=zone)

    def describe(self, zone: str) -> list[str]:
        return self.gcloud("describe", self.name, "--format=value(state)", zone=zone)

    def delete_only_command(self) -> list[str]:
        """This script's command that deletes the VM wherever a candidate zone holds it."""
        project = ["--project", self.project] if self.project else []
        candidates = [f"--candidate={c.accelerator}:{c.version}:{c.zone}" for c in self.candidates]
        return ["python3", "tools/cloud_tpu_record.py", "--name", self.name, "--delete-only",
                *project, *candidates]

    def upload(self, zone: str) -> list[str]:
        return self.gcloud("scp", str(self.bundle), f"{self.name}:book.bundle", zone=zone)

    def remote_script(self) -> str:
        recording = shlex.quote(self.recording)
        smoke = ("make -s tpu-smoke RECORDING={r} PYTHON=\"$python\" SMOKE_REPORT=../tpu-smoke.json"
                 " || echo 'the TPU smoke test failed; its report says where'\n"
                 ).format(r=recording) if self.smoke else ""
        return (
            "set -euo pipefail\n"
            "command -v make >/dev/null && command -v git >/dev/null || "
            "{ sudo apt-get -qq update && sudo apt-get -qq install -y make git; }\n"
            'export PATH="$HOME/.local/bin:$PATH"\n'
            "command -v uv >/dev/null || curl -LsSf https://astral.sh/uv/install.sh | sh\n"
            f"uv python install {RUNTIME_PYTHON}\n"
            f'python="$(uv python find {RUNTIME_PYTHON})"\n'
            "rm -rf book && git clone --quiet book.bundle book && cd book\n"
            + smoke +
            f'make recording RECORDING={recording} KIND=tpu PYTHON="$python"\n')

    def run_remote(self, zone: str) -> list[str]:
        # bash, whatever the login shell: the script uses pipefail
        return self.gcloud("ssh", self.name,
                           f"--command=bash -c {shlex.quote(self.remote_script())}", zone=zone)

    def fetch(self, zone: str) -> list[list[str]]:
        target = self.repository / "book" / "recordings" / f"{self.recording}-tpu.ipynb"
        commands = [self.gcloud("scp", f"{self.name}:book/book/recordings/{target.name}",
                                str(target), zone=zone)]
        if self.smoke:
            commands.append(self.gcloud("scp", f"{self.name}:tpu-smoke.json",
                                        str(self.smoke_report), zone=zone))
        return commands

    @property
    def smoke_report(self) -> Path:
        return self.repository / "_build" / f"tpu-smoke-{self.recording}.json"


def run(command: list[str], dry_run: bool, comment: str = "") -> int:
    """Run a command (its output as it comes), or print it."""
    if dry_run:
        if comment:
            print(f"# {comment}")
        print(shlex.join(command))
        return 0
    print(f"cloud-tpu: {shlex.join(command[:6])} ...", file=sys.stderr, flush=True)
    return subprocess.run(command).returncode


def absent(plan: Plan, zone: str) -> bool:
    """Whether Google Cloud says there is no such VM in ``zone`` (describe: NOT_FOUND)."""
    done = subprocess.run(plan.describe(zone), capture_output=True, text=True)
    return done.returncode != 0 and ("NOT_FOUND" in done.stderr
                                     or "not found" in done.stderr.lower())


def remove(plan: Plan, zone: str, dry_run: bool, attempts: int, comment: str = "") -> str:
    """Delete the VM in ``zone``: "deleted", "absent" (there was none), or "" (still there).

    A delete can fail while a create is still under way: it is tried again, 30 s apart."""
    for attempt in range(attempts):
        if run(plan.delete(zone), dry_run, comment) == 0:
            return "deleted"
        if dry_run or absent(plan, zone):
            return "absent"
        if attempt + 1 < attempts:
            time.sleep(DELETE_RETRY_SECONDS)
    return ""


def delete_everywhere(plan: Plan, zones: list[str], dry_run: bool, attempts: int,
                      comment: str = "") -> tuple[list[str], list[str]]:
    """Delete the VM in each zone it may be in, Ctrl-C and SIGTERM held off until done (a
    second Ctrl-C would leave it billing): the zones it was deleted from, those it is still in."""
    held = {number: signal.signal(number, signal.SIG_IGN)
            for number in (signal.SIGINT, signal.SIGTERM)}
    try:
        outcome = {zone: remove(plan, zone, dry_run, attempts, comment)
                   for zone in dict.fromkeys(zones)}
    finally:
        for number, handler in held.items():
            signal.signal(number, handler)
    return ([z for z, done in outcome.items() if done == "deleted"],
            [z for z, done in outcome.items() if not done])


def left_behind(plan: Plan) -> str:
    return (f"cloud-tpu: the VM {plan.name} is still there and keeps billing: delete it with: "
            f"{shlex.join(plan.delete_only_command())}")


def record(plan: Plan, candidates: tuple[Candidate, ...], dry_run: bool,
           attempts: int = 3) -> int:
    """Create, record, copy back; the VM deleted on every way out, a stop included. The
    last line says what happened and whether the VM is gone."""
    pending: list[str] = []  # zones where this run's VM may exist: added before each create
    outcome, status = "", 0
    try:
        if run(plan.bundle_command(), dry_run, "this checkout's commit, for the VM to clone") != 0:
            raise Failed(f"`git bundle` failed in {plan.repository}")
        zone = ""
        for index, candidate in enumerate(candidates):
            why = ("a spot TPU VM: the first candidate with capacity" if index == 0 else
                   "or, when the create above failed, the next")
            pending.append(candidate.zone)
            if run(plan.create(candidate), dry_run, why) == 0:
                zone = candidate.zone
                if not dry_run:
                    break
            # What a failed create may leave behind is deleted before the next zone.
            elif remove(plan, candidate.zone, dry_run, attempts) in ("deleted", "absent"):
                pending.remove(candidate.zone)
            if dry_run:
                remove(plan, candidate.zone, dry_run, attempts,
                       "after a failed create in that zone")
                pending.remove(candidate.zone)
        if dry_run:
            zone = candidates[0].zone
            pending = [zone]
            print(f"# then, in the zone whose create worked ({zone} shown):")
        if not zone:
            raise Failed("no candidate could create a spot TPU VM (capacity or quota): see "
                         "gcloud's messages above; try other zones with --candidate")
        if run(plan.upload(zone), dry_run) != 0:
            raise Failed(f"copying the bundle to {plan.name} failed")
        if run(plan.run_remote(zone), dry_run) != 0:
            raise Failed(f"the recording failed on {plan.name}: its last lines above say why")
        if not dry_run:
            plan.smoke_report.parent.mkdir(exist_ok=True)
        for command in plan.fetch(zone):
            if run(command, dry_run) != 0:
                raise Failed(f"copying {command[-3]} back failed")
        outcome = (f"book/recordings/{plan.recording}-tpu.ipynb came back; review it "
                   "(docs/recording.md, *Review*)")
    except Failed as error:
        outcome, status = str(error), 1
    except KeyboardInterrupt:
        outcome, status = "stopped", 130
    finally:
        deleted, left = delete_everywhere(plan, pending, dry_run, attempts,
                                          "always, whatever happened above: the VM is deleted")
    if dry_run:
        return status
    if left:
        print(left_behind(plan), file=sys.stderr)
        return status or 1
    gone = (f"the VM {plan.name} is deleted ({', '.join(deleted)})" if deleted else
            "no VM is left")
    print(f"cloud-tpu: {outcome}; {gone}", file=sys.stderr)
    return status


def delete_only(plan: Plan, candidates: tuple[Candidate, ...], attempts: int) -> int:
    """Delete the named VM in every candidate zone that holds it (a run killed outright)."""
    zones = list(dict.fromkeys(c.zone for c in candidates))
    there = [zone for zone in zones if not absent(plan, zone)]
    if not there:
        print(f"cloud-tpu: no VM named {plan.name} in {len(zones)} zones", file=sys.stderr)
        return 0
    deleted, left = delete_everywhere(plan, there, False, attempts)
    if left:
        print(left_behind(plan), file=sys.stderr)
        return 1
    print(f"cloud-tpu: the VM {plan.name} is deleted ({', '.join(deleted)})", file=sys.stderr)
    return 0


def stop_on_sigterm() -> None:
    """SIGTERM (a cancelled CI job) ends the run as Ctrl-C does: the VM is deleted."""
    def stop(signum, frame):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, stop)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recording", default="bridges",
                        help="the recorded chapter: book/RECORDING.md (default: bridges)")
    parser.add_argument("--project", default="",
                        help="the Google Cloud project (default: gcloud's configured one)")
    parser.add_argument("--name", help="the VM's name (default: one of its own, with the time)")
    parser.add_argument("--candidate", action="append", type=Candidate.parse, default=[],
                        metavar="TYPE:VERSION:ZONE",
                        help="try these instead of the default list, in order (repeatable)")
    parser.add_argument("--no-smoke", action="store_true",
                        help="leave out the TPU smoke test before the recording")
    parser.add_argument("--repository", type=Path, default=ROOT,
                        help="the checkout whose commit is recorded (default: this one)")
    parser.add_argument("--dry-run", action="store_true",
                        help="print every command, the fallbacks included; run none")
    parser.add_argument("--delete-only", action="store_true",
                        help="create nothing: delete the VM named --name in every candidate "
                        "zone that holds it (after a run that was killed outright)")
    parser.add_argument("--delete-attempts", type=int, default=3, metavar="N",
                        help="how often a delete is tried while the VM is still there, "
                        f"{DELETE_RETRY_SECONDS} s apart (default: %(default)s)")
    args = parser.parse_args(argv)
    if args.delete_only and not args.name:
        parser.error("--delete-only needs the VM's --name")
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%d-%H%M%S")
    candidates = tuple(args.candidate) or CANDIDATES
    with tempfile.TemporaryDirectory() as folder:
        plan = Plan(name=args.name or f"book-{args.recording}-{stamp}", recording=args.recording,
                    project=args.project, repository=args.repository.resolve(),
                    bundle=Path(folder) / "book.bundle", smoke=not args.no_smoke,
                    candidates=tuple(args.candidate))
        if args.delete_only:
            return delete_only(plan, candidates, args.delete_attempts)
        changed = subprocess.run(["git", "-C", str(args.repository), "status", "--porcelain",
                                  "--untracked-files=no"], capture_output=True, text=True).stdout
        if changed and not args.dry_run:
            print(f"cloud-tpu: {args.repository} has uncommitted changes; the VM records the "
                  "commit, so commit them first (nothing was created)", file=sys.stderr)
            return 1
        if changed:
            print("# uncommitted changes here: the VM would record the commit, without them")
        # The name before any create: a run killed outright (kill -9, a runner gone) leaves
        # a VM that this command finds and deletes.
        print(f"cloud-tpu: the VM is {plan.name}; if this run is killed, delete it with: "
              f"{shlex.join(plan.delete_only_command())}", file=sys.stderr, flush=True)
        stop_on_sigterm()
        return record(plan, candidates, args.dry_run, args.delete_attempts)


if __name__ == "__main__":
    sys.exit(main())
