"""Outputs that vary from run to run: the varying part marked in the expected output
(``(varies)``, ``<number>``, ``<duration>``, ``<size>``, ``...``), matched without
matching more, kept by make accept-outputs, and told apart from a changed output."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import sphinx_build
from coursebook.page_state import CellOutput
from coursebook.verify import varying_outputs
from coursebook.verify.expectations import (
    Expectations,
    accept,
    accept_into,
    compare,
    read_expectations,
    write_expectations,
)
from coursebook.verify.varying_outputs import matches, suggest

# --- The matcher ----------------------------------------------------------------------------


@pytest.mark.parametrize("pattern, shown", [
    ("loss <number>", "loss 0.6931"),
    ("loss <number>", "loss -1e-05"),
    ("loss <number>", "loss nan"),
    ("step <number> of 10", "step 7 of 10"),
    ("took <duration>", "took 12.5 ms"),
    ("took <duration>", "took 0.5s"),
    ("took <duration>", "took 3 minutes"),
    ("[<duration><<duration>, <number>it/s]", "[00:01<00:00,  9.81it/s]"),
    # every unit Python and IPython print; µ (U+00B5) and μ (U+03BC) are two characters
    *(("took <duration>", f"took {shown}") for shown in (
        "1.5 s", "12 ms", "3.4 \u00b5s", "3.4 \u03bcs", "3.4 us", "870 ns", "2 min", "1 h",
        "234 nsec", "5.1 usec", "12.3 msec", "1.02 sec", "2 hours")),
    ("<duration> per loop", "1.23 \u00b5s \u00b1 4.5 ns per loop"),  # a mean \u00b1 its deviation
    # %timeit's line: the loop count varies with the timing
    ("<duration>", "1.23 \u00b5s \u00b1 4.5 ns per loop (mean \u00b1 std. dev. of 7 runs, "
                   "100,000 loops each)"),
    ("a: <duration>", "a: 512 ms \u00b1 0 ns per loop (mean \u00b1 std. dev. of 1 run, "
                      "1 loop each)"),
    ("CPU times: user <duration>, sys: <duration>, total: <duration>\nWall time: <duration>",
     "CPU times: user 1.2 ms, sys: 0 ns, total: 1.2 ms\nWall time: 2.3 \u03bcs"),
    ("elapsed <duration>", "elapsed 0:00:01.250000"),
    ("uses <size>", "uses 1.5 KiB"),
    ("uses <size>", "uses 1024 bytes"),
    *(("made <date>", f"made {shown}") for shown in (
        "Dec  5 14:23", "Dec 15  2025", "Sat Dec  5 16:46:04 2026", "Sat Dec  5 16:46:04 UTC 2026",
        "2026-12-05", "2026-12-05 16:46", "2026-12-05 16:46:04.123456", "2026-12-05T16:46:04Z",
        "2026-12-05T16:46:04.5+00:00")),
    ("epoch|<number>|", "epoch|  9.10|"),  # a value padded to a width
    ("tensor(...)", "tensor([0.4963, 0.7682])"),
    ("first\n...\nlast", "first\nlast"),
    ("first\n...\nlast", "first\n1\n2\n3\nlast"),
    ("step <number>...5 left", "step 12345 left"),  # a value ends where the rest goes on
    ("a ... b ... c ... d", "a b c " * 1400 + "d"),
])
def test_a_pattern_matches_the_values_it_names(pattern, shown):
    assert matches(pattern, shown)


@pytest.mark.parametrize("pattern, shown", [
    ("took <duration> for 3 steps", "took 0.1 s for 4 steps"),  # a value outside the pattern
    ("loss <number>", "loss 0.69 (lower)"),
    ("loss <number>", "loss high"),
    ("took <duration>", "took 12"),  # a number is no duration
    ("took <duration>", "took 5 steps"),
    ("took <duration>", "took 5 \u03bc"),  # a letter is no unit
    ("<duration> per loop", "1.23 \u00b5s \u00b1 4.5 per loop"),
    ("uses <size>", "uses 12 kernels"),
    ("a ... z", "a b\nc z"),  # ... stays in its line
    ("first\n...\nlast", "first\n1\nlast!"),
    ("x = <number>", "x = 1.0\n"),
    ("a ... b ... c ... d", "a b c " * 1400),
])
def test_a_pattern_matches_nothing_more(pattern, shown):
    assert not matches(pattern, shown)


def test_lines_of_dots_read_a_long_output_that_does_not_match_at_once(monkeypatch):
    """Three lines of ``...`` may share 3000 lines in billions of ways; a build must not try
    each: each marked line is tried once at most against each line of the output."""
    tried: list[str] = []
    line_matches = varying_outputs._line_matches
    monkeypatch.setattr(varying_outputs, "_line_matches",
                        lambda pieces, line: tried.append(line) or line_matches(pieces, line))
    shown = "\n".join(["step", "loss"] * 1500)
    assert not matches("...\nstep\n...\nloss\n...\ndone", shown)
    assert 0 < len(tried) <= 3 * len(shown.split("\n"))


def test_no_two_ellipses_of_a_line_backtrack_over_each_other(monkeypatch):
    """As one regex, ``a ... b ... c ... d`` took 10 to 20 s to fail on 8,000 characters of
    ``a b c`` (each ``...`` retried at every end of the one before): no regex the matcher
    compiles holds two wildcards."""
    compiled: list[str] = []
    compile_ = re.compile
    monkeypatch.setattr(re, "compile",
                        lambda pattern: compiled.append(pattern) or compile_(pattern))
    assert not matches("p ... q ... r ... s", "p q r")
    assert compiled and all(p.count("[^\n]*") + p.count(".*") < 2 for p in compiled)


def test_a_suggestion_marks_only_what_differs_and_both_outputs_match_it():
    accepted = "sum: 4999950000\ntook 0.002341 s, loss 0.71\ndone"
    shown = "sum: 4999950000\ntook 0.004102 s, loss 0.68\ndone"
    marked = suggest(accepted, shown)
    assert marked == "sum: 4999950000\ntook <duration>, loss <number>\ndone"
    assert not matches(marked, shown.replace("4999950000", "4999950001"))
    assert suggest("a\nb\nc", "a\nx\ny\nc") == "a\n...\nc"  # lines that come and go
    assert suggest("ready: yes", "ready: no") == "ready: ..."


def test_timeits_warning_of_a_slow_run_is_a_line_that_may_be_missing():
    """JAX's thinking_in_jax: %timeit warns "The slowest run took 15.67 times longer ..." in
    some runs only. Both accept runs printed it: the suggestion held it (with `<number>`: told
    as drawn, the seed the fix) and a later run without it failed the pattern."""
    slow = ("The slowest run took {} times longer than the fastest. This could mean that an "
            "intermediate result is being cached.\n")
    timing = ("Naively batched\n{}{} ms ± 1.61 ms per loop (mean ± std. dev. of 7 runs, 1 loop "
              "each)")
    one = timing.format(slow.format("15.67"), "1.01")
    two, quiet = timing.format(slow.format("7.27"), "1.16"), timing.format("", "1.2")
    marked = suggest(one, two)
    assert marked == "Naively batched\n...\n<duration>"
    assert matches(marked, quiet) and matches(marked, one)
    # Neither run warned (its Manually batched cell): a later run may, and must match.
    assert suggest(quiet, timing.format("", "1.3")) == "Naively batched\n...\n<duration>"
    # a timing: the clock told as the cause, the seed only as a maybe (not "drawn")
    assert varying_outputs.what_varies(one, two) == "measured"
    assert varying_outputs.what_varies(one, quiet) == "measured"


def test_a_progress_bars_rate_is_measured_not_drawn():
    """A lesson's tqdm bar (aladdinpersson's progress-bar lesson): its rate varies from run
    to run. It was read as a number, so the build offered a seed and marked `<number>it/s`."""
    bar = "100%|██████████| 3/3 [00:00<00:00, {}]\n3"
    one, two = bar.format("50533.78it/s"), bar.format("55924.05it/s")
    assert suggest(one, two) == "100%|██████████| 3/3 [<duration><<duration>, <duration>]\n3"
    assert varying_outputs.what_varies(one, two) == "measured"
    for rate in ("1.50s/it", "3.2MB/s", "12 samples/sec"):
        assert matches("[<duration>]", f"[{rate}]"), rate
    assert not matches("[<duration>]", "[3/4]") and not matches("[<duration>]", "[3 it/4]")


def test_a_suggestion_marks_a_date_even_where_both_runs_agree_on_it():
    """Two runs of one day agree on its date: kept, the entry would fail the next day."""
    listing = "-rw-r--r-- 1 root root 4753 Dec  5 {} data.csv\ntotal 8"
    assert suggest(listing.format("14:23"), listing.format("14:24")) == (
        "-rw-r--r-- 1 root root 4753 <date> data.csv\ntotal 8")
    for accepted, shown in [
            ("made Sat Dec  5 16:46:04 2026", "made Sat Dec  5 16:46:09 2026"),  # time.ctime()
            ("made 2026-12-05 16:46:04.123456", "made 2026-12-05 16:46:09.654321"),  # datetime
            ("made 2026-12-05T16:46:04+00:00", "made 2026-12-05T16:46:09+00:00"),  # isoformat
            ("made Dec  5  2025 (size 3)", "made Dec  5  2025 (size 4)"),  # ls, an older year
    ]:
        marked = suggest(accepted, shown)
        assert marked.startswith("made <date>"), marked
        assert matches(marked, shown.replace("Dec  5", "Jan 17").replace("12-05", "01-17"))
    assert not matches("made <date>", "made 2026-12-05 or later")
    assert not matches("made <date>", "made 5 steps")


def test_a_datetime_a_cell_shows_as_its_value_is_a_date():
    """nbdev's directives page ends a cell in `datetime.datetime.now()`: the suggestion kept
    its year, month, day and hour (`datetime.datetime(2026, 12, 7, 8, <number>, ...)`), so
    the next hour's build failed again, and the message said to seed a draw."""
    one, two = (f"datetime.datetime(2026, 12, 7, 8, {m}, 52, 929073)" for m in (5, 18))
    assert suggest(one, two) == "<date>"
    assert matches("<date>", "datetime.datetime(2027, 1, 17, 23, 0, 1, 5)")
    assert matches("made <date>", "made datetime.date(2026, 12, 7)")
    assert varying_outputs.what_varies(one, two) == "made"


def test_a_suggestion_marks_a_time_of_day_even_where_both_runs_agree_on_it():
    """Two runs of one minute print the same time of day (`time.strftime("%H:%M")`), a
    progress bar's clock the same elapsed time: the next run differs, as a date does."""
    assert suggest("started 16:46, loss 0.71", "started 16:46, loss 0.68") == (
        "started <duration>, loss <number>")
    assert suggest("at 16:46:04 (step 1)\nok", "at 16:46:04 (step 2)\nok") == (
        "at <duration> (step <number>)\nok")
    assert suggest("[00:00<00:00,  9.81it/s]", "[00:00<00:00, 12.30it/s]") == (
        "[<duration><<duration>, <duration>]")
    assert suggest("epoch 3 of 10, 5 ms", "epoch 3 of 10, 7 ms") == "epoch 3 of 10, <duration>"


def test_a_date_or_time_of_day_the_clock_read_during_the_run_is_found():
    """Two runs of one minute print the same time, so only the clock tells it: a time of
    day the clock read between a run's start and end, to the resolution printed, in local
    time or UTC, is found; another one, an elapsed time, a date alone (the day a recording
    was made, which its provenance prints) are not."""
    from datetime import UTC, datetime, timedelta

    start = datetime(2026, 12, 5, 16, 46, 2, tzinfo=UTC)
    def found(text):
        return varying_outputs.clock_readings(text, start, start + timedelta(seconds=30))

    assert found("started 16:46, loss 0.71") == ["16:46"]
    assert found("at 16:46:20 (step 1)\ndone 16:47") == ["16:46:20"]  # 16:47: after the run
    for printed in ["Sat Dec  5 16:46:04 2026", "Sat Dec  5 16:46:04 UTC 2026",  # ctime, date
                    "2026-12-05 16:46:04.123456", "2026-12-05T17:46:04+01:00",  # datetime
                    "Dec  5 16:46"]:  # ls -l
        assert found(f"made {printed} (size 3)") == [printed], printed
    assert found("16:45:59, 2026-12-05, Dec  5  2026, 2020-01-01 16:46, [00:00<00:00] 25:00, "
                 "2026-12-05T16:46:04+01:00") == []


def test_accepting_refuses_an_output_that_holds_the_time_it_ran(tmp_path):
    """The accept's two runs agree on the time they print when they fall in one minute: an
    output holding a time of day the clock read since the runs started is refused (its old
    entry kept), named with a fixed time and the entry marked as a pattern."""
    from datetime import UTC, datetime, timedelta

    now = datetime.now(UTC)
    printed = now.ctime()
    expectations = Expectations()
    expectations.by_edition["student"] = {"0000000b": "yesterday, 42"}
    expectations.by_edition["instructor"] = {"0000000b": "yesterday, 43"}
    outputs = [CellOutput("0000000a", 1, "print(6 * 7)", "42"),
               CellOutput("0000000b", 2, "print(time.ctime())", f"{printed}, 42", line=9),
               CellOutput("0000000c", 3, "print(datetime.now())", f"at {now:%H:%M}")]
    since = now - timedelta(seconds=5)
    accepted, [old, new] = accept(expectations, "student", outputs, since=since)
    assert accepted.by_edition["student"] == {"0000000a": "42", "0000000b": "yesterday, 42"}
    assert (old.cell, old.read, new.read) == (outputs[1], (printed,), (f"{now:%H:%M}",))
    said = old.message(Path("chapter.txt"))
    assert said.startswith(f"code cell `print(time.ctime())` is not accepted: its output holds "
                           f"the time it ran ({printed}), which a later run changes: print a "
                           "fixed time instead (`datetime(2026, 1, 1, 9, 30)`"), said
    # Its instructor entry differs: the entry proposed names the edition; a new cell's not.
    assert "in chapter.txt marked `(varies)`, its time a pattern:\n    === cell 0000000b " \
        "(student) (varies) · print(time.ctime())\n        <date>, 42\n    See docs/" in said
    assert "=== cell 0000000c (varies) · print(datetime.now())\n        at <duration>\n" \
        in new.message(Path("chapter.txt"))
    later = now + timedelta(minutes=2)  # a run after these: their times are not its own
    assert accept(Expectations(), "student", outputs, since=later)[1] == []


def test_a_refused_output_keeps_its_old_entrys_mark():
    """An output outside its ``(varies)`` entry's pattern that holds the time it ran is
    refused: its entry stays as it was, marked (before, its pattern was written unmarked)."""
    from datetime import UTC, datetime, timedelta

    now = datetime.now(UTC)
    expectations = Expectations()
    for edition in ("student", "instructor"):
        expectations.by_edition[edition] = {"0000000a": "ran in <duration>"}
        expectations.varying[edition] = {"0000000a"}
    ran = [CellOutput("0000000a", 1, "timed()", f"ran at {now:%H:%M:%S}")]
    accepted, [refused] = accept(expectations, "student", ran, since=now - timedelta(seconds=5))
    assert refused.cell == ran[0]
    assert accepted.by_edition["student"] == {"0000000a": "ran in <duration>"}
    assert accepted.varying == {"student": {"0000000a"}, "instructor": {"0000000a"}}


# --- The file, accept and compare --------------------------------------------------------------

def _output(key: str, text: str, number: int = 1) -> CellOutput:
    return CellOutput(key, number, f"print('cell {key[-1]}')", text)


def _write(path: Path, expectations: Expectations, keys: list[str]) -> None:
    assert write_expectations(path, expectations, lambda: keys, ["# header"])


def test_a_marked_entry_reads_back_and_a_pattern_holds_only_in_it(tmp_path):
    path = tmp_path / "chapter.txt"
    path.write_text("# header\n\n=== cell 0000000a (varies) · print('cell a')\n"
                    "    took <duration>\n"
                    "=== cell 0000000b · print('cell b')\n    tensor([0, 1, ..., 9])\n")
    expectations = read_expectations(path)
    assert expectations.varying == {"student": {"0000000a"}, "instructor": {"0000000a"}}
    assert expectations.lines[("student", "0000000a")] == 3
    outputs = [_output("0000000a", "took 12 ms"), _output("0000000b", "tensor([0, 1, 2, 9])")]
    [mismatch] = compare(expectations, "student", outputs)
    assert mismatch.cell.key == "0000000b"  # an unmarked entry's "..." is text
    _write(tmp_path / "again.txt", expectations, ["0000000a", "0000000b"])
    again = read_expectations(tmp_path / "again.txt")
    assert (again.by_edition, again.varying) == (expectations.by_edition, expectations.varying)


def test_spaces_an_editor_leaves_after_an_entry_line_are_not_compared(tmp_path):
    """A shown line never ends in spaces: a hand-marked line that does still matches."""
    path = tmp_path / "chapter.txt"
    path.write_text("# header\n\n=== cell 0000000a (varies) · print('cell a')\n"
                    "    took <duration> \n=== cell 0000000b · print('cell b')\n    done\t\n")
    outputs = [_output("0000000a", "took 3 ms"), _output("0000000b", "done")]
    assert compare(read_expectations(path), "student", outputs) == []


def test_accepting_keeps_a_pattern_the_output_still_matches(tmp_path):
    path = tmp_path / "chapter.txt"
    path.write_text("# header\n\n=== cell 0000000a (varies) · print('cell a')\n"
                    "    took <duration>\n=== cell 0000000b (varies) · print('cell b')\n"
                    "    loss <number>\n")
    outputs = [_output("0000000a", "took 3 ms"), _output("0000000b", "loss went down", 2)]
    shown, _ = accept_into(path, read_expectations(path), "student", outputs,
                           lambda: ["0000000a", "0000000b"], ["# header"], run="1234abcd")
    assert shown == [f"{path}:5: the output of `print('cell b')` no longer matches its pattern: "
                     "written as it is, unmarked", f"wrote {path} (student edition)"]
    accepted = read_expectations(path)
    assert accepted.by_edition["student"] == {"0000000a": "took <duration>",
                                              "0000000b": "loss went down"}
    assert accepted.varying["student"] == {"0000000a"}
    text = path.read_text()
    assert "=== cell 0000000a (varies) · print('cell a')\n    took <duration>" in text
    assert "(instructor) (varies) · print('cell b')\n    loss <number>" in text
    assert "=== cell 0000000b (student) · print('cell b')\n    loss went down" in text
    assert read_expectations(path).runs == {"student": "1234abcd"}


def test_an_unverified_cells_outgrown_pattern_is_not_said_to_be_written(tmp_path):
    """An unverified cell's output is never accepted: its marked entry, which its output
    outgrew, is not said to be written unmarked."""
    path = tmp_path / "chapter.txt"
    path.write_text("# header\n\n=== cell 0000000a (varies) · print('cell a')\n"
                    "    took <duration>\n")
    outputs = [CellOutput("0000000a", 1, "print('cell a')", "took four steps", "a reason")]
    shown, _ = accept_into(path, read_expectations(path), "student", outputs,
                           lambda: ["0000000a"], ["# header"])
    assert not any("no longer matches" in line for line in shown), shown


def test_an_output_unlike_the_one_the_same_run_accepted_varies_between_runs():
    expectations = Expectations(runs={"student": "1234abcd"})
    expectations.by_edition["student"] = {"0000000a": "took 0.0023 s"}
    expectations.by_edition["instructor"] = {"0000000a": "took 0.0023 s"}  # one entry
    expectations.lines[("student", "0000000a")] = 7
    outputs = [_output("0000000a", "took 0.0041 s")]
    [changed] = compare(expectations, "student", outputs, run="99999999")
    assert not changed.varies and "make accept-outputs" in changed.fix(Path("e.txt"))
    [varies] = compare(expectations, "student", outputs, run="1234abcd")
    assert varies.varies
    assert "shows an output that varies between runs" in varies.diff(Path("e.txt"))
    fix = varies.fix(Path("e.txt"))
    assert "make accept-outputs" not in fix and "e.txt:7" in fix
    assert "    === cell 0000000a (varies) · print('cell a')\n        took <duration>" in fix
    # No seed fixes a temporary folder's name (QuantEcon's `%pwd` in a build) or a date: no
    # seed is offered, the pattern is. A timing or a size may be a clock's or a simulated one
    # (HR's F6: a drawn waiting time): the seed is offered, the other cause told beside it.
    # A number in a path that is no temporary name may be drawn: the seed, nothing else.
    for before, after, told in [
            ("'/tmp/tmpk3l4ab12'", "'/tmp/tmpzz91xq07'", "Only temporary names"),
            ("Sat Dec  5 16:46:04 2026", "Sun Dec  6 10:00:00 2026", "Only temporary names"),
            ("took 0.0023 s", "took 0.0041 s", "Only times or sizes differ"),
            ("mean wait 2.31 s", "mean wait 1.87 s", "Only times or sizes differ"),
            ("saved /tmp/ckpt_8271.pt", "saved /tmp/ckpt_1042.pt", "")]:
        expectations.by_edition["student"]["0000000c"] = before
        [unseeded] = compare(expectations, "student", [_output("0000000c", after)], "1234abcd")
        said = unseeded.fix(Path("e.txt"))
        assert "(varies)" in said and ("seed(0)" in said) == ("temporary" not in told), said
        assert (told in said) if told else ("Only" not in said), said
    # A drawn number is told the seed; an uninitialised tensor prints what memory held
    # (NYU-DLSP20's `torch.Tensor(2, 3, 4)`): seeding does not fix it, filling it does.
    expectations.by_edition["student"]["0000000c"] = "loss 0.51 at /tmp/tmpk3l4ab12"
    [loss] = compare(expectations, "student", [_output("0000000c", "loss 0.47 at /tmp/tmpzz")],
                     "1234abcd")
    said = loss.fix(Path("e.txt"))
    assert "`torch.manual_seed(0)`" in said and "torch.empty" in said and "fill it" in said
    # Karpathy's micrograd prints a list built from sets of its values, whose order is their
    # addresses': the same words, in another order, which no seed fixes; a shuffle's
    # (torch.randperm's) too, which a seed does fix: both causes are told.
    for before, after in [("[Value(data=2.0),\n Value(data=-3.0)]",
                           "[Value(data=-3.0),\n Value(data=2.0)]"),
                          ("tensor([3, 1, 4, 0, 2])", "tensor([2, 0, 1, 4, 3])")]:
        expectations.by_edition["student"]["0000000b"] = before
        [order] = compare(expectations, "student", [_output("0000000b", after)], "1234abcd")
        said = order.fix(Path("e.txt"))
        assert "the same in another order: a shuffle, or a set's order" in said, said
        assert "`torch.manual_seed(0)`" in said and "another order" not in fix, said
    # Its graph drawing names each node by its `id()`; an unseeded generator's seed
    # (`torch.initial_seed()`) is such a number too.
    expectations.by_edition["student"]["0000000b"] = '140050400013840 -> "140050866344592*"'
    [ids] = compare(expectations, "student", [_output(
        "0000000b", '140333683291728 -> "140333683292496*"')], "1234abcd")
    said = ids.fix(Path("e.txt"))
    assert "a seed drawn at random, or objects' `id()`s" in said and "id()" not in fix, said
    assert "`torch.manual_seed(0)`" in said, said
    expectations.varying["student"].add("0000000a")
    expectations.by_edition["student"]["0000000a"] = "took <duration> here"
    [outside] = compare(expectations, "student", outputs, run="1234abcd")
    assert not outside.varies and "outside the pattern" in outside.diff(Path("e.txt"))


# --- A build: a cell printing a timing ------------------------------------------------------

TIMING = ("import time\nstart = time.perf_counter()\ntotal = sum(range(100_000))\n"
          "print(f'sum of the first 100000 integers: {total}')\n"
          "print(f'took {time.perf_counter() - start:.6f} s, {time.monotonic():.3f} s after boot')")


@pytest.mark.slow
def test_a_timing_is_told_to_vary_marked_kept_by_accept_and_bounded(tiny_book, tmp_path):
    chapter = tiny_book / "chapter.md"
    chapter.write_text(chapter.read_text().replace(
        "A cell whose error is the lesson.",
        f"```{{code-cell}} ipython3\n{TIMING}\n```\n\nA cell whose error is the lesson."))
    expected = tiny_book / "expected" / "torch-2.13.0" / "chapter.txt"
    accept_setting = {"coursebook_accept_outputs": "1"}

    def build(name: str, **settings):
        return sphinx_build(tiny_book, tmp_path / name, tmp_path / f"cache-{name}",
                            settings=settings)

    accepted = build("accept", **accept_setting)
    assert accepted.returncode == 0, accepted.log[-3000:]
    literal = expected.read_text()
    assert "after boot" in literal and "(varies)" not in literal

    # A clean cache: the same code and versions print another timing.
    again = build("again")
    assert again.returncode != 0
    [error] = [block for block in re.split(r"\n(?=\S)", again.log)
               if "varies between runs" in block]
    assert "make accept-outputs" not in error, error
    assert "chapter.md:" in error and "chapter.txt:" in error
    suggested = re.search(r"\n    (=== cell \w+ \(student\) \(varies\) · import time\n"
                          r"(?:        .*\n?)+)", error)[1]
    assert "[coursebook" not in suggested, suggested  # Sphinx's tag ends the message, not the entry
    assert "<duration>" in suggested and "4999950000" in suggested, suggested
    entry = re.search(r"=== cell \w+ \(student\) · import time\n(?:    .*\n)+", literal)[0]
    # As the message shows it, without the message's own indent.
    marked = "\n".join(line[4:] for line in f"    {suggested}".rstrip("\n").split("\n")) + "\n"
    expected.write_text(literal.replace(entry, marked))

    passed = build("marked")
    assert passed.returncode == 0, passed.log[-3000:]

    # A changed value outside the marked parts still fails.
    expected.write_text(literal.replace(entry, marked.replace("4999950000", "4999950001")))
    outside = build("outside")
    assert outside.returncode != 0 and "outside the pattern" in outside.log, outside.log[-3000:]
    expected.write_text(literal.replace(entry, marked))

    # make accept-outputs keeps the pattern the new output still matches.
    kept = build("accept-again", **accept_setting)
    assert kept.returncode == 0, kept.log[-3000:]
    assert marked in expected.read_text()


def test_a_mark_survives_an_edit_of_its_cell_while_its_pattern_holds():
    """An edited cell has a new key: it takes the pattern of the marked entry whose cell is
    gone when its output still matches it (and only that one), else it is written as is."""
    expectations = Expectations()
    for edition in ("student", "instructor"):
        expectations.by_edition[edition] = {"0000000a": "took <duration>", "0000000b": "done"}
        expectations.varying[edition] = {"0000000a"}
    edited = [_output("000000aa", "took 4 ms"), _output("0000000b", "done")]
    accepted, _ = accept(expectations, "student", edited)
    assert accepted.by_edition["student"] == {"000000aa": "took <duration>", "0000000b": "done"}
    assert accepted.varying["student"] == {"000000aa"}
    outgrown = [_output("000000aa", "took four steps"), _output("0000000b", "done")]
    accepted, _ = accept(expectations, "instructor", outgrown)
    assert accepted.by_edition["instructor"]["000000aa"] == "took four steps"
    assert accepted.varying["instructor"] == set()
    both = Expectations()  # two marked entries gone whose patterns both fit: neither is taken
    both.by_edition["student"] = {"0000000a": "took <duration>", "0000000c": "took ..."}
    both.varying["student"] = {"0000000a", "0000000c"}
    accepted, _ = accept(both, "student", [_output("000000aa", "took 4 ms")])
    assert accepted.by_edition["student"] == {"000000aa": "took 4 ms"}
    assert accepted.varying["student"] == set()


def test_a_set_a_seeded_cell_makes_is_told_as_what_no_seed_fixes():
    """pytorch/tutorials' word embeddings lesson seeds torch, then numbers its words by
    `enumerate(set(test_sentence))`, an order Python draws anew in each run: its losses
    varied, and the build told it to seed (it was seeded). A set literal or comprehension is
    one too; matplotlib's `ax.set(title=...)` is none (HR's G10), and a set is told in place
    of seeding."""
    expectations = Expectations(runs={"student": "1234abcd"})
    expectations.by_edition["student"] = {"0000000a": "[523.02, 520.41]"}
    for code, told in (("torch.manual_seed(1)\nvocab = set(test_sentence)", True),
                       ("seen = {w for w in words}", True), ("pair = {a, b}", True),
                       ("model.reset()", False), ("ax.set(title='loss')", False)):
        [varies] = compare(expectations, "student", [CellOutput(
            "0000000a", 1, code + "\nprint(losses)", "[523.30, 520.60]")], "1234abcd")
        said = varies.fix(Path("e.txt"))
        assert ("makes a set, whose order differs between runs (of strings too: Python draws "
                "their hashes anew), which no seed fixes: iterate `sorted(...)` of it" in said) \
            == told != ("`torch.manual_seed(0)`" in said), (code, said)
