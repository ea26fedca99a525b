"""Secret redaction: values of secret-looking settings never reach a report, a log or a command line."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence

from mirrordrill.primitives.config_refs import is_pure_ref

# One rule for every place that holds settings or variables: a Kafka setting (sasl.jaas.config,
# ssl.key.password, ssl.keystore.key, sasl.oauthbearer.client.credentials...), an environment
# variable (AWS_SECRET_ACCESS_KEY, GITHUB_TOKEN, DB_PASSWD) or a command-line option.
_SECRET_KEY = re.compile(r"(passw(or)?d|secret|jaas|token|credential|api[._-]?key|ssl\.key|keystore\.key|"
                         r"private|user[._-]?info)", re.IGNORECASE)
REDACTED = "[redacted]"


def is_secret_key(key: str) -> bool:
    """True for setting names whose values must not appear in reports."""
    return bool(_SECRET_KEY.search(key))


def secret_keys(settings: Mapping[str, object]) -> list[str]:
    """The keys of ``settings`` that name a secret, whatever their value."""
    return [key for key in settings if is_secret_key(str(key))]


def literal_secret_keys(settings: Mapping[str, object]) -> list[str]:
    """The keys of ``settings`` that name a secret and hold its value rather than a reference to it."""
    return [key for key in secret_keys(settings) if not is_pure_ref(settings[key])]


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


def _secret_options(argv: Sequence[str]) -> Iterator[tuple[str, int, bool]]:
    """Each secret-looking option of a command line: its name, the index of the argument that holds
    its value (past the end when none follows) and whether it is inline (``name=value``) rather
    than the next argument (``--x-password value``)."""
    for i, arg in enumerate(argv):
        name, eq, _ = arg.partition("=")
        if eq and is_secret_key(name):
            yield name, i, True
        elif arg.startswith("-") and is_secret_key(arg):
            yield arg, i + 1, False


def redact_argv(argv: Sequence[str]) -> list[str]:
    """A command line with values of secret-looking options (``--x-password v``, ``k=v``) replaced."""
    out = list(argv)
    hidden = -1  # the argument last hidden as an option's value: it is not read as an option itself
    for name, at, inline in _secret_options(argv):
        if (at if inline else at - 1) == hidden:
            continue
        if inline:
            out[at] = f"{name}={REDACTED}"
        elif at < len(out):
            out[at] = REDACTED
            hidden = at
    return out


def _names_where(value: str) -> bool:
    # ``$TOKEN``/``${TOKEN}`` (the shell's), ``${env:NAME}`` (a reference), ``{placeholder}`` (a
    # path the harness fills in): each says where the secret is, not what it is.
    return value.startswith("$") or is_pure_ref(value) or bool(re.fullmatch(r"\{[A-Za-z_]+\}", value))


def literal_secret_options(argv: Sequence[str]) -> list[str]:
    """The secret-looking options of a command line that carry their value (``--password x``, ``password=x``)."""
    found: list[str] = []
    for name, at, inline in _secret_options(argv):
        if inline:
            value = argv[at].partition("=")[2]
            if value and not _names_where(value):
                found.append(name)
        # ``--x=password`` names no secret of its own; ``--password`` followed by an option has no value
        elif "=" not in name and at < len(argv) and not argv[at].startswith("-") and not _names_where(argv[at]):
            found.append(name)
    return found
