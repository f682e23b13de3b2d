#!/usr/bin/env python3
"""Build one edition of the book as a PDF handout, and check it.

Sphinx's LaTeX builder reads the same sources through the same execution cache as the
HTML (nothing cached runs again), xelatex typesets it, and the result is checked: no
text into the margins, no overfull line, no missing glyph, every font embedded.
Writes _build/<edition>/pdf/deep-learning-labs-<edition>.pdf.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
from pathlib import Path

from book_environment import use_book_environment

use_book_environment()

from coursebook.pdfcheck import POPPLER, check_pdf

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = (ROOT / "tools" / "pdf-packages.txt").read_text().split()
STEM = "deep-learning-labs"


def missing_tools() -> list[str]:
    return [tool for tool in ("xelatex", "latexmk", *POPPLER) if shutil.which(tool) is None]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("edition", choices=("student", "instructor"))
    parser.add_argument("--source", type=Path, default=ROOT / "book", help="default: book/")
    parser.add_argument("--build", type=Path, default=ROOT / "_build", help="default: _build/")
    parser.add_argument("--sphinx-option", action="append", default=[], metavar="OPT",
                        help="extra sphinx-build argument (repeatable), e.g. -Dname=value")
    args = parser.parse_args(argv)
    missing = missing_tools()
    if missing:
        print(f"pdf: {', '.join(missing)} not found: TeX is not installed. Run `make pdf-deps` "
              f"(Debian/Ubuntu: apt-get install {' '.join(PACKAGES)}).", file=sys.stderr)
        return 2
    started = time.monotonic()
    out = args.build / args.edition
    latex = out / "latex"
    shutil.rmtree(latex, ignore_errors=True)  # a full typeset, so its log misses nothing
    tags = ["-t", "instructor"] if args.edition == "instructor" else []
    sphinx = [sys.executable, "-m", "sphinx", "-b", "latex", "-c", str(ROOT), *tags,
              "-d", str(out / "doctrees-latex"), "-W", "--keep-going", *args.sphinx_option,
              str(args.source), str(latex)]
    if subprocess.run(sphinx).returncode != 0:
        print("pdf: the LaTeX build failed (see above).", file=sys.stderr)
        return 1
    typeset = subprocess.run(["latexmk", "-xelatex", "-interaction=nonstopmode", "-halt-on-error",
                              f"{STEM}.tex"], cwd=latex, capture_output=True, text=True)
    if typeset.returncode != 0:
        print(typeset.stdout[-3000:], file=sys.stderr)
        print(f"pdf: xelatex failed; the log is {latex / (STEM + '.log')}", file=sys.stderr)
        return 1
    typeset_pdf = latex / f"{STEM}.pdf"
    pdf = out / "pdf" / f"{STEM}-{args.edition}.pdf"
    problems = check_pdf(typeset_pdf, latex / f"{STEM}.log", latex / f"{STEM}.tex")
    if not publish(typeset_pdf, pdf, problems):
        return 1
    info = subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True).stdout
    pages = next((line.split()[-1] for line in info.splitlines() if line.startswith("Pages:")), "?")
    print(f"pdf: wrote {pdf} ({pages} pages, {time.monotonic() - started:.1f} s)")
    return 0


def publish(typeset_pdf: Path, pdf: Path, problems: list) -> bool:
    """Copy the typeset PDF to its output name only when it passed its checks.

    A PDF that failed is never left under the output name (an older one is removed too):
    what lies there has been checked. The failed one stays in the LaTeX folder to look at.
    """
    if problems:
        pdf.unlink(missing_ok=True)
        for problem in problems:
            print(f"pdf: {problem}", file=sys.stderr)
        print(f"pdf: {len(problems)} problem(s): {pdf} is not written; the failed PDF is "
              f"{typeset_pdf}, to look at.", file=sys.stderr)
        return False
    pdf.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(typeset_pdf, pdf)
    return True


if __name__ == "__main__":
    sys.exit(main())
