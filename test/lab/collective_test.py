#!/usr/bin/python3
"""Lab suite: collectives (issue 28). Ranks on two tester ports behind one
leaf whose links to both ports are shaped by tbf at RATE: every iteration of
a collective is bounded by the busiest shaped link, so it takes that link's
bytes of one iteration (the kernel's qdisc counters over the run, over the
iterations run) over RATE. The leaf resolves the ranks by ARP, or by ND for
IPv6 ranks (the tester answers for each rank's address with the rank's MAC)
and the ranks send to the ports' gateways. Needs root.

usage: collective_test.py FABRICGEN SOURCE_ROOT [FABRICGEN_IMPAIR]
"""
import os
import statistics
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import labtest  # noqa: E402
from labtest import LabRun  # noqa: E402

RATE = 200_000_000  # bit/s, each shaped link
SIZE = 1 << 20
WARMUP, ITERATIONS = 1, 6
# nccl-tests' bus factors.
FACTOR = {"allreduce": lambda n: 2.0 * (n - 1) / n, "allgather": lambda n: (n - 1) / n,
          "reducescatter": lambda n: (n - 1) / n, "alltoall": lambda n: (n - 1) / n}


# Each port's ranks' first address, its gateway (the leaf's address in the
# port's prefix) and that prefix: IPv4, or IPv6 (the leaf resolves the ranks
# by neighbour discovery then, and the ranks' port its gateway).
ADDRESSES = {
    4: {"a": ("198.18.0.1", "198.18.0.254", "198.18.0.0/24"), "b": ("198.18.16.1", "198.18.16.254", "198.18.16.0/24")},
    6: {"a": ("2001:db8:a::1", "2001:db8:a::fe", "2001:db8:a::/120"),
        "b": ("2001:db8:b::1", "2001:db8:b::fe", "2001:db8:b::/120")},
}


# Above this much of the lab's CPU standing still within an iteration, its
# link time is not known (test_each_iteration_takes_the_busiest_links_bytes_over_its_rate).
MAX_JUDGED_STALL_NS = 50_000_000


def lab_stalled_ns(truth, it):
    """ns of an iteration (a collective's, or a job's: jct_ns) during which a
    CPU of the host stood still (tools/fglab/stalls.py): the lab's links with
    it, for up to that long."""
    import fglab  # on the path once labtest.setup ran
    length = it["duration_ns"] if "duration_ns" in it else it["jct_ns"]
    return fglab.stalled_within(truth["cpu_stalls"], it["start_unix_ns"], it["start_unix_ns"] + length)


def mean_range(truth, iterations):
    """A job's mean JCT as it may have been without the tester's hold-ups and
    the host's stops of the lab's CPU in its iterations (each can only have
    lengthened one, by up to its time): (lowest, as measured)."""
    hi = [it["jct_ns"] for it in iterations]
    lo = [max(0, it["jct_ns"] - it["tester_holdup_ns"] - lab_stalled_ns(truth, it)) for it in iterations]
    return sum(lo) / len(lo), sum(hi) / len(hi)


def lab_plan(n, tests, impairments="", family=4, ranks_more=""):
    # round_robin: ranks alternate between a and b, so a ring's neighbours sit
    # on different ports and each shaped link carries half the ring's edges.
    # tbf: a 32 KB bucket (1 % of an iteration's bytes on a link) and a queue
    # that holds what the ranks release at once (no drop: the link never waits
    # for a go-back). Its queue holds up to 640 ms of data, so the QPs' timeout
    # is 1 s: a QP whose first packets wait behind the others' longer than
    # the default 64 ms would go back for data that was never lost.
    a, b = ADDRESSES[family]["a"], ADDRESSES[family]["b"]
    return """
version: 1
name: collectives behind a shaped leaf
ports:
  - {{name: a, device: "net_af_packet0,iface=fga", gateway: "{a[1]}"}}
  - {{name: b, device: "net_af_packet1,iface=fgb", gateway: "{b[1]}"}}
ranks: {{count: {n}, placement: round_robin, first_address: {{a: "{a[0]}", b: "{b[0]}"}}, pmtu: 1024,
         retransmit: {{timeout: 1 s}}{more}}}
tests:
{tests}
lab:
  spines: 1
  leaves: 1
  resolve: true
  hosts:
    - {{port: a, leaf: 0, prefixes: ["{a[2]}"]}}
    - {{port: b, leaf: 0, prefixes: ["{b[2]}"]}}
  impairments:
    - {{link: leaf0-a, shape: {{qdisc: tbf, rate: {rate} bps, burst: 32000 B, limit: 16000000 B}}}}
    - {{link: leaf0-b, shape: {{qdisc: tbf, rate: {rate} bps, burst: 32000 B, limit: 16000000 B}}}}
""".format(n=n, tests=tests, rate=RATE, a=a, b=b, more=ranks_more) + impairments


def plan(op, algorithm, n, iterations=ITERATIONS, warmup=WARMUP, impairments="", family=4, ranks_more="", retries=2):
    return lab_plan(n, """  - collective: {{name: c, op: {op}, algorithm: {algorithm}, sizes: [{size}], iterations: {iterations},
                  warmup_iterations: {warmup}, iteration_timeout: 20 s, tester_limit_retries: {retries}}}""".format(
        op=op, algorithm=algorithm, size=SIZE, iterations=iterations, warmup=warmup, retries=retries), impairments,
        family, ranks_more)


@unittest.skipUnless(os.geteuid() == 0, "needs root for network namespaces")
class BusBw(LabRun):
    OP, ALGORITHM, N = "allreduce", "ring", 4

    def point(self):
        test = self.tests["c"]
        self.assertTrue(test["complete"], test.get("stopped_because"))
        self.assertEqual(len(test["points"]), 1)
        return test["points"][0]

    def tbf(self, i):
        return {q["kind"]: q for q in self.imps[i]["qdisc"]}["tbf"]

    def lab_stalled_ns(self, it):
        return lab_stalled_ns(self.truth, it)

    def test_each_iteration_takes_the_busiest_links_bytes_over_its_rate(self):
        p = self.point()
        links = [self.tbf(0), self.tbf(1)]
        for q in links:
            self.assertEqual(q["drops"], 0, "the shaper dropped: the link waited for go-back-N")
        # The links carried every attempt of the trial (tester_limit_retries):
        # the kept one's share of them is its share of the frames sent.
        trials = self.tests["c"]["trials"]
        kept = trials[-1]["tx_frames"] / sum(tr["tx_frames"] for tr in trials)
        busiest = max(q["bytes"] for q in links) * kept / (WARMUP + ITERATIONS)
        predicted_ns = busiest * 8 / RATE * 1e9
        self.say("%s %s N=%d: busiest link %.0f B an iteration -> %.2f ms at %.0f Mbit/s; iterations %s ms; "
                 "the tester held up within them %s ms; the host's CPUs stood still within them %s ms",
                 self.OP, self.ALGORITHM, self.N, busiest, predicted_ns / 1e6, RATE / 1e6,
                 ", ".join("%.2f" % (it["duration_ns"] / 1e6) for it in p["iterations"]),
                 ", ".join("%.2f%s" % (it["tester_holdup_ns"] / 1e6, "*" if it["tester_held"] else "")
                           for it in p["iterations"]),
                 ", ".join("%.2f" % (self.lab_stalled_ns(it) / 1e6) for it in p["iterations"]))
        self.assertEqual(p["wrong"], 0)
        self.assertEqual(len(p["iterations"]), ITERATIONS)
        judged = [it for it in p["iterations"] if not it["tester_held"]]
        # An iteration the tester was held up within for more than 1 % of
        # it (here mostly a kernel-backed port's send running the lab's veth
        # forwarding on the worker's CPU for ~1 ms) is flagged and left out
        # of the point's figures; its time is still the link's within the
        # hold-up it names, so the truth judges every iteration. Likewise an
        # iteration during which the host stopped a CPU the lab's kernel
        # forwards and shapes on (a vCPU taken away for ~100 ms: nothing ran
        # on it, not even its tick) is the link's time within that stall.
        self.assertEqual(p["iterations_in_figures"], len(judged) if judged else ITERATIONS)
        # A stop of the lab's CPU as long as the host's scheduler period
        # (~100 ms) leaves the link's own time unknown within it: the watch
        # sees the CPU stand still, not what the shaper's timers and queues
        # did after it (CI of c99a644: 109 ms seen, the iteration 197 ms
        # long). Such an iteration's truth is incomplete and it is not judged;
        # most must be.
        known = [it for it in p["iterations"] if self.lab_stalled_ns(it) <= MAX_JUDGED_STALL_NS]
        self.assertGreaterEqual(len(known), ITERATIONS // 2, "the host stopped the lab in most iterations")
        for it in p["iterations"]:
            self.assertFalse(it["failed"])
        for it in known:
            self.assertLessEqual(abs(it["duration_ns"] - predicted_ns),
                                 0.05 * predicted_ns + it["tester_holdup_ns"] + self.lab_stalled_ns(it),
                                 (it, predicted_ns, self.lab_stalled_ns(it)))

    def test_busbw_is_8_s_over_t_times_the_bus_factor_of_the_reports_own_times(self):
        p = self.point()
        t = p["time_ns"]["mean"] / 1e9
        self.assertAlmostEqual(p["algbw_bps"] / (8 * SIZE / t), 1, places=9)
        self.assertAlmostEqual(p["busbw_bps"]["mean"] / (8 * SIZE / t * FACTOR[self.OP](self.N)), 1, places=9)
        self.assertEqual(p["retransmitted_bytes"], 0)
        self.assertGreater(p["s_fabric_bytes"], 0)


def busbw_case(name, op, algorithm, n, family=4, ranks_more=""):
    return type(name, (BusBw,), {"OP": op, "ALGORITHM": algorithm, "N": n,
                                 "PLAN_TEXT": plan(op, algorithm, n, family=family, ranks_more=ranks_more)})


RingAllReduce4 = busbw_case("RingAllReduce4", "allreduce", "ring", 4)
RingAllReduce8 = busbw_case("RingAllReduce8", "allreduce", "ring", 8)
AllGather4 = busbw_case("AllGather4", "allgather", "ring", 4)
ReduceScatter4 = busbw_case("ReduceScatter4", "reducescatter", "ring", 4)
AllToAllParallel4 = busbw_case("AllToAllParallel4", "alltoall", "parallel", 4)
AllToAllPairwise4 = busbw_case("AllToAllPairwise4", "alltoall", "pairwise", 4)
HalvingDoubling4 = busbw_case("HalvingDoubling4", "allreduce", "halving_doubling", 4)
# IPv6 ranks: the leaf finds them by neighbour discovery (fabricgen answers
# each rank's solicitations with its MAC), the ranks' ports find their
# gateways the same way; the ICRC covers the IPv6 header the leaf forwarded.
RingAllReduce4Ipv6 = busbw_case("RingAllReduce4Ipv6", "allreduce", "ring", 4, family=6)


class RingAllReduce4Cm(busbw_case("RingAllReduce4CmBase", "allreduce", "ring", 4, ranks_more=", connect: cm")):
    """Every QP set up by CM before the data, through the leaf: its REQs and
    RTUs to the sending port's gateway, the REPs back to the other's, the
    leaf resolving each rank by ARP meanwhile (fabricgen's hosts answer it
    during the exchange too)."""

    def test_every_qp_was_set_up_by_cm_through_the_leaf(self):
        setup = self.tests["c"]["trials"][0]["qp_setup"]
        self.say("CM set-up: %d QPs in %.2f ms, p99 %.2f ms, %d MADs sent again", setup["count"],
                 setup["elapsed_ns"] / 1e6, setup["p99_ns"] / 1e6, setup["mads_resent"])
        self.assertEqual(setup["method"], "cm")
        self.assertEqual(setup["count"], 4)  # ring of 4, Q = 1: one QP from each rank to the next
del BusBw  # the base runs nothing of its own

@unittest.skipUnless(os.geteuid() == 0, "needs root for network namespaces")
class Barriers(LabRun):
    """Ring AllReduce of 4 ranks over the shaped links, and an nftables rule on
    the leaf's link to b dropping the first copy of every 4096th packet (PSN %
    4096 == 256) of rank 0's QP to rank 1: 1,536 packets an iteration, so the
    drops hit iterations 0, 2, 5 and 8 and no other (no warm-up: every
    iteration counted, the trial's resend counts are theirs). Go-back-N
    recovers each; the iterations they hit wait for it, the others do not."""

    WARMUP, ITERATIONS = 0, 10
    # One attempt only: the rule drops each PSN's first copy once, so an
    # attempt run again after a tester-limited one would see no drop at all
    # (a noisy hour: 4 dropped, 0 resent, the kept attempt untouched). The
    # tester's hold-ups are allowed for per iteration instead.
    PLAN_TEXT = plan("allreduce", "ring", 4, iterations=ITERATIONS, warmup=WARMUP, retries=0, impairments=(
        "    - {link: leaf0-b, match: \"ip saddr 198.18.0.1 ip daddr 198.18.16.1\",\n"
        "       drop_psn: {mask: 0xfff, value: 0x100, once: true}}\n"))

    def point(self):
        test = self.tests["c"]
        self.assertTrue(test["complete"], test.get("stopped_because"))
        return test["points"][0]

    def test_only_the_iterations_a_drop_hit_are_stretched(self):
        p = self.point()
        hit = {0, 2, 5, 8}
        times = {it["index"]: it["duration_ns"] for it in p["iterations"]}
        # The steady state: the median of the iterations no drop hit. Each
        # is judged within 1 % of it plus what the tester's hold-ups and the
        # host's stops of the lab's CPU in it may add; a hit one must stretch
        # past the 1 %.
        its = {it["index"]: it for it in p["iterations"]}
        allowance = {i: its[i]["tester_holdup_ns"] + lab_stalled_ns(self.truth, its[i]) for i in its}
        clean = sorted(t for i, t in times.items() if i not in hit)
        median = clean[len(clean) // 2]
        self.say("iterations (ms): %s; hit: %s; resent bytes per iteration: %s",
                 ", ".join("%.2f" % (times[i] / 1e6) for i in sorted(times)), sorted(hit),
                 [it["retransmitted_bytes"] for it in p["iterations"]])
        self.assertEqual(p["wrong"], 0)
        for i, t in times.items():
            if i in hit:
                self.assertGreater(t, 1.01 * median, "iteration %d was hit by a drop" % i)
            else:
                self.assertLessEqual(abs(t - median), 0.01 * median + allowance[i],
                                     "iteration %d: no drop, off the steady state (allowance %.2f ms)"
                                     % (i, allowance[i] / 1e6))
        for it in p["iterations"]:
            self.assertEqual(it["retransmitted_bytes"] > 0, it["index"] in hit, it)

    def test_every_drop_is_resent_and_s_fabric_is_unchanged(self):
        p = self.point()
        drops = self.imps[2]["counter"]["packets"]
        self.say("nft dropped %d; resent %d frames (%d B), the responders discarded %d behind the gaps",
                 drops, p["retransmitted_frames"], p["retransmitted_bytes"], p["discarded_frames"])
        self.assertEqual(drops, 4)  # PSN 256, 4352, 8448, 12544 of 15,360
        # Go-back-N: what went out again is each dropped frame and every frame
        # the responder discarded behind its gap, nothing else.
        self.assertEqual(p["retransmitted_frames"], drops + p["discarded_frames"])
        # 4 QPs x 24 messages of 64 frames of 1,086 B (one with a 16 B RETH): the schedule's bytes.
        self.assertEqual(p["s_fabric_bytes"], 4 * 24 * (64 * 1086 + 16))


@unittest.skipUnless(os.geteuid() == 0, "needs root for network namespaces")
class Jct(LabRun):
    """Ring AllReduce of 4 ranks, 1 MiB, over the shaped links (about 133 ms
    of communication), after C = 20 ms of compute: the JCT is C plus the
    communication time each test measured without compute; with half the
    compute overlapped the communication starts at C / 2, so JCT = C / 2 plus
    it."""

    PLAN_TEXT = lab_plan(4, """  - jct: {{name: sequential, size: {size}, compute: [20 ms], iterations: 4, warmup_iterations: 1,
           tester_limit_retries: 2}}
  - jct: {{name: overlapped, size: {size}, compute: [20 ms], overlap: 50 %, iterations: 4, warmup_iterations: 1,
           tester_limit_retries: 2}}""".format(size=SIZE))

    def check(self, name, lead_ms):
        t = self.tests[name]
        self.assertTrue(t["complete"], t.get("stopped_because"))
        p = t["points"][0]
        # T_comm from the run without compute, as it may have been without
        # the hold-ups and host stops in its iterations (a range). A stop of
        # the whole VM that neither the tester nor the lab's watch saw can
        # stretch one of its few iterations (CI of 2026-12-07: one took about
        # 100 ms more, the mean 165.9 ms against 132.9 for the others and the
        # links' bytes): the range reaches down to their median too.
        comm_lo, comm_hi = mean_range(self.truth, t["comm_iterations"])
        comm_median = statistics.median(it["jct_ns"] for it in t["comm_iterations"])
        comm_lo = min(comm_lo, comm_median)
        predicted = lead_ms * 1e6 + comm_hi
        self.say("%s: communication alone %.2f ms; JCT %.2f ms (p99 %.2f) against %.2f ms predicted; roofline %.2f ms, "
                 "ratio %.3f, overlap %.2f; iterations %s ms, the host's CPUs stood still within them %s ms",
                 name, t["comm_ns"] / 1e6, p["jct_ns"]["mean"] / 1e6, p["jct_ns"]["p99"] / 1e6, predicted / 1e6,
                 p["roofline_ns"] / 1e6, p["jct_ratio"], p["measured_overlap_fraction"],
                 ", ".join("%.2f" % (it["jct_ns"] / 1e6) for it in p["iterations"]),
                 ", ".join("%.2f" % (lab_stalled_ns(self.truth, it) / 1e6) for it in p["iterations"]))
        self.assertEqual(p["wrong"], 0)
        # Each iteration within 5 % of the prediction's range, plus what the
        # tester's and the host's stalls in it may add.
        low = lead_ms * 1e6 + comm_lo
        for it in p["iterations"]:
            self.assertGreaterEqual(it["jct_ns"], 0.95 * low, it)
            self.assertLessEqual(it["jct_ns"],
                                 1.05 * predicted + it["tester_holdup_ns"] + lab_stalled_ns(self.truth, it), it)
        if all(lab_stalled_ns(self.truth, it) == 0 for it in t["comm_iterations"] + p["iterations"]):
            self.assertLessEqual(min(abs(p["jct_ns"]["mean"] / predicted - 1),
                                     abs(p["jct_ns"]["mean"] / (lead_ms * 1e6 + comm_median) - 1)), 0.05)
        return p

    def test_jct_is_compute_plus_the_communication_measured_without_it(self):
        p = self.check("sequential", 20)
        self.assertEqual(p["compute_ns"], 20_000_000)
        self.assertEqual(p["overlap_fraction"], 0)

    def test_half_overlapped_compute_shortens_the_jct_by_half_of_it(self):
        p = self.check("overlapped", 10)
        self.assertEqual(p["overlap_fraction"], 0.5)


@unittest.skipUnless(os.geteuid() == 0, "needs root for network namespaces")
class MultiTenant(LabRun):
    """Two 4-rank ring AllReduce jobs (ranks 0-3 and 4-7, alternating between
    the ports) whose rings share both shaped links: alone, a job puts two of
    its ring's edges on each link; together the links carry four, so each
    job's iterations take twice as long (the links' bytes predict 2.0)."""

    PLAN_TEXT = lab_plan(8, """  - multi_tenant: {{name: m, iterations: 4, warmup_iterations: 1, tester_limit_retries: 2,
                    jobs: [{{name: a, rank_ids: [0, 1, 2, 3], size: {size}}},
                           {{name: b, rank_ids: [4, 5, 6, 7], size: {size}}}]}}""".format(size=SIZE))

    def test_each_jobs_interference_factor_is_the_links_share(self):
        t = self.tests["m"]
        self.assertTrue(t["complete"], t.get("stopped_because"))
        # The links carried each job's iterations twice (alone, then shared),
        # in every attempt of each trial (tester_limit_retries): a job alone
        # took the kept attempt's share of the frames sent.
        busiest = max({q["kind"]: q for q in self.imps[i]["qdisc"]}["tbf"]["bytes"] for i in (0, 1))
        frames = sum(tr["tx_frames"] for tr in t["trials"])
        for j in t["jobs"]:
            alone = [tr for tr in t["trials"] if tr["label"] == "job %s alone" % j["name"]][-1]
            predicted = busiest * alone["tx_frames"] / frames / 5 * 8 / RATE * 1e9
            self.say("job %s: isolated %.2f ms (link predicts %.2f), shared %.2f ms, interference %.3f; the host's "
                     "CPUs stood still within its iterations %s ms alone, %s ms shared",
                     j["name"], j["isolated_jct_ns"] / 1e6, predicted / 1e6, j["shared_jct_ns"] / 1e6,
                     j["interference_factor"],
                     ", ".join("%.2f" % (lab_stalled_ns(self.truth, it) / 1e6) for it in j["isolated_iterations"]),
                     ", ".join("%.2f" % (lab_stalled_ns(self.truth, it) / 1e6) for it in j["shared_iterations"]))
            self.assertEqual(j["wrong"], 0)
            for it in j["isolated_iterations"]:
                self.assertLessEqual(abs(it["jct_ns"] - predicted),
                                     0.05 * predicted + it["tester_holdup_ns"] + lab_stalled_ns(self.truth, it), it)
            # The factor: 2.0 within 10 % for some share of each iteration's
            # hold-ups and host stops (each can only have lengthened it).
            alone_lo, alone_hi = mean_range(self.truth, j["isolated_iterations"])
            shared_lo, shared_hi = mean_range(self.truth, j["shared_iterations"])
            self.assertLessEqual(shared_lo / alone_hi, 2.0 * 1.10, (shared_lo, alone_hi))
            self.assertGreaterEqual(shared_hi / max(alone_lo, 1), 2.0 * 0.90, (shared_hi, alone_lo))
            stalls = [lab_stalled_ns(self.truth, it) for it in j["isolated_iterations"] + j["shared_iterations"]]
            if not any(stalls):
                self.assertLessEqual(abs(j["interference_factor"] / 2.0 - 1), 0.10)


if __name__ == "__main__":
    rest = labtest.setup(sys.argv)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
