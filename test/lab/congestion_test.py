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
        """[(xoff time, X-ON time)] from the log (a pause never ended by X-ON is left out)."""
        out, start = [], None
        for r in rows:
            if r["kind"] == "xoff":
                start = int(r["time_ns"])
            elif r["kind"] == "xon" and start is not None:
                out.append((start, int(r["time_ns"])))
                start = None
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
        self.assertEqual([l["kind"] for l in s["tester_limits"]], [])  # a pause is never the tester's shortfall

    def test_a_port_that_does_not_honour_keeps_sending(self):
        self.require_a_clean_run()
        lossless = self.arrivals_during_pauses("c-leaf0", self.qp("c-lossless"))
        self.say("port c (does not honour): priority-3 frames arriving in its %d pauses: %d", len(lossless),
                 sum(lossless))
        self.assertGreater(sum(lossless), 100 * BURST)
        self.assertEqual(self.streams["c-lossless"]["tx_pfc_paused_ns"], 0)


if __name__ == "__main__":
    only = labtest.setup(sys.argv)
    unittest.main(argv=sys.argv[:1] + only, verbosity=2)
