"""Run many scenarios, each into its own results folder: on a local process pool or on Ray.

A job is one scenario and the folder its results go to. Whatever runs it, a job ends as
a JobResult: done, or failed with a one-line reason. A scenario the backend refuses (a
feature not modelled yet) fails its job, never the batch, so the other jobs go on. An
unexpected exception is a bug in gossiplab: its job fails too, with the traceback kept.

Results folders appear atomically (results.write_results), so a job either left a
complete folder or nothing at all, even when the process running it was killed.
"""

from __future__ import annotations

import io
import json
import logging
import multiprocessing
import os
import shutil
import signal
import socket
import tarfile
import tempfile
import traceback
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gossiplab.errors import GossiplabError, ResultsError, ScenarioError
from gossiplab.scenario import Scenario, scenario_hash


@dataclass(frozen=True)
class Job:
    index: int
    scenario: Scenario
    out_dir: Path
    replace: bool = False
    """Replace an existing results folder (otherwise an existing folder is an error)."""


@dataclass(frozen=True)
class JobResult:
    index: int
    ok: bool
    reason: str = ""
    traceback: str = ""
    """Set only for an unexpected exception, that is, a bug in gossiplab."""


OnDone = Callable[[JobResult], None]
REACH_TIMEOUT_S = 5


class ExecutorError(GossiplabError):
    """The pool or cluster itself cannot be used (not a failing job)."""


def one_line(error: GossiplabError) -> str:
    """An error's message on one line: a scenario's problems joined with '; '."""
    if isinstance(error, ScenarioError):
        return "; ".join(str(problem) for problem in error.problems)
    return " ".join(str(error).split())


def holds_results_of(folder: Path, s: Scenario) -> bool:
    """Whether ``folder`` is a complete results folder of exactly scenario ``s``."""
    summary = read_summary(folder)
    return summary is not None and summary.get("run", {}).get("scenario_hash") == scenario_hash(s)


def read_summary(folder: Path) -> dict[str, Any] | None:
    """summary.json of a results folder, or None when there is no readable one."""
    try:
        summary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return summary if isinstance(summary, dict) else None


def run_job(job: Job) -> JobResult:
    """Run one job in this process; never raises for a failing scenario."""
    # Imported here so that a Ray worker or pool process pays for it only when it runs.
    from gossiplab.runner import run

    try:
        run(job.scenario, job.out_dir, force=job.replace)
    except ResultsError as error:
        # Another process (a sweep killed earlier, whose worker lived on) may have just
        # finished this very point: its complete folder is as good as ours.
        if holds_results_of(job.out_dir, job.scenario):
            return JobResult(job.index, ok=True)
        return JobResult(job.index, ok=False, reason=one_line(error))
    except GossiplabError as error:
        return JobResult(job.index, ok=False, reason=one_line(error))
    except Exception as error:
        reason = f"internal error: {type(error).__name__}: {error}"
        return JobResult(job.index, ok=False, reason=reason, traceback=traceback.format_exc())
    return JobResult(job.index, ok=True)


def run_local(jobs: Sequence[Job], workers: int, on_done: OnDone) -> None:
    """Run ``jobs`` on ``workers`` processes, calling ``on_done`` as each one ends."""
    if workers < 1:
        raise ExecutorError(f"--workers must be at least 1, got {workers}")
    if workers == 1 or len(jobs) == 1:
        for job in jobs:
            on_done(run_job(job))
        return
    # spawn, not fork: forking a process whose polars and matplotlib threads are running
    # can deadlock the child.
    context = multiprocessing.get_context("spawn")
    pool = ProcessPoolExecutor(
        max_workers=min(workers, len(jobs)), mp_context=context, initializer=_ignore_sigint
    )
    by_future: dict[Future[JobResult], Job] = {pool.submit(run_job, job): job for job in jobs}
    pending = set(by_future)
    try:
        while pending:
            finished, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in finished:
                on_done(_result(future, by_future[future]))
    except BaseException:
        # Ctrl-C (or a failing callback): stop now rather than after the running points;
        # their half-written folders are hidden and removed by the next run.
        _stop_workers(pool)
        raise
    pool.shutdown(wait=True)


def _ignore_sigint() -> None:
    # Ctrl-C is the parent's to handle: it stops the workers, which otherwise would each
    # print a KeyboardInterrupt traceback.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _result(future: Future[JobResult], job: Job) -> JobResult:
    try:
        return future.result()
    except BrokenProcessPool:
        reason = "the worker process running it died (killed, or out of memory?)"
        return JobResult(job.index, ok=False, reason=reason)


def _stop_workers(pool: ProcessPoolExecutor) -> None:
    # ProcessPoolExecutor cannot stop running tasks before Python 3.14
    # (terminate_workers); its process table is the only handle on them.
    for process in list(getattr(pool, "_processes", {}).values()):
        process.terminate()
    pool.shutdown(wait=True, cancel_futures=True)


def default_workers() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1)


def _run_job_archived(job: Job) -> tuple[JobResult, bytes | None]:
    """Run a job in a private folder and return its results folder as a tar archive.

    Used on Ray workers, which need not share a file system with the machine that
    started the sweep: the folder travels back through Ray's object store.
    """
    with tempfile.TemporaryDirectory(prefix="gossiplab-point-") as temporary:
        local = Job(job.index, job.scenario, Path(temporary) / job.out_dir.name)
        result = run_job(local)
        if not result.ok:
            return result, None
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as archive:
            archive.add(local.out_dir, arcname=".")
        return result, buffer.getvalue()


def _install_archive(archive: bytes, job: Job) -> None:
    """Unpack a results folder next to its target and rename it into place (atomic)."""
    from gossiplab.analysis.results import _move_into_place

    partial = job.out_dir.parent / f".{job.out_dir.name}.partial-{os.getpid()}"
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    try:
        with tarfile.open(fileobj=io.BytesIO(archive), mode="r") as tar:
            tar.extractall(partial, filter="data")
        if job.out_dir.exists() and not job.replace:
            return  # finished meanwhile by another process: keep the folder already there
        _move_into_place(partial, job.out_dir)
    finally:
        shutil.rmtree(partial, ignore_errors=True)


def run_on_ray(jobs: Sequence[Job], address: str, on_done: OnDone) -> None:
    """Run ``jobs`` as tasks on the Ray cluster at ``address`` (one CPU each)."""
    try:
        import ray
    except ImportError:
        raise ExecutorError(
            "--ray needs the ray package, which is not installed: "
            "pip install 'gossiplab[ray]' (or run without --ray on the local pool)"
        ) from None
    _check_reachable(address)
    try:
        ray.init(address=address, log_to_driver=False, logging_level=logging.WARNING)
    except Exception as error:  # Ray raises ConnectionError, RuntimeError, ValueError, ...
        raise ExecutorError(
            f"cannot connect to the Ray cluster at {address!r}: {error}; check the address "
            "(host:port of the head node's GCS, as `ray start --head` prints it)"
        ) from None
    try:
        remote = ray.remote(num_cpus=1, max_retries=0)(_run_job_archived)
        by_ref = {remote.remote(job): job for job in jobs}
        pending = list(by_ref)
        try:
            while pending:
                ready, pending = ray.wait(pending, num_returns=1)
                job = by_ref[ready[0]]
                on_done(_collect(ray, ready[0], job))
        except BaseException:
            for ref in pending:
                ray.cancel(ref, force=True)
            raise
    finally:
        ray.shutdown()


def _check_reachable(address: str) -> None:
    """Fail at once on a host:port nobody answers on: Ray itself retries for minutes."""
    host, _, port = address.rpartition(":")
    if "://" in address or not host or not port.isdigit():
        return  # "auto", "ray://..." and the like: leave them to Ray
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=REACH_TIMEOUT_S).close()
    except OSError as error:
        raise ExecutorError(
            f"cannot connect to the Ray cluster at {address!r}: {error.strerror or error}; "
            "check the address (host:port of the head node, as `ray start --head` prints it) "
            "and that the cluster is up"
        ) from None


def _collect(ray: Any, ref: Any, job: Job) -> JobResult:
    try:
        result, archive = ray.get(ref)
    except ray.exceptions.RayError as error:
        reason = " ".join(f"Ray task failed: {error}".split())
        return JobResult(job.index, ok=False, reason=reason[:500])
    if archive is not None:
        _install_archive(archive, job)
    return result
