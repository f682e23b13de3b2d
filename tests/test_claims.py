"""Claims as checks: a sentence about what PyTorch does is held to a claim cell (or an
exhibit's ``[[claim]]``) that runs on every build, or to a cited source; a claim that no
longer holds stops the build at its sentence, and no reader ever sees the checks."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from conftest import (CHAPTER_TOP, MACHINE_KINDS_FILE, ROOT, TORCH_VERSION, run_sphinx,
                      sphinx_build, sphinx_command)
from coursebook.claims.model import chapter_claims, claim_blocks, find_in_prose, sentences_of
from coursebook.model.machine_kinds import load_machine_kinds
from coursebook.claims.audit import chapter_unbacked, museum_unbacked
from coursebook.museum.model import ExhibitError, Wing, load_exhibit
from coursebook.model.notebooks import (
    CLAIM_TAG,
    RAISES_TAG,
    cell_tags,
    is_chapter_source,
    is_claim,
)
from coursebook.model.versions import release
from coursebook.prepare.chapters import edition_chapter
from coursebook.prepare.editions import Edition
from coursebook.render.downloads import download_notebook
from coursebook.render.plain_markdown import PlainMarkdown
from coursebook.claims.verify import (
    CLAIMS_FOLDER,
    claim_problems,
    unaccepted_claims,
    write_accepted_claims,
)
from coursebook.verify.expectations import ACCEPT_COMMAND, keyed_cells, read_expectations

TORCH = release(TORCH_VERSION)
PROSE = ("Multiplying a tensor that requires grad records a `MulBackward0` node as its "
         "*grad_fn*.")
SOURCE = "% source: https://pytorch.org/docs/stable/autograd.html"
# A name only the claim's check uses: wherever it shows, the check shows.
PROBE = "_claim_probe_factor"


def _claim_cell(says: str, check: str) -> str:
    return f"```{{code-cell}} ipython3\n:tags: [claim]\n\n# claim: {says}\n{check}\n```\n"


TRUE_CHECK = (f"{PROBE} = 3\n"
              f"assert type((weights * {PROBE}).grad_fn).__name__ == 'MulBackward0', "
              f"type((weights * {PROBE}).grad_fn).__name__\n"
              f"del {PROBE}")
TRUE_CLAIM = "multiplying a tensor that requires grad records a `MulBackward0` node"
FALSE_PROSE = PROSE.replace("MulBackward0", "AddBackward0")
FALSE_CLAIM = TRUE_CLAIM.replace("MulBackward0", "AddBackward0")
FALSE_CHECK = TRUE_CHECK.replace("== 'MulBackward0'", "== 'AddBackward0'")


def _with_claim(chapter: Path, prose: str = PROSE, says: str = TRUE_CLAIM,
                check: str = TRUE_CHECK, source: str = SOURCE) -> None:
    """The tiny chapter with a sentence, its citation comment and its claim cell, after
    the cell that makes ``weights``."""
    text = chapter.read_text()
    anchor = "A cell whose error is the lesson.\n"
    assert anchor in text
    chapter.write_text(text.replace(anchor, f"{prose}\n{source}\n\n{_claim_cell(says, check)}\n"
                                            + anchor))


def _claims_with(chapter: Path, source: str):
    """The claims the student edition holds with ``source`` as its sentence's comment (an
    edition without comments: they are read from the chapter as written)."""
    _with_claim(chapter, source=source)
    return _prepared(chapter.read_text()).claims


def _line_of(path: Path, text: str) -> int:
    """The line of the last ``text`` in the file (a planted claim comes after the others)."""
    content = path.read_text()
    assert text in content
    return content[:content.rindex(text)].count("\n") + 1


# --- Fragments in prose ------------------------------------------------------------------

@pytest.mark.parametrize("fragment", [
    "records a MulBackward0 node as its grad_fn",  # markup ignored
    "RECORDS   a `MulBackward0`\nnode",  # case and whitespace
    "multiplying a tensor that requires grad",
])
def test_a_fragment_is_found_in_its_sentence_whatever_the_markup(fragment):
    found = find_in_prose(fragment, ["An opening sentence. " + PROSE + " Another one."])
    assert found is not None and found.sentence == PROSE


def test_a_fragment_after_a_dot_inside_a_name_is_in_its_whole_sentence():
    sentence = "Calling `torch.add` here sums two tensors."
    found = find_in_prose("add here sums", ["An opening sentence. " + sentence])
    assert found is not None and found.sentence == sentence


def test_an_abbreviation_does_not_end_a_sentence():
    sentence = "Ops ending in an underscore, e.g. `x.add_`, change x i.e. in place w.r.t. x."
    found = find_in_prose("change x", ["An opening sentence. " + sentence + " Next, 0.2."])
    assert found is not None and found.sentence == sentence
    assert sentences_of(sentence + " Up from 0.2? On 2.x. Its x.T. Yes.") == [
        sentence, "Up from 0.2?", "On 2.x.", "Its x.T.", "Yes."]


def test_underscores_inside_names_count_and_roles_read_as_their_text():
    prose = "It keeps {term}`grad mode <grad mode>` and the `requires_grad` flag."
    assert find_in_prose("keeps grad mode and the requires_grad flag", [prose]) is not None
    assert find_in_prose("the requiresgrad flag", [prose]) is None
    assert find_in_prose("a sentence that is not there", [prose]) is None


def test_a_claim_cell_holds_one_block_per_claim_line():
    blocks = claim_blocks("# claim: one thing\nassert 1\n\n# claim: another\nassert 2\ndel x\n")
    assert [(b.says, b.code) for b in blocks] == [
        ("one thing", "# claim: one thing\nassert 1"),
        ("another", "# claim: another\nassert 2\ndel x")]


# --- Preparing: claim cells run hidden, one per claim, keyed out of the expectations -------

def _prepared(text: str, edition: Edition = Edition.STUDENT):
    return edition_chapter(text, "chapter.md", edition, {}, TORCH_VERSION,
                           machine_kinds=load_machine_kinds(MACHINE_KINDS_FILE))


def _notebook(text: str, edition: Edition = Edition.STUDENT) -> nbformat.NotebookNode:
    return _prepared(text, edition).notebook


def test_claim_cells_run_hidden_one_per_claim_and_may_raise(tiny_book):
    chapter = tiny_book / "chapter.md"
    _with_claim(chapter, check=TRUE_CHECK + "\n# claim: its `grad_fn`\nassert True")
    claims = [cell for cell in _notebook(chapter.read_text()).cells if is_claim(cell)]
    assert len(claims) == 2
    for cell in claims:
        assert {CLAIM_TAG, RAISES_TAG, "remove-cell"} <= set(cell_tags(cell))


def test_adding_a_claim_cell_keeps_every_expected_output_key(tiny_book):
    chapter = tiny_book / "chapter.md"
    before = keyed_cells(_notebook(chapter.read_text(), Edition.INSTRUCTOR))
    _with_claim(chapter)
    after = keyed_cells(_notebook(chapter.read_text(), Edition.INSTRUCTOR))
    assert [key for key, _ in after] == [key for key, _ in before]


def test_the_claim_is_located_at_its_sentence_and_a_stray_fragment_at_its_cell(tiny_book):
    chapter = tiny_book / "chapter.md"
    _with_claim(chapter, check=TRUE_CHECK + "\n# claim: a fragment the prose lacks\nassert True")
    text = chapter.read_text()
    found, stray = chapter_claims(_notebook(text), {}).checked
    assert found.claim.line == _line_of(chapter, PROSE) and found.claim.sentence == PROSE
    assert not stray.claim.sentence and stray.claim.line == _line_of(
        chapter, "# claim: a fragment the prose lacks")
    assert _prepared(text).claims.cited == 1


def test_a_stray_fragment_after_set_up_code_is_located_at_its_claim_line(tiny_book):
    chapter = tiny_book / "chapter.md"
    _with_claim(chapter, says="a fragment the prose lacks", check="assert True")
    text = chapter.read_text().replace("# claim: a fragment the prose lacks",
                                       "_set_up = 1\n# claim: a fragment the prose lacks")
    chapter.write_text(text)
    [stray] = chapter_claims(_notebook(text), {}).checked
    assert stray.claim.line == _line_of(chapter, "# claim: a fragment the prose lacks")


def test_a_claim_in_a_rewritten_cell_is_located_at_its_own_sentence(tiny_book):
    """The instructor edition boxes a markdown answer (its text is then not the file's):
    its claim is at the answer's sentence, not at an earlier sentence quoting the same words."""
    chapter = tiny_book / "chapter.md"
    answer = "The tiny chapter's answer says that tripling doubles nothing whatsoever here.\n"
    text = chapter.read_text().replace("A worked example.", "A worked example: tripling "
                                       "doubles nothing?").replace(
        answer, answer + "\n" + _claim_cell("tripling doubles nothing", "assert True"))
    chapter.write_text(text)
    [claim] = chapter_claims(_notebook(text, Edition.INSTRUCTOR), {}).checked
    assert claim.claim.line == _line_of(chapter, answer)


def test_a_repeated_claim_is_located_at_its_own_sentence(tiny_book):
    """The same paragraph and claim cell twice: each claim at its own cell's sentence (a
    search of the file for the cell's text named the first twice)."""
    chapter = tiny_book / "chapter.md"
    _with_claim(chapter)
    text = chapter.read_text()
    block = f"{PROSE}\n{SOURCE}\n\n{_claim_cell(TRUE_CLAIM, TRUE_CHECK)}\n"
    text = text.replace(block, block + "```{code-cell} ipython3\nx = 1\n```\n\n" + block)
    chapter.write_text(text)
    lines = [n for n, line in enumerate(text.splitlines(), 1) if line == PROSE.splitlines()[0]]
    claims = chapter_claims(_notebook(text), {}).checked
    assert len(lines) == 2 and [c.claim.line for c in claims] == lines


def test_a_claim_below_an_exhibits_see_also_note_is_at_its_sentence(tiny_book):
    """The museum puts a note under a section an exhibit names (4 lines the author did not
    write): a claim further down that cell is still at its sentence's line."""
    from conftest import book_museum

    museum = book_museum()
    label = museum["pytorch"].exhibits[0].taught_in[0]
    chapter = tiny_book / "chapter.md"
    _with_claim(chapter, prose=f"({label})=\n## A section\n\nSome words.\n{PROSE}")
    text = chapter.read_text()
    notebook = edition_chapter(text, "chapter.md", Edition.STUDENT, museum, TORCH_VERSION,
                               machine_kinds=load_machine_kinds(MACHINE_KINDS_FILE)).notebook
    assert any("In the error museum" in cell.source for cell in notebook.cells)
    [claim] = chapter_claims(notebook, {}).checked
    assert claim.claim.line == _line_of(chapter, PROSE)


def test_a_source_comment_without_an_address_is_not_counted_but_located(tiny_book):
    chapter = tiny_book / "chapter.md"
    claims = _claims_with(chapter, "% source: the autograd notes")
    assert claims.cited == 0 and claims.unsourced == ((_line_of(chapter, "% source: the"),
                                                     "% source: the autograd notes"),)


def test_an_empty_source_comment_after_a_cited_one_is_located_at_its_own_line(tiny_book):
    chapter = tiny_book / "chapter.md"
    claims = _claims_with(chapter, f"{SOURCE}\n\nA sentence whose source is missing.\n% source:")
    assert claims.cited == 1
    assert claims.unsourced == ((_line_of(chapter, "% source:"), "% source:"),)


@pytest.mark.parametrize("comment", ["% Source: ", "%source:", "%  SOURCE :\t"])
def test_a_source_comment_is_read_in_any_case_and_spacing(tiny_book, comment):
    chapter = tiny_book / "chapter.md"
    claims = _claims_with(chapter, SOURCE.replace("% source: ", comment))
    assert claims.cited == 1 and claims.unsourced == ()


@pytest.mark.parametrize("comment", ["% sources: ", "% souce: ", "%Sorce:", "% sourced: "])
def test_a_misspelled_source_comment_is_located_not_skipped(tiny_book, comment):
    chapter = tiny_book / "chapter.md"
    claims = _claims_with(chapter, SOURCE.replace("% source: ", comment))
    misspelled = SOURCE.replace("% source: ", comment)
    assert claims.cited == 0 and claims.unsourced == ((_line_of(chapter, misspelled), misspelled),)


@pytest.mark.parametrize("comment", ["% TODO", "% TODO: ask https://pytorch.org", "% note: why",
                                     "% Resources: https://pytorch.org", "% resource: why"])
def test_a_comment_that_is_no_source_is_left_alone(tiny_book, comment):
    chapter = tiny_book / "chapter.md"
    claims = _claims_with(chapter, comment)
    assert claims.cited == 0 and claims.unsourced == ()


def test_no_download_holds_a_claim_cell(tiny_book):
    chapter = tiny_book / "chapter.md"
    _with_claim(chapter)
    markdown = PlainMarkdown(lambda role, target: None, "", None, lambda condition: True)
    download = download_notebook(_notebook(chapter.read_text()), markdown)
    assert not any(PROBE in cell.source or is_claim(cell) for cell in download.cells)


# --- Verifying: a claim holds, fails at its sentence, or prints ---------------------------

def _ran(*outputs) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell("# claim: x", metadata={"tags": [CLAIM_TAG]})
    cell.outputs, cell.execution_count = list(outputs), 1
    return cell


def _located(tiny_book: Path, **edit):
    chapter = tiny_book / "chapter.md"
    _with_claim(chapter, **edit)
    text = chapter.read_text()
    return chapter_claims(_notebook(text), {}).checked[0]


def test_a_failed_check_is_one_line_at_the_sentence(tiny_book):
    claim = _located(tiny_book, prose=FALSE_PROSE, says=FALSE_CLAIM, check=FALSE_CHECK)
    error = nbformat.v4.new_output("error", ename="AssertionError", evalue="MulBackward0",
                                   traceback=["Traceback (most recent call last):", "..."])
    [(line, message)] = [(p.claim.line, p.message) for p in
                         claim_problems([(claim.claim, _ran(error))], f"on torch {TORCH}")]
    assert line == _line_of(tiny_book / "chapter.md", FALSE_PROSE)
    assert message.startswith(f'the claim "{FALSE_CLAIM}" no longer holds on torch {TORCH}: '
                              "AssertionError: MulBackward0")
    assert "Traceback" not in message


def test_a_check_that_prints_is_an_error_and_a_quiet_one_holds(tiny_book):
    claim = _located(tiny_book).claim
    printed = nbformat.v4.new_output("stream", name="stdout", text="hello\n")
    [problem] = claim_problems([(claim, _ran(printed))], f"on torch {TORCH}")
    assert "printed" in problem.message and "hello" in problem.message
    assert claim_problems([(claim, _ran())], f"on torch {TORCH}") == []


# --- Exhibits: [[claim]] tables, found in the exhibit's prose -----------------------------

# An exhibit of its own: the book's exhibits change with the book.
EXHIBIT = f"""number = 1
title = "A planted exhibit"
room = "eager"
runs_on = "cpu"
lesson = "Dividing by zero raises an error in Python, whatever library holds the numbers."
fix_note = "Divide by a number that is not zero."
failing_code = "1 / 0"
fix_code = "1 / 2"

[[records]]
torch = "2.2.2"
source = "museum"
where = "a test"
date = ""
type = "ZeroDivisionError"
message = "division by zero"

[[records]]
torch = "{TORCH}"
source = "build"
where = "a test"
date = ""
type = "ZeroDivisionError"
message = "division by zero"
"""
WING = """name = "planted"
title = "A wing of one exhibit"
rooms = ["eager"]
tagline = "One exhibit."
introduction = "One exhibit, planted by a test."
"""
FRAGMENT = "dividing by zero raises an error in Python"  # of its lesson, verbatim


def _exhibit_with(folder: Path, claim: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "01-saved-tensor.toml"
    path.write_text(EXHIBIT + "\n" + claim)
    return path


def _load(path: Path):
    return load_exhibit(path, ("eager",), load_machine_kinds(MACHINE_KINDS_FILE))


def test_an_exhibit_claim_is_read_with_its_sentence_and_line(tmp_path):
    path = _exhibit_with(tmp_path, f'[[claim]]\nsays = "{FRAGMENT}"\n'
                                   "check = '''\nassert True\n'''\n")
    claim = _load(path).claims[-1]
    assert claim.line == _line_of(path, "says = ") and claim.check == "assert True"
    assert claim.sentence


@pytest.mark.parametrize("claim, message, at", [
    ('[[claim]]\nsays = "words no exhibit says"\nsource = "https://pytorch.org"\n',
     "field claim[0].says: is not in the prose", "says = "),
    ('[[claim]]\nsays = "{fragment}"\n', "field claim[0]: gives both 'check' and 'source', or "
     "neither (give either 'check'", "[[claim]]"),
    ('[[claim]]\nsays = "{fragment}"\nsource = "pytorch.org"\n',
     "field claim[0].source: is 'pytorch.org' (make it an address", "source = "),
])
def test_a_malformed_exhibit_claim_names_its_line(tmp_path, claim, message, at):
    path = _exhibit_with(tmp_path, claim.replace("{fragment}", FRAGMENT))
    with pytest.raises(ExhibitError) as error:
        _load(path)
    assert message in str(error.value)
    assert f"{path}:{_line_of(path, at)}:" in str(error.value)


# --- Accepted claims: a check holds its whole sentence ----------------------------------

def _checked(chapter: Path) -> list:
    text = chapter.read_text()
    return [c.claim for c in chapter_claims(_notebook(text), {}).checked]


def _accepted_then(tiny_book: Path, tmp_path: Path, **changed) -> list:
    """The problems of the tiny chapter's claim once accepted, then written with ``changed``."""
    chapter, path = tiny_book / "chapter.md", tmp_path / "claims" / "chapter.txt"
    original = chapter.read_text()
    _with_claim(chapter)
    assert write_accepted_claims(path, "chapter.md", "student", _checked(chapter))
    accepted = read_expectations(path, "claim")
    assert unaccepted_claims(accepted, "student", _checked(chapter), path) == []
    chapter.write_text(original)
    _with_claim(chapter, **changed)
    return unaccepted_claims(read_expectations(path, "claim"), "student", _checked(chapter), path)


def test_a_false_fact_outside_the_fragment_is_not_as_accepted(tiny_book, tmp_path):
    planted = PROSE.replace("*grad_fn*.", "*grad_fn*, and it copies the tensor.")
    [problem] = _accepted_then(tiny_book, tmp_path, prose=planted)
    assert problem.claim.sentence == planted  # at the sentence, which the fragment still quotes
    assert "not as accepted" in problem.message and ACCEPT_COMMAND in problem.message
    # The diff shows the sentence as accepted and as it is now, beside the unchanged check.
    assert f"-sentence: {PROSE}" in problem.message and f"+sentence: {planted}" in problem.message
    assert f"# claim: {TRUE_CLAIM}" in problem.message


def test_a_sentence_changed_with_its_fragment_is_not_as_accepted(tiny_book, tmp_path):
    """The check stays true (it still asserts MulBackward0) while the sentence now says
    AddBackward0: before, the build shipped it."""
    new, gone = _accepted_then(tiny_book, tmp_path, prose=FALSE_PROSE, says=FALSE_CLAIM)
    assert new.claim.says == FALSE_CLAIM and "is new, not yet accepted" in new.message
    assert f"+ sentence: {FALSE_PROSE}" in new.message
    assert new.message.count(TRUE_CHECK.splitlines()[1]) == 1  # the check beside it
    assert "no longer made" in gone.message and PROSE[:60] in gone.message


def test_a_changed_check_and_a_dropped_claim_are_not_as_accepted(tiny_book, tmp_path):
    [problem] = _accepted_then(tiny_book, tmp_path, check=TRUE_CHECK + "\nassert True")
    assert "+    assert True" in problem.message
    path = tmp_path / "claims" / "chapter.txt"
    [gone] = unaccepted_claims(read_expectations(path, "claim"), "student", [], path)
    assert "1 accepted claim(s)" in gone.message and "no longer made" in gone.message


def test_accepting_keeps_the_other_editions_claims_and_a_missing_file_is_named(tiny_book, tmp_path):
    chapter, path = tiny_book / "chapter.md", tmp_path / "claims" / "chapter.txt"
    _with_claim(chapter)
    claims = _checked(chapter)
    [missing] = unaccepted_claims(None, "student", claims, path)
    assert str(path) in missing.message and ACCEPT_COMMAND in missing.message
    write_accepted_claims(path, "chapter.md", "instructor", claims)
    write_accepted_claims(path, "chapter.md", "student", [])
    assert "(instructor)" in path.read_text()  # the student edition makes none of them
    assert unaccepted_claims(read_expectations(path, "claim"), "instructor", claims, path) == []
    assert unaccepted_claims(read_expectations(path, "claim"), "student", [], path) == []
    assert not write_accepted_claims(path, "chapter.md", "student", [])  # unchanged


def test_accepting_writes_a_hand_edited_accepted_claim_as_it_is(tiny_book, tmp_path):
    """The file is reviewed as a diff: an accepted sentence edited by hand under its key
    (which the check still matches) is written back as the chapter has it. Before, an accept
    compared only the keys and left the edited text standing."""
    chapter, path = tiny_book / "chapter.md", tmp_path / "claims" / "chapter.txt"
    _with_claim(chapter)
    write_accepted_claims(path, "chapter.md", "student", _checked(chapter))
    written = path.read_text()
    path.write_text(written.replace("records a `MulBackward0`", "records an `AddBackward0`"))
    assert write_accepted_claims(path, "chapter.md", "student", _checked(chapter))
    assert path.read_text() == written


def test_accepting_a_chapter_that_makes_no_claim_writes_no_file(tmp_path):
    """A chapter without claims has no accepted-claims file, and an accept writes none (c4718fe
    wrote one holding the header alone: a stray file beside every such chapter's outputs)."""
    path = tmp_path / "claims" / "lesson.txt"
    assert not write_accepted_claims(path, "lesson.md", "student", [])
    assert not path.exists()


def test_a_line_the_accepted_claims_cannot_hold_is_named_at_its_line(tiny_book, tmp_path):
    """Read as the expected outputs are: a line a merge or an editor left unindented is an
    error at the file's line, not a silent part of the claim above it."""
    from coursebook.verify.expectations import ExpectationsError

    chapter, path = tiny_book / "chapter.md", tmp_path / "claims" / "chapter.txt"
    _with_claim(chapter)
    write_accepted_claims(path, "chapter.md", "student", _checked(chapter))
    lines = path.read_text().splitlines()
    lines.insert(len(lines) - 1, "assert True")
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ExpectationsError) as error:
        read_expectations(path, "claim")
    assert str(error.value).startswith(f"{path}:{len(lines) - 1}: neither an indented line ")
    assert "`=== claim KEY (student)`" in str(error.value) and ACCEPT_COMMAND in str(error.value)
    assert str(error.value).count("`") % 2 == 0, error.value  # `(edition optional)`: ` was left


def test_the_books_claims_are_accepted_for_every_chapter_that_makes_some():
    """Each such chapter's committed file holds its checked sentences (the build compares
    them with the chapter's)."""
    book = ROOT / "book"
    chapters = [path for path in book.glob("*.md") if is_chapter_source(path.read_text())
                and re.search(r"tags: \[[^\]]*\bclaim\b|\{museum-room\}", path.read_text())]
    assert chapters
    for chapter in chapters:
        accepted = read_expectations(book / "expected" / CLAIMS_FOLDER / f"{chapter.stem}.txt",
                                     "claim")
        assert accepted and all(entry.startswith("sentence: ") for entries in
                                accepted.by_edition.values() for entry in entries.values())


# --- make audit: factual sentences neither checked nor cited --------------------------------

UNBACKED_CHAPTER = CHAPTER_TOP.format(extra="") + """
# A chapter

`torch.zeros(2)` makes a tensor of two zeros. Autograd frees saved values after `backward()`.

`x.grad` holds the gradient.
% source: https://pytorch.org/docs/stable/autograd.html

Run the cell below and compare. Does `torch.ones` differ? The cell below prints a shape.
See [the notes](https://pytorch.org/docs/stable/notes/autograd.html): `detach()` shares memory.
A sentence about nothing in particular.

```{code-cell} ipython3
:tags: [claim]

# claim: makes a tensor of two zeros
assert torch.equal(torch.zeros(2), torch.tensor([0., 0.]))
```
"""


def test_the_audit_tool_names_a_claim_cell_without_a_claim_in_one_line(tmp_path, capsys):
    """The listing reads claims as the build does: a claim cell with no `# claim:` line is
    named at its line, as the build names it, with no traceback."""
    from audit_student_build import main

    from conftest import TINY_BOOK

    text = (TINY_BOOK / "chapter.md").read_text() + (
        "\n```{code-cell} ipython3\n:tags: [claim]\n\nx = 1\n```\n")
    (tmp_path / "book").mkdir()
    (tmp_path / "book" / "chapter.md").write_text(text)
    for folder in ("build", "exhibits"):
        (tmp_path / folder).mkdir()
    assert main([str(tmp_path / "build"), "--book", str(tmp_path / "book"),
                 "--exhibits", str(tmp_path / "exhibits")]) == 2
    [said] = capsys.readouterr().err.splitlines()[-1:]
    line = text.splitlines().index("x = 1") + 1
    assert f"chapter.md:{line}: claim cell `x = 1` names no claim" in said, said


def test_audit_lists_each_factual_sentence_that_no_check_or_source_holds(tmp_path):
    path = tmp_path / "chapter.md"
    path.write_text(UNBACKED_CHAPTER)
    [listed] = chapter_unbacked(path, UNBACKED_CHAPTER)
    # Checked (its claim quotes part of it), cited (a source comment, a link), instructions,
    # questions, the chapter's own cells and sentences about no library are left out.
    assert listed.message == "Autograd frees saved values after `backward()`."
    assert listed.line == _line_of(path, "`torch.zeros(2)` makes")
    backed = UNBACKED_CHAPTER.replace("# claim: makes a tensor of two zeros",
                                      "# claim: frees saved values")
    assert [u.message for u in chapter_unbacked(path, backed)] == [
        "`torch.zeros(2)` makes a tensor of two zeros."]


def test_the_audit_cuts_sentences_where_a_claim_does(tmp_path):
    """One splitter: a sentence after a full stop that starts in lower case (a name, `jax`)
    is its own sentence for the audit as for a claim, so a check of the one before it does
    not hold it."""
    text = UNBACKED_CHAPTER.replace("Autograd frees saved values after `backward()`.",
                                    "jax has `mutable_array` in 0.7.2.")
    path = tmp_path / "chapter.md"
    path.write_text(text)
    listed = [u.message for u in chapter_unbacked(path, text)]
    assert listed == ["jax has `mutable_array` in 0.7.2."]
    paragraph = "`torch.zeros(2)` makes a tensor of two zeros. jax has `mutable_array` in 0.7.2."
    assert paragraph in text
    assert find_in_prose("makes a tensor", [paragraph]).sentence == paragraph.split(" jax")[0]


def test_audit_names_a_repeated_unbacked_paragraph_at_each_of_its_lines(tmp_path):
    """Each paragraph at its own cell's line, not where its text first appears in the file."""
    paragraph = "Autograd frees saved values after `backward()`."
    text = UNBACKED_CHAPTER + f"\n```{{code-cell}} ipython3\nx = 1\n```\n\n{paragraph}\n"
    path = tmp_path / "chapter.md"
    path.write_text(text)
    lines = [u.line for u in chapter_unbacked(path, text) if u.message == paragraph]
    numbers = [n for n, line in enumerate(text.splitlines(), 1) if paragraph in line]
    assert len(numbers) == 2 and lines == [_line_of(path, "`torch.zeros(2)` makes"), numbers[1]]


def test_audit_names_each_paragraph_of_a_cell_at_its_own_line(tmp_path):
    """Lines come from the Markdown parser, not from searching the cell for the text: a
    paragraph repeated in one cell is named twice, each at its line; a fenced block, a
    table and a heading hold no prose, an admonition's body does."""
    paragraph = "`torch.eye(2)` makes an identity matrix."
    last = "A sentence about nothing in particular."
    text = UNBACKED_CHAPTER.replace(last, f"{last}\n\n{paragraph}\n\n~~~\n`torch.ones` is "
                                    f"fenced.\n~~~\n\n| `torch` table. |\n| --- |\n\n"
                                    f"## `torch` heading.\n\n{paragraph}\n\n:::{{note}}\n"
                                    ":class: tip\n`torch.eye` is a note.\n:::")
    path = tmp_path / "chapter.md"
    path.write_text(text)
    listed = [(u.message, u.line) for u in chapter_unbacked(path, text)][1:]
    numbers = [n for n, line in enumerate(text.splitlines(), 1) if line == paragraph]
    assert listed == [(paragraph, numbers[0]), (paragraph, numbers[1]),
                      ("`torch.eye` is a note.", _line_of(path, "`torch.eye` is"))]


def test_audit_lists_an_exhibit_sentence_no_claim_holds(tmp_path):
    lesson = "`1 / 0` raises an error in Python. `torch.tensor(1.) / 0` gives `inf`."
    path = _exhibit_with(tmp_path, '[[claim]]\nsays = "raises an error in Python"\n'
                                   "check = \'\'\'\nassert True\n\'\'\'\n")
    path.write_text(path.read_text().replace(
        'lesson = "Dividing by zero raises an error in Python, whatever library holds the '
        'numbers."', f'lesson = "{lesson}"'))
    (tmp_path / "wing.toml").write_text(WING)
    wing = Wing(tmp_path / "wing.toml", "planted", "", "", "", ("eager",), (_load(path),))
    [listed] = museum_unbacked({"planted": wing})
    assert listed.message == "`torch.tensor(1.) / 0` gives `inf`." and listed.path == path
    assert listed.line == _line_of(path, "lesson = ")
    # The same paragraph in a multi-line field: there, not where its text first shows.
    path.write_text(path.read_text().replace(
        'fix_note = "Divide by a number that is not zero."', f"fix_note = '''\n{lesson}\n'''"))
    wing = Wing(tmp_path / "wing.toml", "planted", "", "", "", ("eager",), (_load(path),))
    assert [u.line for u in museum_unbacked({"planted": wing})] == [
        _line_of(path, "lesson = "), _line_of(path, "fix_note = ") + 1]


# --- A tiny book, built (slow) ------------------------------------------------------------

def _accept_claims(book: Path) -> None:
    """The tiny book's claims as accepted in both editions, as `make accept-outputs` writes them."""
    text = (book / "chapter.md").read_text()
    path = book / "expected" / CLAIMS_FOLDER / "chapter.txt"
    for edition in Edition:
        claims = [c.claim for c in chapter_claims(_notebook(text, edition), {}).checked]
        write_accepted_claims(path, "chapter.md", edition.value, claims)


def _everything_published(outdir: Path) -> dict[str, str]:
    html = outdir / "html"
    return {str(p.relative_to(html)): p.read_text(encoding="utf8", errors="replace")
            for p in html.rglob("*") if p.is_file() and p.suffix in {".html", ".js", ".md",
                                                                     ".ipynb", ".txt"}}


@pytest.mark.slow
def test_a_true_claim_is_checked_counted_and_never_shown(tiny_book, tmp_path):
    """Not in either edition's pages and downloads, nor in the LaTeX sources the PDF and the
    handouts are made from."""
    _with_claim(tiny_book / "chapter.md")
    _accept_claims(tiny_book)
    for edition, tags in (("student", ()), ("instructor", ("instructor",))):
        build = sphinx_build(tiny_book, tmp_path / edition, tmp_path / "cache", *tags)
        assert build.returncode == 0, build.log
        assert "claims: chapter.md: 1 checked, 1 cited" in build.log
        published = _everything_published(build.outdir)
        assert "chapter.html" in published and "_sources/chapter.ipynb" in published
        assert "_sources/chapter.md" in published
        shown = [name for name, text in published.items() if PROBE in text or "# claim:" in text]
        assert shown == []
        # The sentence itself is on the page.
        assert "records a" in published["chapter.html"]
    for tags in ((), ("handout",)):  # from the cache the HTML builds filled
        out = tmp_path / "-".join(("latex", *tags))
        done = run_sphinx(sphinx_command(tiny_book, out, tmp_path / "doctrees", builder="latex",
                                         tags=tags, settings={"nb_execution_cache_path":
                                                              str(tmp_path / "cache")}))
        assert done.returncode == 0, done.stderr[-3000:]
        sources = {p.name: p.read_text() for p in out.glob("*.tex")}
        assert any("records a" in text for text in sources.values()), sorted(sources)
        assert [name for name, text in sources.items() if PROBE in text or "claim:" in text] == []


@pytest.mark.slow
def test_a_planted_false_claim_stops_the_build_at_its_sentence(tiny_book, tmp_path):
    chapter = tiny_book / "chapter.md"
    _with_claim(chapter, prose=FALSE_PROSE, says=FALSE_CLAIM, check=FALSE_CHECK)
    build = sphinx_build(tiny_book, tmp_path / "out", tmp_path / "cache")
    assert build.returncode != 0
    assert (f"chapter.md:{_line_of(chapter, FALSE_PROSE)}: ERROR: the claim \"{FALSE_CLAIM}\" "
            f"no longer holds on torch {TORCH}: AssertionError: MulBackward0") in build.log
    assert "Traceback" not in build.log
    assert "chapter.md (student): 3 of 3 code cells verified" in build.log  # outputs still compared
    # The failure is not forgotten: a rebuild reports it again, from the cache.
    again = sphinx_build(tiny_book, tmp_path / "out", tmp_path / "cache")
    assert again.returncode != 0 and again.executed == 0 and "no longer holds" in again.log


@pytest.mark.slow
def test_a_sentence_changed_outside_its_fragment_stops_the_build_until_accepted(tiny_book,
                                                                               tmp_path):
    chapter = tiny_book / "chapter.md"
    original = chapter.read_text()
    _with_claim(chapter)
    _accept_claims(tiny_book)
    planted = PROSE.replace("*grad_fn*.", "*grad_fn*, and it copies the tensor.")
    chapter.write_text(original)
    _with_claim(chapter, prose=planted)  # a false fact the fragment does not quote
    build = sphinx_build(tiny_book, tmp_path / "out", tmp_path / "cache")
    assert build.returncode != 0 and "Traceback" not in build.log
    assert (f"chapter.md:{_line_of(chapter, planted)}: ERROR: the claim \"{TRUE_CLAIM}\" has a "
            "sentence or a check that is not as accepted") in build.log
    assert f"+sentence: {planted}" in build.log and f"-sentence: {PROSE}" in build.log
    accepted = sphinx_build(tiny_book, tmp_path / "out", tmp_path / "cache",
                            settings={"coursebook_accept_outputs": "1"})
    assert accepted.returncode == 0, accepted.log
    again = sphinx_build(tiny_book, tmp_path / "out", tmp_path / "cache")
    assert again.returncode == 0, again.log
    # A line the accepted file cannot hold stops the build, accepting too, at its line.
    path = tiny_book / "expected" / CLAIMS_FOLDER / "chapter.txt"
    lines = path.read_text().splitlines()
    path.write_text("\n".join([*lines[:-1], "assert True", lines[-1]]) + "\n")
    for settings in ({}, {"coursebook_accept_outputs": "1"}):
        broken = sphinx_build(tiny_book, tmp_path / "out", tmp_path / "cache", settings=settings)
        assert broken.returncode != 0 and "Traceback" not in broken.log
        assert f"chapter.txt:{len(lines)}: ERROR: neither an indented line" in broken.log


@pytest.mark.slow
def test_a_stray_fragment_a_printing_check_and_bad_sources_stop_the_build(tiny_book, tmp_path):
    chapter = tiny_book / "chapter.md"
    _with_claim(chapter, check=TRUE_CHECK + "\n# claim: words the prose never says\nassert True"
                                            "\n# claim: its grad_fn\nprint('chatty')",
                source=f"% source: the autograd notes\n{SOURCE.replace('source', 'souce')}")
    build = sphinx_build(tiny_book, tmp_path / "out", tmp_path / "cache")
    assert build.returncode != 0
    assert (f"chapter.md:{_line_of(chapter, '# claim: words the prose never says')}: ERROR: "
            "the claim \"words the prose never says\" is not in the prose above") in build.log
    assert f"chapter.md:{_line_of(chapter, PROSE)}: ERROR: the check of the claim " in build.log
    assert "chatty" in build.log
    for comment in ("% source: the autograd notes", SOURCE.replace("source", "souce")):
        assert (f"chapter.md:{_line_of(chapter, comment)}: ERROR: `{comment}` is not a citation "
                "the build reads: cite the claim above it as `% source: https://...`") in build.log


@pytest.mark.slow
def test_a_planted_false_exhibit_claim_names_its_toml_line(tiny_book, tmp_path):
    wing = tmp_path / "exhibits" / "planted"
    wing.mkdir(parents=True)
    (wing / "wing.toml").write_text(WING)
    exhibit = _exhibit_with(wing, f'[[claim]]\nsays = "{FRAGMENT}"\n'
                                  "check = '''\nassert 1 == 2, 'planted'\n'''\n")
    chapter = tiny_book / "chapter.md"
    chapter.write_text(chapter.read_text() + "\n```{museum-room} planted eager\n```\n")
    build = sphinx_build(tiny_book, tmp_path / "out", tmp_path / "cache",
                         settings={"coursebook_exhibits_dir": str(wing.parent),
                                   "coursebook_verify_outputs": "0"})
    assert build.returncode != 0
    assert (f"{exhibit.name}:{_line_of(exhibit, 'says = ')}: ERROR: the claim \"{FRAGMENT}\" "
            f"no longer holds on torch {TORCH}: AssertionError: planted") in build.log
    # Nothing else failed: the exhibit's own checks passed.
    assert build.log.count(": ERROR:") == 1, build.log
