"""The checker: what was promised (the ledger), what happened (the target, the consumers).

``reference`` is the specification in plain Python; ``spark`` computes the same results
on DataFrames (import it explicitly: it needs pyspark and a SparkSession).
"""

from mirrordrill.harness.drill.checker.contract import (
                                   CheckerInputError,
                                   EventImpact,
                                   FailoverInput,
                                   FailoverResult,
                                   FlowInput,
                                   FlowResult,
                                   FlowSeries,
                                   IdSamples,
                                   LatencyStats,
                                   MessageId,
                                   SecondSeries,
                                   TopicResult,
)
from mirrordrill.harness.drill.checker.reference import check_failover, check_flow

__all__ = [
    "CheckerInputError", "EventImpact", "FailoverInput", "FailoverResult", "FlowInput",
    "FlowResult", "FlowSeries", "IdSamples", "LatencyStats", "MessageId", "SecondSeries",
    "TopicResult", "check_failover", "check_flow",
]
