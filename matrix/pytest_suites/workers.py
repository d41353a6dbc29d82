"""Worker processes that collect test files while the main process still reads the schedule, then audit them.

Collecting a file (parse, guards, parameters) needs only the checkout and pytest's configuration; auditing it
needs the schedule, which the main process reads from the workflows meanwhile. So the workers are forked before
the schedule is read, take the test files pytest's own discovery finds (largest first, the next one from a
shared counter, so they finish together), and each audits the files it collected once the main process sends
the schedule and the CI commands as pytest reads them (a few tens of kilobytes pickled). Files a CI command
names outside the default discovery are shared out with the schedule. A worker that fails sends its exception
back; one that dies is one error, never a partial report.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from matrix.core.errors import SpecmatrixError
from matrix.core.profile import RunnerProfile
from matrix.pytest_suites.audit import FileAudit, SuiteAuditor
from matrix.pytest_suites.collect import Collector, TestFile
from matrix.pytest_suites.invocation import Invocation
from matrix.pytest_suites.packs import builtin_packs
from matrix.pytest_suites.tracked import Reads, TrackedCollector
from matrix.schedule.model import Schedule


class WorkerError(SpecmatrixError):
    """A worker process stopped without its results (killed, or out of memory): one line and exit 2, no report."""


def can_fork() -> bool:
    return "fork" in multiprocessing.get_all_start_methods()


class CollectingWorkers:
    """`jobs` forked processes collecting `early` (repository-relative test files, in the order to take them) from
    the moment they start."""

    def __init__(
        self,
        jobs: int,
        *,
        collector: Collector,
        early: Sequence[str],
        profiles: Mapping[str, RunnerProfile],
        installed: frozenset[str],
        join: tuple[str, ...] = (),
    ):
        context = multiprocessing.get_context("fork")
        self.early = frozenset(early)
        # The list and the collector reach each child by the fork itself; only the counter is shared memory.
        shared = _Shared(
            collector=collector, early=early, counter=context.Value("q", 0), profiles=profiles, installed=installed, join=join
        )
        self.links: list[Connection] = []
        self.processes: list[Any] = []
        # What each audited file read (`TrackedCollector.reads`), when the collector tracks reads for the cache.
        self.reads: dict[str, Reads] = {}
        for _ in range(jobs):
            mine, theirs = context.Pipe()
            process = context.Process(target=_work, args=(shared, theirs), daemon=True)
            process.start()
            theirs.close()
            self.links.append(mine)
            self.processes.append(process)

    def audit(self, paths: Sequence[str], schedule: Schedule, read: Sequence[Invocation]) -> dict[str, FileAudit]:
        """Each of `paths` audited against the schedule, by the worker that collected it."""
        extra = [p for p in paths if p not in self.early]
        wanted = frozenset(paths)
        for k, link in enumerate(self.links):
            # One that has stopped refuses it: what it sent before (its error), or its end, is read below.
            with contextlib.suppress(OSError):
                link.send((wanted, extra[k :: len(self.links)], schedule, tuple(read)))
        done: dict[str, FileAudit] = {}
        for link, process in zip(self.links, self.processes, strict=True):
            try:
                status, payload = link.recv()
            except (EOFError, OSError):
                process.join(5)
                raise WorkerError(f"a worker reading test files stopped (exit code {process.exitcode})") from None
            if status == "error":
                if isinstance(payload, BaseException):
                    raise payload
                raise WorkerError(str(payload))
            audits, reads = payload
            done.update(audits)
            self.reads.update(reads)
        return done

    def close(self) -> None:
        for link in self.links:
            link.close()
        for process in self.processes:
            if process.is_alive():
                process.terminate()
            process.join(5)


@dataclass(frozen=True, kw_only=True)
class _Shared:
    """What every worker starts from (inherited through the fork, never pickled)."""

    collector: Collector
    early: Sequence[str]
    counter: Any  # multiprocessing.Value("q"): the index of the next file of `early` to take
    profiles: Mapping[str, RunnerProfile]
    installed: frozenset[str]
    join: tuple[str, ...] = ()  # runners whose runs are joined (`SuiteAuditor.join`)


def _collect(collector: Collector, tracked: TrackedCollector | None, path: str) -> TestFile:
    if tracked is not None:
        tracked.track(path)
    found = collector.collect(path)
    if tracked is not None:
        tracked.untrack()
    return found


def _work(shared: _Shared, link: Connection) -> None:
    code = 0
    try:
        collector = shared.collector
        tracked = collector if isinstance(collector, TrackedCollector) else None
        collected: dict[str, TestFile] = {}
        while True:
            with shared.counter.get_lock():
                index = shared.counter.value
                shared.counter.value = index + 1
            if index >= len(shared.early):
                break
            collected[shared.early[index]] = _collect(collector, tracked, shared.early[index])
        wanted, extra, schedule, read = link.recv()
        for path in extra:
            collected[path] = _collect(collector, tracked, path)
        auditor = SuiteAuditor(
            schedule, shared.profiles, builtin_packs(), shared.installed, read, join=shared.join, project=collector.project
        )
        audits = []
        for path, test_file in collected.items():
            if path in wanted:
                if tracked is not None:
                    tracked.track(path)  # the audit's reads (a name linked into a helper) are the file's too
                    auditor.forget_evaluations()
                audits.append((path, auditor.audit_file(test_file)))
        if tracked is not None:
            tracked.untrack()
        reads = {p: tracked.reads(p) for p, _ in audits} if tracked is not None else {}
        link.send(("ok", (audits, reads)))
    except (EOFError, OSError, KeyboardInterrupt):
        code = 1  # the main process went away (an error there, or Ctrl-C): nothing to report to
    except BaseException as exc:  # every failure goes back to the main process, which raises it
        code = 1
        try:
            link.send(("error", exc))
        except Exception:  # an exception that does not pickle goes back as its text
            link.send(("error", "".join(traceback.format_exception_only(type(exc), exc)).strip()))
    finally:
        link.close()
        # The syntax trees and caches die with the process: tearing them down object by object costs seconds.
        os._exit(code)
