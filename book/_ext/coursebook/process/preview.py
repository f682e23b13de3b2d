"""The live preview (``make preview``) serves the pages of the last build that passed.

sphinx-autobuild serves the folder Sphinx writes into. A build that failed (a fault, an
output unlike the expected one, a warning) would write its pages there all the same; in
the preview it stops once every page is read and checked, before writing any (naming
the command the failure needs, when it needs one: ``make accept-outputs``): the
reader keeps the last good pages, the terminal keeps the build's own message. The
pages not written are written by the next good build (their sources are newer than
their HTML); a failed chapter is read again (``PageStateCollector``).
"""

from __future__ import annotations

import sys

from sphinx.application import Sphinx

from coursebook.config import book_config
from coursebook.reporting import asked_for, warnings_logged

FAILED = "preview: the build failed (the message above)"


def failure_message(commands: list[str]) -> str:
    """What the preview says of a failed build: the command its errors asked for, if any."""
    fix = (f"If the new outputs are right, run {' and '.join(f'`{c}`' for c in commands)} in "
           "another terminal: the preview rebuilds when they change. Otherwise save the fix."
           if commands else "Save the fix to rebuild.")
    return f"{FAILED}; no page was written, the server keeps the last good ones. {fix}"


def keep_last_good_pages(app: Sphinx, builder) -> None:
    """``write-started``: in the preview, end a failed build before it writes."""
    # The warnings and errors logged so far (-W makes each one fatal at the end of the
    # build); this extension's own failures also set the exit status.
    failed = app.statuscode != 0 or warnings_logged(app) > 0
    if book_config(app.config).preview and failed:
        print(failure_message(asked_for(app.env)), file=sys.stderr, flush=True)
        # SystemExit, not an exception: Sphinx would print a crash report for one.
        sys.exit(1)
