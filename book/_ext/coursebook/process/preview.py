"""The live preview (``make preview``) shows the pages of the last build that passed: a
failed build stops before writing any, naming the command its failure needs."""

from __future__ import annotations

import sys

from sphinx.application import Sphinx

from coursebook.config import book_config
from coursebook.reporting import asked_for, warnings_logged

FAILED = "preview: the build failed (the message above)"


def failure_message(commands: list[str]) -> str:
    fix = (f"If the new outputs are right, run {' and '.join(f'`{c}`' for c in commands)} in "
           "another terminal: the preview rebuilds when they change. Otherwise save the fix."
           if commands else "Save the fix to rebuild.")
    return f"{FAILED}; no page was written, the server keeps the last good ones. {fix}"


def keep_last_good_pages(app: Sphinx, builder) -> None:
    """``write-started``: in the preview, end a failed build before it writes (-W makes
    each warning fatal, but only at the end of the build)."""
    failed = app.statuscode != 0 or warnings_logged(app) > 0
    if book_config(app.config).preview and failed:
        print(failure_message(asked_for(app.env)), file=sys.stderr, flush=True)
        # SystemExit, not an exception: Sphinx would print a crash report for one.
        sys.exit(1)
