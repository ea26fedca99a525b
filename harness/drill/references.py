"""``${env:NAME}``, ``${file:PATH:KEY}`` and ``${dir:PATH:FILE}`` references, resolved before anything starts.

A reference that cannot be resolved used to surface only once the clusters and proxies ran,
minutes into a drill. ``validate`` (and ``run``, which always checks) resolves every one here and
throws the value away: only the reference's name, field and line are ever printed. A CI lint job
that holds no secrets skips this with ``validate --no-secrets``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from mirrordrill.primitives.config_refs import ConfigRefError, RefResolver, check_ref_syntax, find_refs

Report = Callable[[tuple, str], None]

# Prose about the drill, never handed to a client: a reference written there is an example.
_PROSE_KEYS = ("description",)


def reference_problems(data: dict, resolver: RefResolver, bad: Report) -> None:
    """Every reference in the drill file's values that cannot be resolved, named at its field."""
    for path, value, optional in _string_values(data, ()):
        if check_ref_syntax(value):
            continue  # a malformed reference is the field's own check's to name
        for ref in find_refs(value):
            try:
                resolver.resolve(ref.text)
            except ConfigRefError as err:
                if optional and ref.provider == "env":
                    continue  # random_password_if_unset: an unset variable means a random password
                bad(path, f"{err}; or run 'validate --no-secrets' in a lint job that holds no secrets "
                          "(run always resolves them)")


def _string_values(node: Any, path: tuple) -> Iterator[tuple[tuple, str, bool]]:
    """(path, value, optional) of every string in ``node``; optional: a password the harness may make up."""
    if isinstance(node, dict):
        optional = node.get("random_password_if_unset") is True
        for key, value in node.items():
            if not path and key in _PROSE_KEYS:
                continue
            if isinstance(value, str):
                yield path + (key,), value, optional and key == "password"
            else:
                yield from _string_values(value, path + (key,))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            if isinstance(value, str):
                yield path + (i,), value, False
            else:
                yield from _string_values(value, path + (i,))
