"""What goes wrong in a configuration: located errors, warnings, and the models' own failures."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


class ConfigError(ValueError):
    """A configuration problem, located in its file (name, line, key) with what would be valid."""

    def __init__(
        self,
        problem: str,
        *,
        source: str,
        line: int | None = None,
        key: str | None = None,
        valid: str | None = None,
        suggestions: Iterable[str] = (),
    ) -> None:
        self.problem = problem
        self.source = source
        self.line = line
        self.key = key
        self.valid = valid
        self.suggestions = tuple(suggestions)
        super().__init__(self._render())

    def _render(self) -> str:
        where = self.source if self.line is None else f"{self.source}, line {self.line}"
        text = f"{where}: {self.key}: {self.problem}" if self.key else f"{where}: {self.problem}"
        if self.suggestions:
            text += " (did you mean " + " or ".join(repr(s) for s in self.suggestions) + "?)"
        if self.valid:
            text += f"; valid: {self.valid}"
        return text

@dataclass(frozen=True)
class ConfigWarning:
    """A setting that was accepted but will not do what its author may expect."""

    source: str
    line: int | None
    key: str
    message: str

    def __str__(self) -> str:
        where = self.source if self.line is None else f"{self.source}, line {self.line}"
        return f"{where}: {self.key}: {self.message}"

class InvalidSetting(ValueError):
    """A model invariant that failed, naming the field (and flow or cluster) at fault.

    Raised inside validators; loaders turn it into a located ``ConfigError``.
    """

    def __init__(
        self,
        message: str,
        *,
        field: str,
        valid: str | None = None,
        flow: int | None = None,
        cluster: str | None = None,
        subkey: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.field = field
        self.valid = valid
        self.flow = flow
        self.cluster = cluster
        self.subkey = subkey
