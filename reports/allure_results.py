"""Allure results for a drill run: one test result per flow, written into ``<run>/allure-results``.

Labels group runs by scenario and replicator; timeline steps and expectations become
steps; plots, the summary, the scenario, the redacted replicator configuration and (on
failure) log tails become attachments. ``historyId`` depends only on scenario, replicator
and flow, so Allure's history links every quarterly run of the same drill into one trend.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from allure_commons.logger import AllureFileLogger
from allure_commons.model2 import (
    ATTACHMENT_PATTERN,
    Attachment,
    Label,
    Parameter,
    Status,
    StatusDetails,
    TestResult,
    TestStepResult,
)

from mirrordrill.harness.drill.results import (
    DrillResults,
    DrillSummary,
    ExpectationRow,
    FailbackSummary,
    FailoverSummary,
    FlowResults,
    load_results,
)
from mirrordrill.reports.attachments import DrillAttachment, drill_log, flow_plots, log_files, run_attachments
from mirrordrill.reports.labels import behaviour_labels
from mirrordrill.reports.summary_html import overview_html

RESULTS_DIR = "allure-results"
_STEP_STATUS = {"ok": Status.PASSED, "failed": Status.FAILED, "timeout": Status.FAILED}
_FLOW_IN_NAME = re.compile(r"\[([^\]]+)\]")


def write_allure_results(run_dir: Path) -> Path:
    """Write Allure results for the run saved in ``run_dir`` (replacing earlier ones); returns their folder."""
    run = load_results(Path(run_dir))
    out = (run.run_dir or Path(run_dir)) / RESULTS_DIR
    logger = AllureFileLogger(out, clean=True)
    shared = run_attachments(run) + (drill_log(run) if run.passed else log_files(run))
    # a drill that failed before checking still gets a (broken) result
    flows: list[FlowResults | None] = list(run.flows) or [None]
    for flow in flows:
        result = drill_result(run, flow)
        plots = flow_plots(run, flow) if flow is not None else []
        # The overview shows figures and plots at once; attachments hold the same, one by one.
        result.descriptionHtml = overview_html(run, flow, plots)
        attachments = plots + shared
        for a in attachments:
            result.attachments.append(_write_attachment(logger, a))
        logger.report_result(result)
    return out


def record_allure_results(run_dir: Path, log: Callable[[str], None]) -> Path | None:
    """As :func:`write_allure_results` at the end of a drill: a failure is logged, never raised,
    because the drill's verdict and summary.json must not depend on the report."""
    try:
        out = write_allure_results(run_dir)
        log(f"allure results: {out} (render with: mirrordrill report {Path(run_dir)})")
        return out
    except Exception as e:
        log(f"could not write allure results: {type(e).__name__}: {e}")
        return None


def _write_attachment(logger: AllureFileLogger, a: DrillAttachment) -> Attachment:
    file_name = ATTACHMENT_PATTERN.format(prefix=uuid.uuid4(), ext=a.extension)
    logger.report_attached_data(a.body, file_name)
    return Attachment(name=a.name, source=file_name, type=a.mime)


def _stable_id(*parts: str) -> str:
    return hashlib.md5("\0".join(parts).encode()).hexdigest()


def drill_result(run: DrillResults, flow: FlowResults | None) -> TestResult:
    """The test result of one flow of a run (without attachments): labels, status, steps."""
    s = run.summary
    flow_name = flow.name if flow is not None else "no flow checked"
    several = len(run.flows) > 1
    title = f"{run.name} [{run.replicator}]" + (f" {flow_name}" if several else "")
    start = run.started_ms
    stop = start + int(s.duration_s * 1000)
    expectations = [e for e in s.expectations if _belongs(e, flow_name)]
    status, details = _status(s, expectations)
    result = TestResult(
        uuid=str(uuid.uuid4()), name=title, fullName=f"mirrordrill.{run.name}.{run.replicator}.{flow_name}",
        historyId=_stable_id(run.name, run.replicator, flow_name), testCaseId=_stable_id(run.name, flow_name),
        status=status, statusDetails=details, start=start, stop=stop,
        description=_description(run, flow), titlePath=[run.name, run.replicator],
        labels=[Label("suite", run.name), Label("parentSuite", "mirrordrill drills"),
                Label("subSuite", run.replicator), Label("replicator", run.replicator),
                Label("scenario", run.name), Label("framework", "mirrordrill"), Label("tag", run.replicator),
                *(Label(name, value) for name, value in behaviour_labels(run))],
        parameters=[Parameter("replicator", run.replicator), Parameter("flow", flow_name),
                    Parameter("run", str(run.run_dir), excluded=True)],
    )
    result.steps += _timeline_steps(s, flow)
    result.steps += [_expectation_step(e, stop) for e in expectations]
    result.steps += [_failover_step(fo, stop) for fo in s.failovers]
    result.steps += [_failback_step(fb, stop) for fb in s.failbacks]
    return result


def _belongs(expectation: ExpectationRow, flow_name: str) -> bool:
    """Expectations name their flow in brackets; unbracketed ones concern the whole drill."""
    m = _FLOW_IN_NAME.search(expectation.name)
    return m is None or m.group(1) == flow_name.split(" (via")[0]


def _status(s: DrillSummary, expectations: list[ExpectationRow]) -> tuple[str, StatusDetails | None]:
    if s.error or s.interrupted:
        return Status.BROKEN, StatusDetails(message=s.error or "interrupted before the drill finished",
                                            trace=f"rerun: {s.rerun}")
    failed = [e for e in expectations if not e.passed]
    if failed:
        return Status.FAILED, StatusDetails(message="; ".join(
            f"{e.name}: actual {e.actual}" for e in failed), trace=f"rerun: {s.rerun}")
    if not s.passed:  # a violated expectation of another flow fails the drill, not this flow
        return Status.PASSED, StatusDetails(message="this flow held; another flow of the drill did not")
    return Status.PASSED, None


def _description(run: DrillResults, flow: FlowResults | None) -> str:
    f = flow.summary if flow is not None else None
    def fig(k: str) -> Any:
        return getattr(f, k) if f is not None else None

    def lat(k: str) -> Any:
        return getattr(f.latency_ms, k) if f is not None else None

    return (f"{run.name} replicated by {run.replicator}. "
            f"acked {fig('acked')}, replicated {fig('replicated')}, lost {fig('lost')}, "
            f"duplicates {fig('duplicates')}, reordered {fig('reordered')}, corrupted {fig('corrupted')}, "
            f"unexpected {fig('unexpected')}; latency p50 {lat('p50')} ms, p99 {lat('p99')} ms. "
            f"Run folder: {run.run_dir}")


def _timeline_steps(s: DrillSummary, flow: FlowResults | None) -> list[TestStepResult]:
    impact = {(e.name, e.start_ts_ms): e for e in (flow.summary.events if flow else [])}
    steps = []
    for e in s.timeline:
        params = [Parameter("kind", e.kind), Parameter("outcome", e.outcome)]
        if e.detail:
            params.append(Parameter("detail", e.detail))
        if e.condition:
            held = "held" if e.condition_held else "NOT met: the step ran anyway"
            params.append(Parameter("condition", f"{e.condition}: {held} (checked at {e.condition_checked_ts_ms} ms)"))
        hit = impact.get((e.name, e.start_ts_ms))
        if hit:
            params += [Parameter("acked during", str(hit.acked)), Parameter("lost of those", str(hit.lost)),
                       Parameter("max lag during", str(hit.max_lag))]
            if hit.stall_s is not None:
                params.append(Parameter("longest stall overlapping it (s)", f"{hit.stall_s:.1f}"))
        status = _STEP_STATUS.get(e.outcome, Status.BROKEN)
        name = e.name + (" (condition not met)" if e.condition and e.condition_held is False else "")
        steps.append(TestStepResult(
            name=name, status=status, start=e.start_ts_ms, stop=e.end_ts_ms or e.start_ts_ms,
            parameters=params,
            statusDetails=StatusDetails(message=e.detail) if status != Status.PASSED else None))
    return steps


def _expectation_step(e: ExpectationRow, at_ms: int) -> TestStepResult:
    return TestStepResult(
        name=f"expect {e.name}", status=Status.PASSED if e.passed else Status.FAILED, start=at_ms, stop=at_ms,
        parameters=[Parameter("actual", str(e.actual)), Parameter("limit", f"{e.op} {e.limit}".strip())]
        + ([Parameter("relaxed" if e.relaxed else "not judged", e.relaxed or e.note)]
           if e.relaxed or (e.note and e.passed) else []),
        statusDetails=None if e.passed else StatusDetails(message=f"actual {e.actual}, expected {e.op} {e.limit}"))


def _failover_step(fo: FailoverSummary, at_ms: int) -> TestStepResult:
    return TestStepResult(
        name=f"failover of group {fo.group} ({fo.strategy}, {fo.primary}->{fo.dr})",
        status=Status.PASSED, start=at_ms,
        stop=at_ms, parameters=[Parameter(k, str(getattr(fo, k))) for k in ("skipped", "reprocessed", "rto_s", "rpo_records")])


def _failback_step(fb: FailbackSummary, at_ms: int) -> TestStepResult:
    return TestStepResult(
        name=f"failback {fb.name}: {'converged' if fb.converged else 'NOT converged'}",
        status=Status.PASSED if fb.converged else Status.FAILED, start=at_ms, stop=at_ms,
        parameters=[Parameter(k, str(getattr(fb, k))) for k in ("topics", "records", "missing", "extra", "converge_s",
                                                                  "history_records", "history_note")])


def attach_to_pytest(run_dir: Path) -> None:
    """From a pytest drill test (allure-pytest): attach the same plots, summary and logs to the test."""
    import allure
    run = load_results(Path(run_dir))
    items = [a for f in run.flows for a in flow_plots(run, f)] + run_attachments(run)
    items += drill_log(run) if run.passed else log_files(run)
    allure.dynamic.label("replicator", run.replicator)
    allure.dynamic.label("scenario", run.name)
    allure.dynamic.suite(run.name)
    for name, value in behaviour_labels(run):
        allure.dynamic.label(name, value)
    for a in items:
        allure.attach(a.body, name=a.name, attachment_type=a.mime, extension=a.extension)
