"""The GitHub Actions workflows pass the workflow schema and zizmor, the Actions security linter.

Both validators come with the test extra (check-jsonschema carries GitHub's workflow schema;
zizmor runs offline here). Each is also seen failing on a planted bad workflow.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
BIN = Path(sys.executable).parent


def _tool(name: str) -> str:
    path = shutil.which(name, path=str(BIN)) or shutil.which(name)
    if path is None:
        pytest.skip(f"{name} is not installed (it comes with `pip install -e '.[test]'`)")
    return path


def schema_check(*paths: Path) -> subprocess.CompletedProcess:
    """GitHub's workflow schema, as vendored in check-jsonschema: no network needed."""
    return subprocess.run([_tool("check-jsonschema"), "--builtin-schema",
                           "vendor.github-workflows", *map(str, paths)],
                          capture_output=True, text=True)


def zizmor(*paths: Path) -> subprocess.CompletedProcess:
    return subprocess.run([_tool("zizmor"), "--offline", "--no-progress", *map(str, paths)],
                          capture_output=True, text=True)


def test_there_is_a_publishing_workflow():
    assert ROOT / ".github" / "workflows" / "publish.yml" in WORKFLOWS


def test_workflows_match_the_github_workflow_schema():
    done = schema_check(*WORKFLOWS)
    assert done.returncode == 0, done.stdout + done.stderr


def test_workflows_pass_zizmor():
    done = zizmor(*WORKFLOWS)
    assert done.returncode == 0, done.stdout + done.stderr


PLANTED = """\
name: planted
on: pull_request_target
jobs:
  bad:
    runs-on: ubuntu-24.04
    steps:
      - uses: actions/checkout@v4
        with:
          ref: ${{ github.event.pull_request.head.sha }}
      - run: echo "${{ github.event.pull_request.title }}"
"""


def test_the_validators_fail_on_planted_workflows(tmp_path):
    bad = tmp_path / "bad.yml"
    bad.write_text(PLANTED)
    found = zizmor(bad)
    assert found.returncode != 0 and "template-injection" in found.stdout + found.stderr
    broken = tmp_path / "broken.yml"
    broken.write_text(PLANTED.replace("    runs-on: ubuntu-24.04\n", ""))
    assert schema_check(broken).returncode != 0


RECORD_TPU = ROOT / ".github" / "workflows" / "record-tpu.yml"


def test_the_tpu_recording_workflow_records_on_a_cloud_tpu_vm_from_a_github_hosted_job():
    """Started by hand on a GitHub-hosted runner: OIDC to Google Cloud (no stored key), the
    Cloud TPU script (which deletes its VM), the recording proposed as a pull request. The
    validators above check the rest."""
    import yaml

    workflow = yaml.safe_load(RECORD_TPU.read_text())
    assert list(workflow[True]) == ["workflow_dispatch"]  # YAML reads the key `on` as True
    [job] = workflow["jobs"].values()
    assert job["runs-on"].startswith("ubuntu-")  # GitHub-hosted, not a self-hosted TPU runner
    assert job["permissions"]["id-token"] == "write"
    uses = [step["uses"] for step in job["steps"] if "uses" in step]
    auth = next(step for step in job["steps"] if step.get("uses", "").startswith(
        "google-github-actions/auth@"))
    assert set(auth["with"]) == {"workload_identity_provider", "service_account"}
    assert "credentials_json" not in RECORD_TPU.read_text()  # no key
    assert all(re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", use) for use in uses)  # pinned
    steps = "\n".join(step.get("run", "") for step in job["steps"])
    assert "tools/cloud_tpu_record.py" in steps and "gh pr create" in steps
    assert "${{" not in steps  # inputs reach the shell through env, never spliced in
    assert "x-access-token" not in steps and "gh auth setup-git" in steps  # no token in a URL
    # The script it runs records with the TPU kind.
    script = (ROOT / "tools" / "cloud_tpu_record.py").read_text()
    assert "make recording RECORDING={recording} KIND=tpu" in script


def test_the_tpu_recording_workflow_deletes_its_vm_whatever_happens():
    """The VM's name is the job's, known before the create; a step that runs always (a
    failure, a cancel, the record step's timeout) deletes the VM of that name; the record
    step times out before the job, so that the delete has time."""
    import yaml

    [job] = yaml.safe_load(RECORD_TPU.read_text())["jobs"].values()
    assert "${{ github.run_id }}" in job["env"]["VM"]
    record = next(s for s in job["steps"] if "tools/cloud_tpu_record.py" in s.get("run", "")
                  and "--delete-only" not in s["run"])
    delete = next(s for s in job["steps"] if "--delete-only" in s.get("run", ""))
    assert '--name "$VM"' in record["run"] and '--name "$VM"' in delete["run"]
    assert job["steps"].index(delete) > job["steps"].index(record)
    assert delete["if"].startswith("always()")
    assert record["timeout-minutes"] < job["timeout-minutes"]
    # Each step's own env does not name another VM.
    assert all("VM" not in step.get("env", {}) for step in job["steps"])


def test_the_tpu_recording_workflow_names_the_permissions_a_first_run_needs():
    header = RECORD_TPU.read_text().split("\nname:")[0]
    docs = (ROOT / "docs" / "recording.md").read_text()
    for role in ("roles/tpu.admin", "roles/iam.serviceAccountUser"):
        assert role in header and role in docs, role


PUBLISH = ROOT / ".github" / "workflows" / "publish.yml"


def shard_counts(text: str) -> tuple[int, set[int], set[int]]:
    """The publishing workflow's execute matrix size, and the shard counts its execute and
    merge commands name."""
    import re

    import yaml

    jobs = yaml.safe_load(text)["jobs"]
    matrix = jobs["execute"]["strategy"]["matrix"]["shard"]
    runs = "\n".join(step.get("run", "") for job in jobs.values() for step in job["steps"])
    executes = {int(n) for n in re.findall(r"make execute SHARD=.*?/(\d+)", runs)}
    merges = {int(n) for n in re.findall(r"make merge-caches SHARDS=(\d+)", runs)}
    return len(matrix), executes, merges


def test_every_shard_of_the_matrix_is_merged_before_each_edition_builds():
    import yaml

    text = PUBLISH.read_text()
    count, executes, merges = shard_counts(text)
    assert executes == merges == {count}
    for job in ("student", "instructor"):
        steps = [step.get("run", "") for step in yaml.safe_load(text)["jobs"][job]["steps"]]
        merge = next(i for i, run in enumerate(steps) if "make merge-caches" in run)
        build = next(i for i, run in enumerate(steps)
                     if "make html" in run or "make instructor" in run)
        assert merge < build
    # Seen failing: a matrix grown without its merges.
    grown = text.replace("shard: [1, 2, 3]", "shard: [1, 2, 3, 4]")
    assert shard_counts(grown)[0] == 4 != shard_counts(grown)[2].pop()
