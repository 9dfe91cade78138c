"""A test on a shared host that the host would not let judge the device (the
Python twin of test/dpdk/host_holdups.h; shared by the cli and lab suites).

When the host takes the tester's CPU for milliseconds at a time, often (a VM
whose vCPUs the hypervisor deschedules: CI of 2026-12-03 saw 12-20 % steal,
hold-ups every few ms), every attempt of a trial can be tester-limited, and
fabricgen rightly stops the test rather than judge the device by them. The
test that needed its result then cannot say whether the device's figure is
right, and is skipped, naming why, but only when

  - the test stopped for exactly that reason (tests[].stopped_because),
  - every one of its limited trials had a hold-up (pacing_stall or rx_stall),
    or only a TX shortfall whose missing frames' time at the trial's rate the
    kernel counted as CPU wait and steal (the host took the CPU in slices
    under a stall's 1 ms); a TX path too slow for its rate, with no time
    counted, still fails; and
  - the kernel counted the time: over those trials the lcores' CPU waits
    (schedstat) plus the hypervisor's steal (/proc/stat), which fabricgen
    writes beside each hold-up as cpu_wait_ns and steal_ns, are at least half
    the sum of their longest hold-ups (steal is counted in 10 ms ticks). A
    pacer that saw stalls the kernel never counted still fails. A whole-VM
    stop (the hypervisor takes every vCPU at once) is not counted by the
    kernel as wait or steal; a caller with an independent watch of the
    host's CPUs (the lab's, tools/fglab/stalls.py) passes it as
    `host_stopped_ns(from_unix_ns, to_unix_ns)`, and the time it saw
    stopped within each limited trial counts as the host's too (the twin of
    host_holdups.h's DUT stops).

tools/host_noise.py makes such an hour on demand.
"""

import re

STOPPED_BY_THE_TESTER = "the tester itself was the limit in"
HOLDUP_KINDS = ("pacing_stall", "rx_stall")


def held_up_every_attempt(test, host_stopped_ns=None):
    """Why `test` (one of report.json's tests[]) could not be judged on this
    host now, or "" when it completed or stopped for any other reason.
    host_stopped_ns(from, to): ns of [from, to) (UNIX ns) an independent
    watch saw the host's CPU stopped in (None: the kernel's count only)."""
    stopped = test.get("stopped_because") or ""
    m = re.match(STOPPED_BY_THE_TESTER + r" (\d+) attempts", stopped)
    if test.get("complete", True) or not m:
        return ""
    limited, longest, counted = 0, 0, 0
    for t in test.get("trials") or []:
        holdups = [l for l in t.get("tester_limits") or [] if l["kind"] in HOLDUP_KINDS]
        if not t.get("tester_limits"):
            continue
        limited += 1
        start = t.get("start_unix_ns") or 0
        host = host_stopped_ns(start, start + int((t.get("duration_s") or 0) * 1e9)) if host_stopped_ns and start else 0
        trial_longest = max([l.get("longest_ns") or 0 for l in holdups] or [0])
        if trial_longest == 0:
            # No hold-up over 1 ms: only a TX shortfall whose missing frames' time at the trial's rate the kernel
            # counted is the host's (it took the CPU in slices the pacer caught up, bar the last); else the
            # tester's own slowness.
            limits = t.get("tester_limits")
            if any(l["kind"] != "tx_shortfall" for l in limits):
                return ""
            known = [l for l in limits if l.get("cpu_wait_ns") is not None and l.get("steal_ns") is not None]
            short = sum(l["count"] for l in limits)
            due_fps = (t.get("tx_frames", 0) + short) / max(t.get("duration_s") or 0, 1e-9)
            short_ns = short / max(due_fps, 1e-9) * 1e9
            wait = (known[0]["cpu_wait_ns"] + known[0]["steal_ns"] if known else 0) + host
            if wait < short_ns:
                return ""
            longest += short_ns
            counted += wait
            continue
        longest += trial_longest
        # Each hold-up of a trial carries the trial's (all lcores') figures: once.
        known = [l for l in holdups if l.get("cpu_wait_ns") is not None and l.get("steal_ns") is not None]
        counted += host
        if known:
            counted += known[0]["cpu_wait_ns"] + known[0]["steal_ns"]
    # As many limited attempts as the product says it made (a retry loop that
    # gave up early is the product's bug), and the kernel's count.
    if limited < int(m.group(1)) or longest == 0 or counted < longest / 2:
        return ""
    return ("test %s: the host held the tester up in every attempt (%d limited trials; longest hold-ups %.1f ms in "
            "all, the kernel counted %.1f ms of CPU wait and steal%s): the device cannot be judged in this hour"
            % (test.get("name"), limited, longest / 1e6, counted / 1e6,
               ", with the host's stops an independent watch saw" if host_stopped_ns else ""))


def held_up_tests(report, host_stopped_ns=None):
    """{name: why} of the report's tests the host held up in every attempt,
    and of those that stopped because they run at such a test's result."""
    tests = report.get("tests") or []
    held = {t.get("name"): held_up_every_attempt(t, host_stopped_ns) for t in tests}
    held = {name: why for name, why in held.items() if why}
    for t in tests:
        stopped = t.get("stopped_because") or ""
        if not t.get("complete", True) and t.get("name") not in held and any(
                "of " + name + "," in stopped for name in held):
            held[t.get("name")] = "runs at the result of a held-up test: " + stopped
    return held


def skip_if_held_up(case, report, names=None, host_stopped_ns=None):
    """Skips the running unittest when the report's incomplete tests (among
    those named, default all) all stopped because the host held the tester up
    (held_up_tests) and one of them is; returns otherwise, so that a test
    that stopped for any other reason still fails the unittest."""
    held = held_up_tests(report, host_stopped_ns)
    incomplete = [t.get("name") for t in report.get("tests") or []
                  if not t.get("complete", True) and (names is None or t.get("name") in names)]
    if incomplete and all(name in held for name in incomplete):
        case.skipTest("; ".join(held[name] for name in incomplete))
