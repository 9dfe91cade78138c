// FlowTable: frames an RX lcore drained after a stall (Handoff::kRxLate) are
// counted and sequenced as any, their latency and their part in the flow's
// jitter left out. Plain C++, no DPDK.
#include "rx/flow_table.h"

#include <gtest/gtest.h>

#include <vector>

namespace fg::rx {
namespace {

struct Frame {
  uint32_t seq;
  uint64_t latency_ns;
  bool late;
};

// One flow of one group: the frames in order, then the table's figures.
struct Seen {
  stats::GroupStats group;
  FlowResult flow;
  GroupLiveView live;
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
    EXPECT_EQ(got.group.received, 10u);
    EXPECT_EQ(got.group.lost, 1);
    EXPECT_EQ(got.group.reordered, 0u);
    EXPECT_EQ(got.live.packets, 10u);
    EXPECT_EQ(got.live.bytes, 1000u);
    EXPECT_EQ(got.flow.rx_packets, 10u);
    // Latency: the 7 on-time frames only, as if the late ones were not there.
    EXPECT_EQ(got.group.latency_excluded, 3u);
    EXPECT_EQ(got.group.latency.count(), 7u);
    EXPECT_EQ(got.group.latency.max(), 30'000u);
    EXPECT_EQ(got.group.latency.max(), ref.group.latency.max());
    EXPECT_EQ(got.flow.latency_max_ns, 30'000u);
    EXPECT_EQ(got.flow.latency_last_ns, 30'000u);
    // The flow's jitter runs over the same transits as without the late frames.
    EXPECT_EQ(got.flow.jitter_ns, ref.flow.jitter_ns);
    EXPECT_EQ(ref.group.latency_excluded, 0u);
  }
}

}  // namespace
}  // namespace fg::rx
