"""Every TOML data file is read by one typed reader, whose faults all read
``<file>:<line>: field <path>: <what is wrong> (<how to fix>)`` at the field's line."""

import re
from pathlib import Path

import pytest

from conftest import BOOK, MACHINE_KINDS_FILE, RUNTIMES_FILE
from coursebook.audit.answer_leaks import read_allowances
from coursebook.model.faults import BookError
from coursebook.model.machine_kinds import environments_path, load_environments, load_machine_kinds
from coursebook.model.runtimes import load_runtimes

ENVIRONMENTS = environments_path(BOOK / "recordings", "bridges")


def _environments(path: Path):
    return load_environments(path, load_machine_kinds(MACHINE_KINDS_FILE))


@pytest.mark.parametrize("original, read, old, new, message", [
    (RUNTIMES_FILE, load_runtimes, "python = ", "pyhton = ", "field book.pyhton: is no field"),
    (MACHINE_KINDS_FILE, load_machine_kinds, "stand_in = true", 'stand_in = "yes"',
     "field kind[2].stand_in: is 'yes' (make it true or false)"),
    (ENVIRONMENTS, _environments, 'shares = "both"', 'shares = "bath"',
     "field tpu[1].shares: names 'bath' (name an environment listed above it)"),
    (ENVIRONMENTS, _environments, 'runtime = "colab-tpu"', 'runtime = "colab-gpu"',
     "field tpu[0].runtime: names runtime 'colab-gpu', not in runtimes.toml (use one of book,"),
    (BOOK / "answer-overlaps.toml", read_allowances, "why = ", "reason = ",
     "field allow[0].reason: is no field of this table (use one of passage, why, or remove it)"),
])
def test_a_fault_in_a_data_file_names_its_file_line_and_field(tmp_path, original, read, old,
                                                               new, message):
    text = original.read_text()
    planted = tmp_path / original.name
    planted.write_text(text.replace(old, new, 1))
    with pytest.raises(BookError) as error:
        read(planted)
    line = text[:text.index(old)].count("\n") + 1
    assert str(error.value).startswith(f"{planted}:{line}: {message}")
    assert re.fullmatch(r"\S+:\d+: field \S+: [^\n]+ \([^\n]+\)", str(error.value))
