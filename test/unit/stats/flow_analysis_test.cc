#include "stats/flow_analysis.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

namespace fg::stats {
namespace {

struct Rig {
  FlowState f;
  StreamStats g;
  LossLog log{64};
  // Receives `seq` at time `rx` with a fixed 1 us latency.
  void Rx(uint32_t seq, uint64_t rx) { Observe(f, g, log, 3, seq, rx - 1000, rx, false); }
};

TEST(FlowAnalysis, InOrderStreamHasNoLossDupOrReorder) {
  Rig r;
  for (uint32_t s = 0; s < 1000; ++s) r.Rx(s, 10'000 + s * 100);
  EXPECT_EQ(r.f.received, 1000u);
  EXPECT_EQ(r.f.lost, 0);
  EXPECT_EQ(r.f.duplicate, 0u);
  EXPECT_EQ(r.f.reordered, 0u);
  EXPECT_EQ(r.f.loss_events, 0u);
  EXPECT_EQ(r.g.latency.min(), 1000u);
  EXPECT_EQ(r.g.latency.max(), 1000u);
  EXPECT_EQ(r.f.jitter16, 0u);
}

TEST(FlowAnalysis, GapIsOneLossEventWithItsDuration) {
  Rig r;
  for (uint32_t s = 0; s < 10; ++s) r.Rx(s, 1'000'000 + s * 100);   // last in-order at 1,000,900
  for (uint32_t s = 15; s < 20; ++s) r.Rx(s, 2'000'000 + s * 100);  // 10..14 lost; resumes at 2,001,500
  EXPECT_EQ(r.f.lost, 5);
  EXPECT_EQ(r.f.loss_events, 1u);
  EXPECT_EQ(r.f.loss_ns_max, 2'001'500u - 1'000'900u);
  ASSERT_EQ(r.log.events().size(), 1u);
  const LossEvent& e = r.log.events()[0];
  EXPECT_EQ(e.flow, 3u);
  EXPECT_EQ(e.first_seq, 10u);
  EXPECT_EQ(e.packets, 5u);
  EXPECT_EQ(e.start_ns, 1'000'900u);
  EXPECT_EQ(e.end_ns, 2'001'500u);
}

TEST(FlowAnalysis, DuplicatesAndReorderingAreToldApart) {
  Rig r;
  // 0 1 2 4 5 3 5 6 2 7: 3 arrives 2 late (extent 2), 5 and 2 are duplicates.
  for (uint32_t s : {0u, 1u, 2u, 4u, 5u, 3u, 5u, 6u, 2u, 7u}) r.Rx(s, 1000 + s);
  EXPECT_EQ(r.f.received, 10u);
  EXPECT_EQ(r.f.lost, 0);
  EXPECT_EQ(r.f.reordered, 1u);
  EXPECT_EQ(r.f.max_extent, 2u);
  EXPECT_EQ(r.f.duplicate, 2u);
  EXPECT_EQ(r.f.loss_events, 1u);  // the gap seen when 4 came before 3
}

TEST(FlowAnalysis, SequenceWrapsWithoutFalseLoss) {
  Rig r;
  for (uint32_t i = 0; i < 100; ++i) r.Rx(0xFFFFFFC0u + i, 1000 + i);  // starts near 2^32
  // The head (0 .. 0xFFFFFFBF) is >= 2^31 before: not counted as head loss.
  EXPECT_EQ(r.f.lost, 0);
  EXPECT_EQ(r.f.reordered, 0u);
  EXPECT_EQ(r.f.next_seq, 0xFFFFFFC0u + 100);  // wrapped to 36
}

TEST(FlowAnalysis, OlderThanTheWindowIsLate) {
  Rig r;
  for (uint32_t s = 0; s < 200; ++s) {
    if (s != 50) r.Rx(s, 1000 + s);
  }
  r.Rx(50, 5000);  // 149 behind: beyond the 64-packet window
  EXPECT_EQ(r.f.late, 1u);
  EXPECT_EQ(r.f.lost, 1);  // stays counted: can't tell it from a duplicate
  EXPECT_EQ(r.f.reordered, 0u);
}

TEST(FlowAnalysis, HeadLossCounts) {
  Rig r;
  r.Rx(7, 100);
  r.Rx(8, 200);
  EXPECT_EQ(r.f.lost, 7);
  ASSERT_EQ(r.log.events().size(), 1u);
  EXPECT_EQ(r.log.events()[0].packets, 7u);
}

// Differential check against a simple reference: a set of seen sequence
// numbers, on random drops, duplicates and bounded reorderings.
TEST(FlowAnalysis, MatchesAReferenceOnRandomImpairments) {
  std::mt19937 rng(1);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<uint32_t> sent;
    for (uint32_t s = 0; s < 2000; ++s) sent.push_back(s);
    std::vector<uint32_t> wire;
    uint64_t dups = 0;
    for (uint32_t s : sent) {
      const int x = static_cast<int>(rng() % 100);
      if (x < 3) continue;  // dropped
      wire.push_back(s);
      if (x >= 97) {
        wire.push_back(s);
        ++dups;
      }
    }
    // Bounded reordering: swap neighbours up to 20 apart.
    for (size_t i = 0; i + 20 < wire.size(); i += 37) std::swap(wire[i], wire[i + (rng() % 20) + 1]);
    Rig r;
    uint64_t t = 1000;
    for (uint32_t s : wire) r.Rx(s, t += 10);
    // Tail loss is invisible to sequence numbers: compare up to the highest received.
    const uint32_t highest = *std::max_element(wire.begin(), wire.end());
    uint64_t expect_lost = 0;
    std::vector<bool> seen(2000, false);
    for (uint32_t s : wire) seen[s] = true;
    for (uint32_t s = 0; s <= highest; ++s) expect_lost += seen[s] ? 0 : 1;
    EXPECT_EQ(r.f.lost, static_cast<int64_t>(expect_lost)) << trial;
    EXPECT_EQ(r.f.duplicate, dups) << trial;
    EXPECT_EQ(r.f.received, wire.size());
    EXPECT_EQ(r.f.late, 0u);
  }
}

TEST(FlowAnalysis, JitterFollowsRfc3550) {
  Rig r;
  // Transit alternates 1000, 1100 ns: |D| = 100 every packet; J converges to 100.
  for (uint32_t s = 0; s < 500; ++s) Observe(r.f, r.g, r.log, 0, s, 0, 1000 + (s % 2) * 100, false);
  EXPECT_NEAR(static_cast<double>(r.f.jitter16 >> 4), 100.0, 2.0);
  StreamStats g;
  g.AddFlow(r.f);
  EXPECT_NEAR(g.jitter_ns_mean, 100.0, 2.0);
}

}  // namespace
}  // namespace fg::stats
