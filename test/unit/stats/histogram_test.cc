#include "stats/histogram.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

namespace fg::stats {
namespace {

TEST(LatencyHistogram, BucketsTileTheRangeWithoutGapsOrOverlap) {
  uint64_t next = 0;
  for (size_t i = 0; i < LatencyHistogram::kBuckets; ++i) {
    ASSERT_EQ(LatencyHistogram::BucketLow(i), next) << i;
    ASSERT_EQ(LatencyHistogram::Index(next), i);
    const uint64_t last = next + LatencyHistogram::BucketWidth(i) - 1;
    ASSERT_EQ(LatencyHistogram::Index(last), i);
    // Relative width <= 1/128 above the exact range.
    if (i >= LatencyHistogram::kSub) {
      ASSERT_LE(LatencyHistogram::BucketWidth(i) * 128, next) << i;
    }
    next = last + 1;
  }
  EXPECT_EQ(next, uint64_t{1} << LatencyHistogram::kMaxExp);
}

// Percentiles against the exact order statistics of the same samples: within
// 1 % from 10 ns to 10 s (the bound; the design bound is 0.4 %).
TEST(LatencyHistogram, PercentilesWithinOnePercentOfExactFrom10nsTo10s) {
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> dist(std::log(5000.0), 3.0);  // spans ns .. s
  std::vector<uint64_t> samples;
  LatencyHistogram h;
  for (int i = 0; i < 200000; ++i) {
    const uint64_t v = std::clamp<uint64_t>(static_cast<uint64_t>(dist(rng)), 10, 10'000'000'000ull);
    samples.push_back(v);
    h.Record(v);
  }
  std::sort(samples.begin(), samples.end());
  for (double p : {1.0, 10.0, 50.0, 90.0, 95.0, 99.0, 99.9, 99.99, 100.0}) {
    const uint64_t rank = std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(p / 100 * samples.size())));
    const double exact = static_cast<double>(samples[rank - 1]);
    EXPECT_NEAR(h.Percentile(p), exact, exact * 0.01) << "P" << p;
  }
  EXPECT_EQ(h.min(), samples.front());
  EXPECT_EQ(h.max(), samples.back());
  EXPECT_EQ(h.count(), samples.size());
}

TEST(LatencyHistogram, ExactBelow128AndMerge) {
  LatencyHistogram a, b;
  for (uint64_t v = 1; v <= 100; ++v) (v % 2 ? a : b).Record(v);
  a.Merge(b);
  EXPECT_EQ(a.count(), 100u);
  EXPECT_DOUBLE_EQ(a.Percentile(50), 50.0);
  EXPECT_DOUBLE_EQ(a.Percentile(100), 100.0);
  EXPECT_DOUBLE_EQ(a.mean(), 50.5);
  EXPECT_EQ(a.min(), 1u);
  a.Clear();
  EXPECT_EQ(a.count(), 0u);
  EXPECT_EQ(a.Percentile(50), 0.0);
}

TEST(LatencyHistogram, RecordingNEqualSamplesAtOnceEqualsNRecords) {
  LatencyHistogram one, batch;
  const uint64_t values[] = {5, 127, 128, 1000, 123456789, uint64_t{1} << 41};
  const uint64_t counts[] = {1, 3, 32, 7, 2, 4};
  for (int i = 0; i < 6; ++i) {
    for (uint64_t k = 0; k < counts[i]; ++k) one.Record(values[i]);
    batch.Record(values[i], counts[i]);
  }
  EXPECT_EQ(batch.counts(), one.counts());
  EXPECT_EQ(batch.count(), 49u);
  EXPECT_EQ(batch.min(), one.min());
  EXPECT_EQ(batch.max(), one.max());
  EXPECT_EQ(batch.mean(), one.mean());
  EXPECT_EQ(batch.overflow(), 4u);
  EXPECT_EQ(batch.Percentile(50), one.Percentile(50));
}

TEST(LatencyHistogram, LogRowsSpanMinToMaxAndKeepEverySample) {
  LatencyHistogram h;
  h.Record(100, 10);      // exact below 128
  h.Record(10'000, 5);    // two decades up
  h.Record(1'000'000, 1);
  const LogRows rows = ToLogRows(h, 20);
  ASSERT_EQ(rows.counts.size(), 20u);
  ASSERT_EQ(rows.from_ns.size(), 20u);
  EXPECT_DOUBLE_EQ(rows.lo_ns, 100);
  EXPECT_GT(rows.hi_ns, 1'000'000);
  EXPECT_DOUBLE_EQ(rows.from_ns[0], 100);
  uint64_t total = 0;
  for (uint64_t c : rows.counts) total += c;
  EXPECT_EQ(total, 16u);
  EXPECT_EQ(rows.counts[0], 10u);   // 100 ns: the first row
  EXPECT_EQ(rows.counts[10], 5u);   // 10 us: half way up the four decades (log scale)
  EXPECT_EQ(rows.counts[19], 1u);   // the max: the last row
}

}  // namespace
}  // namespace fg::stats
