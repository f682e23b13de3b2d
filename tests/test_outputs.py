"""Machine-dependent output details are normalised, and only those; outputs too long for
a page are cut to their start and end, verified whole by a digest."""

import nbformat
import pytest

from coursebook.execute.notebook_runs import (
    CUT_MARKER,
    KEEP,
    LIMIT,
    as_displayed,
    cut,
    cut_long_outputs,
    without_digest,
)
from coursebook.model.outputs import normalise


@pytest.mark.parametrize("raw, shown", [
    ("grad_fn: <MulBackward0 object at 0x11247bbe0>", "grad_fn: <MulBackward0 object at 0x…>"),
    ("/tmp/ipykernel_43124/1142738744.py:5: UserWarning: x", "<cell>:5: UserWarning: x"),
    ("/var/folders/w9/T/ipykernel_1/22.py:5: UserWarning", "<cell>:5: UserWarning"),
    ("cannot import name 'mutable_array' from 'jax.experimental' "
     "(/venv/lib/python3.11/site-packages/jax/experimental/__init__.py)",
     "cannot import name 'mutable_array' from 'jax.experimental'"),
    ("cannot import name 'mutable_array' from 'jax.experimental' "  # a side folder's package
     "(/work/.venv-bridges-cpu-both/sides/old-torchax/jax/experimental/__init__.py)",
     "cannot import name 'mutable_array' from 'jax.experimental'"),
])
def test_machine_details_are_replaced(raw, shown):
    assert normalise(raw) == shown


@pytest.mark.parametrize("text", [
    "tensor([[1., 2.], [3., 4.]])",
    "RuntimeError: mat1 and mat2 shapes cannot be multiplied (32x16 and 8x4)",
    "value 0x10 is a literal",  # a hex number that is not an address stays
])
def test_everything_else_is_left_alone(text):
    assert normalise(text) == text


def test_a_long_line_is_normalised_as_a_short_one():
    """The rules are anchored (or skipped): a megabyte on one line, as a flooding cell
    prints it, is no slower to normalise than its size (it took hours)."""
    line = "x" * 1_000_000 + " /tmp/ipykernel_7/42.py:3: UserWarning"
    assert normalise(line) == "x" * 1_000_000 + " <cell>:3: UserWarning"


# --- Outputs too long for a page ----------------------------------------------------------

def test_carriage_returns_are_applied_as_a_terminal_shows_them():
    assert as_displayed("10%\r50%\r100%\ndone\n") == "100%\ndone\n"
    assert as_displayed("a\r\nb") == "a\r\nb"  # a Windows line end wipes nothing
    assert as_displayed("no return") == "no return"


def test_a_short_output_is_kept_exactly():
    text = "object at 0x7f00\n" * 10
    assert cut(text) == text  # not even normalised: that happens where it is shown


@pytest.mark.parametrize("text, what", [
    ("x" * (3 * LIMIT), "part of one line"),
    ("".join(f"line {n}\n" for n in range(LIMIT // 4)), "lines"),
])
def test_a_long_output_keeps_its_start_and_end_and_marks_the_cut(text, what):
    shown = cut(text)
    [marker] = CUT_MARKER.finditer(shown)
    head, tail = shown[:marker.start()], shown[marker.end() + 1:]
    head = head if text.startswith(head) else head[:-1]  # a line cut: the marker on its own
    assert text.startswith(head) and text.endswith(tail)
    assert KEEP // 2 <= len(head) <= KEEP and KEEP // 2 <= len(tail) <= KEEP
    assert what in marker["what"]
    assert int(marker["size"].replace(",", "")) == len(text) - len(head) - len(tail)
    if what == "lines":
        assert (int(marker["what"].split()[0].replace(",", ""))
                == text[len(head):-len(tail)].count("\n"))
    changed = text[:len(text) // 2] + "y" + text[len(text) // 2 + 1:]
    assert cut(changed) != shown  # a change in the cut part changes the digest
    assert "sha256" not in without_digest(shown) and CUT_MARKER.search(without_digest(shown))


def test_one_line_cut_is_one_line():
    text = "a" * (KEEP - 1000) + "\n" + "b" * (LIMIT - 10_000) + "\n" + "c" * (KEEP - 1000)
    [marker] = CUT_MARKER.finditer(cut(text))
    assert marker["what"] == "1 line"


def test_a_cells_streams_are_merged_before_they_are_cut():
    pieces = [nbformat.v4.new_output("stream", name="stderr", text=f"\r{n} steps" * 50)
              for n in range(1000)]
    result = nbformat.v4.new_output("execute_result", data={"text/plain": "7" * (2 * LIMIT)})
    cell = nbformat.v4.new_code_cell("x", outputs=[*pieces, result,
                                                   nbformat.v4.new_output("stream", name="stdout",
                                                                          text="ok\n")])
    notebook = nbformat.v4.new_notebook(cells=[cell])
    cut_long_outputs(notebook)
    stderr, shown, stdout = cell.outputs
    assert stderr.text == "999 steps" and stdout.text == "ok\n"
    assert CUT_MARKER.search(shown.data["text/plain"])


def test_a_line_printed_in_two_pieces_shows_as_one_line():
    """A stream's pieces in a row are joined before a run is cached: myst-nb's merge of a
    cell's streams (nb_merge_streams) ends each piece with a newline, and showed
    'Before backward:' and ' None None' on two lines (PT01's retain_grad cell)."""
    from myst_nb.core.utils import coalesce_streams

    def stream(text, name="stdout"):
        return nbformat.v4.new_output("stream", name=name, text=text)

    cell = nbformat.v4.new_code_cell("", outputs=[
        stream("Before backward:"), stream(" None None\n"), stream("a warning\n", "stderr"),
        stream("end\n")])
    cut_long_outputs(nbformat.v4.new_notebook(cells=[cell]))
    assert [o.text for o in coalesce_streams(cell.outputs)] == [
        "Before backward: None None\nend\n", "a warning\n"]


@pytest.mark.parametrize("printed, shown", [
    ([("stdout", "before\n"), ("stderr", "a warning\n"), ("stdout", "after\n")],
     "before\nafter\na warning"),
    ([("stderr", "a warning\n"), ("stdout", "after\n")], "after\na warning"),
])
def test_a_cell_is_compared_as_its_page_shows_it(printed, shown):
    """A cell that prints, warns, then prints again (pytorch/tutorials' backward hook, under
    torch's FutureWarning) has its streams merged on its page, stdout first, by myst-nb as
    it renders (nb_merge_streams), in place: the build compared and accepted 'after' twice,
    and failed the cell as varying where the kernel sent stdout in one piece."""
    from myst_nb.core.utils import coalesce_streams

    from coursebook.verify.expectations import shown_text

    cell = nbformat.v4.new_code_cell("", outputs=[
        nbformat.v4.new_output("stream", name=name, text=text) for name, text in printed])
    cut_long_outputs(nbformat.v4.new_notebook(cells=[cell]))
    coalesce_streams(cell.outputs)  # as the page renders it, before the build compares it
    assert shown_text(cell) == shown
