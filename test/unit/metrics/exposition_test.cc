#include "metrics/exposition.h"

#include <gtest/gtest.h>

#include "metrics/hub.h"

namespace fg::metrics {
namespace {

TEST(Exposition, TextFormatWithEscapesAndAHistogram) {
  std::vector<MetricFamily> f(3);
  f[0] = {"fg_frames_total", "Frames \\ sent.\nSecond line.", Type::kCounter, {}};
  f[0].samples.push_back({{{"stream", "a \"b\"\\c\nd"}, {"port", "p0"}}, uint64_t{18446744073709551615u}});
  f[1] = {"fg_rate", "Rate.", Type::kGauge, {}};
  f[1].samples.push_back({{}, 0.5});
  f[2] = {"fg_latency_seconds", "Latency.", Type::kHistogram, {}};
  f[2].samples.push_back({{{"stream", "a"}}, HistogramValue{{{1e-6, 2}, {2e-6, 5}}, 1.25e-5, 7}});
  EXPECT_EQ(ToText(f),
            "# HELP fg_frames_total Frames \\\\ sent.\\nSecond line.\n"
            "# TYPE fg_frames_total counter\n"
            "fg_frames_total{stream=\"a \\\"b\\\"\\\\c\\nd\",port=\"p0\"} 18446744073709551615\n"
            "# HELP fg_rate Rate.\n"
            "# TYPE fg_rate gauge\n"
            "fg_rate 0.5\n"
            "# HELP fg_latency_seconds Latency.\n"
            "# TYPE fg_latency_seconds histogram\n"
            "fg_latency_seconds_bucket{stream=\"a\",le=\"1e-06\"} 2\n"
            "fg_latency_seconds_bucket{stream=\"a\",le=\"2e-06\"} 5\n"
            "fg_latency_seconds_bucket{stream=\"a\",le=\"+Inf\"} 7\n"
            "fg_latency_seconds_sum{stream=\"a\"} 1.25e-05\n"
            "fg_latency_seconds_count{stream=\"a\"} 7\n");
}

TEST(Exposition, LatencyHistogramToCumulativeBuckets) {
  stats::LatencyHistogram h;
  h.Record(500, 3);          // 0.5 us: below the 1 us bound
  h.Record(1'500, 2);        // 1.5 us: in (1, 2] us
  h.Record(40'000'000);      // 40 ms: in (20, 50] ms
  h.Record(30'000'000'000);  // 30 s: above the last bound (10 s), only in +Inf
  const std::vector<double> bounds = LatencyBoundsSeconds();
  ASSERT_EQ(bounds.size(), 22u);  // 1, 2, 5 x 1e-6 .. 1e0, then 10
  EXPECT_DOUBLE_EQ(bounds.front(), 1e-6);
  EXPECT_DOUBLE_EQ(bounds.back(), 10);
  const HistogramValue v = ToPrometheus(h, bounds);
  EXPECT_EQ(v.count, 7u);
  EXPECT_EQ(v.buckets[0].second, 3u);   // <= 1 us
  EXPECT_EQ(v.buckets[1].second, 5u);   // <= 2 us
  EXPECT_DOUBLE_EQ(v.buckets[12].first, 10e-3);
  EXPECT_EQ(v.buckets[12].second, 5u);  // <= 10 ms
  EXPECT_DOUBLE_EQ(v.buckets[14].first, 50e-3);
  EXPECT_EQ(v.buckets[14].second, 6u);  // <= 50 ms
  EXPECT_EQ(v.buckets.back().second, 6u);
  EXPECT_NEAR(v.sum, (3 * 500 + 2 * 1500 + 40e6 + 30e9) / 1e9, 1e-9);
}

}  // namespace
}  // namespace fg::metrics
