"""What a record's body holds: the payload model of a load producer (``payload:`` in a drill file).

The envelope (loadgen/envelope.py) stays in front of every body: the checker identifies and
verifies records from it alone, so a payload model only decides the bytes after it. Forms::

    payload: random                                  (default) random bytes of record_size: no codec shrinks them
    payload: {json: {fields: {user: {ids: 50000}, status: {enum: [new, paid]}, at: {timestamp: ms},
                              note: {words: 8}, amount: {number: [1, 500]}}}}
    payload: {file: samples.jsonl}                   a line of the team's own file per record
    payload: {compress_ratio: 4}                     record_size bytes that zstd or lz4 shrink about 4 times

A JSON or file record is as long as its text, so ``record_size`` does not apply to them. Plain
pydantic and the standard library: the harness validates these in its own process.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

MAX_RATIO = 20.0
MAX_FILE_BYTES = 64 * 1024 * 1024  # what one load process reads of a sample file: it holds the lines in memory
_RATIO_BLOCK = 1024  # bytes; each block is fresh random bytes, then zeros (see compressible_body)

# The words of ``{words: N}`` text: 64 common English words, so text compresses as prose does.
WORDS = tuple("""the of and to in is was for on that with as by at from his her they this be are or had not
but an have one were which all their when there can more out so up about into only other new some could time
these two may then first any like now over such our""".split())

Body = Callable[[int, int], bytes]  # (seq, body size asked for) -> the body


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


_FIELD_FORMS = "{ids: N}, {enum: [a, b]}, {timestamp: ms}, {timestamp: iso}, {words: N}, {number: [low, high]}"


class FieldSpec(_Strict):
    """One field of a JSON record and the values it takes: exactly one of ``ids`` (integers
    0..N-1), ``enum`` (one of the values), ``timestamp`` (the send time, ``ms`` or ``iso``),
    ``words`` (N words of a 64-word list), ``number`` (a number between the two, 2 decimals)."""

    ids: int | None = Field(default=None, gt=0, description="distinct values: an integer 0..N-1")
    enum: tuple[str | int | float | bool, ...] | None = Field(default=None, min_length=1,
                                                             description="one of these values")
    timestamp: Literal["ms", "iso"] | None = Field(default=None,
                                                   description="the time of sending: epoch ms, or ISO 8601 UTC")
    words: int | None = Field(default=None, gt=0, le=1000, description="text of N words of a 64-word list")
    number: tuple[float, float] | None = Field(default=None, description="a number in [low, high], 2 decimals")

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data: Any) -> Any:
        if isinstance(data, str):
            raise ValueError(f"unknown field kind {data!r}; use one of {_FIELD_FORMS}")
        return data

    @model_validator(mode="after")
    def _exactly_one(self) -> FieldSpec:
        given = [n for n in ("ids", "enum", "timestamp", "words", "number") if getattr(self, n) is not None]
        if len(given) != 1:
            raise ValueError(f"a field needs exactly one of {_FIELD_FORMS}; got {given or 'none'}")
        if self.number is not None and self.number[0] > self.number[1]:
            raise ValueError(f"number: [low, high] needs low <= high, got {list(self.number)}")
        return self

    def sampler(self, rng: random.Random) -> Callable[[], Any]:
        """A function of no arguments returning the field's next value."""
        if self.ids is not None:
            n = self.ids
            return lambda: rng.randrange(n)
        if self.enum is not None:
            values = self.enum
            return lambda: values[rng.randrange(len(values))]
        if self.timestamp == "ms":
            return lambda: time.time_ns() // 1_000_000
        if self.timestamp == "iso":
            # gmtime() alone reads the coarse clock, up to a tick behind time.time() at a second's edge
            return lambda: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time()))
        if self.words is not None:
            count = self.words
            return lambda: " ".join(rng.choices(WORDS, k=count))
        low, high = self.number or (0.0, 0.0)
        return lambda: round(rng.uniform(low, high), 2)


class JsonPayload(_Strict):
    """JSON objects made from a template: each field's values come from its stated cardinality."""

    fields: dict[str, FieldSpec] = Field(min_length=1, description="field name -> the values it takes")

    def body(self, rng: random.Random) -> Body:
        samplers = [(name, spec.sampler(rng)) for name, spec in self.fields.items()]
        dumps = json.JSONEncoder(separators=(",", ":")).encode
        return lambda _seq, _size: dumps({name: sample() for name, sample in samplers}).encode()


_PAYLOAD_FORMS = "random, {json: {fields: {...}}}, {file: PATH} or {compress_ratio: R}"


class PayloadSpec(_Strict):
    """What a record's body holds, after the envelope: ``random`` (the default: random bytes of
    ``record_size``, which no codec shrinks), ``{json: {fields: ...}}``, ``{file: PATH}`` (lines of
    a file, one per record, relative to the drill file; read by the load, never copied into the
    run folder) or ``{compress_ratio: R}`` (``record_size`` bytes that zstd or lz4 shrink about R times)."""

    json_: JsonPayload | None = Field(default=None, alias="json", description="JSON records from a template")
    file: Path | None = Field(default=None, description="a text file: each record is one of its lines, at random")
    compress_ratio: float | None = Field(default=None, ge=1.0, le=MAX_RATIO,
                                         description="bytes that compress about this many times (1: not at all)")

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data: Any) -> Any:
        if data is None or data == "random":
            return {}
        if isinstance(data, str):
            raise ValueError(f"unknown payload {data!r}; use {_PAYLOAD_FORMS}")
        if isinstance(data, dict):
            data = {k: v for k, v in data.items() if v is not None}  # a dumped spec lists the kinds not chosen as null
            unknown = set(data) - {"json", "json_", "file", "compress_ratio"}
            if unknown:
                raise ValueError(f"unknown payload kind {sorted(unknown)}; use {_PAYLOAD_FORMS}")
            if len(data) > 1:
                raise ValueError(f"payload: give one of {_PAYLOAD_FORMS}, not {sorted(data)}")
        return data

    @property
    def kind(self) -> str:
        return ("json" if self.json_ is not None else "file" if self.file is not None
                else "compress_ratio" if self.compress_ratio is not None else "random")

    @property
    def sized(self) -> bool:
        """True when ``record_size`` sets the body's length (random, compress_ratio)."""
        return self.kind in ("random", "compress_ratio")

    def resolved(self, base: Path | None) -> PayloadSpec:
        """The spec with a relative ``file`` made absolute against ``base`` (the drill file's folder)."""
        if self.file is None or base is None or self.file.is_absolute():
            return self
        return self.model_copy(update={"file": (base / self.file).resolve()})

    def bodies(self, seed: str | int | None = None) -> Callable[[str], Body | None]:
        """Per producer id, its body function (None: the envelope's own random payloads); a
        file is read here, once, for every producer of the process."""
        lines = read_lines(self.file) if self.file is not None else None

        def for_producer(producer_id: str) -> Body | None:
            rng = random.Random(f"{seed if seed is not None else ''}:{producer_id}:payload")
            if self.json_ is not None:
                return self.json_.body(rng)
            if lines is not None:
                return lambda _seq, _size: lines[rng.randrange(len(lines))]
            if self.compress_ratio is not None:
                ratio = self.compress_ratio
                return lambda _seq, size: compressible_body(rng, size, ratio)
            return None
        return for_producer


def _or_random(schema: dict[str, Any]) -> None:
    # ``payload: random`` is a valid drill: the JSON Schema that editors check a drill against says so too
    ref = schema.pop("$ref")
    schema.update(anyOf=[{"const": "random", "type": "string"}, {"$ref": ref}], default="random")


# The drill file's ``payload`` field (harness/drill/schema.py ProducerDef): its description and schema.
PAYLOAD_FIELD = Field(description="what each record's body holds, after the envelope", json_schema_extra=_or_random)


def compressible_body(rng: random.Random, size: int, ratio: float) -> bytes:
    """``size`` bytes that an LZ codec shrinks about ``ratio`` times: per block of up to 1 KB, a
    1/ratio share of fresh random bytes (which no codec shrinks) and zeros (which cost almost
    nothing). Fresh per record: a pool reused across records would be found again by zstd's
    window, and a batch would shrink far more than ``ratio``. For ratios 1-10 and bodies of 256 B or
    more, a batch lands within 10% of ``ratio`` with zstd and 20% with lz4, below it rather than above
    (tests/unit/test_payload.py); the envelope in front of each body is not part of it."""
    if size <= 0:
        return b""
    block = min(_RATIO_BLOCK, size)
    random_part = max(1, round(block / ratio))
    zeros = bytes(block - random_part)
    return b"".join(rng.randbytes(random_part) + zeros for _ in range(-(-size // block)))[:size]


def read_lines(path: Path) -> list[bytes]:
    """The non-empty lines of a sample file (at most its first 64 MiB); ValueError when it has none."""
    with open(path, "rb") as f:
        data = f.read(MAX_FILE_BYTES)
    lines = [line.rstrip(b"\r") for line in data.split(b"\n") if line.strip()]
    if len(data) == MAX_FILE_BYTES and lines:
        lines.pop()  # the last line may be cut
    if not lines:
        raise ValueError(f"{path}: no non-empty line to send as a record")
    return lines


def file_problem(path: Path) -> str | None:
    """Why a sample file cannot be used (None when it can): checked before anything starts."""
    if not path.is_file():
        return f"{path}: no such file (a relative path is read from the drill file's folder)"
    try:
        read_lines(path)
    except OSError as e:
        return f"{path}: cannot be read ({e.strerror or e})"
    except ValueError as e:
        return str(e)
    return None
