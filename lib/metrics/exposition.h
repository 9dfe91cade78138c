// metrics/exposition.h: metric families as data, and their Prometheus text
// exposition (format 0.0.4).
//
// What fabricgen measures is put into MetricFamily values (the narrow
// interface: a packaged client library could take the same families); the
// text writer is one consumer. Counter samples are integers and printed
// exactly; histograms are cumulative buckets with _sum and _count.
//
//   std::vector<fg::metrics::MetricFamily> f(1);
//   f[0] = {"fabricgen_port_tx_packets_total", "Frames sent.", fg::metrics::Type::kCounter, {}};
//   f[0].samples.push_back({{{"port", "a"}}, 1234});
//   std::string text = fg::metrics::ToText(f);
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace fg::metrics {

enum class Type { kCounter, kGauge, kHistogram };

using Labels = std::vector<std::pair<std::string, std::string>>;

struct HistogramValue {
  std::vector<std::pair<double, uint64_t>> buckets;  // (upper bound, cumulative count), ascending; +Inf implied
  double sum = 0;
  uint64_t count = 0;  // the +Inf bucket
};

struct Sample {
  Labels labels;
  std::variant<uint64_t, double, HistogramValue> value;
};

struct MetricFamily {
  std::string name;  // [a-zA-Z_:][a-zA-Z0-9_:]*; counters end in _total
  std::string help;
  Type type = Type::kGauge;
  std::vector<Sample> samples;
};

// The text exposition of the families, in order. Names and label names must
// be valid (checked by the caller's tests); label values and help are escaped.
std::string ToText(const std::vector<MetricFamily>& families);

inline constexpr char kContentType[] = "text/plain; version=0.0.4; charset=utf-8";

}  // namespace fg::metrics
