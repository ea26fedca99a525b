"""A row to one CSV line and back: RFC 4180 quoting, free text folded onto one line."""

from __future__ import annotations

from loadgen.histories.records import AckedSend, LagSample, ProcessedRecord, TargetRecord, TimelineEvent, UncertainSend

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


def encode_acked(r: AckedSend, ident: Identifiers) -> str:
    return (f"{ident(r.cluster)},{ident(r.topic)},{r.partition:d},{r.offset:d},"
            f"{ident(r.producer_id)},{r.seq:d},{r.send_ts_ms:d},{r.ack_ts_ms:d},"
            f"{r.size_bytes:d},{r.checksum:d}\n")


def encode_uncertain(r: UncertainSend, ident: Identifiers) -> str:
    return (f"{ident(r.cluster)},{ident(r.topic)},{ident(r.producer_id)},{r.seq:d},"
            f"{r.send_ts_ms:d},{_free_text(r.error)}\n")


def encode_target(r: TargetRecord, ident: Identifiers) -> str:
    return (f"{ident(r.cluster)},{ident(r.topic)},{r.partition:d},{r.offset:d},"
            f"{ident(r.producer_id)},{r.seq:d},{r.seen_ts_ms:d},{_bool(r.checksum_ok)},"
            f"{r.checksum:d}\n")


def encode_processed(r: ProcessedRecord, ident: Identifiers) -> str:
    return (f"{ident(r.group)},{ident(r.cluster)},{ident(r.topic)},{r.partition:d},"
            f"{r.offset:d},{ident(r.producer_id)},{r.seq:d},{r.processed_ts_ms:d}\n")


def encode_lag(r: LagSample, ident: Identifiers) -> str:
    return (f"{r.ts_ms:d},{ident(r.cluster)},{ident(r.topic)},{r.partition:d},"
            f"{r.end_offset:d}\n")


def encode_timeline(r: TimelineEvent, ident: Identifiers) -> str:
    return (f"{_free_text(r.name)},{_free_text(r.kind)},{r.start_ts_ms:d},"
            f"{_opt_int(r.end_ts_ms)},{_free_text(r.outcome)},{_free_text(r.detail)},"
            f"{_free_text(r.condition or '')},{_opt_bool(r.condition_held)},{_opt_int(r.condition_checked_ts_ms)}\n")


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


def decode_acked(f: list[str]) -> AckedSend:
    return AckedSend(f[0], f[1], int(f[2]), int(f[3]), f[4], int(f[5]), int(f[6]),
                     int(f[7]), int(f[8]), int(f[9]))


def decode_uncertain(f: list[str]) -> UncertainSend:
    return UncertainSend(f[0], f[1], f[2], int(f[3]), int(f[4]), f[5])


def decode_target(f: list[str]) -> TargetRecord:
    return TargetRecord(f[0], f[1], int(f[2]), int(f[3]), f[4], int(f[5]), int(f[6]),
                        _parse_bool(f[7]), int(f[8]))


def decode_processed(f: list[str]) -> ProcessedRecord:
    return ProcessedRecord(f[0], f[1], f[2], int(f[3]), int(f[4]), f[5], int(f[6]),
                           int(f[7]))


def decode_lag(f: list[str]) -> LagSample:
    return LagSample(int(f[0]), f[1], f[2], int(f[3]), int(f[4]))


def decode_timeline(f: list[str]) -> TimelineEvent:
    return TimelineEvent(f[0], f[1], int(f[2]), _parse_opt_int(f[3]), f[4], f[5], f[6] or None, _parse_opt_bool(f[7]),
                         _parse_opt_int(f[8]))
