#!/usr/bin/python3
"""Lab suite: truths injected by the Linux kernel in network namespaces that
fabricgen must recover (needs root; each test builds and removes its own lab).

usage: lab_test.py FABRICGEN SOURCE_ROOT [FABRICGEN_IMPAIR]
"""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import labtest  # noqa: E402
from labtest import LabRun  # noqa: E402

FRAME = 1518          # bytes on the wire with FCS
TBF_LEN = FRAME - 4   # tbf counts the frame without FCS
RATE = 200e6          # tbf rate, bit/s
BURST = 250000        # tbf bucket, bytes: 10 ms at 200 Mbit/s (see below)
QUEUE = 500000        # tbf queue, bytes: 20 ms at 200 Mbit/s (see below)
TRIAL_S = 2.0         # the searches' (final) trial duration
# The lab's own packet work runs on the housekeeping CPU (tools/fglab, RPS),
# which a VM host takes away for up to ~16 ms at a time (fabricgen-holdups:
# docs/lab.md, "The host"). Frames that arrive meanwhile wait in the CPU's
# backlog and reach the tbf together when it comes back: its queue must hold
# a hold-up's worth, or the DUT, not the tester, drops below its rate. And
# while that CPU is away the tbf sends nothing: a bucket of a few frames caps
# the tokens it gains meanwhile, so each hold-up took its length off the DUT's
# capacity (binary NDR 2-8 % below the truth in hours when the host took 40-330
# ms of a 2 s trial). A bucket of 10 ms keeps a hold-up's tokens (at the rate
# the bucket is empty, so all of it is room): the truth below counts it.


def capacity_fps(rate, seconds, frame_len=TBF_LEN, burst=BURST, limit=QUEUE):
    """The most frames/s a tbf passes without loss over a trial of `seconds`
    that starts with its bucket full and its queue empty, and whose queue then
    drains (fabricgen waits for it): its rate's worth plus the bucket plus the
    queue. The truth a search must find (1.0 % above the rate for 2 s trials)."""
    return (rate / 8 * seconds + burst + limit) / (seconds * frame_len)
LINE = 10e9           # af_packet ports report 10 Gbit/s; loads are shares of it
TOLERANCE = 0.02      # issue 5: capacity within +/-2 %

# The tester's two af_packet ports on one router (the DUT) that forwards a's
# frames to b through a tbf bottleneck on its link to b.
PORTS = """ports:
  - {name: a, device: "net_af_packet0,iface=ta"}
  - {name: b, device: "net_af_packet1,iface=tb"}
"""


def tbf_lab(rate, burst, limit):
    return labtest.TWO_HOSTS_LAB + """  impairments:
    - {link: leaf0-b, shape: {rate: %d bps, burst: %d B, limit: %d B}}
""" % (rate, burst, limit)


def tbf_dropped(truth):
    return truth["impairments"][0]["qdisc"][0]["drops"]

PLAN = """
name: tbf capacity
%(ports)sstreams:
  - {name: s, port: a, rx_port: b, rate: 10 kpps, frame: {size: %(frame)d B}}
tests:
  - throughput: {name: ndr-binary, search: binary, min: 0.5 %%, max: 5 %%, precision: 0.02 %%,
                 trial_duration: 2 s, warmup: 500 ms, tester_limit_retries: %(retries)d}
  - throughput: {name: pdr-binary, search: binary, min: 0.5 %%, max: 5 %%, precision: 0.02 %%,
                 loss_tolerance: 0.5 %%, trial_duration: 2 s, warmup: none,
                 tester_limit_retries: %(retries)d}
  - throughput:
      name: ndr-pdr
      search: multi_goal
      min: 0.5 %%
      max: 5 %%
      trial_duration: 2 s
      initial_duration: 500 ms
      warmup: none
      tester_limit_retries: %(retries)d
      goals: [{name: NDR, loss: 0 %%, width: 1 %%}, {name: PDR, loss: 0.5 %%, width: 1 %%}]
""" % {"frame": FRAME, "ports": PORTS, "retries": labtest.RETRIES}


@unittest.skipUnless(os.geteuid() == 0, "needs root for network namespaces")
class TbfCapacityTest(LabRun):
    """A router shaped by tbf at 200 Mbit/s on its link to b: a DUT of known capacity."""

    PLAN_TEXT = PLAN + tbf_lab(RATE, BURST, QUEUE)
    TRUTH_FPS = capacity_fps(RATE, TRIAL_S)

    def goal(self, test, name):
        return {g["name"]: g for g in self.tests[test]["goals"]}[name]

    def assert_capacity(self, g, truth_fps, what):
        self.assertTrue(g["found"], what)
        fps = g["throughput_pps"]
        self.say("%s: %.0f frames/s (%.3f Mbit/s L1, %.3f Mbit/s L2 with FCS) vs truth %.0f frames/s: %+.2f %%",
                 what, fps, g["throughput_bps_l1"] / 1e6, g["throughput_bps_l2"] / 1e6, truth_fps,
                 (fps / truth_fps - 1) * 100)
        self.assertLess(abs(fps / truth_fps - 1), TOLERANCE, what)

    def test_binary_search_finds_the_tbf_capacity(self):
        self.assert_capacity(self.goal("ndr-binary", "throughput"), self.TRUTH_FPS, "binary NDR")
        self.assert_capacity(self.goal("pdr-binary", "throughput"), self.TRUTH_FPS / 0.995, "binary PDR 0.5 %")

    def test_multi_goal_search_finds_ndr_and_pdr_in_fewer_trial_seconds(self):
        self.assert_capacity(self.goal("ndr-pdr", "NDR"), self.TRUTH_FPS, "multi-goal NDR")
        self.assert_capacity(self.goal("ndr-pdr", "PDR"), self.TRUTH_FPS / 0.995, "multi-goal PDR 0.5 %")
        seconds = {n: self.tests[n]["trial_accounting"]["included_trial_seconds"] for n in self.tests}
        self.say("trial-seconds: multi-goal %.1f vs binary NDR %.1f + binary PDR %.1f",
                 seconds["ndr-pdr"], seconds["ndr-binary"], seconds["pdr-binary"])
        self.assertLess(seconds["ndr-pdr"], seconds["ndr-binary"] + seconds["pdr-binary"])

    def test_the_tester_kept_up_in_every_trial(self):
        # Unloaded, the tester keeps up; on a shared VM its host still takes
        # a vCPU away for a few ms in some of the ~40 trials, and such a trial
        # must be excluded, named, and run again (the capacities above come
        # from the trials it kept up in). A TX path too slow for its rate
        # shows as a shortfall no stall explains (or stops the search).
        trials = [t for test in self.report["tests"] for t in test["trials"] if t["phase"] != "warm-up"]
        limited = [(test["name"], t["index"], t["excluded_because"]) for test in self.report["tests"]
                   for t in test["trials"] if t["tester_limited"] and t["phase"] != "warm-up"]
        self.say("tester-limited trials unloaded: %d of %d: %s", len(limited), len(trials), limited or "none")
        self.assertEqual(self.report["tester_limited"], bool(limited))
        for test in self.report["tests"]:
            self.assertTrue(test["complete"], test["name"])
            labtest.assert_limited_trials_were_holdups(self, test["trials"])
        for test in self.report["tests"]:
            self.assertEqual(test["trial_accounting"]["excluded_tester_limited"],
                             sum(1 for t in test["trials"] if t["tester_limited"] and t["phase"] != "warm-up"),
                             test["name"])

    def test_every_lost_frame_is_one_the_kernel_dropped(self):
        # The qdisc's drop counter is a truth independent of our analyzer, and
        # the ports' own counters agree with ours trial by trial.
        for test in self.report["tests"]:
            for t in test["trials"]:
                self.assertEqual(t["port_counters"]["a.hw_tx_packets"], t["tx_frames"], test["name"])
                c = t["port_counters"]
                self.assertEqual(c["a.hw_rx_packets"] + c["b.hw_rx_packets"], t["rx_frames_unique"] + t["rx_frames_other"],
                                 test["name"])
        trials = [t for test in self.report["tests"] for t in test["trials"]]
        lost = labtest.assert_lost_are_the_counted_drops(self, trials, tbf_dropped(self.truth), "frames")
        self.assertGreater(lost, 0)


READ_RATE = 200e6  # tbf on leaf0's link to a: the READ data's direction
READ_PLAN = """
name: READ capacity
ports:
  - {name: a, device: "net_af_packet0,iface=ta"}
  - {name: b, device: "net_af_packet1,iface=tb", respond: true}
streams:
  - {name: rd, port: a, rx_port: b, rate: 10 Mbps, flows: 4,
     frame: {roce: {op: READ_REQUEST, message: 4 KiB, pmtu: 1024}}}
tests:
  - throughput: {name: read, search: binary, min: 0.5 %%, max: 5 %%, precision: 0.02 %%, trial_duration: 2 s,
                 warmup: 500 ms, tester_limit_retries: %d}
""" % labtest.RETRIES + labtest.TWO_HOSTS_LAB + """  impairments:
    - {link: leaf0-a, shape: {rate: %d bps, burst: %d B, limit: %d B}}
""" % (READ_RATE, BURST, QUEUE)
# The queue holds 20 ms of the data, as TbfCapacityTest's (a host hold-up of
# the lab's CPU must not make the tbf drop below its rate).


@unittest.skipUnless(os.geteuid() == 0, "needs root for network namespaces")
class ReadCapacityTest(LabRun):
    """READ throughput: b is the RC responder, so a's READ requests (4 KiB at
    PMTU 1024: 4 response packets each) are answered with their data, b -> a,
    through a tbf of 200 Mbit/s on the router's link to a. The search's load
    is the READ data's; it must find the tbf's capacity in response frames,
    and every response frame lost must be one the tbf dropped."""

    PLAN_TEXT = READ_PLAN

    def test_the_search_finds_the_tbf_capacity_in_read_data(self):
        t = self.tests["read"]
        g = {x["name"]: x for x in t["goals"]}["throughput"]
        self.assertTrue(g["found"])
        # tbf counts frames without FCS; the responses' mean frame (FIRST and
        # LAST carry an AETH) is the test's mean frame size.
        truth = capacity_fps(READ_RATE, TRIAL_S, frame_len=t["mean_frame_size_bytes"] - 4)
        fps = g["throughput_pps"]
        self.say("READ: %.0f response frames/s (%.3f Mbit/s L2) vs tbf truth %.0f frames/s of %.1f B: %+.2f %%",
                 fps, g["throughput_bps_l2"] / 1e6, truth, t["mean_frame_size_bytes"], (fps / truth - 1) * 100)
        self.assertLess(abs(fps / truth - 1), TOLERANCE)

    def test_every_lost_response_is_one_the_tbf_dropped(self):
        t = self.tests["read"]
        self.assertTrue(t["complete"])
        for tr in t["trials"]:
            self.assertEqual(tr["tx_frames"] % 4, 0, tr["index"])  # 4 response packets per request asked for
        lost = labtest.assert_lost_are_the_counted_drops(self, t["trials"], tbf_dropped(self.truth),
                                                         "READ: response frames", frames_per_own_loss=4)
        self.assertGreater(lost, 0)
        limited = [(tr["index"], tr["excluded_because"]) for tr in t["trials"] if tr["tester_limited"]]
        self.say("READ: tester-limited trials: %d of %d: %s", len(limited), len(t["trials"]), limited or "none")
        # The one worker lcore sends the requests, takes them in as the
        # responder, sends the data and analyses it: a host hold-up of over
        # 1 ms (pacing_stall, the trial run again) comes in a third to a half
        # of the 2 s trials on a shared 2-vCPU VM. Each must be one.
        labtest.assert_limited_trials_were_holdups(self, t["trials"])


LATENCY_PLAN = """
name: tbf queueing delay
%(ports)sstreams:
  - {name: s, port: a, rx_port: b, rate: 10 kpps, frame: {size: %(frame)d B}}
tests:
  - latency: {name: base, load: 0.5 %%, runs: 3, trial_duration: 1 s, warmup: 200 ms,
               tester_limit_retries: %(retries)d}
  - latency: {name: queued, load: 1.2 %%, runs: 3, trial_duration: 2 s, warmup: 1 s,
               tester_limit_retries: %(retries)d}
""" % {"frame": FRAME, "ports": PORTS, "retries": labtest.RETRIES}


@unittest.skipUnless(os.geteuid() == 0, "needs root for network namespaces")
class TbfQueueDelayTest(LabRun):
    """A known added delay: tbf at 100 Mbit/s with a 150,000 B queue, kept full by
    an offered 120 Mbit/s, holds floor(150000 / 1514) = 99 frames, so a frame
    waits 99 x 1514 x 8 / 100e6 = 11.99 ms on top of the path's own latency
    (measured by the unloaded `base` test at 50 Mbit/s, where the queue stays
    empty). Issue 5: P50 within +/-5 % of base + delay (the queue over the
    rate the tbf drained it at: its set rate, unless the host slowed it)."""

    RATE, BURST, LIMIT = 100e6, 16000, 150000
    TRIAL_S = 2.0  # the `queued` test's trial_duration
    PLAN_TEXT = LATENCY_PLAN + tbf_lab(RATE, BURST, LIMIT)

    def tbf_rate(self):
        """The rate the tbf sent at in the counted `queued` trials, bits/s of
        its own count (no FCS, preamble or gap): the queue's drain rate. A
        trial's frames leave the tbf for its TRIAL_S at that rate, plus its
        bucket at the start and the full queue it drains after TX stops (12
        ms more at 100 Mbit/s: +0.6 % if the frames received were taken over
        TRIAL_S alone)."""
        trials = [tr for tr in self.tests["queued"]["trials"] if tr["included"]]
        bits = [tr["received_bps_l1"] * self.TRIAL_S * TBF_LEN / (FRAME + 20) for tr in trials]
        extra = (self.BURST + (self.LIMIT // TBF_LEN) * TBF_LEN) * 8
        return sum(b - extra for b in bits) / len(bits) / self.TRIAL_S

    def test_p50_is_the_base_latency_plus_the_queueing_delay(self):
        # The queue's frames wait for those ahead to leave at the rate the tbf
        # drained them: its set rate on a calm host. A host that holds the
        # lab's kernel up slows the tbf itself (an hour of 8-17 % steal: 83-95
        # Mbit/s, P50 +10-24 % against the set rate): the delay is then the
        # queue over the rate the tbf really had, measured as its sent frames
        # (the frames received: every other lab test holds them equal to the
        # kernel's counters) over the trials' time. Never above the set rate.
        rate = self.tbf_rate()
        self.assertLess(rate, self.RATE * 1.005)
        # A slowed tbf, not another one: the worst hour seen gave 83 Mbit/s.
        self.assertGreater(rate, self.RATE * 0.75)
        delay_ns = (self.LIMIT // TBF_LEN) * TBF_LEN * 8 / rate * 1e9
        base = self.tests["base"]["pooled"]["p50_ns"]
        queued = self.tests["queued"]["pooled"]["p50_ns"]
        truth = base + delay_ns
        self.say("latency: base P50 %.0f ns + queueing %.0f ns (the tbf drained at %.2f Mbit/s of its %.0f) = %.0f ns; "
                 "measured P50 %.0f ns (%+.2f %%)", base, delay_ns, rate / 1e6, self.RATE / 1e6, truth, queued,
                 (queued / truth - 1) * 100)
        self.assertLess(abs(queued / truth - 1), 0.05)
        self.assertEqual(self.tests["base"]["runs"][0]["loss_ratio"], 0)  # unloaded: the queue never filled
        self.assertGreater(self.tests["queued"]["runs"][0]["loss_ratio"], 0)  # loaded: the queue stayed full


BURST_PLAN = """
name: tbf buffer
drain: 300 ms
%(ports)sstreams:
  - {name: s, port: a, rx_port: b, rate: 1 kpps, frame: {size: %(frame)d B}}
tests:
  - burst: {name: buffer, min_frames: 1, max_frames: 64, repetitions: 5, gap: 300 ms, warmup: 100 ms,
             tester_limit_retries: %(retries)d}
""" % {"frame": FRAME, "ports": PORTS, "retries": labtest.RETRIES}


@unittest.skipUnless(os.geteuid() == 0, "needs root for network namespaces")
class TbfBufferTest(LabRun):
    """A known buffer: tbf at 1 Mbit/s with 1,600 B of tokens and a 30,000 B queue
    passes floor(1600 / 1514) = 1 frame of a burst at once and queues
    floor(30000 / 1514) = 19, so it absorbs 20 back-to-back frames (the queue
    drains 0.01 frame during a burst that arrives in ~0.3 ms; 300 ms gaps empty it
    between bursts). Issue 5: within +/-1 frame of the truth."""

    PLAN_TEXT = BURST_PLAN + tbf_lab(1e6, 1600, 30000)

    def test_the_burst_search_finds_the_buffer(self):
        truth = 1600 // TBF_LEN + 30000 // TBF_LEN
        t = self.report["tests"][0]
        p = t["incast"][0]
        self.say("burst: absorbed %d frames, first loss at %d; truth %d",
                 p["absorbed_burst_frames_per_sender"], p["first_loss_burst_frames_per_sender"], truth)
        self.assertTrue(p["found"])
        self.assertLessEqual(abs(p["absorbed_burst_frames_per_sender"] - truth), 1)
        self.assertEqual(p["first_loss_burst_frames_per_sender"], p["absorbed_burst_frames_per_sender"] + 1)
        self.assertEqual(p["incast_ratio"], "1:1")
        labtest.assert_lost_are_the_counted_drops(self, t["trials"], tbf_dropped(self.truth), "burst frames")


if __name__ == "__main__":
    only = labtest.setup(sys.argv)
    unittest.main(argv=sys.argv[:1] + only, verbosity=2)
