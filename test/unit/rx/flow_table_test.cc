// FlowTable: frames an RX lcore drained after a stall (Handoff::kRxLate) are
// counted and sequenced as any, their latency and their part in the flow's
// jitter left out. Plain C++, no DPDK.
#include "rx/flow_table.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "config/plan.h"
#include "proto/roce.h"
#include "stream/answers.h"
#include "stream/program.h"

namespace fg::rx {
namespace {

struct Frame {
  uint32_t seq;
  uint64_t latency_ns;
  bool late;
};

// One flow of one stream: the frames in order, then the table's figures.
struct Seen {
  stats::StreamStats stream;
  FlowResult flow;
  StreamLiveView live;
};

Seen Feed(const std::vector<Frame>& frames, bool per_record) {
  FlowTable t({OwnedFlow{0, 0}}, 1, 64, /*per_flow_latency=*/true);
  FlowTable::Run run;
  uint64_t now = 1'000'000;
  for (const Frame& f : frames) {
    now += 10'000;
    const uint8_t flags = f.late ? Handoff::kRxLate : 0;
    if (per_record) {  // another lcore's records, handed over (Deliver)
      Handoff h;
      h.slot = 0;
      h.seq = f.seq;
      h.tx_ns = now - f.latency_ns;
      h.rx_ns = now;
      h.bytes = 100;
      h.flags = flags;
      t.Deliver(&h, 1);
    } else {  // the RX task's own flows (Observe, one run per burst)
      t.Observe(0, f.seq, now - f.latency_ns, now, 100, flags, run);
    }
  }
  FlowTable::Run done = run;
  t.Flush(done);
  return Seen{t.Summaries()[0], t.Flows()[0], t.live(0)};
}

TEST(FlowTable, FramesDrainedAfterAStallAreCountedButLeftOutOfLatencyAndJitter) {
  // 10 frames: every one on time 20-29 us, but 3 (seq 4-6) that waited
  // through a 5 ms stall of the RX lcore; seq 8 is lost.
  std::vector<Frame> all, on_time;
  for (uint32_t s = 0; s < 11; ++s) {
    if (s == 8) continue;
    const bool late = s >= 4 && s <= 6;
    const Frame f{s, late ? 5'000'000 + 1'000 * s : 20'000 + 1'000 * s, late};
    all.push_back(f);
    if (!late) on_time.push_back(f);
  }
  for (bool per_record : {false, true}) {
    SCOPED_TRACE(per_record ? "Deliver" : "Observe");
    const Seen got = Feed(all, per_record);
    const Seen ref = Feed(on_time, per_record);
    // Counted and sequenced: all 10 received, one lost, nothing reordered.
    EXPECT_EQ(got.stream.received, 10u);
    EXPECT_EQ(got.stream.lost, 1);
    EXPECT_EQ(got.stream.reordered, 0u);
    EXPECT_EQ(got.live.packets, 10u);
    EXPECT_EQ(got.live.bytes, 1000u);
    EXPECT_EQ(got.flow.rx_packets, 10u);
    // Latency: the 7 on-time frames only, as if the late ones were not there.
    EXPECT_EQ(got.stream.latency_excluded, 3u);
    EXPECT_EQ(got.stream.latency.count(), 7u);
    EXPECT_EQ(got.stream.latency.max(), 30'000u);
    EXPECT_EQ(got.stream.latency.max(), ref.stream.latency.max());
    EXPECT_EQ(got.flow.latency_max_ns, 30'000u);
    EXPECT_EQ(got.flow.latency_last_ns, 30'000u);
    // The flow's jitter runs over the same transits as without the late frames.
    EXPECT_EQ(got.flow.jitter_ns, ref.flow.jitter_ns);
    EXPECT_EQ(ref.stream.latency_excluded, 0u);
  }
}

// A sender that has stamped every sequence below bound.next of each flow;
// counts how often the table asks (the out-of-line refresh).
struct Senders : SentSource {
  SentBound bound;
  mutable int asked = 0;
  SentBound Sent(uint32_t) const override {
    ++asked;
    return bound;
  }
};

// The audit's 500 UDP frames with a stream's flow id (issue 26: lost -500,
// sequence_gap_packets 85,900,345,649): 10 genuine frames, 500 whose
// sequences the sender never reached (20 + k x 8,589,934: over the whole
// 32-bit space, half of them "behind" to a wrap-safe compare), then 10
// more genuine ones. The forged ones are counted invalid and move nothing:
// no frame received, lost, missing at a gap, duplicated or reordered, the
// flow's sequence where the genuine frames left it. The table asks the
// sender once for the first frame (its bound then covers the 20 it sent)
// and once per forged frame; the genuine ones pass on one compare.
TEST(FlowTable, FramesTheSenderNeverSentAreInvalidAndMoveNothing) {
  for (bool per_record : {false, true}) {
    SCOPED_TRACE(per_record ? "Deliver" : "Observe");
    FlowTable t({OwnedFlow{0, 7}}, 1, 64, /*per_flow_latency=*/true);
    Senders senders;
    senders.bound.next = 20;
    t.SetSentSource(&senders);
    FlowTable::Run run;
    uint64_t now = 1'000'000;
    auto feed = [&](uint32_t seq) {
      now += 1'000;
      if (per_record) {
        Handoff h;
        h.slot = 0;
        h.seq = seq;
        h.tx_ns = now - 500;
        h.rx_ns = now;
        h.bytes = 100;
        t.Deliver(&h, 1);
      } else {
        t.Observe(0, seq, now - 500, now, 100, 0, run);
      }
    };
    for (uint32_t q = 0; q < 10; ++q) feed(q);
    for (uint32_t k = 0; k < 500; ++k) feed(20 + k * 8'589'934u);
    for (uint32_t q = 10; q < 20; ++q) feed(q);
    FlowTable::Run done = run;
    t.Flush(done);
    const stats::StreamStats g = t.Summaries()[0];
    EXPECT_EQ(t.invalid(0), 500u);
    EXPECT_EQ(g.received, 20u);
    EXPECT_EQ(g.lost, 0);
    EXPECT_EQ(g.duplicate, 0u);
    EXPECT_EQ(g.reordered, 0u);
    EXPECT_EQ(g.late, 0u);
    EXPECT_EQ(g.loss_events, 0u);
    EXPECT_EQ(g.latency.count(), 20u);
    const StreamLiveView live = t.live(0);
    EXPECT_EQ(live.packets, 20u);
    EXPECT_EQ(live.bytes, 2000u);
    EXPECT_EQ(live.gap_packets, 0u);  // sequence_gap_packets
    EXPECT_EQ(t.Flows()[0].rx_packets, 20u);
    EXPECT_EQ(t.loss_log().events().size(), 0u);
    EXPECT_EQ(senders.asked, 1 + 500);
  }
}

// The sender's sequence starts over after 2^32 frames: a frame from before
// the wrap (within 2^31 of it) was sent and counts; a sequence past what it
// has sent since does not.
TEST(FlowTable, AfterTheSendersWrapFramesFromBeforeItStillCount) {
  FlowTable t({OwnedFlow{0, 0}}, 1, 64, false);
  Senders senders;
  senders.bound = SentBound{5, true, false};
  t.SetSentSource(&senders);
  Handoff h;
  h.bytes = 100;
  for (uint32_t seq : {0xFFFFFFFDu, 0xFFFFFFFEu, 0xFFFFFFFFu, 0u, 1u, 7u, 0x80000000u}) {
    h.seq = seq;
    t.Deliver(&h, 1);
  }
  EXPECT_EQ(t.Summaries()[0].received, 5u);
  EXPECT_EQ(t.invalid(0), 2u);  // 7 and 0x80000000: never sent
}

// A port that replays a capture: its frames are the capture's, every sequence counts.
TEST(FlowTable, ACaptureReplayTakesEverySequence) {
  FlowTable t({OwnedFlow{0, 0}}, 1, 64, false);
  Senders senders;
  senders.bound.any = true;
  t.SetSentSource(&senders);
  Handoff h;
  for (uint32_t seq : {0u, 1u, 900u, 0xFFFFFFF0u}) {
    h.seq = seq;
    t.Deliver(&h, 1);
  }
  EXPECT_EQ(t.Summaries()[0].received, 4u);
  EXPECT_EQ(t.invalid(0), 0u);
  EXPECT_EQ(senders.asked, 1);  // asked once: its bound then takes every sequence
}

// A responder behind the table (one RC QP, a WRITE of one 1,024 B packet a
// message at PMTU 1024, no go-back-N: it resynchronises after a gap).
struct Answered {
  stream::Program data;
  std::unique_ptr<stream::Answers> answers;
  endpoint::AnswerQueue queue{64};
  std::unique_ptr<endpoint::Responder> r;
  explicit Answered(config::RoceSpec::Op op) {
    config::FrameSpec f;
    f.kind = config::FrameKind::kRoce;
    f.roce.op = op;
    f.roce.message = 1024;
    f.roce.pmtu = 1024;
    f.roce.dest_qp = 0x300;
    f.roce.go_back_n = false;
    f.encap.udp_dst = proto::roce::kUdpPort;
    data = *stream::Program::Compile(f, 0);
    answers = *stream::Answers::Compile("s", /*first_flow_id=*/0, data, f, config::RespondSpec{}, /*port=*/0,
                                        {f.encap.dst_mac, f.encap.src_mac});
    r = std::make_unique<endpoint::Responder>(std::vector<const stream::Answers*>{answers.get()},
                                              std::vector<endpoint::Responder::Flow>{{0, 0}}, &queue);
  }
};

// RoCEv2 data with a bad ICRC on a responding port: the stream's frame (the
// device delivered it: received, its latency recorded), but the responder
// drops it as a RoCE NIC does: not delivered, no ACK for it; the next frame
// is then ahead of the expected PSN (a NAK, and the responder resumes there).
TEST(FlowTable, DataWithABadIcrcIsTheStreamsButTheResponderTakesNothingFromIt) {
  Answered a(config::RoceSpec::Op::kWrite);
  FlowTable t({OwnedFlow{0, 0}}, 1, 64, false);
  t.SetResponder(a.r.get());
  Handoff h;
  h.bytes = 1100;
  for (uint32_t seq : {0u, 1u, 2u}) {
    h.seq = seq;
    h.tx_ns = 1000 * seq;
    h.rx_ns = 1000 * seq + 700;
    h.flags = seq == 1 ? Handoff::kIcrcBad : 0;
    t.Deliver(&h, 1);
  }
  const stats::StreamStats g = t.Summaries()[0];
  EXPECT_EQ(g.received, 3u);
  EXPECT_EQ(g.lost, 0);
  EXPECT_EQ(g.latency.count(), 3u);
  const endpoint::ResponderCounters c = a.r->counters(0);
  EXPECT_EQ(c.icrc_dropped, 1u);
  EXPECT_EQ(c.delivered_packets, 2u);
  EXPECT_EQ(c.out_of_sequence, 1u);
  EXPECT_EQ(c.naks_sent, 1u);
}

// READ requests the requester never sent (the audit's: 258 requests for a
// QP with PSN 0xFFFFFF, which made the responder skip 16,777,236 requests
// and never execute the genuine ones after): each is invalid and moves
// nothing; the genuine requests around them are executed, none skipped.
TEST(FlowTable, ReadRequestsTheRequesterNeverSentAreInvalidAndSkipNothing) {
  Answered a(config::RoceSpec::Op::kReadRequest);  // one response packet a request: the PSN steps by 1
  struct Reads : endpoint::ReadSink {
    std::vector<uint32_t> seqs;
    void OnRead(uint32_t, uint32_t seq) override { seqs.push_back(seq); }
  } reads;
  a.r->SetReadSink(&reads);
  FlowTable t({OwnedFlow{0, 0}}, 1, 64, false);
  t.SetResponder(a.r.get());
  Senders senders;
  senders.bound.next = 3;  // the requester has sent requests 0, 1, 2
  t.SetSentSource(&senders);
  Handoff h;
  h.kind = proto::RxKind::kRoceReadRequest;
  h.bytes = 78;
  auto request = [&](uint32_t psn) {
    h.seq = psn;
    t.Deliver(&h, 1);
  };
  for (uint32_t psn : {0u, 1u, 2u}) request(psn);
  for (int k = 0; k < 258; ++k) request(k % 2 == 0 ? 0xFFFFFF : 0x7FFFFF);  // behind the first; far ahead
  senders.bound.next = 5;
  for (uint32_t psn : {3u, 4u}) request(psn);
  EXPECT_EQ(t.invalid(0), 258u);
  EXPECT_EQ(reads.seqs, (std::vector<uint32_t>{0, 1, 2, 3, 4}));
  const endpoint::ResponderCounters c = a.r->counters(0);
  EXPECT_EQ(c.delivered_packets, 5u);
  EXPECT_EQ(c.out_of_sequence, 0u);  // requests_skipped
  EXPECT_EQ(c.duplicates, 0u);
  const stats::StreamStats g = t.Summaries()[0];
  EXPECT_EQ(g.received, 5u);
  EXPECT_EQ(g.lost, 0);
}

}  // namespace
}  // namespace fg::rx
