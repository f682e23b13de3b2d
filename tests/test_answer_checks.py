"""Students check their own answers without seeing them (coursebook.self_check and the
checks an answer cell lists): a right value is "correct", a wrong one "not yet" with its
hint; the student's notebook holds digests, never an answer; the instructor edition runs
every answer through its own check."""

from __future__ import annotations

import json
import re
from pathlib import Path
import subprocess
import sys

import nbformat
import pytest

from conftest import CHAPTER_TOP, ROOT, TORCH_VERSION, sphinx_build
from coursebook import self_check
from coursebook.answer_checks.audit import check_tables
from coursebook.answer_checks.model import AnswerCheckError, notebook_checks
from coursebook.answer_checks.prepare import SETUP_TAG
from coursebook.audit.answer_leaks import audit_build, chapter_fingerprints
from coursebook.model.notebooks import cell_tags, is_chapter_source, read_chapter
from coursebook.prepare.chapters import edition_chapter
from coursebook.prepare.editions import Edition, edition_notebook

CHAPTER = CHAPTER_TOP.format(extra="") + """
(tiny-checks)=
# Checks

```{code-cell} ipython3
:tags: [remove-cell]
%xmode Minimal
```

What does `a.grad` hold after two backward calls, and what shape has `x @ w`?

```{code-cell} ipython3
import torch
a = torch.tensor([1., 2.], requires_grad=True)
```

```{code-cell} ipython3
---
tags: [answer]
checks:
- name: tiny-grad
  ask: the contents of a.grad
  value: a.grad
  answer: [5.0, 7.0]
  accept: ["(5, 7)", "[5.00009, 7.0]"]
  refuse: ["[2.0, 4.0]", "[5.00011, 7.0]"]
  hint: does backward() replace .grad or add to it?
  taught_in: [tiny-checks]
- name: tiny-shape
  ask: the shape of x @ w
  value: (torch.zeros(5, 4) @ torch.zeros(4, 3)).shape
  answer: [5, 3]
  accept: ["(5, 3)"]
  refuse: ["[5, 4, 3]", "(3, 5)"]
  hint: the inner axes meet and vanish.
  taught_in: [tiny-checks]
---
a.square().sum().backward()
(3 * a).sum().backward()
print(a.grad)
```

The end.
"""


def _run(source: str, namespace: dict | None = None) -> tuple[dict, str]:
    """Run a cell's code here, as the student's kernel would; its namespace and printout."""
    import contextlib
    import io

    namespace = {} if namespace is None else namespace
    out = io.StringIO()
    code = "\n".join(line for line in source.splitlines() if not line.startswith("%"))  # magics
    with contextlib.redirect_stdout(out):
        exec(code, namespace)
    return namespace, out.getvalue()


def _editions(text: str = CHAPTER) -> dict[Edition, nbformat.NotebookNode]:
    source = read_chapter(text)
    return {edition: edition_notebook(source, edition) for edition in Edition}


def _passes(answer, value, tolerance=1e-4, name="c") -> bool:
    """Whether ``value`` passes the check whose answer is ``answer``, as a notebook checks."""
    from coursebook.answer_checks.prepare import check_table
    from coursebook.answer_checks.model import AnswerCheck

    table = check_table([AnswerCheck(name, "?", "v", answer, "h", tolerance, "")])
    namespace: dict = {}
    exec(Path(self_check.__file__).read_text(encoding="utf8"), namespace)
    namespace["CHECKS"].update(table)
    return namespace["passes"](name, value)


def test_equal_answers_pass_whatever_their_form():
    import torch

    grad = torch.tensor([5., 7.])
    assert _passes(grad, [5, 7.00001]) and _passes([5, 7], grad)
    assert _passes(torch.Size([5, 3]), (5, 3)) and _passes((5, 3), torch.Size([5, 3]))
    assert _passes(torch.tensor(1.3), 1.3) and _passes(0.0, -0.00001)
    assert _passes(" Cross  Entropy", "cross entropy", 1)


@pytest.mark.parametrize("answer, value, tolerance, passes", [
    ([5., 7.], [5.00006, 7], 1e-4, True), ([5., 7.], [4.99994, 7], 1e-4, True),
    (2 / 3, 0.6665, 1e-3, True), (0.6667, 0.6665, 1e-3, True), (2 / 3, 2 / 3 + 9e-4, 1e-3, True),
    ([5., 7.], [5.00011, 7], 1e-4, False), ([5., 7.], [4.99989, 7], 1e-4, False),
    (2 / 3, 0.6655, 1e-3, False), (2 / 3, 2 / 3 - 1.1e-3, 1e-3, False),
    ([0.05, 0.15], [0.0549, 0.1451], 1e-2, True),  # the old grid's edges (0.05 and 0.15)
])
def test_within_the_tolerance_passes_and_beyond_it_does_not(answer, value, tolerance, passes):
    """No rounding grid: 5.00006 and 4.99994 are both within 1e-4 of 5 (a grid of 1e-4 put
    them on either side of an edge), 0.6665 within 1e-3 of 2/3."""
    assert _passes(answer, value, tolerance) is passes


def test_a_tensor_copied_out_for_the_comparison_prints_no_warning():
    """torchax's tensors warn, copied out of JAX ("The given NumPy array is not writable"):
    the check's own copy, not the student's code, so the verdict is printed alone."""
    import warnings

    import torch

    class FromJax:  # a stand-in: torchax is not in the book's environment
        def detach(self):
            return self

        def cpu(self):
            warnings.warn("The given NumPy array is not writable", UserWarning)
            return torch.tensor([0.5])

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert self_check.canonical(FromJax(), []) == ["#"]
    assert not seen, [str(w.message) for w in seen]


def test_different_answers_or_names_have_different_digests():
    assert self_check.digest("c", [5., 7.], 1e-4) != self_check.digest("c", [5., 7.1], 1e-4)
    assert not _passes([5., 7.], [5., 7.1]) and not _passes([5., 7.], [[5., 7.]])
    assert not _passes(True, 1) and not _passes(1, True) and not _passes([5., 7.], [5., 7., 0.])
    assert self_check.digest("c", [5., 7.], 1e-4) != self_check.digest("c", [[5., 7.]], 1e-4)
    assert self_check.digest("c", True, 1e-4) != self_check.digest("c", 1, 1e-4)
    assert self_check.digest("c", [5., 7.], 1e-4) != self_check.digest("d", [5., 7.], 1e-4)


def test_the_student_notebook_checks_without_holding_the_answer():
    student = _editions()[Edition.STUDENT]
    text = "\n".join(cell.source for cell in student.cells)
    assert "a.square().sum().backward()" not in text  # the answer cell is gone
    for answer in ("5.0, 7.0", "[5, 3]", "The book"):
        assert answer not in text
    (table,) = check_tables(student)
    assert set(table) == {"tiny-grad", "tiny-shape"}
    assert all(set(entry) == {"digest", "numbers", "tolerance", "hint", "ask"}
               for entry in table.values())
    setup = [cell for cell in student.cells if SETUP_TAG in cell.metadata.get("tags", [])]
    assert len(setup) == 1 and "remove-cell" in setup[0].metadata.tags
    calls = student.cells[student.cells.index(setup[0]) + 1]
    assert 'check("tiny-grad", ...)' in calls.source and 'check("tiny-shape", ...)' in calls.source


def test_the_student_edition_says_where_the_checks_run_before_the_first():
    """On the page the check cells show and their table does not: the note before them
    says they run only in the notebook; the instructor edition has no such note."""
    from coursebook.answer_checks.prepare import NOTE, NOTE_TAG

    editions = _editions()
    student = editions[Edition.STUDENT]
    notes = [index for index, cell in enumerate(student.cells)
             if NOTE_TAG in cell.metadata.get("tags", [])]
    assert len(notes) == 1 and student.cells[notes[0]].cell_type == "markdown"
    assert student.cells[notes[0]].source == NOTE and "NameError" in NOTE
    assert SETUP_TAG in student.cells[notes[0] + 1].metadata.tags
    assert not any(NOTE_TAG in cell.metadata.get("tags", [])
                   for cell in editions[Edition.INSTRUCTOR].cells)


def test_no_hint_is_readable_in_the_student_notebook_before_a_wrong_try():
    student = _editions()[Edition.STUDENT]
    text = "\n".join(cell.source for cell in student.cells).lower()
    for hint in ("does backward() replace .grad", "the inner axes meet and vanish"):
        assert hint not in text
    setup = next(cell for cell in student.cells if SETUP_TAG in cell.metadata.get("tags", []))
    namespace, out = _run(setup.source)
    assert out == ""
    _, out = _run('check("tiny-shape", (5, 4))', {**namespace})
    assert out.strip() == ("tiny-shape: not yet. Hint: the inner axes meet and vanish. "
                           "Revisit: “Checks”.")


def test_right_values_are_correct_and_wrong_ones_get_their_hint():
    import torch

    student = _editions()[Edition.STUDENT]
    setup = next(cell for cell in student.cells if SETUP_TAG in cell.metadata.get("tags", []))
    namespace, _ = _run(setup.source)
    _, out = _run('check("tiny-grad", torch.tensor([5., 7.]))\n'
                  'check("tiny-shape", (torch.zeros(5, 4) @ torch.zeros(4, 3)).shape)\n'
                  'check("tiny-grad", torch.tensor([2., 4.]))\n'
                  'check("tiny-shape", (5, 4))\n'
                  'check("tiny-shape", ...)\n', {**namespace, "torch": torch})
    assert out.splitlines() == [
        "tiny-grad: correct", "tiny-shape: correct",
        "tiny-grad: not yet. Hint: does backward() replace .grad or add to it? "
        "Revisit: “Checks”.",
        "tiny-shape: not yet. Hint: the inner axes meet and vanish. Revisit: “Checks”.",
        "tiny-shape: put your answer in place of ... and run the cell again (the shape of x @ w)"]


def test_a_check_cell_shows_its_verdict_and_no_value():
    """check() prints and returns nothing: a notebook shows no stray True or False under
    the cell; the instructor's assertion asks passes()."""
    student = _editions()[Edition.STUDENT]
    setup = next(cell for cell in student.cells if SETUP_TAG in cell.metadata.get("tags", []))
    namespace, _ = _run(setup.source)
    for value in ([5, 7], [1, 1], ..., "text"):
        assert namespace["check"]("tiny-grad", value) is None
    assert namespace["passes"]("tiny-grad", [5, 7]) is True
    assert namespace["passes"]("tiny-grad", [1, 1]) is False


def test_a_question_written_on_several_lines_stays_a_comment():
    text = CHAPTER.replace("  ask: the shape of x @ w\n",
                           "  ask: |\n    the shape of x @ w,\n    as a list\n")
    [cell] = [cell for cell in _editions(text)[Edition.STUDENT].cells
              if cell.metadata.get("tags") == ["self-check"]]
    compile(cell.source, "the student's check cell", "exec")
    assert '# the shape of x @ w, as a list' in cell.source


def test_the_check_cell_is_plain_python():
    """It runs in a Python that has neither torch nor the book: nothing to install."""
    student = _editions()[Edition.STUDENT]
    setup = next(cell for cell in student.cells if SETUP_TAG in cell.metadata.get("tags", []))
    code = ("import sys\nclass NoImports:\n    def find_spec(self, name, path=None, target=None):\n"
            "        if name.split('.')[0] in ('torch', 'numpy', 'coursebook'):\n"
            "            raise ImportError(name)\nsys.meta_path.insert(0, NoImports())\n"
            + setup.source + '\ncheck("tiny-shape", [5, 3])\n')
    done = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == "tiny-shape: correct", done.stderr


def test_the_instructor_edition_runs_each_answer_through_its_check():
    instructor = _editions()[Edition.INSTRUCTOR]
    namespace: dict = {}
    for cell in instructor.cells:
        if cell.cell_type == "code":
            _run(cell.source, namespace)
    assert namespace["a"].grad.tolist() == [5.0, 7.0]
    wrong = CHAPTER.replace("answer: [5.0, 7.0]", "answer: [5.0, 7.5]")
    namespace = {}
    with pytest.raises(AssertionError, match="the answer of check tiny-grad does not pass"):
        for cell in _editions(wrong)[Edition.INSTRUCTOR].cells:
            if cell.cell_type == "code":
                _run(cell.source, namespace)


@pytest.mark.parametrize("change, message", [
    ("  hint: the inner axes meet and vanish.\n", "missing hint"),
    ("  answer: [5, 3]\n", "missing answer"),
    ("  value: (torch", "  valu: (torch"),
])
def test_a_malformed_check_is_refused(change, message):
    text = CHAPTER.replace(change, "" if not change.startswith("  value") else message)
    with pytest.raises(AnswerCheckError, match="missing|unknown"):
        notebook_checks(read_chapter(text))


@pytest.mark.parametrize("old, new, message", [
    ("tags: [answer]\nchecks:", "tags: []\nchecks:",
     "only an answer code cell (tag `answer`) may list 'checks'"),
    ("checks:\n- name: tiny-grad", "checks:\n- a check\n- name: tiny-grad",
     "each check is a table of name, ask, value, answer, hint"),
    ("- name: tiny-shape", "- name: tiny-grad", "check name 'tiny-grad' is used twice"),
])
def test_checks_out_of_their_place_or_shape_are_refused(old, new, message):
    assert old in CHAPTER
    with pytest.raises(AnswerCheckError) as refused:
        notebook_checks(read_chapter(CHAPTER.replace(old, new, 1)))
    assert message in str(refused.value)


@pytest.mark.parametrize("tolerance", [".inf", ".nan", "0", "-1", "true"])
def test_a_tolerance_that_is_no_positive_finite_number_is_refused(tolerance):
    """An infinite tolerance would call every value correct; a nan one breaks the digest."""
    text = CHAPTER.replace("answer: [5, 3]\n", f"answer: [5, 3]\n  tolerance: {tolerance}\n")
    with pytest.raises(AnswerCheckError, match="tolerance must be a positive"):
        notebook_checks(read_chapter(text))


@pytest.mark.parametrize("planted, entry, verdict", [
    # A wrong answer in accept: 5.00011 lies beyond the tolerance (1e-4) of 5.
    (('accept: ["(5, 7)", "[5.00009, 7.0]"]', 'accept: ["(5, 7)", "[5.00011, 7.0]"]'),
     "accept entry [5.00011, 7.0]", "refused"),
    # A right answer in refuse: a tuple is a right form of the shape [5, 3].
    (('refuse: ["[5, 4, 3]", "(3, 5)"]', 'refuse: ["[5, 4, 3]", "(5, 3)"]'),
     "refuse entry (5, 3)", "accepted"),
])
def test_a_check_that_accepts_a_wrong_answer_or_refuses_a_right_one_stops_the_build(
        planted, entry, verdict):
    """The build tries each check's lists with the students' own check code, and stops at
    the answer cell, naming the check, the entry and what to fix."""
    text = CHAPTER.replace(*planted)
    assert text != CHAPTER
    for edition in Edition:
        with pytest.raises(AnswerCheckError) as stopped:
            edition_chapter(text, "book/checks.md", edition, {}, "2.13.0")
        error = stopped.value
        assert str(error.path) == "book/checks.md"
        assert error.line == text.splitlines().index("a.square().sum().backward()") + 1  # the cell
        assert f"check '{'tiny-grad' if 'accept' in entry else 'tiny-shape'}'" in error.message
        assert f"{entry} is {verdict} by the students' check" in error.message
        assert "\n" not in error.message
    assert edition_chapter(CHAPTER, "book/checks.md", Edition.STUDENT, {}, "2.13.0").notebook.cells


@pytest.mark.parametrize("change, fault", [
    ('  accept: ["(5, 3)"]\n', "missing accept"),
    ('  refuse: ["[5, 4, 3]", "(3, 5)"]\n', "missing refuse"),
    ('  refuse: ["[5, 4, 3]", "(3, 5)"]\n', r"not a list of Python literals .*: refuse"),
])
def test_a_check_without_its_lists_is_refused(change, fault):
    """Every check lists right answers to accept and wrong ones to refuse, each as a student
    types it (a Python literal); an empty list, data or code are refused."""
    replacement = '  refuse: [[5, 4, 3]]\n' if "literals" in fault else ""
    text = CHAPTER.replace(change, replacement)
    with pytest.raises(AnswerCheckError, match=fault):
        notebook_checks(read_chapter(text))
    for entry in ("[]", '["torch.Size([5, 4])"]', '["(5,"]'):
        with pytest.raises(AnswerCheckError, match="not a list of Python literals"):
            notebook_checks(read_chapter(
                CHAPTER.replace(change, change.split(":")[0] + f": {entry}\n")))


def test_every_check_of_the_book_holds_its_lists():
    """The book's chapters: each check accepts its answer and its accept list, in at least
    one form besides the answer, and refuses each entry of its refuse list."""
    from coursebook.answer_checks.prepare import mistried

    chapters = [path for path in sorted((ROOT / "book").glob("*.md"))
                if is_chapter_source(path.read_text(encoding="utf8"))]
    checks = {path.name: notebook_checks(read_chapter(path.read_text(encoding="utf8")))
              for path in chapters}
    assert checks["pt01.md"]
    for name, found in checks.items():
        assert all(check.accept and check.refuse for check in found), name
        assert [str(error) for error in mistried(found)] == [], name


def _numbers(value) -> list:
    numbers: list = []
    self_check.canonical(value, numbers)
    return numbers


def _moves(check, entries) -> list[float]:
    """How far each entry of the answer's form moves every number of the answer, in
    tolerances, when it moves them all one way (positive: up)."""
    from coursebook.answer_checks.model import literal

    answer = _numbers(check.answer)
    moves = []
    for entry in entries:
        value = literal(entry)
        if self_check.canonical(value, []) != self_check.canonical(check.answer, []):
            continue
        shifts = [(got - want) / check.tolerance for got, want in zip(_numbers(value), answer)]
        if shifts and (all(shift > 0 for shift in shifts) or all(shift < 0 for shift in shifts)):
            moves.append(min(shifts, key=abs))
    return moves


def test_every_real_valued_check_of_the_book_tries_both_edges_of_its_tolerance():
    """A check whose answer holds a real number accepts the answer with every number moved
    by just under the tolerance, up and down, and refuses it moved by just over: the build's
    trial of the lists (in the students' check code) then proves the bound lies where it is
    said to be on both sides, with no grid edge and no rounded centre shifting it."""
    chapters = [path for path in sorted((ROOT / "book").glob("*.md"))
                if is_chapter_source(path.read_text(encoding="utf8"))]
    tried = 0
    for path in chapters:
        for check in notebook_checks(read_chapter(path.read_text(encoding="utf8"))):
            if check.inputs or not any(isinstance(n, float) for n in _numbers(check.answer)):
                continue  # a function's lists are functions; integers (shapes) have no edge
            inside, outside = _moves(check, check.accept), _moves(check, check.refuse)
            for side in (1, -1):
                assert any(0.95 <= side * move < 1 for move in inside), (check.name, side)
                assert any(1 < side * move <= 1.05 for move in outside), (check.name, side)
            tried += 1
    assert tried >= 10


def _book_chapters():
    """Each chapter of the book: its file's name and its notebook."""
    for path in sorted((ROOT / "book").glob("*.md")):
        text = path.read_text(encoding="utf8")
        if is_chapter_source(text):
            yield path.name, read_chapter(text)


def _book_checks():
    """Each check of the book's chapters: its chapter's name, the check, its chapter's cells
    and the index of its answer cell among them."""
    for chapter, notebook in _book_chapters():
        at = {entry["name"]: index for index, cell in enumerate(notebook.cells)
              for entry in cell.metadata.get("checks", [])}
        for check in notebook_checks(notebook):
            yield chapter, check, notebook.cells, at[check.name]


def _rounded(value, decimals: int):
    if isinstance(value, float):
        return round(value, decimals)
    return [_rounded(item, decimals) for item in value] if isinstance(value, list) else value


DECIMALS = {"two": 2, "three": 3, "four": 4, "five": 5}


def test_a_check_whose_answer_two_decimals_miss_says_how_many_decimals_count():
    """A student types a number by hand, rounded as people write it: 0.67 for 2/3. Where two
    decimals fall outside the tolerance, the question says how many count, and the answer
    rounded to them passes (0.67 was refused with the hint to average the squared errors,
    which the student had done)."""
    told = 0
    for chapter, check, _, _ in _book_checks():
        if check.inputs or _passes(check.answer, _rounded(check.answer, 2), check.tolerance):
            continue
        said = re.search(r"\b(" + "|".join(DECIMALS) + r") decimals\b", check.ask)
        assert said, f"{chapter}: check {check.name}: its ask '{check.ask}' says no decimals"
        decimals = DECIMALS[said[1]]
        assert _passes(check.answer, _rounded(check.answer, decimals), check.tolerance), check.name
        told += 1
    assert told >= 2


def test_a_value_its_answer_copies_before_changing_it_is_asked_for_as_a_copy():
    """One check cell follows a whole question: a check of a.grad after two of three
    backward() calls, answered `a.grad` there, reads the third call's gradient and is refused
    although the student was right. Where the answer keeps such a value as a copy
    (`grad_after_two_calls = a.grad.clone()`), the question says to take one."""
    copied = 0
    for chapter, check, cells, at in _book_checks():
        if re.search(rf"^{re.escape(check.value)} = .*\.clone\(\)$", cells[at].source,
                     re.MULTILINE):
            assert ".clone()" in check.ask, f"{chapter}: check {check.name}: '{check.ask}'"
            copied += 1
    assert copied >= 1


def test_a_check_on_torchax_tensors_says_how_to_run_it_once_the_modes_are_off():
    """A check whose own inputs are made on torchax's 'jax' device needs torchax's modes on;
    where a later cell takes them down (Run all runs it), a right function coming back to
    the check got 'Your function raised RuntimeError: PyTorch is not linked with support for
    jax devices'. The exercise's text above it says to turn the modes on again."""
    told = 0
    for chapter, check, cells, at in _book_checks():
        if '.to("jax")' not in check.inputs:
            continue
        if not any("torchax.disable_globally()" in cell.source for cell in cells[at:]
                   if cell.cell_type == "code"):
            continue
        text = next(cell.source for cell in reversed(cells[:at]) if cell.cell_type == "markdown")
        assert "torchax.enable_globally()" in text, f"{chapter}: check {check.name}"
        told += 1
    assert told >= 1


def test_each_exercises_test_cell_says_when_the_students_function_passed():
    """A lab's test cell ("Write sum_diagonals first." while the stub returns None) says
    `... passed` once its assertions hold: cosine_similarity's printed only its matrix, and
    a student whose function was right could not tell that it had passed."""
    tested = 0
    for chapter, notebook in _book_chapters():
        for cell in notebook.cells:
            for name in re.findall(r'print\("Write (\w+) first\."\)', cell.source):
                assert re.search(rf'print\(f?"{name} passed', cell.source), f"{chapter}: {name}"
                tested += 1
    assert tested >= 3


@pytest.mark.parametrize("answer, rounded", [
    ("answer: 0.6666666666666666\n", "answer: 0.6667\n"),
    ("[0.21194155761708547, 0.21194155761708547, 0.5761168847658291]",
     "[0.2119, 0.2119, 0.5761]"),
])
def test_a_rounded_centre_in_the_book_fails_the_trial_of_its_own_lists(answer, rounded):
    """PT01's MSE once held 0.6667 for 2/3 (at 1e-3, 0.6677 passed and 0.66567 did not),
    its softmax 4-place roundings: planted back, an entry just inside the tolerance is
    refused (and one just outside it may be accepted), with the same code the build runs."""
    from coursebook.answer_checks.prepare import mistried

    text = (ROOT / "book" / "pt01.md").read_text(encoding="utf8")
    assert text.count(answer) == 1
    errors = [str(error) for error in
              mistried(notebook_checks(read_chapter(text.replace(answer, rounded))))]
    assert any(re.search(r"accept entry .* is refused by the students' check", error)
               for error in errors), errors


def test_the_instructor_edition_stops_at_an_answer_rounded_within_its_tolerance():
    """7.00003 lies within the tolerance (1e-4) of the 7.0 the cell computes, so the check
    passes it, but it moves the tolerance's centre: the instructor edition stops there."""
    rounded = CHAPTER.replace("answer: [5.0, 7.0]", "answer: [5.0, 7.00003]")
    assert rounded != CHAPTER
    namespace: dict = {}
    with pytest.raises(AssertionError, match=re.escape(
            "check tiny-grad: its answer is not the value its cell computes, "
            "whose numbers are [5.0, 7.0]")):
        for cell in _editions(rounded)[Edition.INSTRUCTOR].cells:
            if cell.cell_type == "code":
                _run(cell.source, namespace)
    assert namespace["passes"]("tiny-grad", namespace["a"].grad)  # within the tolerance
    _ran(Edition.INSTRUCTOR)  # the exact answers (a function's too) go through


def test_the_instructor_check_cell_asks_self_check_for_exactness_in_one_call_per_check():
    """The exactness assertion lives in coursebook/self_check.py (``exact``), which the
    instructor's check cell calls once per answer: no digest arithmetic, no walrus, no value
    computed twice in the generated cell. A function's rounded answer stops there too."""
    cells = _editions(FUNCTION_CHAPTER)[Edition.INSTRUCTOR].cells
    calls = [cell.source for cell in cells
             if "passes(" in cell.source and "def " not in cell.source]
    assert calls and all(":=" not in source and "digest(" not in source for source in calls)
    assert any('\nexact("tiny-grad", a.grad)' in source for source in calls)
    assert any('\nexact("tiny-centred", centred)' in source for source in calls)
    rounded = FUNCTION_CHAPTER.replace("[[-0.5, 0.5], [-0.5, 0.5], [-0.5, 0.5]]",
                                       "[[-0.50004, 0.5], [-0.5, 0.5], [-0.5, 0.5]]", 1)
    assert rounded != FUNCTION_CHAPTER
    with pytest.raises(AssertionError, match=re.escape(
            "check tiny-centred: its answer is not the value its cell computes, whose numbers "
            "are [-0.5, 0.5")):
        _ran(Edition.INSTRUCTOR, rounded)


_ENTRY = re.compile(r"^=== cell \S+(?: \((student|instructor)\))?(?: \(varies\))? · ")


def _printed_values(text: str) -> list:
    """The values an output shows as data: each outermost bracketed list (a tensor's
    entries, a printed list) and each scalar tensor's number."""
    import ast

    values = [float(number) for number in
              re.findall(r"tensor\((-?\d+\.?\d*(?:e[-+]?\d+)?)[,)]", text)]
    depth = start = 0
    for at, character in enumerate(text):
        if character == "[":
            depth, start = depth + 1, (at if depth == 0 else start)
        elif character == "]" and depth:
            depth -= 1
            if depth == 0:
                try:
                    values.append(ast.literal_eval(text[start:at + 1]))
                except (ValueError, SyntaxError):
                    pass  # a bracketed name ([torch.FloatTensor [2]]): no value
    return values


def _printed_before_checks(expected: str) -> dict[str, list]:
    """Each check a chapter's instructor edition passes, with the values the student
    edition printed above it (the outputs its accepted expected file holds, in order)."""
    before: dict[str, list] = {}
    printed: list = []
    entries = re.split(r"(?m)^(?==== cell )", expected)
    for entry in entries:
        header = _ENTRY.match(entry)
        if not header:
            continue
        if header[1] != "instructor":
            printed += _printed_values(entry.split("\n", 1)[1] if "\n" in entry else "")
        for name in re.findall(r"(?m)^    (\S+): correct$", entry):
            before[name] = list(printed)
    return before


def _quoted_before_checks(notebook) -> dict[str, list]:
    """Each check of a chapter, with the values its student prose quotes above it."""
    from coursebook.answer_checks.model import cell_checks
    from coursebook.model.notebooks import is_answer

    before: dict[str, list] = {}
    quoted: list = []
    for cell in notebook.cells:
        if cell.cell_type == "markdown" and not is_answer(cell):
            quoted += _printed_values(cell.source)
        for check in cell_checks(cell):
            before[check.name] = list(quoted)
    return before


def test_no_check_accepts_a_value_the_student_edition_printed_before_it():
    """A check asks for what a repair or a computation gives, not for what a cell as given
    already prints (PT01's detectives 1 and 2 each accepted the gradient the other's cell,
    and the closer look at autograd, printed): every value printed, or quoted by the prose,
    above a check in the student edition is refused by it."""
    from coursebook.answer_checks.prepare import setup_source
    from coursebook.verify.expectations import expectations_path

    tried = 0
    for path in sorted((ROOT / "book").glob("*.md")):
        text = path.read_text(encoding="utf8")
        expected = expectations_path(ROOT / "book" / "expected", TORCH_VERSION, path.stem)
        if not is_chapter_source(text) or not Path(ROOT / expected).is_file():
            continue
        checks = [check for check in notebook_checks(read_chapter(text)) if not check.inputs]
        namespace: dict = {}
        exec(setup_source(checks), namespace)
        before = _printed_before_checks((ROOT / expected).read_text(encoding="utf8"))
        quoted = _quoted_before_checks(read_chapter(text))
        for check in checks:
            given_away = [value for value in before[check.name] + quoted[check.name]
                          if namespace["passes"](check.name, value)]
            assert given_away == [], (check.name, given_away)
            tried += len(before[check.name] + quoted[check.name])
    assert tried > 100


FUNCTION_CHECK = """```{code-cell} ipython3
def centred(rows):
    return rows  # repair this: each row minus its own mean
```

```{code-cell} ipython3
---
tags: [answer]
checks:
- name: tiny-centred
  ask: your function centred itself
  value: centred
  inputs: |
    import torch
    inputs = [(torch.arange(6.).reshape(3, 2),), (torch.tensor([[1., 3.], [5., 7.]]),)]
  answer: [[[-0.5, 0.5], [-0.5, 0.5], [-0.5, 0.5]], [[-1.0, 1.0], [-1.0, 1.0]]]
  accept: ["lambda rows: rows - rows.mean(dim=-1, keepdim=True)",
           "lambda rows: (rows.T - rows.mean(dim=1)).T"]
  refuse: ["lambda rows: rows - rows.mean()", "lambda rows: rows - rows.mean(dim=0, keepdim=True)"]
  hint: each row loses its own mean.
  taught_in: [tiny-checks]
---
def centred(rows):
    return rows - rows.mean(dim=1, keepdim=True)
```

The end.
"""
FUNCTION_CHAPTER = CHAPTER.replace("The end.\n", FUNCTION_CHECK)


def _ran(edition: Edition, text: str = FUNCTION_CHAPTER) -> dict:
    namespace: dict = {}
    for cell in _editions(text)[edition].cells:
        if cell.cell_type == "code":
            _run(cell.source, namespace)
    return namespace


def test_a_function_check_runs_the_students_function_on_its_own_inputs():
    """The student passes a function; the check calls it on its own inputs (two tensors,
    one square, so a mean along the wrong axis cannot pass by luck) and compares what it
    returns; a value, or a function that raises, is "not yet" with what went wrong."""
    namespace = _ran(Edition.STUDENT)
    student_text = "\n".join(cell.source
                             for cell in _editions(FUNCTION_CHAPTER)[Edition.STUDENT].cells)
    assert "keepdim" not in student_text and "-0.5" not in student_text
    verdicts = {
        "lambda rows: rows - rows.mean(dim=1, keepdim=True)": "tiny-centred: correct",
        "lambda rows: rows - rows.mean(dim=1)": (
            "tiny-centred: not yet. Your function raised RuntimeError on the check's input "
            "(a tensor of shape (3, 2)): The size of tensor a (2) must match"),
        # A TypeError of the student's own read as the check's ("not yet. mean() received
        # an invalid combination of arguments"), without saying the function raised it.
        "lambda rows: rows - rows.mean(dim='rows')": (
            "tiny-centred: not yet. Your function raised TypeError on the check's input "
            "(a tensor of shape (3, 2)): mean() received"),
        "centred": "tiny-centred: not yet. Hint: each row loses its own mean.",  # as given
        "torch.tensor([[-0.5, 0.5], [-0.5, 0.5], [-0.5, 0.5]])": (
            "tiny-centred: not yet. this check wants your function itself"),
    }
    for value, verdict in verdicts.items():
        _, out = _run(f'check("tiny-centred", {value})', namespace)
        assert out.startswith(verdict), (value, out)
    # The check's own inputs failing (torchax's modes off, after Run all) is not the
    # student's function raising, which the check said it was.
    on_jax = "import torch\ninputs = [(torch.ones(2).to('jax'),)]"
    namespace["CHECKS"]["tiny-centred"]["inputs"] = on_jax
    _, out = _run('check("tiny-centred", lambda rows: rows)', namespace)
    assert out.startswith("tiny-centred: cannot check yet: making the check's own inputs raised "
                          "RuntimeError: "), out


def test_a_check_cell_that_raised_names_the_check_to_correct():
    """A refuse entry that raised on the check's own inputs stopped the instructor edition
    at its check cell with "Fix the cell, or tag it `raises-exception`": a cell the build
    writes, that no author fixes or tags. The message sends them to the `checks:` instead."""
    from docutils import nodes

    from coursebook.answer_checks.model import CHECK_TAG
    from coursebook.verify.chapter_checks import cell_problems

    raising = 'refuse: ["lambda rows: rows - rows.mean(1)", "lambda'  # (3, 2) - (3,) raises
    text = FUNCTION_CHAPTER.replace('refuse: ["lambda', raising)
    assert text.count("rows.mean(1)") == 1
    cells = _editions(text)[Edition.INSTRUCTOR].cells
    *_, at = [index for index, cell in enumerate(cells) if CHECK_TAG in cell_tags(cell)]
    namespace: dict = {}
    for cell in cells[:at]:
        if cell.cell_type == "code":
            _run(cell.source, namespace)
    with pytest.raises(RuntimeError) as raised:
        _run(cells[at].source, namespace)
    doctree = nodes.container()
    doctree += nodes.container(nb_element="cell_code", cell_index=at,
                               cell_metadata={"tags": cell_tags(cells[at])})
    doctree[0] += nodes.literal_block("", f"RuntimeError: {raised.value}", classes=["traceback"])
    [problem] = cell_problems(doctree, cells, True, None)
    assert "raised an error it was not tagged for" in problem.message
    assert "correct the check there" in problem.message, problem.message
    assert "raises-exception" not in problem.message, problem.message


@pytest.mark.parametrize("planted, message", [
    (("lambda rows: rows - rows.mean(dim=-1, keepdim=True)", "lambda rows: rows - rows.mean()"),
     "check tiny-centred: accept entry lambda rows: rows - rows.mean() is refused"),
    (("lambda rows: rows - rows.mean(dim=0, keepdim=True)",
      "lambda rows: rows - rows.mean(1, True)"),
     "check tiny-centred: refuse entry lambda rows: rows - rows.mean(1, True) is accepted"),
])
def test_a_function_checks_lists_are_tried_in_the_chapters_kernel(planted, message):
    """A function's accept and refuse entries need what the chapter defines: the instructor
    edition's check cell tries them after the answer, and a mismatch stops it there."""
    assert _ran(Edition.INSTRUCTOR)["passes"]("tiny-centred", _ran(Edition.INSTRUCTOR)["centred"])
    text = FUNCTION_CHAPTER.replace(*planted)
    assert text != FUNCTION_CHAPTER
    edition_chapter(text, "book/checks.md", Edition.STUDENT, {}, "2.13.0")  # not tried here
    with pytest.raises(AssertionError, match=re.escape(message)):
        _ran(Edition.INSTRUCTOR, text)


def test_the_audit_finds_an_answer_in_a_check_table(tmp_path):
    book = tmp_path / "book"
    book.mkdir()
    (book / "checks.md").write_text(CHAPTER)
    student = _editions()[Edition.STUDENT]
    build = tmp_path / "build"
    build.mkdir()
    nbformat.write(student, build / "checks.ipynb")
    assert audit_build(build, chapter_fingerprints(book)) == []
    readable = self_check.scramble("tiny-grad", "does backward() replace .grad or add to it? "
                                                "Revisit: “Checks”.")
    assert readable in (build / "checks.ipynb").read_text()  # the hint, scrambled
    for planted, leak in (('"hint": "', '"answer": [5.0, 7.0],\n  "hint": "'),
                          (readable, "does backward() replace .grad or add to it?"),
                          ('"the shape of x @ w"', '"the shape of x @ w, [5, 3]"'),
                          ('"the shape of x @ w"', '"the shape of x @ w: (5, 3)?"')):
        leaked = nbformat.read(build / "checks.ipynb", as_version=4)
        for cell in leaked.cells:
            cell.source = cell.source.replace(planted, leak)
        nbformat.write(leaked, build / "leaked.ipynb")
        leaks = [str(leak) for leak in audit_build(build, chapter_fingerprints(book))]
        assert leaks and all("leaked.ipynb" in leak for leak in leaks), leaks


@pytest.mark.parametrize("hint, leaks", [
    ("look at the 10th row", False), ("dim 2.1 is not a dim", False), ("x[21] is not it", False),
    ("it is 1.", True), ("1 of them", True), ("(1)", True),
])
def test_a_number_answer_is_spelled_only_as_a_number_of_its_own(hint, leaks):
    """Answer 1 is not spelled by the 1 of "10th"; "it is 1." spells it."""
    from pathlib import Path

    from coursebook.answer_checks.audit import table_leaks
    from coursebook.answer_checks.model import AnswerCheck

    check = AnswerCheck("n", "how many?", "n", 1, hint, 1e-4, "")
    table = {"n": {"digest": self_check.digest("n", 1, 1e-4), "tolerance": 1e-4,
                   "hint": self_check.scramble("n", hint), "ask": "how many?"}}
    found = table_leaks(Path("x.ipynb"), table, {table["n"]["digest"]: check})
    assert bool(found) is leaks, found


def test_the_audit_reads_a_table_against_its_own_chapters_answer(tmp_path):
    """Check names are unique in a chapter only: another chapter's check of the same name,
    with another answer, hides no leak."""
    book = tmp_path / "book"
    book.mkdir()
    spelled = CHAPTER.replace("ask: the shape of x @ w", "ask: the shape of x @ w, [5, 3]")
    (book / "a.md").write_text(spelled)
    (book / "b.md").write_text(CHAPTER.replace("answer: [5, 3]", "answer: [6, 3]")
                               .replace("torch.zeros(5, 4)", "torch.zeros(6, 4)"))
    build = tmp_path / "build"
    build.mkdir()
    nbformat.write(_editions(spelled)[Edition.STUDENT], build / "a.ipynb")
    leaks = [str(leak) for leak in audit_build(build, chapter_fingerprints(book))]
    assert any("'tiny-shape'" in leak and "'[5, 3]'" in leak for leak in leaks), leaks


@pytest.mark.slow
def test_a_build_checks_every_answer_and_stops_at_a_wrong_one(tmp_path):
    book = tmp_path / "book"
    book.mkdir()
    (book / "index.md").write_text("# Book\n\n```{toctree}\nchecks\n```\n")
    (book / "checks.md").write_text(CHAPTER)
    accept = {"coursebook_accept_outputs": "1",
              "coursebook_expected_dir": str(tmp_path / "expected")}
    for edition in ([], ["instructor"]):
        build = sphinx_build(book, tmp_path / "out" / "-".join(edition or ["student"]),
                             tmp_path / "cache", *edition, settings=accept)
        assert build.returncode == 0, build.log[-3000:]
    page = (tmp_path / "out" / "instructor" / "html" / "checks.html").read_text()
    assert "tiny-grad: correct" in page and "tiny-shape: correct" in page
    student_page = (tmp_path / "out" / "student" / "html" / "checks.html").read_text()
    assert "put your answer in place of" in student_page and "5.0, 7.0" not in student_page
    # A wrong answer whose lists agree with it: the build's trying passes, the kernel's does not.
    (book / "checks.md").write_text(CHAPTER.replace("answer: [5, 3]", "answer: [5, 4]").replace(
        'accept: ["(5, 3)"]', 'accept: ["(5, 4)"]'))
    failed = sphinx_build(book, tmp_path / "out" / "wrong", tmp_path / "cache", "instructor",
                          settings=accept)
    assert failed.returncode != 0
    assert "checks.md" in failed.log
    assert "the answer of check tiny-shape does not pass" in failed.log
    assert "Traceback" not in failed.log


@pytest.mark.slow
@pytest.mark.parametrize("lists, entry", [
    ("accept: ['42.0', '41'], refuse: ['43']", "accept entry 41 is refused by the students' check"),
    ("accept: ['42.0'], refuse: ['42']", "refuse entry 42 is accepted by the students' check"),
])
def test_a_build_stops_in_one_line_at_a_check_that_gets_its_lists_wrong(tiny_book, tmp_path,
                                                                        lists, entry):
    """The tiny book's answer, 42, checked: a wrong answer in accept, or the right one in
    refuse, stops the build with one line at the answer cell, naming the check, the entry
    and the fix; no traceback."""
    chapter = tiny_book / "chapter.md"
    text = chapter.read_text().replace("# A tiny chapter", "(tiny)=\n# A tiny chapter").replace(
        ":tags: [answer]\n", "---\ntags: [answer]\nchecks:\n"
        "- {name: tiny-value, ask: the value, value: tiny_answer_value, answer: 42, hint: add,"
        f" {lists}, taught_in: [tiny]}}\n---\n", 1)
    chapter.write_text(text)
    build = sphinx_build(tiny_book, tmp_path / "out", tmp_path / "cache")
    assert build.returncode != 0, build.log[-3000:]
    line = text.splitlines().index("tiny_answer_value = int(weights.sum().item()) * 21") + 1
    [stop] = [found for found in build.log.splitlines() if entry in found]
    assert (f"chapter.md:{line}: ERROR: check 'tiny-value' (answer cell `tiny_answer_value"
            in stop), stop
    assert "Traceback" not in build.log


def test_the_student_download_has_its_checks_working(tmp_path):
    """The student notebook, run top to bottom in a fresh kernel's place (its code cells in
    order), then the student's own values."""
    student = _editions()[Edition.STUDENT]
    namespace: dict = {}
    for cell in student.cells:
        if cell.cell_type == "code":
            _run(cell.source, namespace)
    _, out = _run('check("tiny-grad", [5, 7])', namespace)
    assert out.strip() == "tiny-grad: correct"
    assert json.dumps(namespace["CHECKS"])  # data only: nothing but the table


@pytest.mark.slow  # starts a kernel: the trials' logic is tested on data below
def test_the_student_download_says_correct_and_not_yet_in_a_kernel(tmp_path):
    """As `make verify-runtime` tries them in Colab's replica, in a kernel: each answer's value
    is "correct", a changed one "not yet" and the hint; a wrong answer (tiny-grad's) fails its
    trial, a warning on stderr (tiny-shape's value) does not."""
    from verify_runtime import failed_trials, run_all, trial_cells

    text = CHAPTER.replace("answer: [5.0, 7.0]", "answer: [5.0, 7.5]").replace(
        "value: (torch.zeros", "value: __import__('warnings').warn('planted') or (torch.zeros")
    assert text.count("planted") == 1 and "7.5" in text
    download = _editions(text)[Edition.STUDENT]
    extra, trials = trial_cells(read_chapter(text))
    assert [trial.check.name for trial in trials] == ["tiny-grad", "tiny-shape"]
    download.cells += extra
    ran = run_all(download, tmp_path, "python3")
    shape = ran.cells[len(ran.cells) - len(extra) + trials[1].cell]
    assert any(output.get("name") == "stderr" and "planted" in output.get("text", "")
               for output in shape.outputs), shape.outputs  # the warning came
    failures = failed_trials(ran.cells[len(ran.cells) - len(extra):], trials)
    assert len(failures) == 1 and "check 'tiny-grad'" in failures[0], failures


def test_a_trial_whose_value_crashes_fails_and_names_the_error():
    """A crash stops Run all in a kernel; the trial's cell, as it ran, fails too."""
    from verify_runtime import failed_trials, trial_cells

    extra, trials = trial_cells(read_chapter(CHAPTER))
    ran = [nbformat.v4.new_code_cell() for _ in extra]
    ran[trials[0].cell].outputs = [
        nbformat.v4.new_output("stream", name="stderr", text="UserWarning: planted\n"),
        nbformat.v4.new_output("error", ename="AttributeError", evalue="planted", traceback=[])]
    [failure] = failed_trials(ran, trials[:1])
    assert "check 'tiny-grad'" in failure and "AttributeError: planted" in failure, failure
    # A warning (stderr) beside the right verdicts (stdout) passes.
    ran[trials[0].cell].outputs[1:] = [nbformat.v4.new_output(
        "stream", name="stdout", text=trials[0].expected + "\n")]
    assert failed_trials(ran, trials[:1]) == []


def _trial_failures(text: str) -> list[str]:
    """The answer trials of a chapter, run here after its student notebook."""
    from verify_runtime import failed_trials, trial_cells

    namespace: dict = {}
    for cell in _editions(text)[Edition.STUDENT].cells:
        if cell.cell_type == "code":
            _run(cell.source, namespace)
    extra, trials = trial_cells(read_chapter(text))
    ran = [nbformat.v4.new_code_cell(outputs=[nbformat.v4.new_output(
        "stream", name="stdout", text=_run(cell.source, namespace)[1])]) for cell in extra]
    return failed_trials(ran, trials)


def test_a_trial_tries_the_accept_and_refuse_lists_in_the_kernel():
    """Each accept entry must say "correct" there too, each refuse entry "not yet": with a
    tolerance of 20, the refuse entries of tiny-grad pass, and its trial fails."""
    assert _trial_failures(CHAPTER) == []
    text = CHAPTER.replace("answer: [5.0, 7.0]\n", "answer: [5.0, 7.0]\n  tolerance: 20\n")
    [failure] = _trial_failures(text)
    assert "check 'tiny-grad'" in failure and "tiny-grad: not yet. Hint" in failure
    # A wrong answer: its own value says "not yet" in its trial.
    [failure] = _trial_failures(CHAPTER.replace("answer: [5.0, 7.0]", "answer: [5.0, 7.5]"))
    assert "check 'tiny-grad'" in failure and "printed 'tiny-grad: not yet" in failure, failure


def test_a_trial_passes_with_a_hint_written_as_a_folded_block():
    text = CHAPTER.replace("  hint: does backward() replace .grad or add to it?\n",
                           "  hint: >\n    does backward() replace .grad\n    or add to it?\n")
    assert _trial_failures(text) == []


def test_the_edition_notebooks_survive_the_round_trip_myst_nb_reads():
    """The cells a build adds read back unchanged from the page's text, or the cache,
    keyed by them, would never find the executed chapter."""
    from coursebook.model.cell_notes import without_notes
    from coursebook.model.notebooks import notebook_to_myst

    for edition in _editions().values():
        back = without_notes(read_chapter(notebook_to_myst(edition)))
        assert [(c.source, dict(c.metadata)) for c in back.cells if c.cell_type == "code"] == \
               [(c.source, dict(c.metadata)) for c in without_notes(edition).cells
                if c.cell_type == "code"]
