"""Readiness: each accelerator environment resolves on its machines, checked without one.

The resolver checks need the package registry: they are slow-marked (CI runs them) and
skip, saying why, when the registry cannot be reached or has no such packages.
"""

import json
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path

import pytest
from filelock import FileLock

from conftest import load_tool

check = load_tool("check_environments")
CASES = check.cases()


_CONFLICT = "both TPU extras"  # a planted conflict, resolved beside the environments


def _both_tpu_extras():
    """Both bridges' TPU extras in one environment (Python 3.12): why the book pins the
    image's libtpu instead (jax[tpu] 0.7.2 wants libtpu 0.0.23, torch_xla[tpu] 2.9.0 0.0.21)."""
    tpu = next(case.machine for case in CASES if case.machine.name == "tpu")
    return ["torch_xla[tpu]==2.9.0", "jax[tpu]==0.7.2"], "3.12", tpu.platforms


def _resolve_all() -> dict:
    """Every case, and the conflict, resolved at once: pip mostly waits on the registry."""
    jobs = {case.name: (case.environment.requirements, case.python, case.machine.platforms)
            for case in CASES}
    jobs[_CONFLICT] = _both_tpu_extras()
    with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        futures = {name: pool.submit(check.resolve, *job) for name, job in jobs.items()}
    return {name: future.result() for name, future in futures.items()}


def _resolved_once(shared: Path) -> dict:
    """:func:`_resolve_all`'s, once for the session's workers, in the folder they share: the
    first to ask resolves and writes them down, the other waits for them."""
    with FileLock(shared / "readiness.lock"):
        record = shared / "readiness.json"
        if not record.exists():
            record.write_text(json.dumps({name: asdict(result)
                                          for name, result in _resolve_all().items()}))
        return {name: check.Resolution(**result)
                for name, result in json.loads(record.read_text()).items()}


def _shared(config: pytest.Config) -> Path | None:
    """The folder the session's workers share (the `built` books'); None without workers."""
    return Path(config.option.basetemp).parent if os.environ.get("PYTEST_XDIST_WORKER") else None


def start_in_background(config: pytest.Config) -> None:
    """As the session starts (tests/conftest.py), with workers: the registry's minute of
    waiting passes while the worker runs other files' tests, not in this file's."""
    if (shared := _shared(config)) is not None:
        threading.Thread(target=_resolved_once, args=(shared,)).start()


@pytest.fixture(scope="module")
def resolutions(pytestconfig) -> dict:
    shared = _shared(pytestconfig)
    return _resolve_all() if shared is None else _resolved_once(shared)


def test_every_accelerator_environment_has_cases_from_the_data():
    environments = {(c.recording, c.machine.name, c.environment.name) for c in CASES}
    assert environments and all(not c.machine.stand_in for c in CASES)
    for case in CASES:
        allowed = case.environment.pythons or case.machine.pythons
        assert case.python in allowed and case.python in case.machine.pythons


def test_every_python_a_kind_declares_is_checked_its_runtimes_included():
    """Colab's TPU runtime is Python 3.13: the kind's own list may not leave it out."""
    from coursebook.model.runtimes import load_runtimes

    runtimes = load_runtimes()
    for machine in {case.machine.name: case.machine for case in CASES}.values():
        checked = {case.python for case in CASES if case.machine.name == machine.name}
        assert checked == set(machine.pythons), machine.name
        if machine.runtime:
            assert runtimes[machine.runtime].python in checked, machine.name


def test_a_kinds_platform_tags_are_exactly_those_pip_accepts_on_such_a_machine():
    """Derived from glibc and arch, as pip derives them: checked against this machine's."""
    import platform

    from packaging import tags

    from coursebook.model.machine_kinds import manylinux_platforms

    libc, version = platform.libc_ver()
    if libc != "glibc":
        pytest.skip("not a glibc machine")
    here = {tag for tag in tags.platform_tags() if not tag.startswith("musllinux")}
    derived = manylinux_platforms(version, platform.machine())
    assert set(derived) == here and len(derived) == len(here)
    tpu = next(case.machine for case in CASES if case.machine.name == "tpu")
    assert tpu.platforms[0] == "manylinux_2_35_x86_64" and "manylinux_2_29_x86_64" in tpu.platforms


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_the_environment_resolves_on_its_machine(case, resolutions):
    result = resolutions[case.name]
    if result.status == "not checked":
        pytest.skip(f"not checked: {result.detail}")
    assert result.status == "resolves", f"{case.name} cannot be installed:\n{result.detail}"


@pytest.mark.slow
def test_the_check_catches_two_libtpu_pins_in_one_environment(resolutions):
    """Both bridges' TPU extras in one environment: today's conflict, caught here."""
    result = resolutions[_CONFLICT]
    if result.status == "not checked":
        pytest.skip(f"not checked: {result.detail}")
    assert result.status == "conflict" and "libtpu" in result.detail
