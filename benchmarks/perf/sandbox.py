"""Benchmark: executions/s and latency of the local sandbox against bare ``python -c`` in the same run.

Three workloads, each on 1 and 2 workers (threads sharing one sandbox with 4 slots):

* **trivial**: a program that prints one line, run in the stdio form (a fresh confined process per
  execution) against ``subprocess.run([python, "-c", program])``;
* **function**: a program defining a small function, loaded and called once per execution (function
  form, a fresh confined process each time) against ``python -c`` doing the same;
* **check**: a HumanEval-style check (load once, five asserted calls through a session, graded on
  the host) against ``python -c`` running the program and the check together.

The bare side uses ``sys.executable`` (the real interpreter, not a pyenv shim, so the baseline is not
inflated by a shell wrapper) with the same environment as this process. Sides alternate in rounds so
that load from other processes on the machine hits both alike. ``local_p95_ms`` is the p95 latency of
the trivial program on one worker; its goal (<= 20 ms) is written as a ratio: baseline 20 ms, lower is
better, goal 1.0, so ``ratio = 20 / p95`` must be >= 1.

Run it alone with ``python -m benchmarks.perf.sandbox [--quick]``.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import threading
import time
from typing import Callable

from benchmarks.perf.report import Metric

__all__ = ["run"]

TRIVIAL = "print(1)\n"
FUNCTION = "def add(a, b):\n    return a + b\n"
CHECK_CALLS = [((1, 2), 3), ((-5, 5), 0), ((10**12, 1), 10**12 + 1), (("a", "b"), "ab"), (([1], [2]), [1, 2])]
BARE_FUNCTION = FUNCTION + "print(add(1, 2))\n"
BARE_CHECK = FUNCTION + "".join(f"assert add(*{args!r}) == {want!r}\n" for args, want in CHECK_CALLS)


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def _measure(job: Callable[[], None], count: int, workers: int) -> tuple[float, list[float]]:
    """Run ``job`` ``count`` times on ``workers`` threads; return (executions/s, latencies in ms)."""
    latencies: list[float] = []
    lock = threading.Lock()
    per_worker = [count // workers + (i < count % workers) for i in range(workers)]

    def worker(n: int) -> None:
        for _ in range(n):
            start = time.perf_counter()
            job()
            elapsed = (time.perf_counter() - start) * 1000
            with lock:
                latencies.append(elapsed)

    threads = [threading.Thread(target=worker, args=(n,)) for n in per_worker]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return count / (time.perf_counter() - start), latencies


def _jobs(box):
    from rla_envs.code.sandbox import Call, Limits

    limits = Limits(timeout_s=10)

    def local_trivial() -> None:
        [r] = box.run(TRIVIAL, [Call(stdin="")], limits)
        assert r.stdout == "1\n", r

    def local_function() -> None:
        [r] = box.run(FUNCTION, [Call(function="add", args=(1, 2))], limits)
        assert r.value == 3, r

    def local_check() -> None:
        with box.session(FUNCTION, limits) as session:
            for args, want in CHECK_CALLS:
                r = session.call(Call(function="add", args=args))
                assert r.status == "ok" and type(r.value) is type(want) and r.value == want, r

    def bare(program: str) -> Callable[[], None]:
        def job() -> None:
            subprocess.run([sys.executable, "-c", program], check=True, stdout=subprocess.PIPE)
        return job

    return {
        "trivial": (local_trivial, bare(TRIVIAL)),
        "function": (local_function, bare(BARE_FUNCTION)),
        "check": (local_check, bare(BARE_CHECK)),
    }


def run(quick: bool = False) -> list[Metric]:
    """Measure the local sandbox and bare ``python -c`` side by side; return the metrics."""
    from rla_envs.code.sandbox import make_sandbox

    rounds = 2 if quick else 4
    local_n, bare_n = (40, 6) if quick else (150, 20)
    box = make_sandbox("local", slots=4)  # spares for 2 workers: one in use, one being replaced
    try:
        caps = box.capabilities()
        confined = all(caps.get(k) for k in ("uid_switch", "pidns", "netns", "ipcns", "work_tmpfs", "landlock",
                                             "seccomp"))
        jobs = _jobs(box)
        for local_job, bare_job in jobs.values():  # warm-up
            local_job()
            bare_job()
        samples: dict[tuple[str, str, int], list] = {}
        for _ in range(rounds):
            for workload, (local_job, bare_job) in jobs.items():
                for workers in (1, 2):
                    for side, job, n in (("local", local_job, local_n), ("bare", bare_job, bare_n)):
                        rate, latencies = _measure(job, n, workers)
                        entry = samples.setdefault((workload, side, workers), [[], []])
                        entry[0].append(rate)
                        entry[1].extend(latencies)
    finally:
        box.close()

    def rate(workload: str, side: str, workers: int) -> float:
        return statistics.median(samples[(workload, side, workers)][0])

    def p(workload: str, side: str, workers: int, q: float) -> float:
        return _percentile(samples[(workload, side, workers)][1], q)

    slot_cgroup = f"cgroup v{caps['cgroup']} per slot" if caps.get("cgroup") else "NO slot cgroup"
    conf = (f"confinement on (uid, pid/mount/net/ipc ns, work-dir tmpfs, rlimits, Landlock, seccomp; {slot_cgroup})"
            if confined else f"INCOMPLETE confinement: {caps}")
    metrics = [
        Metric("local_speedup_vs_bare", rate("trivial", "local", 1), rate("trivial", "bare", 1), "exec/s",
               goal=5.0, note=f"trivial program, stdio form, 1 worker, fresh process per execution; {conf}; "
               f"local p50 {p('trivial', 'local', 1, .5):.1f} ms vs bare p50 {p('trivial', 'bare', 1, .5):.1f} ms"),
        Metric("local_p95_ms", p("trivial", "local", 1, 0.95), 20.0, "ms", higher_is_better=False, goal=1.0,
               note="p95 latency of the trivial program, 1 worker; baseline = the 20 ms goal, ratio = 20 / p95 "
               f"(bare python -c p95: {p('trivial', 'bare', 1, .95):.1f} ms)"),
    ]
    for workload in ("trivial", "function", "check"):
        for workers in (1, 2):
            if (workload, workers) == ("trivial", 1):
                continue
            metrics.append(Metric(
                f"local_{workload}_{workers}w_speedup_vs_bare", rate(workload, "local", workers),
                rate(workload, "bare", workers), "exec/s",
                note=f"{workload}, {workers} worker(s): local p50/p95 {p(workload, 'local', workers, .5):.1f}/"
                f"{p(workload, 'local', workers, .95):.1f} ms, bare p50/p95 {p(workload, 'bare', workers, .5):.1f}/"
                f"{p(workload, 'bare', workers, .95):.1f} ms"))
    return metrics


if __name__ == "__main__":
    from benchmarks.perf.report import format_table, machine_facts

    print(format_table(run(quick="--quick" in sys.argv), machine_facts()))
