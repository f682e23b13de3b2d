"""Both editions build at once from an empty cache, sharing it (`make editions`).

The tiny book gets a second chapter with no answers: both editions execute the very same
notebook, slowly enough that the two builds overlap. With the cache locks it executes
once and both builds pass, every time; without them, both execute it and jupyter-cache
refuses the second copy ("hashkey already exists") or runs it twice.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import Build, sphinx_build

SHARED_CHAPTER = """\
---
jupytext:
  text_representation:
    format_name: myst
kernelspec:
  name: python3
  display_name: Python 3
---

# A chapter both editions share

```{code-cell} ipython3
import time
time.sleep(4)  # long enough for the other edition's build to reach this chapter too
print("shared")
```
"""
# The fixture's expectations do not cover the extra chapter; this test is about the cache.
SETTINGS = {"coursebook_verify_outputs": "0"}


def _with_shared_chapter(book: Path) -> Path:
    (book / "shared.md").write_text(SHARED_CHAPTER)
    index = book / "index.md"
    index.write_text(index.read_text().replace("chapter\n", "chapter\nshared\n"))
    return book


def both_editions_at_once(book: Path, root: Path, **settings: str) -> dict[str, Build]:
    cache = root / "cache"
    with ThreadPoolExecutor(2) as pool:
        student = pool.submit(sphinx_build, book, root / "student", cache,
                              settings={**SETTINGS, **settings})
        instructor = pool.submit(sphinx_build, book, root / "instructor", cache, "instructor",
                                 settings={**SETTINGS, **settings})
        return {"student": student.result(), "instructor": instructor.result()}


@pytest.mark.slow
@pytest.mark.parametrize("attempt", range(3))
def test_both_editions_at_once_share_one_cache(tiny_book, tmp_path, attempt):
    builds = both_editions_at_once(_with_shared_chapter(tiny_book), tmp_path)
    for edition, build in builds.items():
        assert build.returncode == 0, f"{edition} build failed:\n{build.log[-3000:]}"
    # Each edition's own tiny chapter, and the shared chapter once.
    assert sum(build.executed for build in builds.values()) == 3, [
        build.log for build in builds.values()]


@pytest.mark.slow
def test_without_the_locks_the_shared_chapter_races(tiny_book, tmp_path):
    """The test above can fail: with the locks off, the same builds collide."""
    builds = both_editions_at_once(_with_shared_chapter(tiny_book), tmp_path,
                                   coursebook_cache_locks="0")
    collided = any("hashkey already exists" in build.log for build in builds.values())
    ran_twice = sum(build.executed for build in builds.values()) == 4
    assert collided or ran_twice
