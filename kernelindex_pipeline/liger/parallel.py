"""Building BenchmarkRuns in worker processes, so an import uses both cores.

The main process keeps every decision that depends on row order (skips, duplicates, issues, which
row creates a shared object) and hands rows that will become runs to workers in batches; a worker
only turns (template, numbers, timestamp) into the run's dict, canonical line and digest, and
validates it. Results come back in dispatch order, so `on_run` sees runs in row order, exactly as
with one process.

Workers are plain subprocesses (`python -m kernelindex_pipeline.liger.parallel`) speaking pickle
over their stdin/stdout: unlike multiprocessing's spawn they never re-import the caller's main
module (no `if __name__ == "__main__"` needed by callers), and unlike fork they are safe in a
multi-threaded parent. Each worker has at most one batch outstanding: the main process sends a
worker its next batch only after taking its previous results, so no pipe can fill up both ways.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

from kernelindex_pipeline.liger.normalize import InvalidRecord, schema_validator
from kernelindex_pipeline.liger.runs import RunItem, RunRecord, build_run

DEFAULT_BATCH_RUNS = 4000


class WorkerError(RuntimeError):
    """A run-building worker process failed or stopped."""


def _worker_loop(inp: BinaryIO, out: BinaryIO, validate: bool) -> None:
    check = schema_validator() if validate else (lambda manifest: None)
    templates: dict[int, Any] = {}
    while True:
        try:
            message = pickle.load(inp)
        except EOFError:
            return
        if message is None:
            return
        new_templates, batch = message
        templates.update(new_templates)
        try:
            result: Any = (
                "ok",
                [
                    (r.name, r.digest, r.line)
                    for r in (build_run(RunItem(templates[item[0]], *item[1:]), check) for item in batch)
                ],
            )
        except InvalidRecord as exc:
            result = ("invalid", str(exc))
        except Exception as exc:  # noqa: BLE001 - reported to the main process, which raises
            result = ("error", f"{type(exc).__name__}: {exc}")
        pickle.dump(result, out, protocol=pickle.HIGHEST_PROTOCOL)
        out.flush()


class _Worker:
    def __init__(self, validate: bool):
        package_parent = str(Path(__file__).resolve().parents[2])
        env = dict(os.environ)
        env["PYTHONPATH"] = package_parent + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        cmd = [sys.executable, "-m", "kernelindex_pipeline.liger.parallel"] + ([] if validate else ["--no-validate"])
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        self.templates: set[int] = set()  # template ids this worker already holds

    def send(self, obj: Any) -> None:
        try:
            pickle.dump(obj, self.proc.stdin, protocol=pickle.HIGHEST_PROTOCOL)
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as exc:
            raise WorkerError(f"a run-building worker process stopped (exit {self.proc.poll()}): {exc}") from None

    def receive(self) -> Any:
        try:
            return pickle.load(self.proc.stdout)
        except (EOFError, OSError, pickle.UnpicklingError) as exc:
            raise WorkerError(f"a run-building worker process stopped (exit {self.proc.poll()}): {exc!r}") from None

    def close(self) -> None:
        try:
            self.send(None)
            self.proc.stdin.close()
        except (WorkerError, OSError, ValueError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout:
            self.proc.stdout.close()


class ParallelRunBuilder:
    """`add(item)` rows that passed every check; `finish()` delivers the rest; always `close()`."""

    def __init__(
        self, workers: int, on_run: Callable[[RunRecord], None], validate: bool = True, batch_runs: int | None = None
    ):
        self.on_run = on_run
        self.batch_runs = batch_runs or DEFAULT_BATCH_RUNS
        self._workers = [_Worker(validate) for _ in range(workers)]
        self._idle: deque[_Worker] = deque(self._workers)
        self._pending: deque[tuple[_Worker, list[str]]] = deque()  # worker, external ids of its batch
        self._batch: list[tuple] = []
        self._batch_templates: dict[int, Any] = {}
        self._external_ids: list[str] = []

    def add(self, item: RunItem) -> None:
        """A RunItem as build_run takes it; the template travels to each worker once (by id after)."""
        t = item.template
        self._batch_templates[t.id] = t
        self._batch.append((t.id,) + item[1:])
        self._external_ids.append(item.external_id)
        if len(self._batch) >= self.batch_runs:
            self._dispatch()

    def _dispatch(self) -> None:
        if not self._batch:
            return
        if not self._idle:
            self._collect_oldest()
        worker = self._idle.popleft()
        new = {i: t for i, t in self._batch_templates.items() if i not in worker.templates}
        worker.templates.update(new)
        worker.send((new, self._batch))
        self._pending.append((worker, self._external_ids))
        self._batch, self._batch_templates, self._external_ids = [], {}, []

    def _collect_oldest(self) -> None:
        worker, external_ids = self._pending.popleft()
        status, payload = worker.receive()
        self._idle.append(worker)
        if status == "invalid":
            raise InvalidRecord(payload)
        if status != "ok":
            raise WorkerError(f"a run-building worker failed: {payload}")
        on_run = self.on_run
        for (name, digest, line), external_id in zip(payload, external_ids, strict=False):
            on_run(RunRecord(name, digest, external_id, line))

    def finish(self) -> None:
        self._dispatch()
        while self._pending:
            self._collect_oldest()

    def close(self) -> None:
        for worker in self._workers:
            worker.close()


def _main() -> None:
    # The result stream is the real stdout; anything else printed goes to stderr instead.
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    _worker_loop(sys.stdin.buffer, out, validate="--no-validate" not in sys.argv[1:])


if __name__ == "__main__":
    _main()
