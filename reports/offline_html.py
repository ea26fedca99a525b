"""Make Allure's single-file report open the same way every time, offline.

Allure 3.18's awesome plugin writes two things into ``index.html`` that a mailed drill report
must not have:

- a Google Analytics tag (``googletagmanager.com``), switched on unconditionally in this
  plugin (its ``ALLURE_NO_ANALYTICS`` opt-out only reaches the allure2 plugin): opening a drill
  report must not call anyone, and on a closed network it only adds a failing request;
- the report's data *after* the app's script. The app asks for its data as soon as it runs and,
  finding no embedded data yet, falls back to ``fetch()``, which fails for a file:// page: the
  page then shows "Failed to fetch" instead of the drill (seen here 1 time in 9 on a loaded
  machine). Putting the data first makes it defined before the app can look.

Both are fixed on the written file; the markers are checked, so a new Allure version that
writes the file differently fails loudly here instead of shipping a report that may not open.
"""

from __future__ import annotations

import re
from pathlib import Path

_ANALYTICS = re.compile(
    r"<script async src=\"https://www\.googletagmanager\.com/gtag/js[^\"]*\"></script>\s*"
    r"<script>\s*window\.dataLayer[\s\S]*?</script>\s*")
_DATA_START = re.compile(r"<script async>\s*window\.allureReportDataReady = ")
_APP_SCRIPT = re.compile(r"<script\s+src=\"data:text/javascript;base64,")


class UnexpectedReportLayout(RuntimeError):
    """The report file does not look as the pinned Allure version writes it."""


def make_offline(html: Path) -> None:
    """Rewrite ``html`` in place: no analytics tag, the embedded data before the app's script."""
    text = html.read_text(encoding="utf-8")
    text = _ANALYTICS.sub("", text)
    data = _DATA_START.search(text)
    app = _APP_SCRIPT.search(text)
    if data is None or app is None:
        raise UnexpectedReportLayout(
            f"{html}: no {'embedded report data' if data is None else 'inline app script'} where Allure "
            "3.18 writes it; check the Allure version pinned in primitives/versions.py")
    if data.start() > app.start():
        end = _end_of_data(text, data.start())
        block = text[data.start():end]
        text = text[:app.start()] + block + "\n    " + text[app.start():data.start()] + text[end:]
    html.write_text(text, encoding="utf-8")


def _end_of_data(text: str, start: int) -> int:
    """Where the data block ends: after the script that marks the data ready."""
    first_end = text.index("</script>", start) + len("</script>")
    follows = text[first_end:].lstrip()
    if follows.startswith("<script defer>") and "Promise.allSettled(" in follows[:100]:
        return text.index("</script>", first_end) + len("</script>")
    return first_end  # a report without data files: one script that says the data is ready
