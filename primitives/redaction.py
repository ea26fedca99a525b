"""Secret redaction: values of secret-looking settings never reach a report, a log or a command line."""

from __future__ import annotations

import re
from typing import Mapping, Sequence

_SECRET_KEY = re.compile(r"(password|secret|jaas|token|credential|api[._-]?key|ssl\.key|private)", re.IGNORECASE)
REDACTED = "[redacted]"


def is_secret_key(key: str) -> bool:
    """True for setting names whose values must not appear in reports."""
    return bool(_SECRET_KEY.search(key))


def redact_settings(settings: Mapping[str, str]) -> dict[str, str]:
    """A copy of ``settings`` with the values of secret-looking keys replaced."""
    return {k: REDACTED if is_secret_key(k) else v for k, v in settings.items()}


def redact_properties(text: str) -> str:
    """A properties file with the values of secret-looking keys replaced."""
    out = []
    for line in text.splitlines():
        stripped = line.lstrip()
        match = re.match(r"([^=:\s]+)(\s*[=:]\s*|\s+)(.*)$", stripped)
        if match and not stripped.startswith(("#", "!")) and is_secret_key(match.group(1)):
            line = line[: len(line) - len(stripped)] + match.group(1) + match.group(2) + REDACTED
        out.append(line)
    return "\n".join(out) + ("\n" if text.endswith("\n") else "")


def redact_argv(argv: Sequence[str]) -> list[str]:
    """A command line with values of secret-looking options (``--x-password v``, ``k=v``) replaced."""
    out: list[str] = []
    hide_next = False
    for arg in argv:
        if hide_next:
            out.append(REDACTED)
            hide_next = False
            continue
        name, eq, _ = arg.partition("=")
        if eq and is_secret_key(name):
            out.append(f"{name}={REDACTED}")
        elif arg.startswith("-") and is_secret_key(arg):
            out.append(arg)
            hide_next = True
        else:
            out.append(arg)
    return out
