// methods/ecn_marking: frames binned by the depth their latency shows, and
// Kmin, Kmax and Pmax read from the bins, against a RED curve written by hand.
#include "methods/ecn_marking.h"

#include <gtest/gtest.h>

#include <cmath>

#include "methods/kinds.h"

namespace fg::methods {
namespace {

constexpr double kBps = 20e6;       // 1 byte of queue: 400 ns
constexpr double kBaseNs = 50'000;  // the path's own latency

// RED: 0 below 30 KB, up to 20 % at 90 KB, 1 from there.
double Red(double depth) {
  if (depth < 30'000) return 0;
  if (depth >= 90'000) return 1;
  return 0.2 * (depth - 30'000) / 60'000;
}

// 1,000 frames at each depth of 0, 500, 1000, ... 150,000 B; of them
// round(1000 x RED(depth)) marked.
void Fill(stats::LatencyHistogram& all, stats::LatencyHistogram& marked) {
  for (double d = 0; d <= 150'000; d += 500) {
    const uint64_t ns = static_cast<uint64_t>(kBaseNs + d * 8e9 / kBps);
    all.Record(ns, 1000);
    const uint64_t m = static_cast<uint64_t>(std::llround(1000 * Red(d)));
    if (m != 0) marked.Record(ns, m);
  }
}

TEST(EcnMarking, FramesAreBinnedByTheDepthTheirLatencyShows) {
  stats::LatencyHistogram all, marked;
  Fill(all, marked);
  const std::vector<EcnBin> bins = BinByDepth(all, marked, kBaseNs, kBps, 10'000);
  ASSERT_EQ(bins.size(), 16u);  // 0..150 KB in 10 KB bins (150 KB is the 16th's lower edge)
  uint64_t frames = 0;
  for (size_t b = 0; b < bins.size(); ++b) {
    EXPECT_EQ(bins[b].depth_bytes, b * 10'000);
    frames += bins[b].frames;
  }
  EXPECT_EQ(frames, 301u * 1000);
  // Bins 0-2 (below 30 KB) unmarked; from 9 (90 KB) on, every frame.
  for (size_t b = 0; b < 3; ++b) EXPECT_EQ(bins[b].marked, 0u) << b;
  for (size_t b = 9; b < bins.size(); ++b) EXPECT_EQ(bins[b].marked, bins[b].frames) << b;
  // Between, the ramp's mean over the bin (within the histogram's 0.4 % in time).
  EXPECT_NEAR(bins[6].probability(), Red(65'000), 0.01);
}

TEST(EcnMarking, KminKmaxAndPmaxAreWhereTheBinsPutThem) {
  stats::LatencyHistogram all, marked;
  Fill(all, marked);
  const std::vector<EcnBin> bins = BinByDepth(all, marked, kBaseNs, kBps, 6'000);
  const EcnCurve c = FitCurve(bins, 6'000, 20);
  ASSERT_TRUE(c.kmin_bytes && c.kmax_bytes && c.pmax);
  EXPECT_NEAR(*c.kmin_bytes, 30'000, 6'000);  // within one bin
  EXPECT_NEAR(*c.kmax_bytes, 90'000, 6'000);
  EXPECT_NEAR(*c.pmax, 0.2, 0.03);
}

TEST(EcnMarking, NoMarksMeansNoCurve) {
  stats::LatencyHistogram all, marked;
  all.Record(100'000, 500);
  const EcnCurve c = FitCurve(BinByDepth(all, marked, kBaseNs, kBps, 10'000), 10'000, 20);
  EXPECT_FALSE(c.kmin_bytes);
  EXPECT_FALSE(c.kmax_bytes);
  EXPECT_FALSE(c.pmax);
}

TEST(EcnMarking, ThePlanNamesTheBottleneckAndMayNameTheConfiguredCurve) {
  auto plan = ParsePlan("e.yaml", R"(
ports: [{name: a}]
streams: [{name: s, rate: 1 kpps}]
tests:
  - ecn_marking: {streams: [s], bottleneck: 20 Mbps, bin: 6 KB, ramp: {frames: 130, gap: 100 ms, repetitions: 50},
                  configured: {kmin: 30 KB, kmax: 90 KB, pmax: 20 %}}
)");
  ASSERT_TRUE(plan.ok()) << plan.status();
  const auto& p = plan->tests[0].As<EcnMarkingParams>();
  EXPECT_EQ(p.bottleneck_bps, 20e6);
  EXPECT_EQ(p.bin_bytes, 6'000u);
  EXPECT_EQ(p.ramp_frames, 130u);
  EXPECT_EQ(p.ramp_repetitions, 50);
  ASSERT_TRUE(p.configured);
  EXPECT_EQ(p.configured->kmax, 90'000u);
  EXPECT_DOUBLE_EQ(p.configured->pmax, 0.2);
  auto bad = ParsePlan("e.yaml",
                       "ports: [{name: a}]\nstreams: [{name: s, rate: 1 kpps}]\n"
                       "tests:\n  - ecn_marking: {streams: [s], bin: 6 KB}\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(std::string(bad.status().message()).find("bottleneck"), std::string::npos) << bad.status();
}

}  // namespace
}  // namespace fg::methods
