"""`make accept-outputs` runs each chapter whose outputs changed a second time, so that an
output that varies between runs is found when it is accepted, not on a later cold build; where
two runs printed alike, an unseeded draw's output is still refused (they may have drawn alike)."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import load_tool, sphinx_build, tool_in_process

ACCEPT = {"coursebook_accept_outputs": "1"}
RANDOM_CELL = "\n```{code-cell} ipython3\nprint(torch.rand(2))\n```\n"


def accept(book: Path, root: Path) -> tuple[int, str]:
    """`make accept-outputs`' tool on ``book``: its exit status, and what it and its builds
    printed (the tool run as a program: test_faults' shebang test)."""
    return tool_in_process("accept_outputs", ["--book", str(book), "--out", str(root / "out"),
                                              "--cache", str(root / "cache")])


@pytest.mark.slow
@pytest.mark.parametrize("seed", ["", "torch.manual_seed(0)\n"])
def test_an_unseeded_random_output_is_refused_when_accepted(tiny_book, tmp_path, seed):
    chapter = tiny_book / "chapter.md"
    chapter.write_text(chapter.read_text() + RANDOM_CELL.replace("print", seed + "print"))
    returncode, log = accept(tiny_book, tmp_path)
    expected = "".join(p.read_text() for p in (tiny_book / "expected").rglob("chapter.txt"))
    if seed:
        assert returncode == 0 and "    tensor([0." in expected, log[-3000:]
        assert "chapter changed; running it a second time" in log, log[-3000:]
        assert "the second run printed the same" in log
    else:  # the accept builds alone pass; refused before a second run, which proves nothing
        assert returncode == 1 and "a second time" not in log, log[-3000:]
        assert "`torch.rand(2)` draws random numbers before any seed" in log, log[-3000:]
        assert "    tensor([0." not in expected  # taken back


@pytest.mark.slow
def test_an_unseeded_draw_both_runs_print_alike_fails_the_accept(tiny_book, tmp_path):
    """A draw that prints the same every time (as two draws may by chance): both runs agree,
    and the accept still fails, naming the cell's line and the seed; what it wrote goes back,
    so that accepting again refuses it again (kept, it would find nothing changed)."""
    chapter = tiny_book / "chapter.md"
    chapter.write_text(chapter.read_text() + RANDOM_CELL.replace(
        "print(torch.rand(2))", "print(int(torch.rand(1) < 2))"))
    [expected] = (tiny_book / "expected").rglob("chapter.txt")
    before = expected.read_text()
    returncode, log = accept(tiny_book, tmp_path)
    [line] = _lines_of(chapter, "print(int(torch.rand(1) < 2))")
    assert returncode == 1 and "the second run printed the same" not in log, log[-3000:]
    assert f"chapter.md:{line}: `torch.rand(1)` draws random numbers before any seed" in log, \
        log[-3000:]
    assert expected.read_text() == before


def _lines_of(chapter: Path, *texts: str) -> list[int]:
    lines = chapter.read_text().splitlines()
    return [lines.index(text) + 1 for text in texts]


def test_an_unseeded_draw_two_runs_printed_alike_is_refused_at_its_line(tmp_path):
    """QuantEcon's functions.md drew 3 in both runs (P ~ 0.18) and it was accepted; the next
    cold build would fail most times. Refused: a literal output of a cell drawing before any
    seed; not one that prints nothing, one marked `(varies)` or one drawn after the seed."""
    from importlib import metadata

    from coursebook.verify.expectations import code_digest, entry_lines, expectations_path

    cells = {"import torch\nprint(torch.randint(0, 1, (1,)))": "tensor([0])",
             "weights = torch.rand(3)": "", "print(torch.rand(1).item())": "<number>",
             "torch.manual_seed(0)\nprint(torch.rand(1))": "tensor([0.4963])"}
    chapter = tmp_path / "book" / "lab.md"
    chapter.parent.mkdir()
    chapter.write_text("---\njupytext:\n  text_representation: {format_name: myst}\n"
                       "kernelspec: {name: python3}\n---\n# Lab\n" + "".join(
                           f"\n```{{code-cell}} ipython3\n{code}\n```\n" for code in cells))
    expected = expectations_path(tmp_path / "book" / "expected", metadata.version("torch"), "lab")
    expected.parent.mkdir(parents=True)
    expected.write_text("\n".join(line for code, text in cells.items() for line in entry_lines(
        "cell", code_digest(code), text, varies="<" in text, first=code.split("\n")[0])) + "\n")
    [drawn] = load_tool("accept_outputs").drawn_alike(tmp_path / "book", ["lab"])
    [line] = _lines_of(chapter, "print(torch.randint(0, 1, (1,)))")
    assert drawn.endswith(
        f"lab.md:{line}: `torch.randint(0, 1, (1,))` draws random numbers before any seed, so "
        "its output may hold a draw, which two runs may print alike by chance: seed before it "
        "(`torch.manual_seed(0)`), then run `make accept-outputs` again"), drawn


def test_an_unseeded_draw_is_refused_though_another_chapters_second_run_varied(tmp_path,
                                                                              monkeypatch, capsys):
    """Accepted beside a chapter whose second run printed another output, a chapter's
    unseeded draw was never refused: its entries were kept, the next accept found them
    unchanged and ran no check on them (HK: makemore beside mrdbourke's fundamentals)."""
    from importlib import metadata

    from coursebook.verify.expectations import code_digest, entry_lines, expectations_path

    code = "import torch\nprint(torch.randint(0, 1, (1,)))"
    chapter = tmp_path / "book" / "lab.md"
    chapter.parent.mkdir()
    chapter.write_text("---\njupytext:\n  text_representation: {format_name: myst}\n"
                       f"kernelspec: {{name: python3}}\n---\n# Lab\n\n```{{code-cell}} ipython3"
                       f"\n{code}\n```\n")
    expected = expectations_path(tmp_path / "book" / "expected", metadata.version("torch"), "lab")
    expected.parent.mkdir(parents=True)

    def build(book, out, cache, edition, settings) -> bool:
        """The accepting builds write the draw's entry; the second run varies elsewhere."""
        if settings:
            expected.write_text("\n".join(entry_lines("cell", code_digest(code), "tensor([0])",
                                                       first="import torch")) + "\n")
        return bool(settings)

    tool = load_tool("accept_outputs")
    monkeypatch.setattr(tool, "build", build)
    monkeypatch.setattr(tool, "forget_runs", lambda *_: None)
    assert tool.main(["--book", str(tmp_path / "book"), "--out", str(tmp_path / "out"),
                      "--cache", str(tmp_path / "cache")]) == 1
    said = capsys.readouterr().err
    assert "`torch.randint(0, 1, (1,))` draws random numbers before any seed" in said, said
    assert not expected.exists()  # taken back: the next accept accepts and checks it again


@pytest.mark.slow
@pytest.mark.parametrize("marked", [False, True])
def test_an_accepting_build_refuses_an_output_that_holds_the_time_it_ran(tiny_book, tmp_path,
                                                                         cache_copy, marked):
    """Two runs in one minute print the same time of day, so a second run cannot tell it:
    the accepting build (`make accept-outputs` runs it, `make accept-outputs-torch` runs it
    alone) refuses an output holding a time its runs read from the clock, at the cell's line,
    with a fixed time and the entry marked as a pattern; nothing of it is written, and an old
    ``(varies)`` entry whose pattern it outgrew stays, marked (not said to be written)."""
    from coursebook.verify.expectations import code_digest

    code = "import time\nprint('started at', time.strftime('%H:%M'))"
    chapter = tiny_book / "chapter.md"
    chapter.write_text(chapter.read_text() + f"\n```{{code-cell}} ipython3\n{code}\n```\n")
    old = f"=== cell {code_digest(code)} (varies) · import time\n    started around <number>\n"
    [expected] = (tiny_book / "expected").rglob("chapter.txt")
    if marked:
        expected.write_text(expected.read_text() + old)
    line = chapter.read_text().splitlines().index("import time") + 1
    done = sphinx_build(tiny_book, tmp_path / "out", cache_copy, settings=ACCEPT)
    assert done.returncode != 0, done.log[-3000:]
    assert f"chapter.md:{line}: ERROR: code cell `import time` is not accepted: its output " \
        "holds the time it ran (" in done.log, done.log[-3000:]
    assert "which a later run changes: print a fixed time instead" in done.log
    assert " (varies) · import time\n        started at <duration>\n" in done.log
    assert "Traceback" not in done.log
    assert "no longer matches its pattern" not in done.log
    written = expected.read_text()
    assert "started at" not in written and (old in written) == marked


def test_a_failed_accept_takes_back_what_its_first_edition_wrote(tmp_path, monkeypatch, capsys):
    """d2l's ndarray: the student edition wrote `id(Z): 139875573930800`, the instructor one
    failed (another chapter); the next accept found nothing changed and skipped the second
    run, so an address was accepted. A failed accept now leaves the expected outputs as they
    were: the next one sees the change and runs it twice. It says so: a build's `expected
    outputs: wrote ....txt` line stood last, and the file was not there (QuantEcon's lecture
    brought in, its build stopped by an answer overlap)."""
    from importlib import metadata

    from coursebook.verify.expectations import expectations_path

    tool = load_tool("accept_outputs")
    folder = expectations_path(tmp_path / "expected", metadata.version("torch"), "").parent
    folder.mkdir(parents=True)
    (folder / "old.txt").write_text("old\n")
    before = tool.expected_files(tmp_path)

    def build(book, out, cache, edition, settings):
        (folder / "old.txt").write_text("new\n")
        (folder / "lab.txt").write_text("=== cell 1a2b · print(id(Z))\n    id(Z): 1398755\n")
        return edition != "instructor"

    monkeypatch.setattr(tool, "build", build)
    assert tool.main(["--book", str(tmp_path)]) == 1
    assert tool.expected_files(tmp_path) == before
    assert "the expected outputs written above are taken back (lab, old)" in capsys.readouterr().err
