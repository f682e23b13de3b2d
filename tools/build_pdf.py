#!/usr/bin/env python3
"""Build one edition of the book as a PDF, or as one handout per chapter, and check it.

Sphinx's LaTeX builder reads the same sources through the same execution cache as the
HTML (nothing cached runs again), lualatex typesets it (a character the text fonts lack
falls back on other fonts: coursebook.render.pdf_fonts), and the result is checked: no
text into the margins, no overfull line, no missing glyph (named with the chapter file,
line and cell that print it), every font embedded.
Writes _build/<edition>/pdf/deep-learning-labs-<edition>.pdf; with --handouts, one PDF
per chapter, _build/<edition>/pdf/handouts/<chapter>.pdf, each checked on its own (a
problem names the chapter file), and the student handouts audited for answers.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

from book_environment import sphinx_command, use_book_environment

use_book_environment()

from pdf_checks import POPPLER, check_pdf, locate_chapters, locate_characters

from coursebook.audit.answer_leaks import audit_build, chapter_fingerprints
from coursebook.model.faults import shown_path
from coursebook.render.pdf_fonts import ENGINE, FONTS

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = (ROOT / "tools" / "pdf-packages.txt").read_text().split()
STEM = "deep-learning-labs"


def missing_tools() -> list[str]:
    return [tool for tool in (ENGINE, "latexmk", "fc-list", *POPPLER) if shutil.which(tool) is None]


def fonts_not_installed() -> list[str]:
    """The book's fonts that fontconfig (whose folders luaotfload reads) does not list (a
    font may have several names, a line)."""
    listed = subprocess.run(["fc-list", ":", "family"], check=True, capture_output=True,
                            text=True).stdout
    installed = {name.strip() for line in listed.splitlines() for name in line.split(",")}
    return [f"{font.family} ({font.package})" for font in FONTS if font.family not in installed]


def sphinx_latex(args, latex: Path, doctrees: Path, tags: tuple[str, ...]) -> bool:
    """Sphinx's LaTeX builder into a fresh ``latex`` folder (a full typeset: its log misses
    nothing)."""
    shutil.rmtree(latex, ignore_errors=True)
    sphinx = [*sphinx_command(args.source, latex, doctrees, builder="latex", tags=tags,
                              instructor=args.edition == "instructor", jobs=None),
              *args.sphinx_option]
    if subprocess.run(sphinx).returncode != 0:
        print("pdf: the LaTeX build failed (see above).", file=sys.stderr)
        return False
    return True


def typeset(latex: Path, stem: str, single_pass: bool = False) -> Path | None:
    """The engine (through latexmk, with the latexmkrc Sphinx wrote for conf.py's
    latex_engine) on ``stem.tex``; the typeset PDF, in the LaTeX folder. ``single_pass``:
    the engine once, without latexmk's further passes."""
    options = ["-interaction=nonstopmode", "-halt-on-error", f"{stem}.tex"]
    if not single_pass:
        # An empty index for the first pass, whose contents then list the index already: the
        # third pass only added that line (the book: 3 -> 2 passes, the same PDF but its date).
        (latex / f"{stem}.ind").write_text("\\begin{sphinxtheindex}\n\\end{sphinxtheindex}\n")
    done = subprocess.run([ENGINE, *options] if single_pass else ["latexmk", "-pdf", *options],
                          cwd=latex, capture_output=True, text=True)
    if done.returncode != 0:
        print(done.stdout[-3000:], file=sys.stderr)
        print(f"pdf: {ENGINE} failed; the log is {latex / (stem + '.log')}", file=sys.stderr)
        return None
    return latex / f"{stem}.pdf"


def publish(typeset_pdf: Path, pdf: Path, problems: list, source: str = "") -> bool:
    """Copy the typeset PDF to its output name only when it passed its checks.

    A PDF that failed is never left under the output name (an older one is removed too):
    what lies there has been checked. The failed one stays in the LaTeX folder to look at.
    """
    for problem in problems:
        print(f"pdf: {problem}", file=sys.stderr)
    if problems:
        pdf.unlink(missing_ok=True)
        print(f"pdf: {source + ': ' if source else ''}{len(problems)} problem(s): {pdf} is not "
              f"written; the failed PDF is {typeset_pdf}, to look at.", file=sys.stderr)
        return False
    pdf.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(typeset_pdf, pdf)
    return True


def source_path(source: Path, docname: str) -> Path:
    """The file a document is read from."""
    found = sorted(source.glob(f"{docname}.*"))
    return (found[0] if found else source / docname).resolve()


def located(problems: list, source: Path, doctrees: Path, tex: Path,
            docnames: list[str] | None = None) -> list:
    """Each character no font has, named with the place that prints it (of ``docnames``;
    None: every document of the .tex)."""
    return locate_characters(problems, docnames, lambda doc: source_path(source, doc),
                             doctrees, tex)


def pages(pdf: Path) -> str:
    info = subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True).stdout
    return next((line.split()[-1] for line in info.splitlines() if line.startswith("Pages:")), "?")


def build_book(args) -> int:
    started = time.monotonic()
    out = args.build / args.edition
    latex, doctrees = out / "latex", out / "doctrees-latex"
    if not sphinx_latex(args, latex, doctrees, ()):
        return 1
    pdf = out / "pdf" / f"{STEM}-{args.edition}.pdf"
    typeset_pdf = typeset(latex, STEM, args.single_pass)
    if typeset_pdf is None:
        return 1
    tex = latex / f"{STEM}.tex"
    problems = locate_chapters(check_pdf(typeset_pdf, latex / f"{STEM}.log"), typeset_pdf,
                               latex / f"{STEM}.aux", tex,
                               lambda doc: str(shown_path(source_path(args.source, doc))))
    problems = located(problems, args.source, doctrees, tex)
    if args.edition == "student":  # audited as it is made: `make audit` reads its own build's
        problems += audit_build(latex, chapter_fingerprints(args.source), [typeset_pdf])
    if not publish(typeset_pdf, pdf, problems):
        return 1
    print(f"pdf: wrote {pdf} ({pages(pdf)} pages, {time.monotonic() - started:.1f} s)")
    return 0


def build_handouts(args) -> int:
    """One Sphinx run writes every chapter's LaTeX; each is typeset and checked alone."""
    started = time.monotonic()
    out = args.build / args.edition
    latex, doctrees = out / "latex-handouts", out / "doctrees-handouts"
    if not sphinx_latex(args, latex, doctrees, ("handout",)):
        return 1
    print(f"handouts: LaTeX of every chapter written ({time.monotonic() - started:.1f} s)")
    folder = out / "pdf" / "handouts"
    shutil.rmtree(folder, ignore_errors=True)
    failed = False
    # Here: the extension's render stage imports myst-nb's and SQLAlchemy's (~0.7 s), which
    # a build stopped for a missing tool or font, or --help, never needs.
    from coursebook.render.handouts import MANIFEST

    written = json.loads((latex / MANIFEST).read_text(encoding="utf8"))
    unknown = sorted(set(args.chapter) - {handout["docname"] for handout in written})
    if unknown:
        print(f"pdf: no chapter {', '.join(unknown)} in the book: --chapter takes a chapter's "
              f"name, one of {', '.join(handout['docname'] for handout in written)}.",
              file=sys.stderr)
        return 2
    for handout in written:
        if args.chapter and handout["docname"] not in args.chapter:
            continue
        began = time.monotonic()
        stem = handout["docname"]
        pdf = folder / f"{stem}.pdf"
        typeset_pdf = typeset(latex, stem, args.single_pass)
        if typeset_pdf is None:
            print(f"pdf: {handout['source']}: its handout did not typeset", file=sys.stderr)
            failed = True
            continue
        # A handout is one chapter: every problem is that chapter's (a missing character,
        # at the line that prints it).
        where = f"{handout['source']} (handout {pdf.name})"
        problems = located(check_pdf(typeset_pdf, latex / f"{stem}.log"), args.source, doctrees,
                           latex / f"{stem}.tex", [handout["docname"]])
        problems = [problem if problem.chapter else replace(problem, chapter=where)
                    for problem in problems]
        if not publish(typeset_pdf, pdf, problems, handout["source"]):
            failed = True
            continue
        print(f"handouts: wrote {pdf} ({pages(pdf)} pages, {time.monotonic() - began:.1f} s)")
    if args.edition == "student" and folder.is_dir():
        leaks = audit_build(folder, chapter_fingerprints(args.source))
        for leak in leaks:
            print(f"pdf: a student handout holds an answer: {leak}", file=sys.stderr)
        # One result line, found or not: a reader sees that the audit ran.
        print(f"handouts: answer audit of {len(list(folder.glob('*.pdf')))} student handout(s): "
              + (f"{len(leaks)} answer(s) found (above)" if leaks else "no answer found"))
        failed = failed or bool(leaks)
    print(f"handouts: {args.edition} edition done in {time.monotonic() - started:.1f} s")
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("edition", choices=("student", "instructor"))
    parser.add_argument("--handouts", action="store_true",
                        help="one PDF per chapter, in _build/<edition>/pdf/handouts/")
    parser.add_argument("--chapter", action="append", default=[], metavar="NAME",
                        help="with --handouts: typeset this chapter's handout only (repeatable; "
                             "default: every chapter), e.g. pt01")
    parser.add_argument("--single-pass", action="store_true",
                        help="typeset each PDF once, to check its pages (a chapter's lines as "
                             "the full run sets them): no contents, index, bookmarks or links yet")
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
    fonts = fonts_not_installed()
    if fonts:
        print(f"pdf: the fonts {', '.join(fonts)} are not installed: run `make pdf-deps` "
              f"(Debian/Ubuntu: apt-get install {' '.join(PACKAGES)}).", file=sys.stderr)
        return 2
    return build_handouts(args) if args.handouts else build_book(args)


if __name__ == "__main__":
    sys.exit(main())
