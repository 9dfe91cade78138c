"""test/holdups.py (the skip rule the cli and lab suites share) on made-up reports: when it skips and when it fails.

    /usr/bin/python3 test/unit/holdups_test.py
"""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import holdups  # noqa: E402

T0 = 1_000_000_000_000_000_000  # a trial's start, UNIX ns


def trial(index, start, limits, tx_frames=20_000, duration_s=2.0):
    return {"index": index, "start_unix_ns": start, "duration_s": duration_s, "tx_frames": tx_frames,
            "tester_limits": limits}


def stall(longest_ms, wait_ms=0.1, steal_ms=0.0, count=500):
    return {"kind": "pacing_stall", "count": count, "longest_ns": int(longest_ms * 1e6),
            "cpu_wait_ns": int(wait_ms * 1e6), "steal_ns": int(steal_ms * 1e6)}


def stopped_test(trials, attempts=2):
    return {"name": "ndr", "complete": False, "trials": trials,
            "stopped_because": "the tester itself was the limit in %d attempts of the same trial (last: ...)" % attempts}


def stops_of(spans):
    """host_stopped_ns over [(from, to)] UNIX ns spans that do not overlap each other."""
    return lambda a, b: sum(max(0, min(b, t) - max(a, f)) for f, t in spans)


class HeldUpEveryAttempt(unittest.TestCase):
    def test_stalls_the_kernel_did_not_count_fail_without_a_watch(self):
        t = stopped_test([trial(1, T0, [stall(60)]), trial(2, T0 + 3_000_000_000, [stall(60)])])
        self.assertEqual(holdups.held_up_every_attempt(t), "")

    def test_a_watch_that_saw_the_host_stopped_within_each_trial_makes_it_a_skip(self):
        t = stopped_test([trial(1, T0, [stall(60)]), trial(2, T0 + 3_000_000_000, [stall(60)])])
        # 55 ms stopped within each trial: 110 ms of 120 ms of hold-ups.
        seen = stops_of([(T0 + 500_000_000, T0 + 555_000_000), (T0 + 3_100_000_000, T0 + 3_155_000_000)])
        why = holdups.held_up_every_attempt(t, seen)
        self.assertIn("every attempt (2 limited trials; longest hold-ups 120.0 ms in all, the kernel counted "
                      "110.2 ms of CPU wait and steal, with the host's stops an independent watch saw)", why)
        report = {"tests": [t]}
        self.assertEqual(set(holdups.held_up_tests(report, seen)), {"ndr"})

    def test_stops_outside_the_trials_explain_nothing(self):
        t = stopped_test([trial(1, T0, [stall(60)]), trial(2, T0 + 3_000_000_000, [stall(60)])])
        seen = stops_of([(T0 + 2_100_000_000, T0 + 2_900_000_000)])  # between the two trials
        self.assertEqual(holdups.held_up_every_attempt(t, seen), "")

    def test_stops_under_half_the_hold_ups_fail(self):
        t = stopped_test([trial(1, T0, [stall(60)]), trial(2, T0 + 3_000_000_000, [stall(60)])])
        seen = stops_of([(T0 + 500_000_000, T0 + 520_000_000), (T0 + 3_100_000_000, T0 + 3_120_000_000)])
        self.assertEqual(holdups.held_up_every_attempt(t, seen), "")  # 40.2 of 120 ms

    def test_a_shortfall_alone_needs_its_missing_time_seen(self):
        # 200 frames short at 10,000 frames/s: 20 ms of the trial's time.
        short = {"kind": "tx_shortfall", "count": 200, "longest_ns": 0}
        t = stopped_test([trial(1, T0, [short], tx_frames=19_800)], attempts=1)
        self.assertEqual(holdups.held_up_every_attempt(t), "")
        self.assertEqual(holdups.held_up_every_attempt(t, stops_of([(T0, T0 + 15_000_000)])), "")
        self.assertNotEqual(holdups.held_up_every_attempt(t, stops_of([(T0, T0 + 25_000_000)])), "")

    def test_fewer_limited_trials_than_the_attempts_named_fail(self):
        t = stopped_test([trial(1, T0, [stall(60)])], attempts=2)
        self.assertEqual(holdups.held_up_every_attempt(t, stops_of([(T0, T0 + 2_000_000_000)])), "")

    def test_a_complete_test_is_never_held_up(self):
        t = stopped_test([trial(1, T0, [stall(60)])], attempts=1)
        t["complete"] = True
        self.assertEqual(holdups.held_up_every_attempt(t, stops_of([(T0, T0 + 2_000_000_000)])), "")


if __name__ == "__main__":
    unittest.main(verbosity=2)
