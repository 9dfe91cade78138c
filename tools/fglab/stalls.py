"""The lab's CPUs stopping under it: one watcher per CPU for the time a command runs.

The lab's fabric is this host's kernel: its forwarding, its tbf and htb
timers and its softirqs run on the host's CPUs like the tester does. When the
hypervisor takes a vCPU away, every queue whose softirq work sits on that CPU
stands still: the shaped link carries nothing and the device under test
"paused" for reasons that are the host's, not the fabric's. Seen on the
2-vCPU VMs this lab runs on (docs/lab.md, "The host"): with both vCPUs busy
and one of them taking ~10,000 timer interrupts a second (a tbf at
200 Mbit/s re-arms its watchdog for every packet; a nanosleep(20 us) loop
does the same), one vCPU stops for 100-106 ms now and then: no interrupt, no
tick, nothing on it (perf: ksoftirqd/0 in NET_RX, its next event 100.2 ms
later), the other running on: a scheduler period of the host's. The tester
sees it only when the stopped CPU is its worker's (its hold-up log, report.json's
`tester_holdup_ns`); a lab truth such as "the link's bytes over its rate" does
not hold over that time.

So the lab watches the CPUs fabricgen's workers do not poll on: by default
the first CPU the lab's own process may use, which is fabricgen's main lcore
and the kernel's housekeeping CPU when fabricgen takes its default lcores
(tools/isolate_cpus.sh; its workers take the others), where a watcher costs
the tester nothing; a worker's CPU stopping is the worker's own hold-up.

Each watcher is a process pinned to its CPU at SCHED_FIFO priority 1 (above
every normal task and ksoftirqd) that sleeps 1 ms at a time and logs every
wake-up that came more than THRESHOLD_NS late beyond the time it waited
runnable (its run_delay: the kernel busy on the CPU, not yielding it; the CPU
was working then): [from, to) in CLOCK_REALTIME ns, so a test can set them against the product's iteration
times (report.json's `start_unix_ns`). Its own cost: about 1,000 wake-ups a
second of some 10 us each (1 % of its CPU).

    with CpuStallWatch() as w:
        run(...)
    w.stalls  # [{"cpu": 0, "from_unix_ns": ..., "to_unix_ns": ..., "ns": ...}]
    w.errors  # [] unless a watcher failed: then the list is not the whole truth
"""
import json
import os
import subprocess
import sys

# Beyond the ~100 ms stops, stops of 3-5 ms come by the dozen a minute on the
# lab's CPU under load; most leave the shaped links' times alone (a tbf's
# bucket catches up 1.3 ms of them), some stretch a collective's iteration by
# a millisecond or two, more than the 1 % a steady state is judged to. Every
# stop over 2 ms is listed: a test allows each what it overlaps.
THRESHOLD_NS = 2_000_000

_WATCH = r"""
import json, os, select, sys, time
cpu, threshold = int(sys.argv[1]), int(sys.argv[2])
os.sched_setaffinity(0, {cpu})
try:
    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
except OSError:
    pass  # not root: still a watcher, a less exact one
sched = os.open("/proc/thread-self/schedstat", os.O_RDONLY)
def waited():  # ns this thread spent runnable but not running (the kernel's run_delay)
    return int(os.pread(sched, 64, 0).split()[1])
sys.stdout.write("ready\n"); sys.stdout.flush()
stalls = []
mono, real = time.monotonic_ns, time.time_ns
last_m, last_r, last_w = mono(), real(), waited()
while True:
    r, _, _ = select.select([sys.stdin], [], [], 0.001)
    m, t, w = mono(), real(), waited()
    # Late beyond its 1 ms sleep and the time it waited runnable (a busy
    # kernel not yielding the CPU: the CPU was working): the CPU itself did
    # not run (its timer interrupt did not come). The stall: from when it
    # was due to wake to when it did, less what it waited runnable.
    late = m - last_m - 1_000_000 - (w - last_w)
    if late > threshold:
        stalls.append([last_r + 1_000_000, t, late])
    last_m, last_r, last_w = m, t, w
    if r:
        break
print(json.dumps(stalls))
"""


class CpuStallWatch:
    def __init__(self, cpus=None, threshold_ns=THRESHOLD_NS):
        self.cpus = sorted(os.sched_getaffinity(0))[:1] if cpus is None else list(cpus)
        self.threshold_ns = threshold_ns
        self.procs, self.stalls = [], []
        # Why the watch is incomplete (a watcher that did not start or did
        # not report): a truth gap (fabric.truth_gaps), never "no stalls".
        self.errors = []

    def __enter__(self):
        for cpu in self.cpus:
            p = subprocess.Popen([sys.executable, "-c", _WATCH, str(cpu), str(self.threshold_ns)],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            self.procs.append((cpu, p))
            if p.stdout.readline() != "ready\n":  # watching before the command starts
                self.errors.append("the stall watcher of CPU %d did not start" % cpu)
        return self

    def __exit__(self, *exc):
        for cpu, p in self.procs:
            try:
                out, _ = p.communicate("stop\n", timeout=10)
                if p.returncode != 0:
                    raise ValueError("exit status %d" % p.returncode)
                for a, b, ns in json.loads(out):
                    self.stalls.append({"cpu": cpu, "from_unix_ns": a, "to_unix_ns": b, "ns": ns})
            except (subprocess.TimeoutExpired, ValueError) as e:
                p.kill()
                p.wait()
                self.errors.append("the stall watcher of CPU %d gave no report (%s)" % (cpu, e or "timed out"))
        self.stalls.sort(key=lambda s: s["from_unix_ns"])
        return False


def stalled_within(stalls, from_ns, to_ns):
    """ns of [from_ns, to_ns) (CLOCK_REALTIME) during which some watched CPU stood still."""
    spans = sorted((max(s["from_unix_ns"], from_ns), min(s["to_unix_ns"], to_ns)) for s in stalls)
    total, end = 0, from_ns
    for a, b in spans:
        a = max(a, end)
        if b > a:
            total += b - a
            end = b
    return total
