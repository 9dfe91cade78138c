#include "clock/clock_fit.h"

#include <gtest/gtest.h>

#include <random>

namespace fg::clock {
namespace {

// A 156.25 MHz tick clock running 30 ppm fast, read with up to +/-40 ns of
// bracket jitter: the fit recovers rate, drift and offset to within the jitter.
TEST(ClockFit, RecoversATickClockWithDrift) {
  const double nominal = 156.25e6 / 1e9;  // ticks per ns
  const double true_slope = nominal * (1 + 30e-6);
  const double tick0 = 123456789.0;
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> jitter(0, 80);
  ClockFit fit(nominal);
  const uint64_t base = 5'000'000'000'000'000ull;  // TSC ns far from zero: precision matters
  for (int i = 0; i < 64; ++i) {
    const uint64_t t = base + i * 10'000'000ull;  // every 10 ms
    const uint64_t nic = static_cast<uint64_t>(tick0 + true_slope * (t - base));
    const int j = jitter(rng);
    fit.Add(t - j / 2, nic, t + (j - j / 2));
  }
  auto line = fit.Solve();
  ASSERT_TRUE(line.has_value());
  EXPECT_NEAR(line->drift_ppm(), 30.0, 0.5);
  EXPECT_LT(line->residual_ns, 40.0);
  // A NIC value maps back to the TSC ns at which it was true.
  const uint64_t t = base + 333'333'333ull;
  const uint64_t nic = static_cast<uint64_t>(tick0 + true_slope * (t - base));
  EXPECT_NEAR(static_cast<double>(line->ToTscNs(nic)), static_cast<double>(t), 50.0);
}

TEST(ClockFit, MicrosecondClockMapsWithSlopeOneThousandth) {
  ClockFit fit(1e-3);
  fit.Add(1'000'000, 1000, 1'000'000);
  fit.Add(2'000'000, 2000, 2'000'000);
  auto line = fit.Solve();
  ASSERT_TRUE(line.has_value());
  EXPECT_DOUBLE_EQ(line->slope, 1e-3);
  EXPECT_EQ(line->ToTscNs(1500), 1'500'000u);
  EXPECT_NEAR(line->drift_ppm(), 0.0, 1e-6);
}

TEST(ClockFit, NeedsTwoDistinctInstants) {
  ClockFit fit;
  EXPECT_FALSE(fit.Solve().has_value());
  fit.Add(100, 5, 100);
  EXPECT_FALSE(fit.Solve().has_value());
  fit.Add(100, 6, 100);
  EXPECT_FALSE(fit.Solve().has_value());  // same instant
  fit.Add(200, 106, 200);
  EXPECT_TRUE(fit.Solve().has_value());
}

TEST(ClockFit, KeepsTheNewestSamples) {
  ClockFit fit(1, 4);
  for (int i = 0; i < 10; ++i) fit.Add(i * 100, i < 6 ? 0 : i * 100 + 7, i * 100);
  EXPECT_EQ(fit.size(), 4u);
  auto line = fit.Solve();  // only the last 4 (a clean line, offset 7) remain
  ASSERT_TRUE(line.has_value());
  EXPECT_NEAR(line->slope, 1.0, 1e-12);
  EXPECT_EQ(line->ToTscNs(907), 900u);
}

// A PHC in real-time mode counts ns since 1970 (1.7e18, beyond a double's
// 2^53): the line must still map single nanoseconds.
TEST(ClockFit, KeepsNanosecondsAtPhcScale) {
  const uint64_t epoch = 1'764'500'000'000'000'000ull;  // late 2025, ns
  const uint64_t tsc0 = 987'654'321'000ull;
  ClockFit fit(1.0);
  auto nic_at = [&](uint64_t tsc_ns) {  // +7 ppm against the TSC
    return epoch + (tsc_ns - tsc0) + (tsc_ns - tsc0) * 7 / 1'000'000;
  };
  for (uint64_t i = 0; i < 32; ++i) {
    const uint64_t t = tsc0 + i * 10'000'000;  // every 10 ms
    fit.Add(t, nic_at(t), t);
  }
  auto line = fit.Solve();
  ASSERT_TRUE(line.has_value());
  EXPECT_NEAR(line->drift_ppm(), 7.0, 0.01);
  for (uint64_t t : {tsc0 + 1, tsc0 + 123'456'789, tsc0 + 310'000'003}) {
    EXPECT_NEAR(static_cast<double>(line->ToTscNs(nic_at(t))), static_cast<double>(t), 1.0) << t;
  }
}

}  // namespace
}  // namespace fg::clock
