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
from coursebook.reporting import asked_for

MESSAGE = ("preview: the build failed (the message above); no page was written, the "
           "server keeps the last good ones. {fix}")
SAVE = "Save the fix to rebuild."
RUN = ("If the new outputs are right, run {commands} in another terminal: the preview "
       "rebuilds when the expected outputs change. Otherwise save the fix.")


def keep_last_good_pages(app: Sphinx, builder) -> None:
    """``write-started``: in the preview, end a failed build before it writes."""
    # Sphinx counts the warnings and errors logged so far (-W makes each one fatal at the
    # end of the build); this extension's own failures also set the exit status.
    failed = app.statuscode != 0 or app._warncount > 0
    if book_config(app.config).preview and failed:
        commands = asked_for(app.env)
        fix = RUN.format(commands=" and ".join(f"`{c}`" for c in commands)) if commands else SAVE
        print(MESSAGE.format(fix=fix), file=sys.stderr, flush=True)
        # SystemExit, not an exception: Sphinx would print a crash report for one.
        sys.exit(1)
