"""Readiness: each accelerator environment resolves on its machines, checked without one.

The resolver checks need the package registry: they are slow-marked (CI runs them) and
skip, saying why, when the registry cannot be reached or has no such packages.
"""

import pytest

from conftest import load_tool

check = load_tool("check_environments")
CASES = check.cases()


_CONFLICT = "both TPU extras"  # the conflict case, resolved beside the environments


def _both_tpu_extras():
    """Both bridges' TPU extras in one environment (Python 3.12): today's conflict."""
    tpu = next(case.machine for case in CASES if case.machine.name == "tpu")
    everything = [r for case in CASES if case.machine is tpu and case.python == "3.12"
                  for r in case.environment.requirements]
    return sorted(set(everything)), "3.12", tpu.platforms


@pytest.fixture(scope="module")
def resolutions() -> dict:
    """Every case, and the conflict, resolved at once: pip mostly waits on the registry."""
    from concurrent.futures import ThreadPoolExecutor

    jobs = {case.name: (case.environment.requirements, case.python, case.machine.platforms)
            for case in CASES}
    jobs[_CONFLICT] = _both_tpu_extras()
    with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        futures = {name: pool.submit(check.resolve, *job) for name, job in jobs.items()}
    return {name: future.result() for name, future in futures.items()}


def test_every_accelerator_environment_has_cases_from_the_data():
    environments = {(c.recording, c.machine.name, c.environment.name) for c in CASES}
    assert environments and all(not c.machine.stand_in for c in CASES)
    # A TPU VM (Python 3.10) and a Colab runtime (3.12) are both covered where allowed.
    for case in CASES:
        allowed = case.environment.pythons or case.machine.pythons
        assert case.python in allowed and case.python in case.machine.pythons


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_the_environment_resolves_on_its_builder(case, resolutions):
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
