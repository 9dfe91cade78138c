#!/usr/bin/python3
"""Emulate a shared VM host: take each CPU away now and then, as a hypervisor
that deschedules a vCPU does (steal), to see what fabricgen and the test suite
do in such an hour without waiting for one.

One SCHED_FIFO child per CPU spins for a random 1..MAX_MS milliseconds, then
sleeps for a random gap chosen so that the spins take SHARE of the CPU. While
it spins nothing else runs on that CPU (fabricgen's lcores included), as when
the hypervisor runs another guest there; fabricgen names such a hold-up
(pacing_stall, rx_stall) and attributes it to schedstat's run delay (the
kernel ran another task on the CPU) rather than to /proc/stat steal.

Reference: CI on 2026-12-03 saw 470-810 ms of steal per 2 s trial on 2 vCPUs
(12-20 % of the CPU time) with hold-ups up to 8.9 ms: `--share 0.15 --max-ms 9`.

usage: host_noise.py [--share 0.15] [--max-ms 9] [--seconds N] [-- COMMAND ...]
  With a COMMAND: runs it under the noise and exits with its status.
  Without: makes noise for --seconds (default: until interrupted).
Needs root (SCHED_FIFO). Every child is killed on exit, even on failure.
"""
import argparse
import os
import random
import signal
import subprocess
import sys
import time


def spinner(cpu, share, max_ms, seed):
    os.sched_setaffinity(0, {cpu})
    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))
    rng = random.Random(seed)
    mean_spin = (1 + max_ms) / 2 / 1e3
    mean_gap = mean_spin * (1 - share) / share
    while True:
        time.sleep(rng.expovariate(1 / mean_gap))
        end = time.perf_counter() + rng.uniform(1, max_ms) / 1e3
        while time.perf_counter() < end:
            pass


def main():
    argv = sys.argv[1:]
    command = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[:argv.index("--")] if "--" in argv else argv
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--share", type=float, default=0.15, help="share of each CPU taken (0..0.5)")
    ap.add_argument("--max-ms", type=float, default=9.0, help="longest hold-up, ms (>= 1)")
    ap.add_argument("--seconds", type=float, default=0, help="without a command: how long (0: until interrupted)")
    a = ap.parse_args(argv)
    if not 0 < a.share <= 0.5 or a.max_ms < 1:
        ap.error("--share must be in (0, 0.5] and --max-ms at least 1")
    children = []
    for i, cpu in enumerate(sorted(os.sched_getaffinity(0))):
        pid = os.fork()
        if pid == 0:
            try:
                spinner(cpu, a.share, a.max_ms, 1000 + i)
            finally:
                os._exit(1)
        children.append(pid)
    status = 0
    try:
        if command:
            status = subprocess.run(command).returncode
        elif a.seconds > 0:
            time.sleep(a.seconds)
        else:
            signal.pause()
    except KeyboardInterrupt:
        status = 130
    finally:
        for pid in children:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
    sys.exit(status)


if __name__ == "__main__":
    main()
