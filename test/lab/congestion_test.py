#!/usr/bin/python3
"""Lab suite: congestion management (the draft's category 3). Our impairment
stage as a lossless switch queue sends PFC toward a tester port and logs every
PFC frame; fabricgen's pause events, X-ON frames and paused time must equal
what the log says, and a port that honours PFC must stop its paused priority
(and only it). Needs root.

usage: congestion_test.py FABRICGEN SOURCE_ROOT FABRICGEN_IMPAIR
"""
import bisect
import csv
import math
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import labtest  # noqa: E402
from labtest import LabRun  # noqa: E402

# One burst of TX (tx/tx.h kTxBurst): what may already be made when a pause
# reaches the owner lcore, and goes out after it.
BURST = 32


@unittest.skipUnless(os.geteuid() == 0, "needs root for network namespaces")
class PfcTest(LabRun):
    """configs/lab/pfc.yaml: a stage on each sender's link sends PFC for
    priority 3 above 60 kB and X-ON at 30 kB; port a honours it, port c not."""

    PLAN = "pfc.yaml"
    SPEED_BPS = 100e6  # the ports' link_speed, at which the stage's quanta are counted
    PRIORITY = 3
    # 2 ms: under a burst's time at the lossless stream's 7.9 kpps (32 frames: 4 ms).
    STALL_NS = 2_000_000

    @classmethod
    def held_up_streams(cls, report, truth=None):
        held = super().held_up_streams(report, truth)
        # A PFC frame the tester's own socket dropped is not counted: the
        # count cannot be judged against the log then (the product says so).
        # An RX lcore late by over STALL_NS takes in a pause that late: more
        # frames than a burst leave meanwhile (counts stay exact).
        for p in report.get("ports", []):
            for l in p.get("tester_limits", []):
                if l["kind"] == "rx_drop" or (l["kind"] == "rx_stall" and l.get("longest_ns", 0) > cls.STALL_NS):
                    held.append("port %s: %s %d (longest %.1f ms)" % (p["name"], l["kind"], l["count"],
                                                                       l.get("longest_ns", 0) / 1e6))
        return held

    def pfc_log(self, link):
        path = next(i["pfc_log"] for i in self.imps if i["link"] == link)
        with open(path) as f:
            return [r for r in csv.DictReader(f) if r["kind"] != "received"]

    def decisions(self, link):
        path = next(i["log"] for i in self.imps if i["link"] == link)
        with open(path) as f:
            return list(csv.DictReader(f))

    def port_row(self, name):
        port = next(p for p in self.report["ports"] if p["name"] == name)
        rows = [r for r in port["pfc"] if r["priority"] == self.PRIORITY]
        self.assertEqual(len(rows), 1, port["pfc"])
        return rows[0]

    def paused_ns_of(self, rows):
        """Each frame with quanta pauses for them at the port speed, cut short by the next frame."""
        total = 0.0
        for i, r in enumerate(rows):
            q = int(r["quanta"])
            if q == 0:
                continue
            d = q * 512 / self.SPEED_BPS * 1e9
            if i + 1 < len(rows):
                d = min(d, int(rows[i + 1]["time_ns"]) - int(r["time_ns"]))
            total += d
        return total

    def pauses(self, rows):
        """The intervals the sender was paused in by the log's frames: each frame with quanta from its time for
        its quanta at the port speed, cut short by the next frame; touching ones merged. (A stage held up past a
        pause's quanta sends its refresh late: the pause has expired at the sender meanwhile, and it may send.)"""
        out = []
        for i, r in enumerate(rows):
            q = int(r["quanta"])
            if q == 0:
                continue
            a = int(r["time_ns"])
            b = a + int(q * 512 / self.SPEED_BPS * 1e9)
            if i + 1 < len(rows):
                b = min(b, int(rows[i + 1]["time_ns"]))
            if out and a <= out[-1][1]:
                out[-1] = (out[-1][0], max(out[-1][1], b))
            else:
                out.append((a, b))
        return out

    def test_pause_events_and_xon_frames_equal_the_stage_log(self):
        self.require_a_clean_run()
        for name, link in (("a", "a-leaf0"), ("c", "c-leaf0")):
            rows = self.pfc_log(link)
            events = sum(1 for r in rows if int(r["quanta"]) > 0)
            xon = sum(1 for r in rows if int(r["quanta"]) == 0)
            got = self.port_row(name)
            self.say("port %s: stage sent %d PFC frames with quanta, %d X-ON; fabricgen %d pause events, %d X-ON "
                     "(%s)", name, events, xon, got["pause_events"], got["xon_frames"], got["observation_point"])
            self.assertGreater(events, 0)
            self.assertEqual(got["pause_events"], events)  # exact
            self.assertEqual(got["xon_frames"], xon)  # counted apart, never as events

    def test_paused_time_within_1_percent_of_the_logs_frames(self):
        self.require_a_clean_run()
        for name, link in (("a", "a-leaf0"), ("c", "c-leaf0")):
            truth = self.paused_ns_of(self.pfc_log(link))
            got = self.port_row(name)["paused_ns"]
            self.say("port %s: paused %.3f ms by the log's frames at 100 Mbit/s, fabricgen %.3f ms (%+.2f %%)", name,
                     truth / 1e6, got / 1e6, (got / truth - 1) * 100)
            self.assertGreater(truth, 0)
            self.assertLess(abs(got - truth), truth * 0.01)

    def arrivals_during_pauses(self, link, qp):
        """Frames of QP that reached the stage in each pause of the log (after its XOFF left, before its X-ON)."""
        times = sorted(int(r["in_ns"]) for r in self.decisions(link) if int(r["flow_key"]) == qp)
        return [bisect.bisect_left(times, b) - bisect.bisect_right(times, a)
                for a, b in self.pauses(self.pfc_log(link))]

    def qp(self, stream):
        return self.streams[stream]["per_flow"][0]["key"]

    def test_a_honouring_port_stops_only_the_paused_priority(self):
        self.require_a_clean_run()
        pauses = self.pauses(self.pfc_log("a-leaf0"))
        lossless = self.arrivals_during_pauses("a-leaf0", self.qp("a-lossless"))
        lossy = self.arrivals_during_pauses("a-leaf0", self.qp("a-lossy"))
        paused_s = sum(b - a for a, b in pauses) / 1e9
        lossy_due = 20e6 / 8 / 1102 * paused_s
        self.say("port a (honours): %d pauses, %.1f ms in all; priority-3 frames arriving in them: at most %d, %d in "
                 "all; priority-0 frames: %d (%.0f due at 20 Mbit/s)", len(pauses), paused_s * 1e3,
                 max(lossless, default=0), sum(lossless), sum(lossy), lossy_due)
        self.assertGreater(len(pauses), 5)  # paused and resumed again and again
        self.assertLessEqual(max(lossless), BURST)  # only what was in flight
        self.assertGreater(sum(lossy), lossy_due * 0.8)  # the other priority kept coming
        s = self.streams["a-lossless"]
        self.say("a-lossless: held by PFC %.1f ms; tester limits: %s", s["tx_pfc_paused_ns"] / 1e6,
                 [l["kind"] for l in s["tester_limits"]] or "none")
        self.assertGreater(s["tx_pfc_paused_ns"], 0)
        # A pause is never the tester's shortfall: what the stream was due
        # (its rate outside the pauses) it sent, but for slots a hold-up of
        # the host made it skip (pacing_stall, named as such).
        kinds = [l["kind"] for l in s["tester_limits"]]
        self.assertEqual(s["tx_due_packets"], s["tx_packets"] + (s["tx_slots_skipped"] or 0))
        if "tx_shortfall" in kinds:
            self.assertIn("pacing_stall", kinds)

    def test_a_port_that_does_not_honour_keeps_sending(self):
        self.require_a_clean_run()
        lossless = self.arrivals_during_pauses("c-leaf0", self.qp("c-lossless"))
        self.say("port c (does not honour): priority-3 frames arriving in its %d pauses: %d", len(lossless),
                 sum(lossless))
        self.assertGreater(sum(lossless), 100 * BURST)
        self.assertEqual(self.streams["c-lossless"]["tx_pfc_paused_ns"], 0)


@unittest.skipUnless(os.geteuid() == 0, "needs root for network namespaces")
class EcnMarkingTest(LabRun):
    """configs/lab/ecn-marking.yaml: a RED-marking stage (Kmin 30 kB, Kmax 90 kB,
    Pmax 20 %) swept from empty past Kmax by 100 ramps; its log has every
    frame's depth and mark: the truth of each depth bin."""

    PLAN = "ecn-marking.yaml"
    KMIN, KMAX, PMAX, BIN = 30_000, 90_000, 0.20, 6_000
    # A stop of the host's CPU under the lab (the stage, the kernel's path to
    # b) adds its length to the latencies behind it: 1 ms is 2.5 kB of depth
    # at 20 Mbit/s. A run with a stop over 2 ms is made again.
    MAX_LAB_STOP_NS = 2_000_000

    def log_bins(self):
        """Per bin of the stage's true depths: [frames, marked], the ramps' frames only (the log's rows from the
        ramps trial's start on)."""
        t = self.tests["e"] if "e" in self.tests else next(iter(self.tests.values()))
        start = next(tr["start_unix_ns"] for tr in t["trials"] if tr["phase"] == "ramps" and tr["included"])
        path = next(i["log"] for i in self.imps if i["link"] == "leaf0-b")
        qp = 0x100  # the stream's frames only (its dest_qp; not the lab's own)
        bins = {}
        with open(path) as f:
            for r in csv.DictReader(f):
                if int(r["in_ns"]) < start or r["action"] not in ("pass", "reorder") or int(r["flow_key"]) != qp:
                    continue
                b = bins.setdefault(int(r["depth_bytes"]) // self.BIN, [0, 0])
                b[0] += 1
                b[1] += int(r["ce"])
        return bins

    def test_kmin_and_kmax_within_one_bin_of_the_configured(self):
        self.require_a_clean_run()
        t = next(iter(self.tests.values()))
        self.assertTrue(t["complete"], t.get("stopped_because"))
        self.say("measured Kmin %s B, Kmax %s B, Pmax %s (configured 30000, 90000, 0.200); base latency %.0f ns; "
                 "%d of %d frames marked", t["kmin_bytes"], t["kmax_bytes"], t["pmax"], t["base_latency_ns"],
                 t["marked"], t["frames"])
        self.assertIsNotNone(t["kmin_bytes"])
        self.assertIsNotNone(t["kmax_bytes"])
        self.assertLessEqual(abs(t["kmin_bytes"] - self.KMIN), self.BIN)
        self.assertLessEqual(abs(t["kmax_bytes"] - self.KMAX), self.BIN)
        self.assertLessEqual(abs(t["deviation"]["kmax_bytes"]), self.BIN)

    def test_each_bins_probability_is_within_the_binomial_interval_of_the_logs(self):
        self.require_a_clean_run()
        t = next(iter(self.tests.values()))
        truth = self.log_bins()
        checked = 0
        for b in t["bins"]:
            k = b["depth_bytes"] // self.BIN
            n = b["frames"]
            if n < 50 or k not in truth or truth[k][0] < 50:
                continue
            p_log = truth[k][1] / truth[k][0]
            half = 3.2905 * math.sqrt(p_log * (1 - p_log) / n) + 0.5 / n
            # The bins on either side of Kmax's step (20 % to all) also take
            # frames within the depth estimate's error of it (the path's own
            # jitter): each lies between its neighbours' truths.
            edge = abs(b["depth_bytes"] + self.BIN / 2 - self.KMAX) <= self.BIN
            lo, hi = p_log - half, p_log + half
            if edge:
                near = [truth[j][1] / truth[j][0] for j in (k - 1, k, k + 1) if j in truth and truth[j][0]]
                lo, hi = min(lo, min(near)), max(hi, max(near))
            self.say("depth %6d B: fabricgen %5d frames, p %.4f; log %5d frames, p %.4f; interval %.4f..%.4f%s",
                     b["depth_bytes"], n, b["probability"], truth[k][0], p_log, lo, hi, " (Kmax's step)" if edge else "")
            self.assertGreaterEqual(b["probability"], lo, b)
            self.assertLessEqual(b["probability"], hi, b)
            checked += 1
        self.assertGreaterEqual(checked, 15)


if __name__ == "__main__":
    only = labtest.setup(sys.argv)
    unittest.main(argv=sys.argv[:1] + only, verbosity=2)
