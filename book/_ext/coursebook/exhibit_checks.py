"""Run inside a chapter's kernel (no Sphinx imports): each exhibit's error compared with its
record."""

from __future__ import annotations

import difflib
import os
import signal
import subprocess
import sys

from IPython import get_ipython
from IPython.display import Markdown, display

from .model.outputs import normalise
from .worddiff import changes, code_span

# The class of a "changed since" box; the book highlights the changed words in it.
CHANGED_CLASS = "torch-changed"

ERROR_RECORD_COMMAND = "make accept-outputs"


class ExhibitMismatch(AssertionError):
    """The failing code raised something other than its record says."""


def _label(record: dict) -> str:
    return record["where"] + (f", {record['date']}" if record.get("date") else "")


def _changed_box(title: str, first: str, before: str, then: str, after: str) -> list[str]:
    """A "changed" admonition: ``before`` after the words ``first``, ``after`` after ``then``."""
    changed = "; ".join(" → ".join(code_span(text) if text else "(nothing)" for text in pair)
                        for pair in changes(before, after))
    return ["", f":::{{admonition}} {title}", f":class: note {CHANGED_CLASS}", first, "",
            f"```text\n{before}\n```", "", then, "", f"```text\n{after}\n```", "",
            f"Changed: {changed}.", ":::"]


def check_raised(exhibit: str, expected: dict | None, museum: dict,
                 elsewhere: tuple[dict, ...] = ()) -> None:
    """Compare the error the previous cell raised with ``expected``, the running torch's
    record (None: none). Where the text differs, show ``museum``'s (the museum's record) and
    each of ``elsewhere`` (records of runtimes readers use, each with its ``label``)."""
    raised = getattr(sys, "last_value", None)
    if raised is None:
        raise ExhibitMismatch(f"exhibit {exhibit}: the failing code did not raise.")
    del sys.last_value  # one error answers one check
    shown = f"{type(raised).__name__}: {normalise(str(raised))}"
    if expected is None:
        raise ExhibitMismatch(
            f"exhibit {exhibit} has no record for the running torch; it raised\n  {shown}\n"
            f"Record it with '{ERROR_RECORD_COMMAND}' and review the new record.")
    recorded = f"{expected['type']}: {normalise(expected['message'])}"
    if shown != recorded:
        diff = "\n".join(difflib.ndiff([recorded], [shown]))
        raise ExhibitMismatch(
            f"exhibit {exhibit}: the error differs from its record for torch "
            f"{expected['torch']} ({_label(expected)}):\n"
            f"{diff}\n(- recorded, + raised now.) If the new text is right, re-record it "
            f"with '{ERROR_RECORD_COMMAND}'.")
    whose = ("the museum recorded" if expected["source"] == "museum"
             else f"recorded for torch {expected['torch']}")
    lines = [f"✓ Raised exactly the error {whose} ({_label(expected)})."]
    museum_text = f"{museum['type']}: {normalise(museum['message'])}"
    if museum_text != shown:
        lines += _changed_box(
            f"Changed since torch {museum['torch']}",
            f"The museum recorded this text on torch {museum['torch']} ({_label(museum)}):",
            museum_text, "and this build's torch raised:", shown)
    for record in elsewhere:
        text = f"{record['type']}: {normalise(record['message'])}"
        if text != shown:
            lines += _changed_box(
                f"On {record['label']}", "This build's torch raised:", shown,
                f"and a student running this notebook on {record['label']} sees "
                f"(recorded on {_label(record)}):", text)
    display(Markdown("\n".join(lines)))


SIDE_ENVIRONMENTS = "COURSEBOOK_SIDE_ENVIRONMENTS"
FRESH_PYTHON_TIMEOUT = "COURSEBOOK_FRESH_PYTHON_TIMEOUT"


def run_in_fresh_python(code: str, side_environment: str = "") -> None:
    """Run ``code`` in a new Python, its error raised here (its class name and message), with
    ``side_environment``, a folder under ``$COURSEBOOK_SIDE_ENVIRONMENTS`` (an older package),
    first on the import path; stopped with its children (a device client that hangs) past
    ``$COURSEBOOK_FRESH_PYTHON_TIMEOUT`` seconds (300)."""
    env = dict(os.environ)
    if side_environment:
        root = os.environ.get(SIDE_ENVIRONMENTS)
        if not root or not os.path.isdir(os.path.join(root, side_environment)):
            raise RuntimeError(f"side environment {side_environment!r} is not installed "
                               f"(under ${SIDE_ENVIRONMENTS}); "
                               "`make recording KIND=cpu` installs it")
        env["PYTHONPATH"] = os.pathsep.join(
            [os.path.join(root, side_environment), env.get("PYTHONPATH", "")])
    timeout = float(os.environ.get(FRESH_PYTHON_TIMEOUT, "300"))
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
    try:
        stdout, stderr = child.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        stdout, _ = child.communicate()
        print(stdout, end="")
        raise TimeoutError(f"the fresh Python ran past {timeout:g} s and was stopped") from None
    print(stdout, end="")
    if child.returncode == 0:
        return
    last = (stderr.strip().splitlines() or ["RuntimeError: the process failed"])[-1]
    name, _, message = last.partition(": ")
    raise type(name, (Exception,), {"__module__": "builtins"})(message) from None


def fix_ran() -> None:  # the tick after a fix's cell, where it did not raise (the build names it)
    import torch

    if get_ipython().last_execution_succeeded:
        display(Markdown(f"✓ The fix ran without an error (torch {torch.__version__})."))
