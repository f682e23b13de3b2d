"""Every TOML data file is read by one typed reader, whose faults all read
``<file>:<line>: field <path>: <what is wrong> (<how to fix>)`` at the field's line."""

import re
from pathlib import Path

import pytest

from conftest import BOOK, MACHINE_KINDS_FILE, ROOT, RUNTIMES_FILE
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
    # a list given one string: it was a TypeError (isinstance of tuple[str, ...])
    (MACHINE_KINDS_FILE, load_machine_kinds, 'pythons = ["3.11", "3.12"]', 'pythons = "3.11"',
     "field kind[0].pythons: is '3.11' (make it a list of strings)"),
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


def test_a_recorded_chapters_environments_name_runtimes_of_the_books_runtimes_file(tmp_path):
    """conf.py's coursebook_runtimes_file, as the machine kinds read it: a recorded chapter's
    environments were checked against tools/runtimes.toml whatever the setting said."""
    from types import SimpleNamespace

    from coursebook.config import BookConfig
    from coursebook.prepare.chapters import prepare_chapter

    renamed = {RUNTIMES_FILE: tmp_path / "runtimes.toml",
               MACHINE_KINDS_FILE: tmp_path / "machine-kinds.toml",
               ENVIRONMENTS: tmp_path / "recordings" / ENVIRONMENTS.name}
    for original, copy in renamed.items():
        copy.parent.mkdir(exist_ok=True)
        copy.write_text(original.read_text().replace("colab-tpu", "colab-tpu-renamed"))
    for recording in (BOOK / "recordings").glob("bridges-*.ipynb"):
        (tmp_path / "recordings" / recording.name).write_bytes(recording.read_bytes())
    config = BookConfig(exhibits_dir=str(ROOT / "exhibits"), recordings_dir=str(tmp_path /
                        "recordings"), machine_kinds_file=str(renamed[MACHINE_KINDS_FILE]),
                        runtimes_file=str(renamed[RUNTIMES_FILE]),
                        execution_versions={"torch": "2.13.0"})
    app = SimpleNamespace(tags=SimpleNamespace(has=lambda tag: False), env=None)
    chapter = (BOOK / "bridges.md").read_text().replace("colab-tpu", "colab-tpu-renamed")
    prepared = prepare_chapter(app, config, chapter, str(BOOK / "bridges.md"))
    assert prepared.recorded is not None
