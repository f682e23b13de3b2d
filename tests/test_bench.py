"""`make bench`'s table: wall medians, and beside them the CPU of what each case ran."""

from __future__ import annotations

import argparse
import subprocess
import sys

from conftest import load_tool


def test_the_table_gives_each_case_its_cpu_and_the_peer_ratios_by_cpu(capsys):
    bench = load_tool("bench_build")
    results = {"7 student edition, cold": [(4.0, 3, 5.0), (5.0, 3, 6.0), (6.0, 3, 7.0)],
               "10a Jupyter Book 1, cold": [(8.0, 3, 10.0), (9.0, 3, 12.0), (9.5, 3, 11.0)],
               "8 student edition, warm": [(1.0, 0, 0.7), (1.2, 0, 0.8), (0.9, 0, 0.75)],
               "10b Jupyter Book 1, warm": [(1.5, 0, 1.2), (1.3, 0, 1.3), (1.4, 0, 1.1)]}
    bench.report(results, [], argparse.Namespace(runs=3, course_runs=1), chapters=0,
                 course_chapters=0, shard_seconds={})
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("| 8 student edition, warm"))
    assert [cell.strip() for cell in row.split("|")[2:5]] == ["1.00", "0.90", "0.75"]
    assert "student cold / Jupyter Book 1 cold, by CPU (user + sys): 6.00 / 11.00 s = 0.55" in out
    assert "student warm / Jupyter Book 1 warm, by CPU (user + sys): 0.75 / 1.20 s = 0.62" in out


def test_a_cases_cpu_is_that_of_the_processes_it_waited_for():
    bench = load_tool("bench_build")
    before = bench.children_cpu()
    subprocess.run([sys.executable, "-c", "sum(range(3 * 10 ** 7))"], check=True)
    assert bench.children_cpu() > before
