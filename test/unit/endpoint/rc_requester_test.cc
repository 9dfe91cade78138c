// The RC requester's go-back-N and reaction points (endpoint/rc_requester.h)
// against hand-worked sequences: which sequence an ACK or NAK names, where
// a QP's cursor goes back to, which frames of a burst are resends, what a
// QP owes after the end, and the rate timeline DCQCN leaves.
#include "endpoint/rc_requester.h"

#include <gtest/gtest.h>

#include <vector>

#include "proto/roce.h"

namespace fg::endpoint {
namespace {

// RDMA WRITEs of one packet each: packet n of a QP has PSN start_psn + n.
stream::Program Writes(uint32_t start_psn = 0) {
  config::FrameSpec f;
  f.kind = config::FrameKind::kRoce;
  f.roce.op = config::RoceSpec::Op::kWrite;
  f.roce.message = 1024;
  f.roce.pmtu = 1024;
  f.roce.dest_qp = 0x200;
  f.roce.start_psn = start_psn;
  f.encap.udp_dst = proto::roce::kUdpPort;
  return *stream::Program::Compile(f, 0);
}

Feedback Ack(uint32_t psn) { return Feedback{proto::RxKind::kRoceAck, 0, psn, 0, 0}; }
Feedback Nak(uint32_t psn, uint8_t code = 0) { return Feedback{proto::RxKind::kRoceNak, code, psn, 0, 0}; }

struct Rig {
  stream::Program p;
  std::vector<stream::Cursor> cursors;
  GoBackN g;
  explicit Rig(uint32_t qps, uint32_t start_psn = 0, uint64_t timeout = 1000, uint64_t tick = 250)
      : p(Writes(start_psn)), cursors(qps, p.Start()), g(p, cursors, timeout, tick) {}
  void Sent(uint32_t q, uint32_t n) { p.Seek(cursors[q], cursors[q].seq + n); }  // TX stamped n more
};

TEST(GoBackN, AnAckAcknowledgesUpToItsPsnAndOneBeyondWhatWasSentIsIgnored) {
  Rig r(2);
  r.Sent(0, 10);
  r.g.OnAnswer(0, Ack(4), 7);
  EXPECT_EQ(r.g.qp(0).acked, 5u);
  EXPECT_EQ(r.g.qp(0).progress, 7u);
  r.g.OnAnswer(0, Ack(20), 9);  // never sent
  EXPECT_EQ(r.g.qp(0).acked, 5u);
  EXPECT_EQ(r.g.qp(0).progress, 7u);
  r.g.OnAnswer(0, Ack(2), 9);  // old: nothing moves back
  EXPECT_EQ(r.g.qp(0).acked, 5u);
  EXPECT_EQ(r.g.qp(1).acked, 0u);  // the other QP untouched
  EXPECT_EQ(r.cursors[0].seq, 10u);
  r.g.OnAnswer(0, Feedback{proto::RxKind::kRoceCnp, 0, 9, 0, 0}, 11);  // not go-back-N's
  EXPECT_EQ(r.g.qp(0).acked, 5u);
}

TEST(GoBackN, PsnsAreCountedFromTheFirstUnacknowledgedAcrossTheWrap) {
  const uint32_t start = proto::roce::kPsnMask - 2;  // packets 0..2 before the wrap, 3 at PSN 0
  Rig r(1, start);
  r.Sent(0, 8);
  r.g.OnAnswer(0, Ack(1), 1);  // PSN 1: packet 4
  EXPECT_EQ(r.g.qp(0).acked, 5u);
  r.g.OnAnswer(0, Nak(3), 2);  // PSN 3: packet 6 missing
  EXPECT_EQ(r.g.qp(0).acked, 6u);
  EXPECT_EQ(r.cursors[0].seq, 6u);
  EXPECT_EQ(r.cursors[0].psn, 3u);
  EXPECT_EQ(r.g.rewinds(), 1u);
}

TEST(GoBackN, ANakSendsTheQpBackAndTheBurstsCountItsResendsUntilItCatchesUp) {
  Rig r(2);
  r.Sent(0, 10);
  r.Sent(1, 10);
  r.g.OnAnswer(0, Nak(6), 3);
  EXPECT_EQ(r.g.rewinds(), 1u);
  EXPECT_EQ(r.cursors[0].seq, 6u);
  EXPECT_EQ(r.g.qp(0).high, 10u);
  EXPECT_EQ(r.g.qp(0).acked, 6u);
  EXPECT_TRUE(r.g.any_behind());
  EXPECT_EQ(r.g.sent_bound(0), 10u);
  // A burst: QP 0's packets 6, 7 (resent) and QP 1's 10 (new), in turns.
  r.Sent(0, 2);
  r.Sent(1, 1);
  const uint32_t burst1[] = {0, 1, 0};
  EXPECT_EQ(r.g.CountResends(burst1, 3), 2u);
  EXPECT_TRUE(r.g.any_behind());
  // QP 0's 8, 9 (resent), 10, 11 (new): caught up.
  r.Sent(0, 4);
  const uint32_t burst2[] = {0, 0, 0, 0};
  EXPECT_EQ(r.g.CountResends(burst2, 4), 2u);
  EXPECT_FALSE(r.g.any_behind());
  EXPECT_EQ(r.g.sent_bound(0), 12u);
  // A NAK with another syndrome (invalid request) acknowledges, goes nowhere.
  r.g.OnAnswer(1, Nak(4, 1), 5);
  EXPECT_EQ(r.g.qp(1).acked, 4u);
  EXPECT_EQ(r.cursors[1].seq, 11u);
  EXPECT_EQ(r.g.rewinds(), 1u);
}

TEST(GoBackN, AnAckBeyondTheCursorOfAResendingQpMovesItOn) {
  Rig r(1);
  r.Sent(0, 10);
  r.g.OnAnswer(0, Nak(3), 1);
  EXPECT_EQ(r.cursors[0].seq, 3u);
  r.g.OnAnswer(0, Ack(9), 2);  // the responder held them all after all
  EXPECT_EQ(r.cursors[0].seq, 10u);
  EXPECT_EQ(r.g.qp(0).acked, 10u);
  EXPECT_FALSE(r.g.any_behind());
}

TEST(GoBackN, AQpWithoutProgressForTheTimeoutGoesBackToItsFirstUnacknowledged) {
  Rig r(2, 0, /*timeout=*/1000, /*tick=*/250);
  r.g.Arm(/*start=*/100, /*clock=*/0);
  EXPECT_FALSE(r.g.TimerDue(349));
  EXPECT_TRUE(r.g.TimerDue(350));
  r.Sent(0, 5);
  r.g.OnAnswer(0, Ack(1), 200);  // acked 2 at 200
  r.g.Tick(350, 1200);           // 1000 since: not over the timeout
  EXPECT_EQ(r.g.timeouts(), 0u);
  EXPECT_FALSE(r.g.TimerDue(599));
  r.g.Tick(600, 1201);
  EXPECT_EQ(r.g.timeouts(), 1u);
  EXPECT_EQ(r.cursors[0].seq, 2u);
  EXPECT_EQ(r.g.qp(0).high, 5u);
  EXPECT_EQ(r.g.qp(0).progress, 1201u);
  EXPECT_EQ(r.cursors[1].seq, 0u);  // nothing outstanding: its timer has not started
  EXPECT_EQ(r.g.qp(1).progress, 1201u);
  r.Sent(0, 1);          // resent packet 2
  r.g.Tick(850, 2201);  // went back at 1201: 1000 since, not over
  EXPECT_EQ(r.g.timeouts(), 1u);
  r.g.Tick(1100, 2202);
  EXPECT_EQ(r.g.timeouts(), 2u);
  EXPECT_EQ(r.cursors[0].seq, 2u);
  EXPECT_EQ(r.g.qp(0).high, 5u);
}

TEST(GoBackN, AfterTheEndTheQpsLeftBehindOweResendsUntilTheyCatchUp) {
  Rig r(3);
  r.Sent(0, 10);
  r.Sent(1, 10);
  r.Sent(2, 10);
  r.g.OnAnswer(1, Nak(7), 1);
  r.g.Ended();
  EXPECT_TRUE(r.g.owes());
  uint32_t qps[4];
  ASSERT_EQ(r.g.Owing(qps, 4), 1u);
  EXPECT_EQ(qps[0], 1u);
  r.g.OnAnswer(2, Nak(5), 2);  // a go-back after the end owes too
  ASSERT_EQ(r.g.Owing(qps, 4), 2u);
  EXPECT_EQ(qps[0], 1u);
  EXPECT_EQ(qps[1], 2u);
  r.Sent(1, 3);  // QP 1 resent 7, 8, 9
  ASSERT_EQ(r.g.Owing(qps, 1), 1u);
  EXPECT_EQ(qps[0], 2u);
  r.Sent(2, 5);
  EXPECT_EQ(r.g.Owing(qps, 4), 0u);
  EXPECT_FALSE(r.g.owes());
}

TEST(GoBackN, EachQpHasItsShareOfTheCountAndAGoBackGivesItTurnsAgain) {
  Rig r(3);
  r.g.ShareCount(10);
  ASSERT_TRUE(r.g.shares());
  EXPECT_EQ(r.g.share(0), 4u);
  EXPECT_EQ(r.g.share(1), 3u);
  EXPECT_EQ(r.g.share(2), 3u);
  r.Sent(1, 3);
  r.g.share_done()[0] |= 1u << 1;  // TX: QP 1 has sent its share
  r.g.OnAnswer(1, Nak(1), 1);
  EXPECT_EQ(r.g.share_done()[0] & (1u << 1), 0u);
  EXPECT_FALSE(Rig(3).g.shares());
}

TEST(ReactionPoints, ACnpCutsItsQpAndTheTimelineKeepsEachWindowsLowAndEnd) {
  const config::DcqcnSpec p = config::DcqcnSpec::Paper();
  ReactionPoints rp(p, {1e9, 2e9}, /*start_ns=*/5'000, /*duration_ns=*/1'000'000);
  EXPECT_EQ(rp.tick_ns(), 27'500);  // half the paper's 55 us timer
  ASSERT_EQ(rp.timeline(0).size(), 1u);
  EXPECT_EQ(rp.timeline(0)[0].t_ns, 5'000);
  EXPECT_EQ(rp.timeline(1)[0].bps, 2e9);
  ASSERT_TRUE(rp.OnCnp(0, 10'000, 0));
  const double first = rp.rate_bps(0);
  EXPECT_LT(first, 1e9);
  ASSERT_TRUE(rp.OnCnp(0, 20'000, 0));  // the same 100 us window: one point, the lower
  ASSERT_EQ(rp.timeline(0).size(), 2u);
  EXPECT_EQ(rp.timeline(0)[1].t_ns, 20'000);
  EXPECT_EQ(rp.timeline(0)[1].bps, rp.rate_bps(0));
  EXPECT_LT(rp.rate_bps(0), first);
  EXPECT_EQ(rp.cnps(), 2u);
  EXPECT_EQ(rp.cuts(), 2u);
  EXPECT_EQ(rp.rate_bps(1), 2e9);
  // The timer's increase events: QP 0 rises, QP 1 (never cut) does not.
  std::vector<uint32_t> rose;
  rp.Advance(
      20'000 + p.timer_ns, [](uint32_t) { return uint64_t{0}; }, [&](uint32_t q) { rose.push_back(q); });
  ASSERT_EQ(rose, std::vector<uint32_t>{0});
  ASSERT_EQ(rp.timeline(0).size(), 3u);
  EXPECT_EQ(rp.timeline(0)[2].t_ns, 20'000 + p.timer_ns);
  EXPECT_GT(rp.timeline(0)[2].bps, rp.timeline(0)[1].bps);
  EXPECT_FALSE(rp.truncated());
}

TEST(ReactionPoints, ATimelineOutOfRoomSaysItIsTruncated) {
  const config::DcqcnSpec p = config::DcqcnSpec::Paper();
  ReactionPoints rp(p, {1e9}, 0, /*duration_ns=*/0);  // room for 4 points
  for (int k = 1; k <= 4; ++k) rp.OnCnp(0, k * kRateTimelineNs, 0);  // a cut in each of 4 windows
  EXPECT_EQ(rp.timeline(0).size(), 4u);
  EXPECT_TRUE(rp.truncated());
}

}  // namespace
}  // namespace fg::endpoint
