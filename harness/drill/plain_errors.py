"""Pydantic's errors about a drill file, said in plain words with "did you mean" for names.

Pydantic speaks of "extra inputs" and "input tags"; a person writing a drill file thinks of
fields and steps. Each error type met in drill files gets a sentence that names what is
wrong, what was found and what is valid; any other type keeps pydantic's own words.
"""

from __future__ import annotations

import difflib
import re
import types
import typing
from typing import Any

from pydantic import BaseModel
from pydantic_core import ErrorDetails

from mirrordrill.primitives.redaction import is_secret_key


def did_you_mean(name: Any, valid: list[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest valid name, or ''."""
    close = difflib.get_close_matches(str(name), [str(v) for v in valid], n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _unwrap(tp: Any) -> Any:
    """The type inside Annotated[...] and Optional[...]."""
    while True:
        origin = typing.get_origin(tp)
        if origin is typing.Annotated:
            tp = typing.get_args(tp)[0]
        elif origin in (typing.Union, types.UnionType):
            args = [a for a in typing.get_args(tp) if a is not type(None)]
            if len(args) != 1:
                return tp
            tp = args[0]
        else:
            return tp


def _fields(model: type[BaseModel]) -> dict[str, Any]:
    """A model's fields by the name a drill file writes (its alias, e.g. ``from``)."""
    return {(f.alias or name): f.annotation for name, f in model.model_fields.items()}


def model_at(root: type[BaseModel], loc: tuple) -> type[BaseModel] | None:
    """The model whose field ``loc[-1]`` is (for an unknown field: the model that lacks it)."""
    tp: Any = root
    for part in loc[:-1]:
        tp = _unwrap(tp)
        origin = typing.get_origin(tp)
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            fields = _fields(tp)
            if part not in fields:
                return None
            tp = fields[part]
        elif origin in (list, tuple) and isinstance(part, int):
            tp = typing.get_args(tp)[0]
        elif origin is dict:
            tp = typing.get_args(tp)[1]
        elif origin in (typing.Union, types.UnionType):
            # a discriminated union of steps: the tag is the ``do:`` value
            members = [m for m in typing.get_args(tp) if isinstance(m, type) and issubclass(m, BaseModel)
                       and part in typing.get_args(m.model_fields["do"].annotation if "do" in m.model_fields else ())]
            if not members:
                return None
            tp = members[0]
        else:
            return None
    tp = _unwrap(tp)
    return tp if isinstance(tp, type) and issubclass(tp, BaseModel) else None


_KINDS = {"int": "a whole number", "float": "a number", "bool": "true or false", "string": "text",
          "list": "a list, e.g. [a, b]", "tuple": "a list, e.g. [a, b]", "dict": "a mapping (key: value lines)",
          "model": "a mapping (key: value lines)"}
_BOUNDS = {"greater_than": ("gt", "greater than"), "greater_than_equal": ("ge", "at least"),
           "less_than": ("lt", "less than"), "less_than_equal": ("le", "at most")}


class _NotShown(str):
    """Stands in for the value of a field that names a secret, in messages that quote what was given."""

    def __repr__(self) -> str:
        return "a value (not shown: the field names a secret)"


def plain_message(err: ErrorDetails, root: type[BaseModel]) -> str:
    """One pydantic error (from ``ValidationError.errors()``) as a sentence for a person."""
    kind, loc, ctx, given = err["type"], tuple(err["loc"]), err.get("ctx") or {}, err.get("input")
    if given is not None and any(isinstance(part, str) and is_secret_key(part) for part in loc):
        given = _NotShown()  # a password of the wrong type is still a password: never echoed
    if kind == "extra_forbidden":
        model = model_at(root, loc)
        valid = sorted(_fields(model)) if model else []
        hint = did_you_mean(loc[-1], valid)
        return f"unknown field {loc[-1]!r}{hint}" + (f"; valid fields here: {', '.join(valid)}" if valid else "")
    if kind == "union_tag_invalid":
        tags = re.findall(r"'([^']*)'", str(ctx.get("expected_tags", "")))
        what = "step" if ctx.get("discriminator") == "'do'" else "kind"
        return f"unknown {what} {ctx.get('tag')!r}{did_you_mean(ctx.get('tag'), tags)}; valid {what}s: {', '.join(tags)}"
    if kind == "union_tag_not_found":
        return "this step has no 'do:'; write what it does, e.g. 'do: blackhole'"
    if kind == "missing":
        if isinstance(loc[-1], int):
            return f"item {loc[-1] + 1} is missing" + (": a link is between two clusters, e.g. [primary, dr]"
                                                         if "between" in loc else "")
        return f"missing required field {loc[-1]!r}"
    if kind == "literal_error":
        valid = re.findall(r"'([^']*)'", str(ctx.get("expected", "")))
        return f"{given!r} is not valid here{did_you_mean(given, valid)}; valid values: {', '.join(valid)}"
    if kind in ("int_from_float",):
        return f"expected a whole number, got {given!r}"
    if kind == "finite_number":
        return f"expected a finite number, got {given!r}"
    for prefix, words in _KINDS.items():
        if kind.startswith(prefix + "_") and kind.endswith(("_type", "_parsing")):
            if given is None:  # "timeline:" with nothing after it
                return f"expected {words}, got nothing (an empty value); fill it in or remove the key"
            return f"expected {words}, got {given!r}"
    if kind in _BOUNDS:
        key, words = _BOUNDS[kind]
        return f"must be {words} {ctx.get(key)}, got {given!r}"
    if kind == "string_pattern_mismatch":
        return f"{given!r} has characters not allowed here; it must match {ctx.get('pattern')}"
    if kind == "too_short":
        return f"needs at least {ctx.get('min_length')} item(s)"
    if kind == "too_long":
        return f"takes at most {ctx.get('max_length')} item(s)"
    return str(err["msg"]).removeprefix("Value error, ")


def either(first: str, second: str) -> str | None:
    """``expected a list, got 'x'`` and ``expected a mapping, got 'x'`` as one sentence (a field
    that takes either reports each alternative separately), or None when they are not of that form."""
    a, b = re.fullmatch(r"expected (.+), (got .+)", first), re.fullmatch(r"expected (.+), (got .+)", second)
    if a and b and a.group(2) == b.group(2):
        return f"expected {a.group(1)} or {b.group(1)}, {a.group(2)}"
    return None
