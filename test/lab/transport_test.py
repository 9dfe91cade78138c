#!/usr/bin/python3
"""Lab suite, the RC transport: the example plans of configs/lab/ whose
RoCEv2 QPs run closed loop (go-back-N, DCQCN, CM set-up, READ) in their
namespace fabrics (tools/lab.py), each truth recorded by nftables, tcpdump,
tshark or our impairment stage's decision log, recovered by fabricgen within
the tolerance written beside each assertion. Needs root. (fabric_test.py holds
the open-loop truths.)

usage: transport_test.py FABRICGEN SOURCE_ROOT [FABRICGEN_IMPAIR]
"""
import csv
import os
import struct
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import labtest  # noqa: E402
from labtest import LabRun  # noqa: E402


@unittest.skipUnless(os.geteuid() == 0, "needs root for network namespaces")
class GoBackNTest(LabRun):
    """configs/lab/go-back-n.yaml: port b is an RC responder; nftables on
    leaf0's link to b drops the first copy of each frame with PSN & 0xff == 7
    and keeps its (QP, PSN) in a set (the truth: what was dropped). tcpdump on
    leaf0's ends towards a and b shows what a sent, what reached b, and the
    NAKs b sent back."""

    PLAN = "go-back-n.yaml"
    CAPTURES = (("leaf0", "a"), ("leaf0", "b"))

    @staticmethod
    def bth(frames):
        """(opcode, QP, PSN, AETH syndrome or None) of each RoCEv2 frame (IPv4, UDP 4791)."""
        out = []
        for f in frames:
            if len(f) < 54 or f[12:14] != b"\x08\x00" or f[23] != 17:
                continue
            udp = 14 + 4 * (f[14] & 15)
            if struct.unpack_from("!H", f, udp + 2)[0] != 4791:
                continue
            b = udp + 8
            op, qp, psn = f[b], struct.unpack_from("!I", f, b + 4)[0], struct.unpack_from("!I", f, b + 8)[0] & 0xFFFFFF
            out.append((op, qp, psn, f[b + 12] if op == 0x11 else None))
        return out

    def test_every_dropped_psn_is_naked_resent_and_every_message_completes(self):
        s, imp = self.streams["writes"], self.imps[0]
        dropped = sorted((k[0], k[1]) for k in imp["dropped_keys"])  # (BTH bytes 4..7 = the QP, PSN)
        caps = self.truth["captures"]
        for c in ("leaf0-a", "leaf0-b"):
            self.assertEqual(caps[c]["kernel_dropped"], 0, c)
        at_a = self.bth(self.lab.pcap_frames(caps["leaf0-a"]["pcap"]))
        at_b = self.bth(self.lab.pcap_frames(caps["leaf0-b"]["pcap"]))
        sent = [(qp, psn) for op, qp, psn, _ in at_a if op != 0x11]  # data from a (RDMA WRITE opcodes)
        arrived = set((qp, psn) for op, qp, psn, _ in at_b if op != 0x11)
        naks = sorted((qp, psn) for op, qp, psn, syn in at_b if op == 0x11 and syn == 0x60)  # PSN sequence error
        copies = {}
        for k in sent:
            copies[k] = copies.get(k, 0) + 1
        self.say("nft dropped %d first copies (counter %d); b NAKed %d; fabricgen: nak_sent %d, nak_go_backs %d, "
                 "retransmitted %d, timeouts %d; unique %d, delivered %d packets / %d B; unrecovered %d",
                 len(dropped), imp["counter"]["packets"], len(naks), s["nak_sent"], s["nak_go_backs"],
                 s["retransmitted_packets"], s["retransmit_timeouts"], s["unique_packets"], s["delivered_packets"],
                 s["delivered_bytes"], s["unrecovered_packets"])
        # The set is the truth of what was dropped: exactly the counter, and
        # the pattern's PSNs of the 4 QPs' 5,000 packets each (PSN 0..4999).
        self.assertEqual(len(dropped), imp["counter"]["packets"])
        qps = sorted(set(qp for qp, _ in dropped))
        self.assertEqual(len(qps), 4)
        self.assertEqual(dropped, sorted((qp, p) for qp in qps for p in range(7, 5000, 256)))
        # Each dropped PSN: NAKed by b (once: one NAK per gap), sent again by
        # a, and arrived at b.
        self.assertEqual(naks, dropped)
        self.assertEqual(s["nak_sent"], len(dropped))
        self.assertEqual(s["nack_received"], len(dropped))
        self.assertEqual(s["nak_go_backs"], len(dropped))
        for k in dropped:
            self.assertGreaterEqual(copies.get(k, 0), 2, k)
            self.assertIn(k, arrived)
        # Every message completes: 1,250 WRITEs of 4 KiB per QP, delivered in
        # order, their bytes exactly; what went out again is counted and at
        # least the drops; the wire lost only the dropped first copies.
        self.assertEqual(s["unique_packets"], 20000)
        self.assertEqual(s["delivered_packets"], 20000)
        self.assertEqual(s["delivered_bytes"], 4 * 1250 * 4096)
        self.assertEqual(s["unrecovered_packets"], 0)
        self.assertGreaterEqual(s["retransmitted_packets"], len(dropped))
        self.assertEqual(s["unique_packets"] + s["retransmitted_packets"], s["tx_packets"])
        self.assertEqual(len(sent), s["tx_packets"])  # tcpdump saw every frame a sent
        self.assertEqual(s["lost_packets"], len(dropped))
        self.assertEqual(s["tx_packets"] - s["rx_packets"], len(dropped))


@unittest.skipUnless(os.geteuid() == 0, "needs root for network namespaces")
class DcqcnTest(LabRun):
    """configs/lab/dcqcn.yaml: 4 + 4 QPs at 50 Mbit/s each through our stage's
    100 Mbit/s RED-marking queue (400 kB), port b their responder and
    notification point; the dcqcn_convergence test runs them with several
    reaction-point parameter sets (the paper's slowed to the link, and the
    sensitivity table's others) and with none. The stage's decision log, one
    line per frame in the order they left (each with its QP, `flow_key`), is
    the truth: the convergence it gives with the same window, tolerance and
    hold is the one fabricgen must report."""

    PLAN = "dcqcn.yaml"
    LIMIT = 400_000  # the stage's queue, bytes
    T0_NS = 2_000_000_000
    TRIAL_NS = 12_000_000_000
    PAPER = "set 0"       # the paper's parameters slowed to the link
    CONVERGING = "set 1"  # the sensitivity table's set that converges in the lab (docs/plan-reference.md)
    # The bottleneck's utilisation under the paper's set is judged only in a
    # run whose trial of that set the host stopped the lab's CPU in for at
    # most this long in all (truth["cpu_stalls"]): each stop sends the
    # senders' held frames at once, the queue marks them, and the cut that
    # follows takes the paper's slowed recovery seconds to undo (CI of
    # 2026-12-07: 30 and 40 stops of 2-100 ms in the trial, 1.3 s in all,
    # 61.6 % and 71.8 % busy over the last fifth; calm runs: 88-98 %; the
    # project's CI of c80a6c0: under 200 ms in the trial, 65.7 % busy, so
    # 100 ms: a calm trial has a few stops of 3-5 ms).
    MAX_STOPPED_IN_PAPER_TRIAL_NS = 100_000_000
    # A run takes about 100 s: three runs at most keep lab-transport within
    # its timeout (CI of 2026-12-07: four runs held up, each with 105-259 ms
    # of stops in set 0's trial, and the suite hit its 900 s timeout).
    RUN_ATTEMPTS = 3

    @classmethod
    def held_up_streams(cls, report, truth=None):
        held = super().held_up_streams(report, truth)
        tests = {t["name"]: t for t in report.get("tests", [])}
        t = tests.get("dcqcn_convergence")
        point = next((p for p in (t or {}).get("points", []) if p["parameter_set"] == cls.PAPER), None)
        if point is None or not point.get("runs"):
            return held
        trial = next((x for x in t["trials"] if x["index"] == point["runs"][0]["trial"]), None)
        if trial is None or not trial.get("start_unix_ns"):
            return held
        lo = trial["start_unix_ns"]
        hi = lo + int(trial["duration_s"] * 1e9)
        stopped = sum(max(0, min(hi, s["to_unix_ns"]) - max(lo, s["from_unix_ns"]))
                      for s in (truth or {}).get("cpu_stalls", []))
        if stopped > cls.MAX_STOPPED_IN_PAPER_TRIAL_NS:
            held.append("the host stopped CPU %d under the lab for %.1f ms in all within %s's trial" % (
                (truth["cpu_stalls"][0]["cpu"]), stopped / 1e6, cls.PAPER))
        return held

    def runs(self):
        t = self.tests["dcqcn_convergence"]
        return {p["parameter_set"]: (p, p["runs"][0]) for p in t["points"]}

    def logs(self):
        """The stage log split by trial: a trial's frames all pass the stage
        before the next trial starts (the drain), so the lines of each trial
        (a tester-limited one run again included) follow one another, as
        many as it sent (the log is complete: LabRun checked its summary).
        Returns [(set name, run, rows)] in the test's order, `none` last."""
        path = next(i["log"] for i in self.imps if i["link"] == "leaf0-b")
        with open(path) as f:
            rows = list(csv.DictReader(f))
        by_trial, at = {}, 0
        for tr in self.tests["dcqcn_convergence"]["trials"]:
            by_trial[tr["index"]] = rows[at:at + tr["tx_frames"]]
            at += tr["tx_frames"]
        self.assertEqual(at, len(rows))  # every line of the log is one of the trials' frames
        return [(name, run, by_trial[run["trial"]]) for name, (_, run) in
                sorted(self.runs().items(), key=lambda x: x[0] == "none")]

    def judged_from_the_log(self, rows, window, tolerance, hold):
        """The convergence the stage's log gives, judged as fabricgen judges
        its QPs (lib/methods/dcqcn_convergence.cc) but from what reached the
        bottleneck: each QP's (flow_key's) arrivals at the stage, dropped ones
        included (what its sender offered), per window from t0 (the trial's
        first arrival + t0); the fair share is what the stage delivered over
        [t0, end] (its model's departures, due_ns) over the QPs. Bytes with
        FCS, as fabricgen's L2 rates. Returns (converged, convergence_ns or
        None, final_deviation, fair_share_bps)."""
        start = min(int(r["in_ns"]) for r in rows)
        t0, end = start + self.T0_NS, start + self.TRIAL_NS
        qps = sorted(set(int(r["flow_key"]) for r in rows))
        delivered = sum(int(r["bytes"]) + 4 for r in rows
                        if not r["action"].startswith("drop") and t0 <= int(r["due_ns"]) < end)
        fair = delivered * 8e9 / (end - t0) / len(qps)
        windows = [(t0 + k * window, t0 + (k + 1) * window) for k in range((end - t0) // window)]
        per = {q: [0] * len(windows) for q in qps}
        last_fifth = {q: 0 for q in qps}
        from_ = end - (end - t0) // 5
        for r in rows:
            t, q = int(r["in_ns"]), int(r["flow_key"])
            if t0 <= t < t0 + len(windows) * window:
                per[q][(t - t0) // window] += int(r["bytes"]) + 4
            if from_ <= t < end:
                last_fifth[q] += int(r["bytes"]) + 4
        need = max(1, -(-hold // window))
        run, converged_at = 0, None
        for k in range(len(windows)):
            within = all(abs(per[q][k] * 8e9 / window / fair - 1) <= tolerance for q in qps)
            run = run + 1 if within else 0
            if run >= need:
                converged_at = (k + 1 - run) * window
                break
        final = max(abs(last_fifth[q] * 8e9 / (end - from_) / fair - 1) for q in qps)
        return converged_at is not None, converged_at, final, fair

    def test_each_sets_convergence_and_final_deviation_are_those_of_the_stage_log(self):
        t = self.tests["dcqcn_convergence"]
        window, tolerance, hold = t["window_ns"], t["parameters"]["tolerance"], t["parameters"]["hold_ns"]
        for name, run, rows in self.logs():
            converged, at, final, fair = self.judged_from_the_log(rows, window, tolerance, hold)
            self.say("%s: fabricgen %s, final deviation %.3f, fair share %.3f Mbit/s; the stage's log %s, final "
                     "deviation %.3f, fair share %.3f Mbit/s (windows of %.0f ms, %.0f %%, hold %.0f ms)", name,
                     "converged %.3f s after t0" % (run["convergence_ns"] / 1e9) if run["converged"] else
                     "not converged", run["final_deviation"], run["fair_share_bps"] / 1e6,
                     "converged %.3f s after t0" % (at / 1e9) if converged else "not converged", final, fair / 1e6,
                     window / 1e6, 100 * tolerance, hold / 1e6)
            # Convergence is a threshold crossed by noisy window rates: a
            # window whose worst QP sits at 9.9 % or 10.1 % of the share flips
            # the verdict, and fabricgen (its reaction points' rates) and the
            # log (arrivals at the stage, a fair share within 2 % of
            # fabricgen's) may see it on either side. So the log is judged
            # again with the tolerance narrowed and widened by that 2 % and
            # 1 % for window edges (3 % of the share): fabricgen's verdict
            # must be one the log gives inside that band, its time within a
            # window of the band's times. A shift of more than the band
            # (a rate off by over 3 %, a window misplaced) still fails.
            # (CI of 1d40e87: set 1 at 10 % gave fabricgen 1.0 s away from
            # the log's time.)
            strict = self.judged_from_the_log(rows, window, tolerance - 0.03, hold)
            loose = self.judged_from_the_log(rows, window, tolerance + 0.03, hold)
            self.say("  %s: the log with tolerance %.0f %%: %s; with %.0f %%: %s", name, 100 * (tolerance - 0.03),
                     "converged %.3f s" % (strict[1] / 1e9) if strict[0] else "not converged",
                     100 * (tolerance + 0.03), "converged %.3f s" % (loose[1] / 1e9) if loose[0] else "not converged")
            if run["converged"]:
                self.assertTrue(loose[0], "%s: fabricgen converged, the log does not even at %.0f %%" %
                                (name, 100 * (tolerance + 0.03)))
                latest = strict[1] if strict[0] else self.TRIAL_NS - self.T0_NS
                self.assertLessEqual(loose[1] - window, run["convergence_ns"], name)
                self.assertLessEqual(run["convergence_ns"], latest + window, name)
            else:
                self.assertFalse(strict[0], "%s: fabricgen did not converge, the log does at %.0f %%" %
                                 (name, 100 * (tolerance - 0.03)))
            if converged and strict[0]:  # a clear convergence in the log: the same time, within a window
                self.assertLessEqual(abs(run["convergence_ns"] - at), window + (strict[1] - loose[1]), name)
            self.assertLess(abs(run["fair_share_bps"] / fair - 1), 0.02, name)
            self.assertLess(abs(run["final_deviation"] - final), 0.03 * (1 + final), name)
        points = {p["parameter_set"]: p for p in t["points"]}
        self.assertFalse(points["none"]["converged"])  # senders above what the bottleneck delivers
        self.assertTrue(points[self.CONVERGING]["converged"], self.CONVERGING)
        for p in points.values():  # Jain's index per window, beside the rates
            self.assertEqual(len(p["jfi"]["t_ns"]), len(p["jfi"]["values"]))
            self.assertGreater(len(p["jfi"]["values"]), 10)
            self.assertTrue(all(0 < j <= 1 for j in p["jfi"]["values"]), p["parameter_set"])

    def test_every_ce_mark_is_answered_or_suppressed_and_every_cnp_arrives(self):
        for name, run, rows in self.logs():
            marked = sum(int(r["ce"]) for r in rows)
            dropped = sum(1 for r in rows if r["action"].startswith("drop"))
            self.say("%s: stage marked %d CE and dropped %d of %d; responder saw %d CE, sent %d CNPs, suppressed %d; "
                     "requesters received %d; lost %d", name, marked, dropped, len(rows), run["ecn_ce_packets"],
                     run["cnp_sent"], run["cnp_suppressed"], run["cnp_received"], run["lost_packets"])
            self.assertGreater(marked, 0, name)
            self.assertEqual(run["ecn_ce_packets"], marked, name)  # exact
            self.assertEqual(run["cnp_sent"] + run["cnp_suppressed"], marked, name)
            self.assertEqual(run["cnp_received"], run["cnp_sent"], name)  # the return path loses none
            self.assertEqual(run["lost_packets"], dropped, name)  # retransmit: none: the wire's loss

    def test_with_dcqcn_the_queue_stays_bounded_and_its_drops_end_with_the_start_of_the_second_group(self):
        self.require_a_clean_run()
        logs = {name: (run, rows) for name, run, rows in self.logs()}
        (run, rows), (open_run, open_rows) = logs[self.PAPER], logs["none"]
        start = int(rows[0]["in_ns"])
        settled = start + self.T0_NS + 1_000_000_000  # the second group's first second: its QPs start at 50 Mbit/s
        after = [r for r in rows if int(r["in_ns"]) >= settled]
        # A stop of the lab's CPU (truth["cpu_stalls"]: the host took the
        # vCPU, ~100 ms) holds the kernel's path from the senders: what they
        # sent meanwhile reaches the stage at once when it runs again, a
        # burst no reaction point could have answered (the stage's receive
        # times are the kernel's). Its drops, while the queue that burst made
        # drains (the limit at the link's rate, twice), are the host's.
        drain_ns = 2 * self.LIMIT * 8 * 1e9 / 100e6
        stalls = self.truth.get("cpu_stalls", [])

        def hosts(r):
            t = int(r["in_ns"])
            return any(s["from_unix_ns"] <= t <= s["to_unix_ns"] + drain_ns for s in stalls)
        excused = sum(1 for r in after if r["action"].startswith("drop") and hosts(r))
        drops_after = sum(1 for r in after if r["action"].startswith("drop")) - excused
        depth = max(int(r["depth_bytes"]) for r in after if not hosts(r))
        # The stage's departures over the trial's last fifth, by its model
        # (due_ns; out_ns carry the stage's own CPU's hold-ups): the link ran
        # full but while the tester was away. A hold-up of the tester's lcore
        # silences all 8 QPs at once, and a link whose queue DCQCN keeps short
        # idles through it; a QP at ~1 kpps catches up to 32 ms of it without
        # skipping a slot, so no tester limit says so, but the trial's
        # lcore_holdups count it (turns of the loop over 1 ms apart). The
        # link's idle time beyond their share of the trial is DCQCN's own (CI
        # of 2026-12-03, 12-20 % steal: busy 2.2 % under; a run here with
        # 2.4 s of arrival gaps over 10 ms in 12 s: 15 % under).
        last = [r for r in rows if not r["action"].startswith("drop") and int(r["due_ns"]) >= start + 10_000_000_000]
        span = (int(last[-1]["due_ns"]) - int(last[0]["due_ns"])) / 1e9
        busy = sum(int(r["bytes"]) for r in last[1:]) * 8 / span
        trial = next(t for t in self.tests["dcqcn_convergence"]["trials"] if t["index"] == run["trial"])
        # (turns over 1 ms apart and, since 2026-12-07, those 0.1-1 ms apart: away in slices)
        away = (trial["lcore_holdups"]["total_ns"] + trial["lcore_holdups"].get("short_total_ns", 0)) / 1e9
        away_share = away / trial["duration_s"]
        # Stops of the lab's CPU in the last fifth idle the link as well: for
        # their length nothing reaches the stage, and the burst after them
        # fills its queue (marks, drops: the drain above) that DCQCN answers
        # by cutting (CI of 2026-12-07: 30 stops in 12 s, 18-100 ms, 61.6 %
        # busy). Each stop's time plus that drain, within the span, is the
        # host's share as the lcores' is.
        lo, hi = int(last[0]["due_ns"]), int(last[-1]["due_ns"])
        lab_stopped = sum(max(0, min(hi, s["to_unix_ns"] + drain_ns) - max(lo, s["from_unix_ns"])) for s in stalls)
        lab_share = lab_stopped / 1e9 / span
        p = self.runs()[self.PAPER][0]
        self.say("DCQCN: after t0 + 1 s, %d drops (and %d within the host's stops of the lab's CPU %s), queue at "
                 "most %d B (limit %d); the stage sent %.3f Mbit/s over "
                 "the last fifth (%.3f s; the tester's lcores away %.1f ms of the trial's 12 s: %.2f %%; the lab's CPU "
                 "stopped, with each stop's drain, %.2f %% of it); %s, QPs ended within %.1f %% of the fair "
                 "share %.3f Mbit/s; without DCQCN: %d of %d frames dropped", drops_after, excused,
                 ["%.1f ms" % (s["ns"] / 1e6) for s in stalls], depth, self.LIMIT,
                 busy / 1e6, span, away * 1e3, 100 * away_share, 100 * lab_share,
                 "converged in %.3f s" % (p["convergence_ns"] / 1e9) if p["converged"] else "not converged within "
                 "10 % for 400 ms", 100 * run["final_deviation"], p["fair_share_bps"] / 1e6, open_run["lost_packets"],
                 open_run["tx_packets"])
        self.assertEqual(drops_after, 0)
        self.assertLess(depth, self.LIMIT - 2000)  # bounded: never at the tail
        self.assertLess(busy / 100e6, 1.02)
        # The QPs kept the bottleneck mostly busy while they sent. With the
        # notification point's CNPs at most every 7 ms (the interval set 1
        # needs to converge) the paper's QPs back off further than with the
        # 20 ms the paper's 50 us slowed to this link gives: 88.8 Mbit/s over
        # the last fifth on 2026-12-04 (11 % under; within 2 % at 20 ms).
        self.assertLess(1 - busy / 100e6, 0.15 + away_share + lab_share)
        # Every QP got a share: none starved (deviation 1: a QP at 0), none at its maximum (4 x the fair share:
        # deviation 3). The paper's DCQCN is fair only on average over long windows: its final deviation here
        # was 0.27, 0.40 and 0.61 in three runs (the fifth the judge above compares with the stage's log).
        self.assertLess(run["final_deviation"], 0.9)
        self.assertIsInstance(p["converged"], bool)
        self.assertEqual(p["convergence_ns"] is None, not p["converged"])

    def test_without_dcqcn_the_stage_tail_drops_and_the_senders_report_the_loss(self):
        logs = {name: (run, rows) for name, run, rows in self.logs()}
        (run, rows), (open_run, open_rows) = logs[self.PAPER], logs["none"]
        start = int(open_rows[0]["in_ns"])
        last_s = [r for r in open_rows if int(r["in_ns"]) >= start + 11_000_000_000]
        drops = sum(1 for r in open_rows if r["action"] == "drop")
        self.say("no reaction point: %d of %d frames tail-dropped (%d in the last second), lost %d; with DCQCN %d "
                 "lost of %d", drops, len(open_rows), sum(1 for r in last_s if r["action"] == "drop"),
                 open_run["lost_packets"], run["lost_packets"], run["tx_packets"])
        # 200 then 400 Mbit/s into 100: more than half of all frames, to the end.
        self.assertGreater(drops, len(open_rows) // 2)
        self.assertGreater(sum(1 for r in last_s if r["action"] == "drop"), len(last_s) // 2)
        self.assertEqual(open_run["lost_packets"], sum(1 for r in open_rows if r["action"].startswith("drop")))
        # No reaction point: each QP at its set 50 Mbit/s, four times its share of what the bottleneck delivered.
        self.assertGreater(open_run["final_deviation"], 2)
        self.assertFalse(self.runs()["none"][0]["converged"])
        self.assertLess(run["lost_packets"] * 100, open_run["lost_packets"])  # the contrast


@unittest.skipUnless(os.geteuid() == 0, "needs root for network namespaces")
class CmSetupTest(LabRun):
    """`frame.roce.connect: cm`: 1,000 RC QPs set up by CM MADs across the
    fabric (REQ from a, REP from b's responder, RTU from a) before their data
    flows. tcpdump on leaf0's end towards b sees every MAD both ways; tshark
    decodes them as InfiniBand CM, zlib checks their ICRC."""

    PLAN_TEXT = """
duration: 2 s
ports:
  - {name: a, device: "net_af_packet0,iface=fga"}
  - {name: b, device: "net_af_packet1,iface=fgb", respond: true}
streams:
  - {name: qps, port: a, rx_port: b, rate: 10 kpps, flows: 1000,
     frame: {dst_ip: 198.19.0.1, roce: {op: WRITE, message: 1024, pmtu: 1024, dest_qp: 0x1000, connect: cm}}}
""" + labtest.TWO_HOSTS_LAB
    CAPTURES = (("leaf0", "b", 400),)  # a MAD frame is 322 B

    def test_every_qp_is_set_up_by_req_rep_rtu_that_tshark_decodes_and_then_carries_data(self):
        sys.path.insert(0, os.path.join(labtest.ROOT, "test", "cli"))
        s = self.streams["qps"]
        q = s["qp_setup"]
        cap = self.truth["captures"]["leaf0-b"]
        self.assertEqual(cap["kernel_dropped"], 0)
        rows = labtest.tshark_fields(cap["pcap"], "infiniband.mad.mgmtclass == 0x07", [
            "infiniband.mad.attributeid", "infiniband.cm.req", "infiniband.cm.req.localqpn",
            "infiniband.cm.req.startpsn", "infiniband.cm.rep.remotecommid", "infiniband.cm.rep.localqpn",
            "infiniband.cm.rtu.localcommid", "ip.src", "ip.dst"])
        req = [x for x in rows if int(x[0], 16) == 0x10]
        rep = [x for x in rows if int(x[0], 16) == 0x13]
        rtu = [x for x in rows if int(x[0], 16) == 0x14]
        self.say("tshark: %d CM MADs: %d REQ, %d REP, %d RTU; fabricgen: %d QPs set up in %.3f ms (%.0f QPs/s), "
                 "p50 %.1f us, p99 %.1f us, max %.1f us, %d MADs sent again", len(rows), len(req), len(rep),
                 len(rtu), q["count"], q["elapsed_ns"] / 1e6, q["setup_rate_per_s"], q["p50_ns"] / 1e3,
                 q["p99_ns"] / 1e3, q["max_ns"] / 1e3, q["mads_resent"])
        self.assertEqual(q["count"], 1000)
        self.assertTrue(0 < q["p50_ns"] <= q["p99_ns"] <= q["max_ns"])
        # Every QP once each way (more only where fabricgen says it sent a MAD again).
        self.assertEqual(len(req) + len(rep) + len(rtu), 3000 + q["mads_resent"])
        comm = sorted(set(int(x[1], 16) for x in req))  # communication ids: the exchange's base + 1 ..
        self.assertEqual(comm, list(range(comm[0], comm[0] + 1000)))
        self.assertEqual(sorted(set(int(x[2], 16) for x in req)), [0x1000 + i for i in range(1000)])  # the QPs
        self.assertEqual(sorted(set(int(x[5], 16) for x in rep)), [0x1000 + i for i in range(1000)])  # responder QPs
        self.assertEqual(sorted(set(int(x[4], 16) for x in rep)), comm)
        self.assertEqual(sorted(set(int(x[6], 16) for x in rtu)), comm)
        self.assertTrue(all((x[7], x[8]) == ("198.18.0.1", "198.19.0.1") for x in req + rtu))
        self.assertTrue(all((x[7], x[8]) == ("198.19.0.1", "198.18.0.1") for x in rep))
        # The ICRC of every MAD, computed by zlib and scapy (independent of fabricgen).
        from craft_decode_test import zlib_icrc
        mads = [f for f in self.lab.pcap_frames(cap["pcap"]) if len(f) > 60 and f[12:14] == b"\x08\x00"
                and f[23] == 17 and struct.unpack_from("!H", f, 36)[0] == 4791 and f[42] == 0x64]
        self.assertEqual(len(mads), len(rows))
        for f in mads:
            computed, stored = zlib_icrc(f)
            self.assertEqual(computed, stored)
        # Then each QP carries its data, all of it.
        self.assertEqual(len(s["per_flow"]), 1000)
        self.assertTrue(all(f["rx_packets"] > 0 for f in s["per_flow"]))
        self.assertEqual(s["lost_packets"], 0)


def read_plan(duration, dest_qp):
    """4 RC QPs of 4 KiB READs (4 responses each at PMTU 1024) from a to b, b their responder, at 20 Mbit/s of data."""
    return """
duration: %s
ports:
  - {name: a, device: "net_af_packet0,iface=fga"}
  - {name: b, device: "net_af_packet1,iface=fgb", respond: true}
streams:
  - {name: rd, port: a, rx_port: b, rate: 20 Mbps, flows: 4,
     frame: {dst_ip: 198.19.0.1, roce: {op: READ_REQUEST, message: 4 KiB, pmtu: 1024, dest_qp: %#x}}}
""" % (duration, dest_qp) + labtest.TWO_HOSTS_LAB


@unittest.skipUnless(os.geteuid() == 0, "needs root for network namespaces")
class ReadResponsesTest(LabRun):
    """RDMA READ across the fabric: b is the RC responder; each of a's READ
    requests (4 KiB at PMTU 1024) is executed and its 4 READ_RESPONSE packets
    (FIRST, MIDDLE, MIDDLE, LAST) come back to a. tcpdump on leaf0's end
    towards a sees both; tshark decodes them as InfiniBand, zlib and scapy
    check every ICRC."""

    PLAN_TEXT = read_plan("1 s", 0x500)
    CAPTURES = (("leaf0", "a", 1600),)

    def test_every_request_is_answered_by_its_responses_which_tshark_decodes_with_valid_icrc(self):
        sys.path.insert(0, os.path.join(labtest.ROOT, "test", "cli"))
        from craft_decode_test import scapy_icrc_matches, zlib_icrc
        q, d = self.streams["rd"], self.streams["rd.responses"]
        cap = self.truth["captures"]["leaf0-a"]
        self.assertEqual(cap["kernel_dropped"], 0)
        rows = labtest.tshark_fields(cap["pcap"], "infiniband", [
            "infiniband.bth.opcode", "infiniband.bth.destqp", "infiniband.bth.psn", "infiniband.aeth.msn",
            "infiniband.reth.dmalen", "ip.src", "ip.dst"])
        reqs = [x for x in rows if int(x[0]) == 12]
        resp = [x for x in rows if int(x[0]) in (13, 14, 15, 16)]
        self.say("tshark: %d READ requests, %d READ responses (FIRST %d, MIDDLE %d, LAST %d); fabricgen: %d "
                 "requests sent, %d executed, %d responses sent, %d received, lost %d", len(reqs), len(resp),
                 sum(int(x[0]) == 13 for x in resp), sum(int(x[0]) == 14 for x in resp),
                 sum(int(x[0]) == 15 for x in resp), q["tx_packets"], q["read"]["requests_executed"],
                 d["tx_packets"], d["rx_packets"], d["lost_packets"])
        self.assertEqual(len(reqs), q["tx_packets"])
        self.assertEqual(q["read"]["requests_executed"], q["tx_packets"])
        self.assertEqual(len(resp), d["tx_packets"])
        self.assertEqual(d["tx_packets"], 4 * q["tx_packets"])
        self.assertEqual(d["rx_packets"], d["tx_packets"])
        self.assertEqual(d["lost_packets"], 0)
        self.assertTrue(all((x[5], x[6]) == ("198.18.0.1", "198.19.0.1") and int(x[4]) == 4096 for x in reqs))
        self.assertTrue(all((x[5], x[6]) == ("198.19.0.1", "198.18.0.1") for x in resp))
        # Per QP: requests step the PSN by 4; request PSN p is answered by
        # FIRST p, MIDDLE p+1, MIDDLE p+2, LAST p+3, the AETH (MSN) on FIRST and LAST.
        for qp in range(0x500, 0x504):
            rq = [int(x[2]) for x in reqs if int(x[1], 16) == qp]
            rs = [x for x in resp if int(x[1], 16) == qp]
            self.assertEqual(rq, list(range(0, 4 * len(rq), 4)), hex(qp))
            self.assertEqual([int(x[2]) for x in rs], list(range(4 * len(rq))), hex(qp))
            self.assertEqual([int(x[0]) for x in rs], [13, 14, 14, 15] * len(rq), hex(qp))
            self.assertTrue(all((x[3] != "") == (int(x[0]) in (13, 15)) for x in rs), hex(qp))
        # Every ICRC, by zlib and by scapy (independent of fabricgen).
        frames = [f for f in self.lab.pcap_frames(cap["pcap"]) if len(f) > 60 and f[12:14] == b"\x08\x00"
                  and f[23] == 17 and struct.unpack_from("!H", f, 36)[0] == 4791]
        self.assertEqual(len(frames), len(rows))
        for f in frames:
            computed, stored = zlib_icrc(f)
            self.assertEqual(computed, stored)
            self.assertTrue(scapy_icrc_matches(f))


@unittest.skipUnless(os.geteuid() == 0, "needs root for network namespaces")
class ReadRequestLossTest(LabRun):
    """READ requests lost on the way: nftables on leaf0's link to b drops
    every request whose PSN & 0xff == 8 (requests step the PSN by 4: one in
    64 of each QP's). Each drop is one request the responder never executes:
    the requests' stream loses exactly the rule's count, the responder counts
    each as skipped over, and the 4 responses of every executed request are
    sent and arrive, numbered without a gap (none of the responses is lost)."""

    PLAN_TEXT = read_plan("2 s", 0x600) + """  impairments:
    - {link: leaf0-b, drop_psn: {mask: 0xff, value: 8}}
"""

    def test_each_dropped_request_is_lost_skipped_and_unanswered(self):
        q, d = self.streams["rd"], self.streams["rd.responses"]
        dropped = self.imps[0]["counter"]["packets"]
        self.say("nft dropped %d READ requests; fabricgen: %d sent, lost %d, executed %d, skipped over %d; "
                 "responses %d asked, %d sent, %d received, lost %d, sequence gaps %d", dropped, q["tx_packets"],
                 q["lost_packets"], q["read"]["requests_executed"], q["read"]["requests_skipped"],
                 d["read"]["asked_packets"], d["tx_packets"], d["rx_packets"], d["lost_packets"],
                 d["sequence_gap_packets"])
        self.assertGreater(dropped, 10)
        self.assertEqual(q["lost_packets"], dropped)
        self.assertEqual(q["read"]["requests_executed"], q["tx_packets"] - dropped)
        # Each QP's requests after a drop show it skipped (one of 64: never a QP's last, in 2 s).
        self.assertEqual(q["read"]["requests_skipped"], dropped)
        self.assertEqual(q["read"]["requests_late"], 0)
        self.assertEqual(d["read"]["asked_packets"], 4 * q["read"]["requests_executed"])
        self.assertEqual(d["tx_packets"], d["read"]["asked_packets"])
        self.assertEqual(d["rx_packets"], d["tx_packets"])
        self.assertEqual(d["lost_packets"], 0)
        self.assertEqual(d["sequence_gap_packets"], 0)  # the responses are numbered as sent
        # The host may hold the responder's lcore up (named as pacing_stall); the counts above hold regardless.
        self.assertEqual([l for l in d["tester_limits"] if l["kind"] not in ("rx_stall", "pacing_stall")], [])


if __name__ == "__main__":
    only = labtest.setup(sys.argv)
    unittest.main(argv=sys.argv[:1] + only, verbosity=2)
