"""A row to one CSV line and back: RFC 4180 quoting, free text folded onto one line."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields
from operator import attrgetter
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

R = TypeVar("R", bound="DataclassInstance")  # a history row: a dataclass, its fields the columns

_NEEDS_QUOTES = frozenset(',"\r\n')


def _quote(text: str) -> str:
    if _NEEDS_QUOTES.isdisjoint(text):
        return text
    return '"' + text.replace('"', '""') + '"'


def _free_text(text: str) -> str:
    # Keep one record per line: a torn record must be recognisable as the last line.
    folded = text.replace("\r\n", "\\n").replace("\n", "\\n").replace("\r", "\\n")
    return _quote(folded)


def _opt_int(value: int | None) -> str:
    return "" if value is None else f"{value:d}"


def _opt_bool(value: bool | None) -> str:
    return "" if value is None else _bool(value)


def _bool(value: bool) -> str:
    if value is True:
        return "true"
    if value is False:
        return "false"
    raise TypeError(f"expected a bool, got {value!r}")


class Identifiers:
    """Memoises the quoted form of identifiers (clusters, topics, producer ids) that repeat."""

    __slots__ = ("_cache",)
    _LIMIT = 4096

    def __init__(self) -> None:
        self._cache: dict[str, str] = {}

    def __call__(self, text: str) -> str:
        quoted = self._cache.get(text)
        if quoted is None:
            if not isinstance(text, str):
                raise TypeError(f"expected a str, got {text!r}")
            if "\n" in text or "\r" in text:
                raise ValueError(f"an identifier cannot hold a line break: {text!r}")
            quoted = _quote(text)
            if len(self._cache) < self._LIMIT:
                self._cache[text] = quoted
        return quoted


# --------------------------------------------------------------------------- decoding


def _parse_bool(text: str) -> bool:
    if text == "true":
        return True
    if text == "false":
        return False
    raise ValueError(f"not a boolean: {text!r}")


def _parse_opt_bool(text: str) -> bool | None:
    return None if text == "" else _parse_bool(text)


def _parse_opt_int(text: str) -> int | None:
    return None if text == "" else int(text)


# ------------------------------------------------------------------------ rows, by field type
# How a field is written and read back, by its annotation in ``records``: a name (``str``: a
# cluster, topic or producer id) quoted when needed and memoised, free text (``Text``) folded
# onto one line, numbers as digits, None as an empty field.
_WRITERS: dict[str, Callable[[Any, Identifiers], str]] = {
    "str": lambda value, ident: ident(value),
    "Text": lambda value, ident: _free_text(value),
    "Text | None": lambda value, ident: _free_text(value or ""),
    "int": lambda value, ident: f"{value:d}",
    "int | None": lambda value, ident: _opt_int(value),
    "bool": lambda value, ident: _bool(value),
    "bool | None": lambda value, ident: _opt_bool(value),
}
_READERS: dict[str, Callable[[str], Any]] = {
    "str": str,
    "Text": str,
    "Text | None": lambda text: text or None,
    "int": int,
    "int | None": _parse_opt_int,
    "bool": _parse_bool,
    "bool | None": _parse_opt_bool,
}


def _field_types(row_type: type) -> list[str]:
    types = [str(f.type) for f in fields(row_type)]
    unknown = [t for t in types if t not in _WRITERS]
    if unknown:
        raise TypeError(f"{row_type.__name__}: no history column for field types {unknown}")
    return types


def row_encoder(row_type: type[R]) -> Callable[[R, Identifiers], str]:
    """One row as one CSV line, its fields in declaration order."""
    writers = tuple(_WRITERS[t] for t in _field_types(row_type))
    values = attrgetter(*(f.name for f in fields(row_type)))

    def encode(row: R, ident: Identifiers) -> str:
        return ",".join([write(value, ident) for write, value in zip(writers, values(row), strict=True)]) + "\n"
    return encode


def row_decoder(row_type: type[R]) -> Callable[[list[str]], R]:
    """One row from the fields of one CSV line (their count checked by the reader)."""
    readers = tuple(_READERS[t] for t in _field_types(row_type))

    def decode(texts: list[str]) -> R:
        return row_type(*[read(text) for read, text in zip(readers, texts, strict=True)])
    return decode
