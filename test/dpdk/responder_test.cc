// The closed loop on a ring pair (the requester on port a, port b its
// responder and notification point, a mover in between impairing chosen
// packets): NAKs, go-back-N, the drain's bounds, READs, CM set-up and the
// DCQCN reaction point, each counted exactly against what the path did.
#include <gtest/gtest.h>

#include <cstdio>
#include <rte_eth_ring.h>
#include <rte_mbuf.h>
#include <rte_mbuf_dyn.h>
#include <rte_ring.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "config/plan.h"
#include "dpdk_test_env.h"
#include "hog.h"
#include "engine/engine.h"
#include "port/driver_registry.h"
#include "proto/signature.h"
#include "ring_path.h"
#include "stream/stream.h"

namespace fg::engine {
namespace {

using fg::testing::Impairments;
using fg::testing::Mover;
using fg::testing::RingPath;
using fg::testing::TestEal;

// A host that holds the one worker lcore for over 1 ms (this VM does, now and
// then) makes the pacer skip slots or RX come back late, flagged as it must be;
// the closed-loop counts these tests check do not depend on it. Any other
// tester limit fails the test.
// What a go-back-N trial did, flow by flow: printed when a test of it fails.
std::string GbnTrace(const TrialResult& res, const StreamResult& s) {
  const endpoint::ResponderCounters& c = s.responder;
  std::string out = absl::StrFormat(
      "tx %d rx %d dup %d reordered %d | responder acks %d naks %d dups %d ooo %d delivered %d | "
      "requester resent %d nak_rewinds %d timeouts %d | drain %d ns late %d\n",
      s.tx.packets, s.rx.packets, s.analysis.duplicate, s.analysis.reordered, c.acks_sent, c.naks_sent, c.duplicates,
      c.out_of_sequence, c.delivered_packets, s.retx.retransmitted_packets, s.retx.nak_rewinds, s.retx.timeouts,
      res.drain_ns, res.drain_late_frames);
  for (const FlowReport& f : s.per_flow) {
    absl::StrAppendFormat(&out, "  flow %d (lcore %d): tx %d rx %d dup %d reordered %d nak %d ack %d\n", f.index,
                          f.owner_lcore, f.tx_packets, f.rx.rx_packets, f.rx.duplicate, f.rx.reordered, f.rx.nack,
                          f.rx.ack);
  }
  return out;
}

// The requester's timeouts are exact when the path delays nothing for half
// a timeout: the Mover, the DUT here, shares a vCPU with the host, and a
// stall of its thread holds frames like a slow path would (a timeout then
// is right). Expects `want` timeouts, or when the Mover was held up that
// long, at least `want`, and no more NAK go-backs than `naks` (a timeout
// may have sent the QP back before its NAK came).
void ExpectTimeouts(const RingPath& path, const StreamResult& s, uint64_t timeout_ns, uint64_t want, uint64_t naks) {
  if (path.mover_max_gap_ns() < timeout_ns / 2) {
    EXPECT_EQ(s.retx.timeouts, want);
    EXPECT_EQ(s.retx.nak_rewinds, naks);
  } else {
    std::cout << "the Mover was held up " << path.mover_max_gap_ns() << " ns: timeouts " << s.retx.timeouts
              << " (>= " << want << "), NAK go-backs " << s.retx.nak_rewinds << " (<= " << naks << ")\n";
    EXPECT_GE(s.retx.timeouts, want);
    EXPECT_LE(s.retx.nak_rewinds, naks);
  }
}

// The go-back-N drain tests' plan: 4 RC QPs of 1,000 1 KiB WRITEs each at
// 40 kpps (100 ms of TX), port b responding, the requester's `timeout`.
std::string FourQpWrites(const char* timeout) {
  return absl::StrFormat(R"(
duration: 1 s
ports: [{name: a}, {name: b, respond: true}]
streams: [{name: s, port: a, rx_port: b, rate: 40 kpps, flows: 4, count: 4000,
           frame: {roce: {op: WRITE, message: 1024, pmtu: 1024, retransmit: {timeout: %s}}}}]
)", timeout);
}

void ExpectOnlyHostHoldUps(const StreamResult& s) {
  for (const TesterLimit& l : s.tester_limits) {
    if (l.kind != kPacingStall && l.kind != kTxShortfall && l.kind != kRxStall) {
      ADD_FAILURE() << l.kind << " " << l.count << ": " << l.detail;
    }
  }
}

// Port b answers as every QP's responder (ports[].respond) through the ring
// pair's return path: the mover drops sequence 100 of each of the 4 flows and
// marks 10, 20 and 30 CE. Each flow's responder NAKs PSN 100 once when 101
// arrives and, the requester not going back (retransmit: none), resynchronises on 101; the
// CE marks make one CNP per QP per cnp_interval. Every answer the responder
// sent arrives at the requester's flow (the return path loses nothing).
TEST(Responder, NaksEachGapOnceAndAnswersEveryCeMarkWithACnpOrASuppression) {
  for (const char* interval : {"1 s", "1 ns"}) {
    SCOPED_TRACE(interval);
    RingPath path("resp");
    ASSERT_TRUE(path.ok()) << path.error();
    auto plan = config::ParsePlan("resp.yaml", absl::StrFormat(R"(
duration: 10 s
ports: [{name: a}, {name: b, respond: {cnp_interval: %s}}]
streams: [{name: s, port: a, rx_port: b, rate: 200 kpps, count: 10000, flows: 4,
           frame: {roce: {op: WRITE, message: 1024, pmtu: 1024, retransmit: none}}}]
)", interval));
    ASSERT_TRUE(plan.ok()) << plan.status();
    auto streams = stream::Compile(*plan, {10e9, 10e9});
    ASSERT_TRUE(streams.ok()) << streams.status();
    ASSERT_NE((*streams)[0].answers, nullptr);
    Impairments imp;
    imp.drop = {100};
    imp.ce = {10, 20, 30};
    auto res = path.Run(*streams, imp);
    ASSERT_TRUE(res.ok()) << res.status();
    const StreamResult& s = res->streams[0];
    ASSERT_TRUE(s.answered);
    const endpoint::ResponderCounters& c = s.responder;
    EXPECT_EQ(s.tx.packets, 10000u);
    EXPECT_EQ(s.lost(), 4);
    EXPECT_EQ(c.naks_sent, 4u);
    EXPECT_EQ(c.out_of_sequence, 4u);
    EXPECT_EQ(c.duplicates, 0u);
    EXPECT_EQ(c.ce_seen, 12u);
    EXPECT_EQ(c.cnp_sent, std::string(interval) == "1 s" ? 4u : 12u);
    EXPECT_EQ(c.ce_seen, c.cnp_sent + c.cnp_suppressed);
    EXPECT_EQ(c.cnp_dropped + c.answers_dropped, 0u);
    // 9,996 packets taken, each with AckReq: at most one ACK per QP per RX
    // burst (coalesced), at least one for each burst holding the QP; a burst
    // of 32 holds at most 8 of a QP's 2,499 (the flows take turns).
    EXPECT_GE(c.acks_sent, 4u * 2499 / 8);
    EXPECT_LE(c.acks_sent, 9996u);
    // Both ends agree: every answer reached its flow's owner at the requester.
    EXPECT_EQ(s.analysis.ack, c.acks_sent);
    EXPECT_EQ(s.analysis.nack, c.naks_sent);
    EXPECT_EQ(s.analysis.cnp, c.cnp_sent);
    const PortResult& a = res->ports[0];
    const PortResult& b = res->ports[1];
    EXPECT_TRUE(b.responds);
    EXPECT_FALSE(a.responds);
    EXPECT_EQ(b.tx_answer_packets, c.acks_sent + c.naks_sent + c.cnp_sent);
    EXPECT_EQ(b.tx_packets, b.tx_answer_packets);
    EXPECT_EQ(a.rx_roce_ack, c.acks_sent);
    EXPECT_EQ(a.rx_roce_nak, c.naks_sent);
    EXPECT_EQ(a.rx_cnp, c.cnp_sent);
    EXPECT_EQ(a.rx_feedback_unmatched, 0u);
    ExpectOnlyHostHoldUps(s);
  }
}

// Go-back-N through the ring pair: the mover drops the first frame of
// sequences 100, 500 and 1000 of each of 4 RC QPs (their resends pass). Each
// gap is NAKed once, the requester goes back to the PSN the NAK names, and
// every packet sent is delivered in order: nothing is left unrecovered,
// delivered payload = every unique packet's 1,024 B, the wire lost exactly the
// 12 dropped, and what went out again is at least those 12.
TEST(Responder, GoBackNRecoversEveryDroppedPacket) {
  RingPath path("gbn");
  ASSERT_TRUE(path.ok()) << path.error();
  Impairments imp;
  imp.drop_first = {100, 500, 1000};
  auto res = path.RunPlan(R"(
duration: 300 ms
ports: [{name: a}, {name: b, respond: true}]
streams: [{name: s, port: a, rx_port: b, rate: 40 kpps, flows: 4,
           frame: {roce: {op: WRITE, message: 1024, pmtu: 1024}}}]
)", imp);
  ASSERT_TRUE(res.ok()) << res.status();
  const StreamResult& s = res->streams[0];
  ASSERT_TRUE(s.retransmits);
  const endpoint::ResponderCounters& c = s.responder;
  EXPECT_EQ(s.lost(), 12);  // the wire's loss: frames sent that never arrived (resends are duplicates)
  EXPECT_EQ(s.tx.packets - s.rx.packets, 12u);
  EXPECT_EQ(c.naks_sent, 12u);
  EXPECT_EQ(s.analysis.nack, 12u);
  ExpectTimeouts(path, s, 64'000'000, 0u, 12u);
  EXPECT_GE(s.retx.retransmitted_packets, 12u);
  EXPECT_EQ(s.retx.unique_packets + s.retx.retransmitted_packets, s.tx.packets);
  EXPECT_EQ(s.retx.unique_bytes + s.retx.retransmitted_bytes, s.tx.bytes);
  EXPECT_EQ(c.delivered_packets, s.retx.unique_packets);  // nothing unrecovered
  EXPECT_EQ(c.delivered_bytes, s.retx.unique_packets * 1024);
  // 12,000 slots at 40 kpps in 300 ms: most sent (resends take slots too,
  // and a held-up lcore gives up missed ones: a pacing stall, said below).
  EXPECT_GT(s.retx.unique_packets + s.tx.slots_skipped, 10000u);
  ExpectOnlyHostHoldUps(s);
  if (HasFailure()) std::cout << GbnTrace(*res, s);
}

// After its end an RC requester sends nothing new but still recovers what it
// sent: 4 QPs of 1,000 packets each; the mover drops the first copy of each
// one's packet 500 (a later packet reveals the gap: NAK) and of its last,
// 999, which nothing follows, so only the retransmit timeout (10 ms) finds it,
// in the engine's drain. Every packet is delivered; nothing new goes out.
TEST(Responder, GoBackNRecoversAfterTheEndWhatNothingFollowed) {
  RingPath path("gbnend");
  ASSERT_TRUE(path.ok()) << path.error();
  Impairments imp;
  imp.drop_first = {500, 999};
  auto res = path.RunPlan(FourQpWrites("10 ms"), imp);
  ASSERT_TRUE(res.ok()) << res.status();
  const StreamResult& s = res->streams[0];
  const endpoint::ResponderCounters& c = s.responder;
  EXPECT_EQ(s.retx.unique_packets, 4000u);  // nothing new after the end
  EXPECT_EQ(s.tx.packets - s.rx.packets, 8u);
  EXPECT_EQ(c.naks_sent, 4u);                    // the gaps at 500
  ExpectTimeouts(path, s, 10'000'000, 4u, 4u);  // the lost last packets; the NAKs
  EXPECT_EQ(c.delivered_packets, 4000u);
  EXPECT_EQ(c.delivered_bytes, 4000u * 1024);
  EXPECT_EQ(s.retx.unique_packets + s.retx.retransmitted_packets, s.tx.packets);
  ExpectOnlyHostHoldUps(s);
  if (HasFailure()) std::cout << GbnTrace(*res, s);
}

// A stream's count is split over its QPs as the turns of an open-loop
// stream split it, and a QP held up by its resends still sends all of its
// share: the mover drops the first copy of 20-40 packets in a row of flow 0
// only, which flow 0 NAKs and resends while the other QPs go on. With
// strict turns flow 0 ended dozens of packets short and the others as many
// beyond their share. With 40 QPs at 5 Mpps flow 0 is at last the only one
// left, and a burst of up to 32 frames goes round the turns to it again and
// again (each frame counted toward its share).
TEST(Responder, EachQpSendsItsShareOfTheCountWhateverItResends) {
  struct Case {
    const char* rate;
    uint32_t flows, count, drop_from, drops;
  };
  for (const Case& c : {Case{"40 kpps", 4, 4000, 100, 40}, Case{"5 Mpps", 40, 40000, 500, 20}}) {
    SCOPED_TRACE(c.flows);
    RingPath path("gbnshare");
    ASSERT_TRUE(path.ok()) << path.error();
    Impairments imp;
    for (uint32_t q = c.drop_from; q < c.drop_from + c.drops; ++q) imp.drop_first.insert(q);
    imp.drop_first_flow = 0;
    auto res = path.RunPlan(absl::StrFormat(R"(
duration: 1 s
ports: [{name: a}, {name: b, respond: true}]
streams: [{name: s, port: a, rx_port: b, rate: %s, flows: %d, count: %d,
           frame: {roce: {op: WRITE, message: 64, pmtu: 1024}}}]
)", c.rate, c.flows, c.count), imp);
    ASSERT_TRUE(res.ok()) << res.status();
    const StreamResult& s = res->streams[0];
    EXPECT_EQ(s.retx.unique_packets, c.count);
    EXPECT_EQ(s.responder.delivered_packets, c.count);
    EXPECT_EQ(s.tx.packets - s.rx.packets, c.drops);  // the first copies
    EXPECT_GE(s.retx.retransmitted_packets, c.drops);
    // Only flow 0 resends: each other flow sent its share, each packet
    // once, and flow 0 its share plus every resend. (The analyzer's
    // per-flow duplicates are not the check: a resend more than 64 behind
    // the flow's highest sequence counts as late, not as a duplicate.)
    ASSERT_EQ(s.per_flow.size(), c.flows);
    for (const FlowReport& f : s.per_flow) {
      SCOPED_TRACE(f.index);
      if (f.index == 0) {
        EXPECT_EQ(f.tx_packets, c.count / c.flows + s.retx.retransmitted_packets);
      } else {
        EXPECT_EQ(f.tx_packets, c.count / c.flows);
        EXPECT_EQ(f.rx.rx_packets, c.count / c.flows);
      }
    }
    ExpectOnlyHostHoldUps(s);
    if (HasFailure()) std::cout << GbnTrace(*res, s);
  }
}

// The drain runs `drain` (100 ms here) past the last frame sent, not past
// TX's end: the path holds every data frame 30 ms, and the mover drops the
// first copy of each QP's last packet. TX ends at 100 ms; the responder's
// ACKs go on until the last data arrives (~130 ms), the requester's 60 ms
// timeout (checked every 15 ms) resends the 4 packets at ~190-205 ms, which
// arrive 30 ms later. A drain ending 100 ms after TX (at ~200 ms) would
// leave them unrecovered; this one ends 100 ms after the resends (at least
// 150 ms after its start, even when it starts late), and every message
// completes. The timeout must exceed the path's round trip (an ACK comes
// 30 ms after its packet: no timeout while they flow) and, with its check's
// period, stay well inside the drain (an 80 ms timeout checked every 20 ms
// raced a drain that started 18 ms late).
TEST(Responder, TheDrainWaitsForWhatTheRecoverySends) {
  RingPath path("gbndrain");
  ASSERT_TRUE(path.ok()) << path.error();
  Impairments imp;
  imp.drop_first = {999};
  imp.delay_ns = 30'000'000;
  auto res = path.RunPlan(FourQpWrites("60 ms"), imp);
  ASSERT_TRUE(res.ok()) << res.status();
  const StreamResult& s = res->streams[0];
  EXPECT_EQ(s.retx.unique_packets, 4000u);
  ExpectTimeouts(path, s, 60'000'000, 4u, 0u);  // each QP's lost last packet, once
  EXPECT_EQ(s.responder.delivered_packets, 4000u);
  EXPECT_EQ(s.tx.packets - s.rx.packets, 4u);  // the 4 first copies dropped
  EXPECT_EQ(res->drain_late_frames, 0u);
  EXPECT_GE(res->drain_ns, 150'000'000) << "the drain did not wait for the resends";
  EXPECT_LT(res->drain_ns, 1'100'000'000);
  ExpectOnlyHostHoldUps(s);
  if (HasFailure()) std::cout << GbnTrace(*res, s);
}

// A path that loses everything from some point on (a dead link): the
// requester resends the lost packets every timeout until the drain's bound
// (100 ms + 1 s), and the drain stops there.
TEST(Responder, ResendsIntoADeadPathEndAtTheDrainsBound) {
  RingPath path("gbndead");
  ASSERT_TRUE(path.ok()) << path.error();
  Impairments imp;
  for (uint32_t q = 900; q < 1000; ++q) imp.drop.insert(q);  // every copy of each QP's last 100
  auto res = path.RunPlan(FourQpWrites("10 ms"), imp);
  ASSERT_TRUE(res.ok()) << res.status();
  const StreamResult& s = res->streams[0];
  EXPECT_EQ(s.responder.delivered_packets, 3600u);
  EXPECT_GT(s.retx.timeouts, 4u * 50);  // one a QP every 10 ms, for over a second
  EXPECT_GE(res->drain_ns, 1'100'000'000);  // its bound
  // Nothing arrived in the drain's last 100 ms, so the frames at the bound
  // are the path's loss (a warning), not the tester's drain_short; so are
  // the resends the lcores made between the reading and their stop (until
  // 2026-12-03 those were drain_short, in about 1 run in 5 or 10 here).
  EXPECT_EQ(res->drain_late_frames, 0u);
  bool said = false;
  for (const std::string& w : res->warnings) said |= absl::StrContains(w, "none arriving in that time: the path lost them");
  EXPECT_TRUE(said) << absl::StrJoin(res->warnings, "\n");
  for (const TesterLimit& l : s.tester_limits) EXPECT_NE(l.kind, kDrainShort) << l.detail;
  if (HasFailure()) std::cout << GbnTrace(*res, s);
}

// The same dead path with the worker held up for 150 ms in the drain (a
// real-time hog on its CPU, 300 ms after the run starts: TX ends at ~100 ms,
// the bound at ~1.2 s): a worker that sent nothing because it did not run
// is not quiet, so the drain still runs to its bound. Until 2026-12-07 the
// drain took such a stop (the host's, ~100 ms) for quiet and ended at 0.68 s.
TEST(Responder, AWorkerHeldUpInTheDrainIsNotQuiet) {
  if (!fg::testing::CanHog()) GTEST_SKIP() << "needs SCHED_FIFO (CAP_SYS_NICE) to hold an lcore up";
  RingPath path("gbnheld");
  ASSERT_TRUE(path.ok()) << path.error();
  Impairments imp;
  for (uint32_t q = 900; q < 1000; ++q) imp.drop.insert(q);  // every copy of each QP's last 100
  std::thread hog([] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    fg::testing::HogCpuOf(TestEal().worker_lcores().back(), 150);
  });
  auto res = path.RunPlan(FourQpWrites("10 ms"), imp);
  hog.join();
  ASSERT_TRUE(res.ok()) << res.status();
  uint64_t longest = 0;
  for (const fg::engine::LcoreStats& l : res->lcores) longest = std::max(longest, l.holdup_max_ns);
  EXPECT_GE(longest, 140'000'000u);  // the hog's stop, noted by the worker
  EXPECT_EQ(res->streams[0].responder.delivered_packets, 3600u);
  EXPECT_GE(res->drain_ns, 1'100'000'000);  // its bound, not the stop's end
  EXPECT_EQ(res->drain_late_frames, 0u);
  for (const TesterLimit& l : res->streams[0].tester_limits) EXPECT_NE(l.kind, kDrainShort) << l.detail;
}

// Interrupted, an RC requester still recovers what it sent: from its
// 2,000th packet on the mover drops the first copy of every packet of each of
// 4 QPs, so only the retransmit timeout (10 ms) brings each back, and at any
// moment some are owed. The run is interrupted at 400 ms: the stop takes
// effect in the run's last poll or, when the drain has begun, in the drain's
// first (TxTask::PollRecovery), and the drain's recovery delivers every
// packet sent.
TEST(Responder, GoBackNRecoversWhatItSentWhenTheRunIsInterrupted) {
  RingPath path("gbnint");
  ASSERT_TRUE(path.ok()) << path.error();
  Impairments imp;
  for (uint32_t s = 2000; s < 200000; ++s) imp.drop_first.insert(s);
  std::atomic<bool> interrupt{false};
  std::thread stopper([&interrupt] {
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
    interrupt.store(true);
  });
  auto res = path.RunPlan(R"(
duration: 10 s
ports: [{name: a}, {name: b, respond: true}]
streams: [{name: s, port: a, rx_port: b, rate: 40 kpps, flows: 4,
           frame: {roce: {op: WRITE, message: 1024, pmtu: 1024, retransmit: {timeout: 10 ms}}}}]
)", imp, &interrupt);
  stopper.join();
  ASSERT_TRUE(res.ok()) << res.status();
  EXPECT_TRUE(res->interrupted);
  const StreamResult& s = res->streams[0];
  ASSERT_TRUE(s.retransmits);
  EXPECT_GT(s.retx.unique_packets, 8000u);  // past the first drop on every QP
  EXPECT_GT(s.retx.timeouts, 4u);
  EXPECT_EQ(s.responder.delivered_packets, s.retx.unique_packets);  // nothing left unrecovered
  EXPECT_EQ(s.retx.unique_packets + s.retx.retransmitted_packets, s.tx.packets);
}

// READ through the ring pair: port a is the responder, so its responses
// (a -> b) cross the mover, which drops response packets 10 and 21 of each
// of 4 QPs; the requests come back to a directly. Every request is
// executed once, its 4 responses are all sent (the tester owes none), and
// the responses' stream loses exactly the 8 dropped, 2 per QP.
TEST(Responder, ReadRequestsAreExecutedAndTheirResponsesLossCountedExactly) {
  RingPath path("read");
  ASSERT_TRUE(path.ok()) << path.error();
  Impairments imp;
  imp.drop = {10, 21};
  auto res = path.RunPlan(R"(
duration: 300 ms
ports: [{name: a, respond: true}, {name: b}]
streams: [{name: rd, port: b, rx_port: a, rate: 200 Mbps, flows: 4,
           frame: {roce: {op: READ_REQUEST, message: 4096, pmtu: 1024, dest_qp: 0x300}}}]
)", imp);
  ASSERT_TRUE(res.ok()) << res.status();
  ASSERT_EQ(res->streams.size(), 2u);
  const StreamResult& q = res->streams[0];
  const StreamResult& d = res->streams[1];
  EXPECT_EQ(d.name, "rd.responses");
  EXPECT_EQ(q.read_responses, 1);
  EXPECT_EQ(d.read_requests, 0);
  EXPECT_GT(q.tx.packets, 1000u);
  EXPECT_EQ(q.rx.packets, q.tx.packets);  // counted at a by QP and PSN
  EXPECT_EQ(q.lost(), 0);
  EXPECT_EQ(q.analysis.latency.count(), 0u);  // no TX stamp in a request
  EXPECT_EQ(q.responder.delivered_packets, q.tx.packets);
  EXPECT_EQ(q.responder.delivered_bytes, q.tx.packets * 4096);
  EXPECT_EQ(q.responder.acks_sent + q.responder.naks_sent, 0u);
  EXPECT_EQ(d.tx.due, 4 * q.tx.packets);
  EXPECT_EQ(d.tx.packets, d.tx.due);
  EXPECT_EQ(d.lost(), 8);
  EXPECT_EQ(d.rx.packets, d.tx.packets - 8);
  EXPECT_EQ(d.analysis.latency.count() + d.analysis.latency_excluded, d.rx.packets);
  ExpectOnlyHostHoldUps(d);  // (a responder held up > 1 ms is named: pacing_stall)
  ASSERT_EQ(d.per_flow.size(), 4u);
  for (const FlowReport& f : d.per_flow) {
    EXPECT_EQ(f.tx_packets - f.rx.rx_packets, 2u) << f.index;
    EXPECT_EQ(f.tx_packets % 4, 0u) << f.index;  // whole READs
  }
  ExpectOnlyHostHoldUps(q);
}

// A READ's responses go at the stream's rate, however large its message
// (issue 26: one 2 GB request made 1.95 million responses back to back,
// 274 Gbit/s on a 10 Gbit/s port). 1 MiB READs (1,024 responses each) at
// 20 kpps of data: the responses, all sent, never go faster than 20 kpps
// over their sending time (one burst of slack), nor do the requests outrun it.
TEST(Responder, ALargeReadsResponsesAreSentAtTheStreamsRate) {
  RingPath path("readrate");
  ASSERT_TRUE(path.ok()) << path.error();
  auto res = path.RunPlan(R"(
duration: 300 ms
drain: 400 ms
ports: [{name: a, respond: true}, {name: b}]
streams: [{name: rd, port: b, rx_port: a, rate: 20 kpps, flows: 2,
           frame: {roce: {op: READ_REQUEST, message: 1 MiB, pmtu: 1024, dest_qp: 0x300}}}]
)", {});
  ASSERT_TRUE(res.ok()) << res.status();
  ASSERT_EQ(res->streams.size(), 2u);
  const StreamResult& q = res->streams[0];
  const StreamResult& d = res->streams[1];
  ASSERT_GT(q.tx.packets, 2u);  // 20,000 / 1,024 = 19.5 requests a second: 6 in 300 ms
  EXPECT_LE(q.tx.packets, 7u);
  EXPECT_EQ(d.tx.due, 1024 * q.tx.packets);
  const double span_s = static_cast<double>(d.tx.last_ns - d.tx.first_ns) / 1e9;
  const double most = 20000 * span_s + tx::kTxBurst;
  std::printf("READ 1 MiB at 20 kpps: %zu requests, %zu responses in %.3f s (%.0f /s; at most %.0f allowed)\n",
              static_cast<size_t>(q.tx.packets), static_cast<size_t>(d.tx.packets), span_s, d.tx.packets / span_s,
              most);
  // A host that held the responder's lcore up (a pacing_stall whose time the kernel counted, at least half of
  // it) leaves the rate unjudgeable in this run: skipped, naming it (test/dpdk/host_holdups.h's rule).
  for (const engine::TesterLimit& l : d.tester_limits) {
    if (l.kind == engine::kPacingStall && l.cpu_wait_ns >= 0 && l.steal_ns >= 0 &&
        static_cast<double>(l.cpu_wait_ns + l.steal_ns) >= static_cast<double>(l.longest_ns) / 2) {
      GTEST_SKIP() << "the host held the responder's lcore up: " << l.detail;
    }
  }
  EXPECT_LE(static_cast<double>(d.tx.packets), most);
  // Sent at the rate, not far below it: the responses kept up while there were any to send.
  EXPECT_GT(static_cast<double>(d.tx.packets), 0.9 * 20000 * span_s);
}

// frame.roce.connect: cm on the ring pair: 1,000 QPs set up by REQ, REP and
// RTU before the data (each timed, none sent again on a path that loses
// nothing), then every QP carries its data.
TEST(Responder, CmSetsUpEveryQpBeforeItsData) {
  RingPath path("cm");
  ASSERT_TRUE(path.ok()) << path.error();
  auto res = path.RunPlan(R"(
duration: 200 ms
ports: [{name: a}, {name: b, respond: true}]
streams: [{name: s, port: a, rx_port: b, rate: 50 kpps, flows: 1000,
           frame: {roce: {op: WRITE, message: 1024, pmtu: 1024, dest_qp: 0x1000, connect: cm}}}]
)", {});
  ASSERT_TRUE(res.ok()) << res.status();
  const StreamResult& s = res->streams[0];
  ASSERT_TRUE(s.qp_setup.has_value());
  EXPECT_EQ(s.qp_setup->setup.count(), 1000u);
  EXPECT_EQ(s.qp_setup->resent, 0u);
  EXPECT_GT(s.qp_setup->setup.max(), 0u);
  EXPECT_GT(s.qp_setup->elapsed_ns, 0);
  EXPECT_EQ(s.lost(), 0);
  ASSERT_EQ(s.per_flow.size(), 1000u);
  for (const FlowReport& f : s.per_flow) EXPECT_GT(f.rx.rx_packets, 0u) << f.index;
}

// The closed loop on the ring pair: the mover marks sequences 1000, 1100 and
// 1200 of each of 2 flows CE; port b's notification point sends a CNP for
// each (ms apart, beyond cnp_interval), and each CNP reaches the flow's owner, whose
// DCQCN reaction point (paper) cuts that QP's rate at once: the first cut
// halves it (alpha 1), and the rate timeline shows it; the pacer's due count
// follows the cuts (no tester limit).
TEST(Dcqcn, EachCnpCutsItsQpsRateAtTheOwnerAndTheTimelineShowsIt) {
  RingPath path("dcqcn");
  ASSERT_TRUE(path.ok()) << path.error();
  Impairments imp;
  imp.ce = {1000, 1100, 1200};
  auto res = path.RunPlan(R"(
duration: 400 ms
ports: [{name: a}, {name: b, respond: true}]
streams: [{name: s, port: a, rx_port: b, rate: 40 kpps, flows: 2,
           frame: {roce: {op: WRITE, message: 1024, pmtu: 1024, dcqcn: paper}}}]
)", imp);
  ASSERT_TRUE(res.ok()) << res.status();
  const StreamResult& s = res->streams[0];
  ASSERT_TRUE(s.dcqcn);
  EXPECT_EQ(s.responder.ce_seen, 6u);
  EXPECT_EQ(s.responder.cnp_sent, 6u);
  EXPECT_EQ(s.analysis.cnp, 6u);  // received at the requester
  EXPECT_EQ(s.rp.cnps, 6u);       // each handed to its QP's reaction point
  EXPECT_EQ(s.rp.cuts, 6u);
  EXPECT_EQ(s.rp.reaction.count(), 6u);
  EXPECT_LT(s.rp.reaction.max(), 20'000'000u);  // within the owner's next polls
  ExpectOnlyHostHoldUps(s);
  ASSERT_EQ(s.per_flow.size(), 2u);
  const double max_bps = 20e3 * 8 * s.frame_size;  // each QP's set rate: its maximum
  for (const FlowReport& f : s.per_flow) {
    SCOPED_TRACE(f.index);
    ASSERT_GE(f.rate_timeline.size(), 2u);
    EXPECT_EQ(f.rate_timeline[0].t_ns, 0);
    EXPECT_DOUBLE_EQ(f.rate_timeline[0].bps, max_bps);
    // The first cut comes at about 1000 / 20 kpps = 50 ms and halves the
    // rate (alpha 1); the QP recovers after it (every 55 us).
    double lowest = max_bps;
    int64_t first_cut = -1;
    for (const tx::RatePoint& p : f.rate_timeline) {
      if (p.bps < max_bps && first_cut < 0) first_cut = p.t_ns;
      lowest = std::min(lowest, p.bps);
    }
    EXPECT_GT(first_cut, 45'000'000);
    EXPECT_LT(first_cut, 80'000'000);
    EXPECT_LE(lowest, max_bps / 2);
    EXPECT_GT(f.rate_timeline.back().bps, lowest);
    EXPECT_LT(f.tx_packets, 8000u);  // what 400 ms at 20 kpps would have been
  }
}

}  // namespace
}  // namespace fg::engine
