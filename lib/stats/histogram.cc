#include "stats/histogram.h"

#include <algorithm>
#include <cmath>

namespace fg::stats {

LatencyHistogram LatencyHistogram::Snapshot() const {
  LatencyHistogram h;
  for (size_t i = 0; i < kBuckets; ++i) h.counts_[i] = Load(counts_[i]);
  h.count_ = Load(count_);
  h.sum_ = Load(sum_);
  h.min_ = Load(min_);
  h.max_ = Load(max_);
  h.overflow_ = Load(overflow_);
  return h;
}

LatencyHistogram LatencyHistogram::Since(const LatencyHistogram& base) const {
  LatencyHistogram h;
  for (size_t i = 0; i < kBuckets; ++i) {
    const uint64_t n = counts_[i] >= base.counts_[i] ? counts_[i] - base.counts_[i] : 0;
    if (n == 0) continue;
    h.counts_[i] = n;
    h.count_ += n;
    h.min_ = std::min(h.min_, BucketLow(i));
    h.max_ = std::max(h.max_, BucketLow(i) + BucketWidth(i) - 1);
  }
  h.sum_ = sum_ >= base.sum_ ? sum_ - base.sum_ : 0;
  h.overflow_ = overflow_ >= base.overflow_ ? overflow_ - base.overflow_ : 0;
  return h;
}

void LatencyHistogram::Merge(const LatencyHistogram& o) {
  for (size_t i = 0; i < kBuckets; ++i) counts_[i] += o.counts_[i];
  count_ += o.count_;
  sum_ += o.sum_;
  min_ = std::min(min_, o.min_);
  max_ = std::max(max_, o.max_);
  overflow_ += o.overflow_;
}

void LatencyHistogram::Clear() {
  std::fill(counts_.begin(), counts_.end(), 0);
  count_ = sum_ = max_ = overflow_ = 0;
  min_ = UINT64_MAX;
}

double LatencyHistogram::Percentile(double p) const {
  if (count_ == 0) return 0;
  const uint64_t rank = std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(p / 100.0 * count_)));
  uint64_t seen = 0;
  for (size_t i = 0; i < kBuckets; ++i) {
    seen += counts_[i];
    if (seen >= rank) {
      const double mid = static_cast<double>(BucketLow(i)) + (static_cast<double>(BucketWidth(i)) - 1) / 2.0;
      return std::clamp(mid, static_cast<double>(min()), static_cast<double>(max_));
    }
  }
  return static_cast<double>(max_);
}

LogRows ToLogRows(const LatencyHistogram& h, int rows) {
  LogRows out;
  out.lo_ns = std::max<double>(1, static_cast<double>(h.min()));
  out.hi_ns = std::max(out.lo_ns * 1.0001, static_cast<double>(h.max()) + 1);
  out.counts.assign(static_cast<size_t>(rows), 0);
  for (int r = 0; r < rows; ++r) {
    out.from_ns.push_back(out.lo_ns * std::pow(out.hi_ns / out.lo_ns, static_cast<double>(r) / rows));
  }
  for (size_t b = 0; b < h.counts().size(); ++b) {
    if (h.counts()[b] == 0) continue;
    const double mid = static_cast<double>(LatencyHistogram::BucketLow(b)) +
                       static_cast<double>(LatencyHistogram::BucketWidth(b)) / 2;
    const int r = std::clamp(
        static_cast<int>(std::log(std::max(mid, out.lo_ns) / out.lo_ns) / std::log(out.hi_ns / out.lo_ns) * rows), 0,
        rows - 1);
    out.counts[static_cast<size_t>(r)] += h.counts()[b];
  }
  return out;
}

}  // namespace fg::stats
