#!/usr/bin/python3
"""Lab suite: the example plans of configs/lab/ in their namespace fabrics
(tools/lab.py), each truth injected by the kernel or recorded by our
impairment stage's decision log, recovered by fabricgen's analyzer within the
tolerance written beside each assertion. Needs root. (transport_test.py holds
the RC transport's: go-back-N, DCQCN, CM, READ.)

usage: fabric_test.py FABRICGEN SOURCE_ROOT [FABRICGEN_IMPAIR]
"""
import csv
import collections
import math
import os
import struct
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import labtest  # noqa: E402
from labtest import LabRun, binomial_interval  # noqa: E402


@unittest.skipUnless(os.geteuid() == 0, "needs root for network namespaces")
class NftTruthsTest(LabRun):
    """configs/lab/nft-truths.yaml: one stream per nftables rule on leaf3's
    link to b (and an htb bottleneck on its link to c) in a 2-spine x 4-leaf
    fabric. Every rule's counter is exact truth for its stream's figure."""

    PLAN = "nft-truths.yaml"
    CLEAN_RATE_STREAMS = ("policed", "shaped")

    def counter(self, i):
        return self.imps[i]["counter"]["packets"]

    def test_random_loss_equals_the_rule_counter_and_falls_in_the_binomial_interval(self):
        s, dropped = self.streams["random-loss"], self.counter(0)
        lo, hi = binomial_interval(s["tx_packets"], 0.01)
        self.say("random loss: lost %d, nft dropped %d, 99.9 %% interval of 1 %% of %d: %.0f..%.0f",
                 s["lost_packets"], dropped, s["tx_packets"], lo, hi)
        self.assertEqual(s["lost_packets"], dropped)  # exact
        self.assertTrue(lo <= dropped <= hi, (lo, dropped, hi))

    def test_psn_pattern_loss_is_exact(self):
        # drop_psn mask 0xff value 7: every flow's PSN starts at 0 and flows
        # take turns, so flow i sent n_i frames and lost those with PSN % 256 == 7.
        s = self.streams["psn-pattern"]
        n, flows = s["tx_packets"], s["flows"]
        expected = sum((n // flows + (1 if i < n % flows else 0) + 248) // 256 for i in range(flows))
        self.say("PSN pattern: lost %d in %d loss events; nft dropped %d; expected %d",
                 s["lost_packets"], s["loss_events"], self.counter(1), expected)
        self.assertEqual(self.counter(1), expected)
        self.assertEqual(s["lost_packets"], expected)
        self.assertEqual(s["loss_events"], expected)  # 256 apart: every loss is an event of its own

    def test_duplicates_equal_the_dup_rule_counter(self):
        s = self.streams["duplicated"]
        self.say("duplicates: %d; nft dup %d", s["duplicate_packets"], self.counter(2))
        self.assertEqual(s["duplicate_packets"], self.counter(2))
        self.assertEqual(s["lost_packets"], 0)
        self.assertEqual(s["rx_packets"], s["tx_packets"] + self.counter(2))
        lo, hi = binomial_interval(s["tx_packets"], 0.02)
        self.assertTrue(lo <= self.counter(2) <= hi)

    def test_ce_marks_equal_the_rule_counters_ipv4_and_ipv6(self):
        for name, i, p in (("ce-marked", 3, 0.10), ("ce-marked-v6", 4, 0.05)):
            s = self.streams[name]
            self.say("%s: %d CE-marked frames received; nft marked %d (%.2f %% of %d)", name, s["ecn_ce_packets"],
                     self.counter(i), 100.0 * s["ecn_ce_packets"] / s["rx_packets"], s["rx_packets"])
            self.assertEqual(s["ecn_ce_packets"], self.counter(i))
            self.assertEqual(s["lost_packets"], 0)
            lo, hi = binomial_interval(s["tx_packets"], p)
            self.assertTrue(lo <= s["ecn_ce_packets"] <= hi, (name, lo, s["ecn_ce_packets"], hi))

    def held_up_low(self, s, truth, seconds, share):
        """The lowest rate within 2 % of `truth` once the stream's skipped TX slots are allowed for: a hold-up of
        d s passes the shaper no more than its rate x d less its bucket, which is at most `share` (shaper rate /
        offered rate) of the slots TX skipped over it (run again while they were over 0.5 % of the slots)."""
        self.require_a_clean_run()
        return truth * 0.98 - share * self.skipped(s) / seconds

    def test_policer_rate_within_2_percent_and_drops_equal_its_counter(self):
        # Offered 6,000 frames/s, the policer passes its rate's worth plus its
        # bucket of 100 (full at the start).
        s = self.streams["policed"]
        seconds = s["duration_ns"] / 1e9
        truth = (4000 * seconds + 100) / seconds
        rate = s["rx_packets"] / seconds
        low = self.held_up_low(s, truth, seconds, 4000 / 6000)
        self.say("policer 4,000 frames/s, burst 100, over %.3f s = %.1f frames/s: received %.1f frames/s (%+.2f %%; "
                 "down to %.1f allowed: %d TX slots skipped); lost %d, nft dropped %d", seconds, truth, rate,
                 (rate / truth - 1) * 100, low, self.skipped(s), s["lost_packets"], self.counter(5))
        self.assertEqual(s["lost_packets"], self.counter(5))
        self.assertGreater(rate, low)
        self.assertLess(rate, truth * 1.02)

    def test_htb_bottleneck_rate_within_2_percent_and_drops_equal_the_qdisc(self):
        s = self.streams["shaped"]
        qdisc = {q["kind"]: q for q in self.imps[6]["qdisc"]}
        # htb counts frames without FCS (1514 B), at 80 Mbit/s. Offered
        # 97 Mbit/s, it passes its rate's worth in the run, plus its bucket
        # (full at the start; 250 kB, so a hold-up of the lab's CPU of up to
        # 25 ms is made up afterwards) and its queue (drained after the run).
        seconds = s["duration_ns"] / 1e9
        burst, limit = 250000, 100000
        truth = (80e6 / 8 * seconds + burst + limit) / (1514 * seconds)
        rate = s["rx_packets"] / seconds
        low = self.held_up_low(s, truth, seconds, 80e6 / (8000 * 1514 * 8))
        self.say("htb 80 Mbit/s, %d B bucket, %d B queue over %.3f s = %.1f frames/s of 1518 B: received %.1f "
                 "frames/s (%+.2f %%; down to %.1f allowed: %d TX slots skipped); lost %d, bfifo dropped %d", burst,
                 limit, seconds, truth, rate, (rate / truth - 1) * 100, low, self.skipped(s), s["lost_packets"],
                 qdisc["bfifo"]["drops"])
        self.assertGreater(rate, low)
        self.assertLess(rate, truth * 1.02)
        self.assertEqual(s["lost_packets"], qdisc["bfifo"]["drops"])

    def test_the_tester_kept_up(self):
        # Unloaded, every figure above is exact and the tester names no limit
        # that touches a count. A hold-up can still be listed on this 2-vCPU
        # VM, whose host now and then takes a vCPU for over a millisecond
        # (steal time): an RX stall (latency only) or a TX one, which is true,
        # and said.
        limits = [(s["name"], l) for s in self.report["streams"] for l in s["tester_limits"]]
        self.say("tester limits unloaded: %s", limits or "none")
        # A TX hold-up (pacing_stall: slots skipped, so fewer frames sent)
        # changes no count truth above: each compares a count with the
        # kernel's. The policer's and htb's rates allow for the skipped slots
        # (a hold-up longer than their bucket is capacity they never pass).
        for s in self.report["streams"]:
            self.assertEqual(labtest.limits_not_explained_by_a_holdup(s, self.report["duration_ns"] / 1e9), [],
                             s["name"])
        self.assertEqual(self.report["tester_limited"], bool(limits))
        for p in self.report["ports"]:
            self.assertEqual([l for l in p["tester_limits"] if l["kind"] != "rx_stall"], [], p["name"])
            self.assertIsNotNone(p["kernel_interface"], p["name"])  # af_packet: the kernel's counters were read

    def test_every_frame_of_a_crosses_one_spine_and_ecmp_uses_both(self):
        links = self.truth["links"]
        sent = self.report["ports"][0]["tx_packets"]
        up = [links["leaf0-spine%d" % i]["tx_packets"] for i in range(2)]
        self.say("leaf0 uplinks carried %s frames of the %d port a sent", up, sent)
        self.assertEqual(sum(up), sent)
        self.assertTrue(all(u > 0 for u in up))


@unittest.skipUnless(os.geteuid() == 0, "needs root for network namespaces")
class StageTest(LabRun):
    """configs/lab/stage-delay-reorder.yaml: our impairment stage delays b's
    frames (6 ms +/- 4 ms) and reorders c's; its decision logs are the truth."""

    PLAN = "stage-delay-reorder.yaml"
    # What the reordering stage really sent, in order; and what reached port c
    # (fabricgen's interface), in the order it arrived there.
    CAPTURES = (("stage1", "out"), ("tester", "fgc"))
    # The latency tests judge the delayed stream's P50 and P99 against the
    # stage's log: frames that waited through a hold-up of the tester's RX
    # lcore (rx_stall) are left out of the latency figures by the product
    # (latency_excluded_packets); a run with stalls in over 2 % of the frames
    # is made again all the same (LabRun.CLEAN_LATENCY_STREAMS: the host held
    # the lab's own path up too).
    CLEAN_LATENCY_STREAMS = ("delayed", "baseline")
    # A stop of the host's CPU under the lab holds the frames the kernel
    # carries from the stage to port b for its length: the delayed stream's
    # P99 moves by up to it (a run with one of 19 ms: P99 - P50 23.0 ms
    # against the log's 3.8). Up to 5 ms the jitter's bound allows for the
    # run's longest; a run with a longer one is made again.
    MAX_LAB_STOP_NS = 5_000_000

    def log(self, link):
        path = next(i["log"] for i in self.imps if i["link"] == link)
        with open(path) as f:
            return list(csv.DictReader(f))

    @staticmethod
    def pct(values, q):
        v = sorted(values)
        return v[min(len(v) - 1, int(math.ceil(q * len(v))) - 1)]

    def test_fixed_delay_within_5_percent(self):
        self.require_a_clean_run()
        held = [int(r["held_ns"]) for r in self.log("leaf0-b")]
        d = self.streams["delayed"]
        s, base = d["latency"], self.streams["baseline"]["latency"]
        self.assertEqual(len(held), d["tx_packets"])
        truth = self.pct(held, 0.5) + base["p50_ns"]
        stalls = [(l["count"], l["longest_ns"]) for l in d["tester_limits"] if l["kind"] == "rx_stall"]
        self.say("delay: stage log P50 %.0f ns + baseline path P50 %.0f ns = %.0f ns; fabricgen P50 %.0f ns (%+.2f %%) "
                 "over %d of %d frames (RX stalls, longest: %s; their waiting frames left out)", self.pct(held, 0.5),
                 base["p50_ns"], truth, s["p50_ns"], (s["p50_ns"] / truth - 1) * 100, s["samples"],
                 d["rx_packets"], stalls or "none")
        self.assertEqual(s["samples"] + d["latency_excluded_packets"], d["rx_packets"])
        self.assertGreater(s["p50_ns"], truth * 0.95)
        self.assertLess(s["p50_ns"], truth * 1.05)

    def test_jitter_within_5_percent(self):
        self.require_a_clean_run()
        # The spread of the delay, P99 - P50, from the log and from fabricgen.
        # The log holds the stage's own hold times (out - in, so its own
        # scheduling is in them); the rest of the path (fabricgen's TX and RX,
        # the router, two more veths) adds its own spread on a shared host,
        # which the unimpaired baseline stream measures in the same run: the
        # delayed stream's spread is the stage's within 5 %, plus at most the
        # baseline path's.
        held = [int(r["held_ns"]) for r in self.log("leaf0-b")]
        s, base = self.streams["delayed"]["latency"], self.streams["baseline"]["latency"]
        truth = self.pct(held, 0.99) - self.pct(held, 0.5)
        path = base["p99_ns"] - base["p50_ns"]
        got = s["p99_ns"] - s["p50_ns"]
        stop = self.longest_lab_stop_ns()
        self.say("jitter: stage log P99 - P50 %.0f ns; fabricgen %.0f ns (%+.2f %%); baseline path P99 - P50 %.0f ns; "
                 "the host's longest stop of the lab's CPU %.0f ns", truth, got, (got / truth - 1) * 100, path, stop)
        self.assertGreater(truth, 3.5e6)  # the +/-4 ms draw is there (P99 - P50 of it: 3.92 ms)
        self.assertGreater(got, truth * 0.95)
        self.assertLess(got, truth * 1.05 + path + stop)

    def test_reordering_count_and_extent_are_exact(self):
        rows = self.log("leaf0-c")
        s = self.streams["reordered"]
        # One flow whose sequence is its arrival order at the stage; in the
        # order frames left, a frame is reordered when a later one left first,
        # and its extent is how far below the highest sequence seen it is.
        def reordering(order):
            highest, reordered, extent = -1, 0, 0
            for i in order:
                if i < highest:
                    reordered += 1
                    extent = max(extent, highest - i)
                highest = max(highest, i)
            return reordered, extent

        def psns(capture):
            cap = self.truth["captures"][capture]
            self.assertEqual(cap["kernel_dropped"], 0, capture)
            return [struct.unpack_from("!I", f, 14 + 20 + 8 + 8)[0] & 0xFFFFFF
                    for f in self.lab.pcap_frames(cap["pcap"])
                    if len(f) > 58 and f[12:14] == b"\x08\x00" and struct.unpack_from("!H", f, 36)[0] == 4791]

        reordered, extent = reordering(int(r["in_index"]) for r in rows)
        # What reached port c, in its order: the kernel's path from the stage
        # to fabricgen's interface can reorder too (the stage's frames enter
        # the backlog of the CPU it ran on; CI of 2026-12-03: 329 at c of the
        # stage's 334). That is the order fabricgen observes.
        at_c = psns("tester-fgc")
        reordered_c, extent_c = reordering(at_c)
        held = sum(1 for r in rows if r["action"] == "reorder")
        self.say("reordering: stage held back %d frames (extent 3); from its log %d reordered, max extent %d; as "
                 "they reached port c %d, max extent %d; fabricgen %d, max extent %d", held, reordered, extent,
                 reordered_c, extent_c, s["reordered_packets"], s["reorder_extent_max_packets"])
        self.assertGreater(held, 0)
        # tcpdump on the stage's output confirms the log: the PSNs (= arrival
        # index: one flow from PSN 0) leave in the order the log says.
        self.assertEqual(psns("stage1-out"), [int(r["in_index"]) for r in rows])
        self.assertEqual(sorted(at_c), list(range(len(rows))))  # every frame reached c once
        self.assertEqual(s["reordered_packets"], reordered_c)
        self.assertEqual(s["reorder_extent_max_packets"], extent_c)
        self.assertEqual(s["lost_packets"], 0)


    def test_red_queue_ce_marks_and_drops_equal_the_log(self):
        rows = self.log("leaf0-e")
        s = self.streams["red-queue"]
        marked = sum(int(r["ce"]) for r in rows)
        dropped = sum(1 for r in rows if r["action"].startswith("drop"))
        sent = [r for r in rows if not r["action"].startswith("drop")]
        # The queue's rate: bytes it sent over the time it was busy (from the
        # first departure to the last), by the stage's model (due_ns): its
        # real send times (out_ns) carry its own CPU's hold-ups (2.6 % under
        # in an hour when the host took 40-330 ms a second).
        span = (int(sent[-1]["due_ns"]) - int(sent[0]["due_ns"])) / 1e9
        rate = sum(int(r["bytes"]) for r in sent[1:]) * 8 / span
        self.say("RED queue: log marked %d and dropped %d of %d; fabricgen: %d CE, %d lost; queue sent %.3f Mbit/s "
                 "(20 Mbit/s)", marked, dropped, len(rows), s["ecn_ce_packets"], s["lost_packets"], rate / 1e6)
        self.assertEqual(len(rows), s["tx_packets"])
        self.assertEqual(s["ecn_ce_packets"], marked)
        self.assertEqual(s["lost_packets"], dropped)
        self.assertTrue(0 < marked < len(sent))
        self.assertLess(abs(rate / 20e6 - 1), 0.02)


@unittest.skipUnless(os.geteuid() == 0, "needs root for network namespaces")
class LinkDownTest(LabRun):
    """configs/lab/link-down.yaml: leaf1's link to b is down for 300 ms
    (rtnetlink, acknowledged: the interval is known within its uncertainty);
    tcpdump on both tester ports confirms the frames lost."""

    PLAN = "link-down.yaml"
    CAPTURES = (("leaf0", "a"), ("tester", "fgb"))  # what enters the fabric, what reaches b

    def test_loss_duration_and_packets_lost_match_the_down_interval(self):
        s = self.streams["s"]
        t = self.imps[0]
        rate = s["set_rate_pps"]
        gap_ns = 1e9 * s["flows"] / rate  # flows take turns: one flow's inter-packet gap
        lo_ns, hi_ns = t["down_ns_min"], t["down_ns"]
        # A TX hold-up under the pacer's backlog (1 ms or 32 slots, 3.2 ms at
        # 10 kpps) is caught up and recorded nowhere: the next frame up to that late.
        held = (s["tx_stall_max_ns"] + self.longest_holdup_ns(s, "rx_stall")
                + max(1e6, 32e9 / rate))
        # Stops of the lab's CPU (its watch, truth["cpu_stalls"]) that overlap
        # the outage: the kernel's path stood still, so frames the tester sent
        # then reached the downed link later (or earlier ones, held, reached
        # it within): each moves up to its length x the rate across the edges.
        t0 = t["down_unix_ns"]
        stops = [x["ns"] for x in self.truth.get("cpu_stalls", []) if x["to_unix_ns"] > t0 and x["from_unix_ns"] < t0 + hi_ns]
        moved = math.ceil(sum(stops) * rate / 1e9)
        self.say("link down %.3f..%.3f ms; fabricgen: longest loss %.3f ms (allowed up to %.3f ms, %.3f ms of it the "
                 "tester's hold-ups, named or within its pacer's backlog), %d frames lost (%.0f..%.0f at %d frames/s; "
                 "the lab's CPU stopped %s within: up to %d frames moved across the outage's edges)",
                 lo_ns / 1e6, hi_ns / 1e6, s["loss_duration_max_ns"] / 1e6, (hi_ns + gap_ns + 1e6 + held) / 1e6,
                 held / 1e6, s["lost_packets"], lo_ns * rate / 1e9, hi_ns * rate / 1e9, rate,
                 ["%.1f ms" % (x / 1e6) for x in stops], moved)
        # Loss duration within one inter-packet gap + 1 ms of the down interval,
        # plus the longest hold-up of TX (the next frame sent that much late:
        # tx_stall_max_ns, or up to the pacer's backlog unrecorded) and of RX
        # (its software RX time that much late) the run names: the product's
        # bound on how far the tester moved the figure (310.6 ms in an hour
        # when the host took up to 470 ms of each 2 s).
        self.assertGreaterEqual(s["loss_duration_max_ns"], lo_ns - gap_ns - 1e6)
        self.assertLessEqual(s["loss_duration_max_ns"], hi_ns + gap_ns + 1e6 + held, s["tester_limits"])
        # Frames lost: what the port sent while the link was down (+/-1 per flow
        # at the edges), less any slots a hold-up of TX skipped (pacing_stall:
        # 42 short in an hour when the host took 40-330 ms a second) and less
        # those a hold-up under the pacer's backlog moved past the link's
        # return unrecorded (caught up late: 20 short of 3,001 in CI of
        # 2026-12-07, longest loss 302.0 ms of a 300.1-302.2 ms outage). The
        # captures below count the loss exactly either way.
        skipped = sum(l["count"] for l in s["tester_limits"] if l["kind"] == "pacing_stall")
        caught_up = math.ceil(max(1e6, 32e9 / rate) * rate / 1e9)
        self.assertGreaterEqual(s["lost_packets"],
                                math.floor(lo_ns * rate / 1e9) - s["flows"] - skipped - caught_up - moved)
        self.assertLessEqual(s["lost_packets"], math.ceil(hi_ns * rate / 1e9) + s["flows"] + moved)

    def test_captures_at_both_ends_count_the_same_loss(self):
        caps = self.truth["captures"]
        counts = {}
        for iface in ("leaf0-a", "tester-fgb"):
            self.assertEqual(caps[iface]["kernel_dropped"], 0, iface)
            frames = self.lab.pcap_frames(caps[iface]["pcap"])
            # RoCEv2 over IPv4: EtherType 0x0800, UDP destination port 4791.
            counts[iface] = sum(1 for f in frames if len(f) > 38 and f[12:14] == b"\x08\x00"
                                and struct.unpack_from("!H", f, 14 + 4 * (f[14] & 15) + 2)[0] == 4791)
        s = self.streams["s"]
        self.say("tcpdump: %d frames entered leaf0 from a, %d reached b: %d lost; fabricgen: %d",
                 counts["leaf0-a"], counts["tester-fgb"], counts["leaf0-a"] - counts["tester-fgb"], s["lost_packets"])
        self.assertEqual(counts["leaf0-a"], s["tx_packets"])
        self.assertEqual(counts["leaf0-a"] - counts["tester-fgb"], s["lost_packets"])


@unittest.skipUnless(os.geteuid() == 0, "needs root for network namespaces")
class EcmpFailoverTest(LabRun):
    """configs/lab/ecmp-failover.yaml: leaf0's uplink to spine0 is down for 500 ms
    under 16 flows; the kernel moves them to spine1 at once. Truths: the kernel's
    per-link counters (frames leaf1 delivered to b; frames dropped on the downed
    link)."""

    PLAN = "ecmp-failover.yaml"

    def test_frames_lost_are_those_the_fabric_dropped_and_failover_is_immediate(self):
        s = self.streams["s"]
        links = self.truth["links"]
        delivered = links["leaf1-b"]["tx_packets"]
        dropped = sum(l["tx_dropped"] for l in links.values())
        gap_ns = 1e9 * s["flows"] / s["set_rate_pps"]
        self.say("uplink down %.1f ms: sent %d, leaf1 delivered %d, links dropped %d; fabricgen lost %d, longest "
                 "loss %.3f ms (one flow's gap %.3f ms)", self.imps[0]["down_ns"] / 1e6, s["tx_packets"], delivered,
                 dropped, s["lost_packets"], s["loss_duration_max_ns"] / 1e6, gap_ns / 1e6)
        self.assertEqual(s["lost_packets"], s["tx_packets"] - delivered)  # exact
        self.assertEqual(s["lost_packets"], dropped)  # and exactly where the kernel dropped them
        # Redistribution: no flow waited longer than two of its own gaps + 1 ms (the
        # frames in flight on the dead link), against a 500 ms outage of the link.
        self.assertLessEqual(s["loss_duration_max_ns"], 2 * gap_ns + 1e6)
        self.assertTrue(all(links["leaf0-spine%d" % i]["tx_packets"] > 0 for i in range(2)))


@unittest.skipUnless(os.geteuid() == 0, "needs root for network namespaces")
class EcmpSpreadTest(LabRun):
    """configs/lab/ecmp-spread.yaml: 16 QPs (16 UDP source ports) hashed by
    leaf0 over 4 equal-cost uplinks; fabricgen's load_balance test reads the
    links' counters around its run. The truth: the kernel's counters of the
    same links over the whole lab run, which carried nothing else."""

    PLAN = "ecmp-spread.yaml"

    def test_mmr_and_jfi_equal_the_values_from_the_kernel_counters(self):
        t = self.report["tests"][0]
        links = t["parameters"]["links"]
        kernel = [self.truth["links"][l]["tx_bytes"] for l in links]
        n, total = len(kernel), sum(kernel)
        mmr = max(kernel) / (total / n)
        jfi = total * total / (n * sum(x * x for x in kernel))
        self.say("kernel bytes per uplink %s: MMR %.6f, JFI %.6f; fabricgen: %s, MMR %.6f, JFI %.6f", kernel, mmr, jfi,
                 [l["tx_bytes"] for l in t["links"]], t["mmr"], t["jfi"])
        self.assertEqual([l["tx_bytes"] for l in t["links"]], kernel)
        self.assertAlmostEqual(t["mmr"], mmr, places=12)
        self.assertAlmostEqual(t["jfi"], jfi, places=12)
        # Every frame the analyzer received crossed exactly one of the uplinks.
        self.assertEqual(t["link_packets"], t["rx_frames_unique"])
        self.assertEqual(t["link_packets"], t["trials"][0]["tx_frames"])
        self.assertEqual(t["flows"], 16)


@unittest.skipUnless(os.geteuid() == 0, "needs root for network namespaces")
class FabricExampleTest(LabRun):
    """configs/lab/fabric-2x4.yaml: IPv4 and IPv6 RoCEv2 across 2 spines x 4
    leaves with 0.5 % random loss on leaf3's link to b."""

    PLAN = "fabric-2x4.yaml"

    def test_both_families_cross_and_every_loss_is_the_rules(self):
        v4, v6 = self.streams["roce"], self.streams["roce-v6"]
        dropped = self.imps[0]["counter"]["packets"]
        self.say("IPv4 %d/%d, IPv6 %d/%d received; lost %d + %d, nft dropped %d", v4["rx_packets"], v4["tx_packets"],
                 v6["rx_packets"], v6["tx_packets"], v4["lost_packets"], v6["lost_packets"], dropped)
        self.assertGreater(v6["rx_packets"], 0)
        self.assertEqual(v4["lost_packets"] + v6["lost_packets"], dropped)
        self.assertEqual(v4["duplicate_packets"] + v6["duplicate_packets"], 0)


@unittest.skipUnless(os.geteuid() == 0, "needs root for network namespaces")
class DuplicateIpv6Test(LabRun):
    """`duplicate` on IPv6 (`family: 6`: a `dup to ip6 daddr` rule in an ip6
    table) beside one on IPv4: each stream's duplicates equal its rule's counter."""

    PLAN_TEXT = """
duration: 2 s
ports:
  - {name: a, device: "net_af_packet0,iface=fga"}
  - {name: b, device: "net_af_packet1,iface=fgb"}
streams:
  - {name: dup-v4, port: a, rx_port: b, rate: 2 kpps, frame: {dst_ip: 198.19.0.3, roce: {op: SEND, message: 256 B}}}
  - {name: dup-v6, port: a, rx_port: b, rate: 2 kpps,
     frame: {l3: ipv6, src_ip: "2001:db8:a::1", dst_ip: "2001:db8:b::6", roce: {op: SEND, message: 256 B}}}
lab:
  spines: 1
  leaves: 2
  hosts:
    - {port: a, leaf: 0, prefixes: [198.18.0.0/24, "2001:db8:a::/64"]}
    - {port: b, leaf: 1, prefixes: [198.19.0.0/24, "2001:db8:b::/64"]}
  impairments:
    - {link: leaf1-b, match: "ip daddr 198.19.0.3", duplicate: 3 %}
    - {link: leaf1-b, match: "ip6 daddr 2001:db8:b::6", duplicate: 3 %, family: 6}
"""

    def test_duplicates_equal_each_rule_counter(self):
        for i, name in enumerate(("dup-v4", "dup-v6")):
            s, copies = self.streams[name], self.imps[i]["counter"]["packets"]
            self.say("%s: %d sent, %d received, %d duplicates; nft dup %d", name, s["tx_packets"], s["rx_packets"],
                     s["duplicate_packets"], copies)
            self.assertGreater(copies, 0, name)
            self.assertEqual(s["duplicate_packets"], copies, name)
            self.assertEqual(s["lost_packets"], 0, name)
            self.assertEqual(s["rx_packets"], s["tx_packets"] + copies, name)


def routed_lab(leaf_mac, more_hosts):
    """A lab of one spine and two leaves that resolve their hosts by ARP/ND
    as routed switches do, port a behind leaf0 with 198.18.0.0/24, then
    `more_hosts` (lines of `hosts:`)."""
    return """lab:
  spines: 1
  leaves: 2
  gateway_mac: "%s"
  resolve: true
  hosts:
    - {port: a, leaf: 0, prefixes: [198.18.0.0/24]}
""" % leaf_mac + more_hosts.lstrip("\n")


@unittest.skipUnless(os.geteuid() == 0, "needs root for network namespaces")
class NeighborResolutionTest(LabRun):
    """`resolve: true`: the leaves' host-facing links run ARP/ND as a routed
    switch's do. Port a sends IPv4 through its gateway 198.18.0.254 (leaf0),
    port c IPv6 through 2001:db8:c::fe, both resolved before traffic; the
    leaves' MAC is not fabricgen's default destination MAC, so a frame reaches
    b only if its gateway was resolved. leaf1 learns each of the 4 + 4 stream
    destinations on b from b's answers before it forwards to them (its
    neighbour table after the run is the truth)."""

    LEAF_MAC = "02:00:00:00:00:fe"
    PLAN_TEXT = """
duration: 2 s
ports:
  - {name: a, device: "net_af_packet0,iface=fga", gateway: 198.18.0.254}
  - {name: b, device: "net_af_packet1,iface=fgb"}
  - {name: c, device: "net_af_packet2,iface=fgc", gateway: "2001:db8:c::fe"}
streams:
  - {name: s4, port: a, rx_port: b, rate: 1 kpps, flows: 4, vary: [dst_ip],
     frame: {size: 256 B, src_ip: 198.18.0.1, dst_ip: 198.19.0.1}}
  - {name: s6, port: c, rx_port: b, rate: 1 kpps, flows: 4, vary: [dst_ip],
     frame: {size: 256 B, l3: ipv6, src_ip: "2001:db8:c::1", dst_ip: "2001:db8:b::1"}}
""" + routed_lab(LEAF_MAC, """
    - {port: c, leaf: 0, prefixes: ["2001:db8:c::/120"]}
    - {port: b, leaf: 1, prefixes: [198.19.0.0/24, "2001:db8:b::/120"]}
""")

    def test_gateways_are_resolved_and_every_frame_crosses(self):
        out = self.result.stdout
        self.assertRegex(out, r"port a: gateway 198\.18\.0\.254 is %s \(ARP, 1 request, [0-9.]+ ms\)" % self.LEAF_MAC)
        self.assertRegex(out, r"port c: gateway 2001:db8:c::fe is %s \(ND, 1 request, [0-9.]+ ms\)" % self.LEAF_MAC)
        ports = {p["name"]: p for p in self.report["ports"]}
        self.assertEqual(ports["a"]["neighbors"]["gateway_mac"], self.LEAF_MAC)
        self.assertEqual(ports["c"]["neighbors"]["gateway_mac"], self.LEAF_MAC)
        for name in ("s4", "s6"):
            s = self.streams[name]
            self.say("%s: sent %d, received %d, lost %d", name, s["tx_packets"], s["rx_packets"], s["lost_packets"])
            self.assertGreater(s["tx_packets"], 1500, name)
            # The leaf's queue of frames awaiting resolution (unres_qlen_bytes, 212,992 B) holds the
            # few sent while it resolves: nothing is lost.
            self.assertEqual(s["rx_packets"], s["tx_packets"], name)
            self.assertEqual(s["lost_packets"], 0, name)
        # leaf0 learned the senders' addresses from their requests.
        learned = {e["dst"]: e.get("lladdr") for e in self.truth["neighbors"]["leaf0-a"]}
        self.assertEqual(learned.get("198.18.0.1"), "02:00:00:00:00:01", learned)
        learned = {e["dst"]: e.get("lladdr") for e in self.truth["neighbors"]["leaf0-c"]}
        self.assertEqual(learned.get("2001:db8:c::1"), "02:00:00:00:00:01", learned)

    def test_the_leaf_resolves_every_destination_on_b_to_bs_own_mac(self):
        b = {p["name"]: p for p in self.report["ports"]}["b"]
        learned = {e["dst"]: e.get("lladdr") for e in self.truth["neighbors"]["leaf1-b"]}
        self.say("leaf1's neighbours on b: %s", learned)
        want = ["198.19.0.%d" % i for i in range(1, 5)] + ["2001:db8:b::%d" % i for i in range(1, 5)]
        for addr in want:
            self.assertEqual(learned.get(addr), b["mac"], addr)
        n = b["neighbors"]
        self.assertGreaterEqual(n["arp_requests"], 4, n)
        self.assertEqual(n["arp_replies"], n["arp_requests"], n)
        self.assertGreaterEqual(n["nd_solicitations"], 4, n)
        self.assertEqual(n["nd_advertisements"], n["nd_solicitations"], n)
        self.assertEqual(n["unanswered"], 0, n)
        # Counted apart: none of it is a stream's, unknown or invalid.
        self.assertEqual(b["rx_unknown_packets"], 0, b)
        self.assertEqual(b["rx_invalid_packets"], 0, b)
        for s in self.report["streams"]:
            self.assertEqual([l for l in s["tester_limits"] if l["kind"] not in ("rx_stall", "pacing_stall")], [],
                             s["name"])


@unittest.skipUnless(os.geteuid() == 0, "needs root for network namespaces")
class RespondingPortBehindAGatewayTest(LabRun):
    """A responding port behind a routed switch: b answers port a's RC QPs
    (CM REP, ACKs) through its own gateway, leaf1. Every frame b sends goes
    from the destination host's MAC (the stream's dst_mac, the one b answers
    leaf1's ARP with) to leaf1's MAC; until 2026-12-07 b's answers carried
    the data's MACs unswapped (the requester's as source) and b answered ARP
    with a's gateway's MAC. tcpdump on b is the truth."""

    LEAF_MAC = "02:00:00:00:00:fe"
    HOST_MAC = "02:00:00:00:00:02"  # the stream's destination host (proto::Encap's default dst_mac)
    PLAN_TEXT = """
duration: 2 s
ports:
  - {name: a, device: "net_af_packet0,iface=fga", gateway: 198.18.0.254}
  - {name: b, device: "net_af_packet1,iface=fgb", gateway: 198.19.0.254, respond: true}
streams:
  - {name: qps, port: a, rx_port: b, rate: 1 kpps, flows: 4, vary: [dst_ip],
     frame: {src_ip: 198.18.0.1, dst_ip: 198.19.0.1,
             roce: {op: WRITE, message: 1024, pmtu: 1024, connect: cm}}}
""" + routed_lab(LEAF_MAC, """
    - {port: b, leaf: 1, prefixes: [198.19.0.0/24]}
""")
    # leaf1's end of the link to b: what b put on the wire (a capture on the
    # tester's own end misses what its packet socket sends past the qdisc).
    CAPTURES = (("leaf1", "b"),)

    def test_answers_go_from_the_destination_host_to_the_rx_ports_gateway(self):
        out = self.result.stdout
        self.assertRegex(out, r"port b: gateway 198\.19\.0\.254 is %s \(ARP" % self.LEAF_MAC)
        s = self.streams["qps"]
        cap = self.truth["captures"]["leaf1-b"]
        self.assertEqual(cap["kernel_dropped"], 0)
        sent = collections.Counter()  # (src, dst) MACs of the RoCEv2 frames b sent
        for f in self.lab.pcap_frames(cap["pcap"]):
            # IPv4, from 198.19.0.0/24 (b's hosts), UDP to 4791.
            if len(f) > 38 and f[12:14] == b"\x08\x00" and f[14 + 9] == 17 and f[26:29] == bytes([198, 19, 0]) \
                    and struct.unpack_from("!H", f, 14 + 4 * (f[14] & 15) + 2)[0] == 4791:
                sent[(":".join("%02x" % x for x in f[6:12]), ":".join("%02x" % x for x in f[0:6]))] += 1
        self.say("b sent %s; stream: %d sent, %d delivered, %d ACKs received, QPs set up %s", dict(sent),
                 s["tx_packets"], s["delivered_packets"], s["ack_received"], s["qp_setup"]["count"])
        self.assertEqual(list(sent), [(self.HOST_MAC, self.LEAF_MAC)])
        self.assertGreater(sent[(self.HOST_MAC, self.LEAF_MAC)], 4)  # the REPs and the ACKs
        self.assertEqual(s["qp_setup"]["count"], 4)
        self.assertEqual(s["unrecovered_packets"], 0)
        self.assertEqual(s["delivered_packets"], s["unique_packets"])
        self.assertGreater(s["ack_received"], 0)
        # leaf1 learned b's destination hosts from b's ARP answers: the host's MAC, not a gateway's.
        learned = {e["dst"]: e.get("lladdr") for e in self.truth["neighbors"]["leaf1-b"]}
        for i in range(1, 5):
            self.assertEqual(learned.get("198.19.0.%d" % i), self.HOST_MAC, learned)


class LabPlanErrorsTest(unittest.TestCase):
    """A wrong lab section is refused with file:line:column and the field."""

    def show(self, text):
        import subprocess
        import tempfile
        with tempfile.NamedTemporaryFile("w", suffix=".yaml") as f:
            f.write(text)
            f.flush()
            return subprocess.run([sys.executable, os.path.join(labtest.ROOT, "tools", "lab.py"), "show", f.name],
                                  capture_output=True, text=True)

    def test_errors_name_the_line_and_field(self):
        with open(os.path.join(labtest.ROOT, "configs", "lab", "fabric-2x4.yaml")) as f:
            good = f.read()
        self.assertEqual(self.show(good).returncode, 0)
        for old, new, message in (
                ("leaf: 3, prefixes", "leaf: 7, prefixes", ":29:23: lab.hosts[1].leaf: 7 is out of range 0..3"),
                ("leaf3-b, loss", "leaf3-x, loss", ":31:14: lab.impairments[0].link: 'leaf3-x' is not a link"),
                ("loss: 0.5 %}", "loss: 0.5}", ":31:29: lab.impairments[0].loss: expected a percentage with a unit"),
                ("198.19.0.0/24,", "10.0.0.0/24,", ":29:37: lab.hosts[1].prefixes[0]: lab addresses come only from"),
                ("spines: 2", "spines: 2\n  routers: 3", ":26:3: lab: unknown field 'routers'"),
                # duplicate's rule is in an ip (IPv4) table unless `family: 6`: an ip6 match is refused here,
                # not left to a raw nft error when the lab is built.
                ("{link: leaf3-b, loss: 0.5 %}", '{link: leaf3-b, match: "ip6 daddr 2001:db8:b::1", duplicate: 1 %}',
                 ":31:30: lab.impairments[0].match: 'ip6 daddr 2001:db8:b::1' matches IPv6 headers but this "
                 "duplicate is IPv4 (add `family: 6`)"),
                ("{link: leaf3-b, loss: 0.5 %}", '{link: leaf3-b, match: "ip daddr 198.19.0.1", duplicate: 1 %, '
                 'family: 6}', ":31:30: lab.impairments[0].match: 'ip daddr 198.19.0.1' matches IPv4 headers but "
                 "this duplicate is IPv6 (add `family: 4`)")):
            self.assertIn(old, good)
            r = self.show(good.replace(old, new))
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn(message, r.stderr)


@unittest.skipUnless(os.geteuid() == 0, "needs root for network namespaces")
class TruthSourceTest(unittest.TestCase):
    """A truth that loses frames is caught before it judges fabricgen: the
    stage run with a receive buffer too small to keep up (rcvbuf 1 B: the
    kernel's minimum, two or three frames) counts what its packet socket
    dropped in its log's summary; a lab class on it (the DcqcnTest-style check
    that the log has one line per frame sent) runs again and then fails every
    test naming the stage, not fabricgen."""

    class Starved(LabRun):
        PLAN_TEXT = """
duration: 1 s
ports:
  - {name: a, device: "net_af_packet0,iface=fga"}
  - {name: b, device: "net_af_packet1,iface=fgb"}
streams:
  - {name: s, port: a, rx_port: b, rate: 40 kpps, frame: {dst_ip: 198.19.0.1, size: 1500 B}}
""" + labtest.TWO_HOSTS_LAB + """  impairments:
    - {link: leaf0-b, stage: {rcvbuf: 1 B}}
"""
        RUN_ATTEMPTS = 2

        def test_the_log_has_a_line_per_frame_sent(self):
            path = next(i["log"] for i in self.imps if i["link"] == "leaf0-b")
            with open(path) as f:
                rows = list(csv.DictReader(f))
            self.assertEqual(len(rows), self.streams["s"]["tx_packets"])

    def test_a_stage_that_cannot_keep_up_is_named_and_fabricgen_is_not_judged(self):
        c = self.Starved
        c.setUpClass()
        try:
            summary = next(i["log_summary"] for i in c.truth["impairments"] if i["link"] == "leaf0-b")
            with open(next(i["log"] for i in c.truth["impairments"] if i["link"] == "leaf0-b")) as f:
                rows = list(csv.DictReader(f))
            sent = {s["name"]: s for s in c.report["streams"]}["s"]["tx_packets"] if c.report else None
            sys.stderr.write("  starved stage: %d attempts; summary %s; %d log lines of %s frames sent; gaps: %s\n" % (
                c.attempts, summary, len(rows), sent, c.truth_gaps))
            self.assertEqual(c.attempts, 2)  # ran again, then gave up
            self.assertFalse(summary["complete"])
            self.assertGreater(summary["socket_drops"]["in"], 0)
            # Every frame fabricgen sent is in the log or in the stage's own drop counts.
            self.assertEqual(len(rows) + summary["socket_drops"]["in"] + summary["rx_dropped"]["in"], sent)
            self.assertEqual(len(c.truth_gaps), 1, c.truth_gaps)
            self.assertIn("impairment stage on leaf0-b: its log misses %d frames" % (sent - len(rows)),
                          c.truth_gaps[0])
            # The class's test fails, naming the stage and not fabricgen's figures.
            result = unittest.TestResult()
            c("test_the_log_has_a_line_per_frame_sent").run(result)
            self.assertEqual(len(result.failures), 1, result.errors)
            message = result.failures[0][1]
            self.assertIn("truth was incomplete in all 2 runs", message)
            self.assertIn("impairment stage on leaf0-b", message)
            self.assertIn("not fabricgen", message)
        finally:
            c.tearDownClass()


if __name__ == "__main__":
    only = labtest.setup(sys.argv)
    unittest.main(argv=sys.argv[:1] + only, verbosity=2)
