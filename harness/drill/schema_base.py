"""What every part of the drill file model shares: the base model, durations, and the bounded numbers.

Split from schema.py so the timeline's steps (schema_timeline.py) and the rest of the model
(schema.py) build on one base without importing each other.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, BeforeValidator, ConfigDict, WithJsonSchema

from mirrordrill.harness.drill import bounds as B
from mirrordrill.harness.drill.bounds import at_most, at_most_seconds
from mirrordrill.harness.drill.durations import DURATION_JSON_SCHEMA, parse_duration


class _M(BaseModel):
    # .inf and .nan are YAML numbers: a rate or limit of .inf is never what a drill means.
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


# Seconds, written as 90, '90s', '1m30s' or '500ms'.
Seconds = Annotated[float, BeforeValidator(parse_duration), WithJsonSchema(DURATION_JSON_SCHEMA)]
# How long one step or phase may wait for something (a drain, a condition, a command).
Wait = Annotated[Seconds, at_most_seconds(B.MAX_WAIT_S, "for one wait")]


def _jitter_within_latency(latency_ms: int, jitter_ms: int) -> None:
    # The WAN proxy adds latency +- jitter; jitter above latency would ask for negative delays.
    if latency_ms and jitter_ms > latency_ms:
        raise ValueError(f"jitter_ms ({jitter_ms}) is larger than latency_ms ({latency_ms}): the delay is "
                         "latency plus or minus jitter, so jitter must be at most latency")


Latency = Annotated[int, at_most(B.MAX_LATENCY_MS, "ms of latency on a link")]


Partitions = Annotated[int, at_most(B.MAX_PARTITIONS, "partitions per topic")]
