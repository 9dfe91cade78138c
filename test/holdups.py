"""A test on a shared host that the host would not let judge the device (the
Python twin of test/dpdk/host_holdups.h; shared by the cli and lab suites).

When the host takes the tester's CPU for milliseconds at a time, often (a VM
whose vCPUs the hypervisor deschedules: CI of 2026-12-03 saw 12-20 % steal,
hold-ups every few ms), every attempt of a trial can be tester-limited, and
fabricgen rightly stops the test rather than judge the device by them. The
test that needed its result then cannot say whether the device's figure is
right, and is skipped, naming why, but only when

  - the test stopped for exactly that reason (tests[].stopped_because),
  - every one of its limited trials had a hold-up (pacing_stall or rx_stall;
    a TX path too slow for its rate, with no hold-up, still fails), and
  - the kernel counted the time: over those trials the lcores' CPU waits
    (schedstat) plus the hypervisor's steal (/proc/stat), which fabricgen
    writes beside each hold-up as cpu_wait_ns and steal_ns, are at least half
    the sum of their longest hold-ups (steal is counted in 10 ms ticks). A
    pacer that saw stalls the kernel never counted still fails.

tools/host_noise.py makes such an hour on demand.
"""

STOPPED_BY_THE_TESTER = "the tester itself was the limit in"
HOLDUP_KINDS = ("pacing_stall", "rx_stall")


def held_up_every_attempt(test):
    """Why `test` (one of report.json's tests[]) could not be judged on this
    host now, or "" when it completed or stopped for any other reason."""
    if test.get("complete", True) or not test.get("stopped_because", "").startswith(STOPPED_BY_THE_TESTER):
        return ""
    limited, longest, counted = 0, 0, 0
    for t in test.get("trials", []):
        holdups = [l for l in t.get("tester_limits", []) if l["kind"] in HOLDUP_KINDS]
        if not t.get("tester_limits"):
            continue
        limited += 1
        if not holdups:
            return ""  # limited with no hold-up: the tester's own slowness
        longest += max(l.get("longest_ns", 0) for l in holdups)
        # Each hold-up of a trial carries the trial's (all lcores') figures: once.
        known = [l for l in holdups if l.get("cpu_wait_ns") is not None and l.get("steal_ns") is not None]
        if known:
            counted += known[0]["cpu_wait_ns"] + known[0]["steal_ns"]
    if limited == 0 or counted < longest / 2:
        return ""
    return ("test %s: the host held the tester up in every attempt (%d limited trials; longest hold-ups %.1f ms in "
            "all, the kernel counted %.1f ms of CPU wait and steal): the device cannot be judged in this hour"
            % (test.get("name"), limited, longest / 1e6, counted / 1e6))


def skip_if_held_up(case, report, names=None):
    """Skips the running unittest when a test of `report` it depends on (those
    named, default all) could not be judged on this host now
    (held_up_every_attempt); returns otherwise. Call it only where the
    unittest needs those tests' results: it hides nothing else."""
    tests = [t for t in report.get("tests", []) if names is None or t.get("name") in names]
    why = [w for w in (held_up_every_attempt(t) for t in tests) if w]
    if why:
        case.skipTest("; ".join(why))
