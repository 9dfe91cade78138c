// stats/histogram.h: log-linear latency histogram (HdrHistogram's layout).
//
// Values (ns) below 128 have a bucket each; above, every power of two is cut
// into 128 linear sub-buckets, so a bucket is at most 1/128 of its value wide
// and a percentile read from it is within 0.4 % (half a bucket) of the true
// sample, from 1 ns up to 2^40 ns (18 minutes). Min, max, count and sum are
// exact. Recording is a count-leading-zeros, a shift and an increment: no
// division, no branch on the value's magnitude beyond one compare.
//
//   fg::stats::LatencyHistogram h;
//   h.Record(1234);
//   h.Merge(other_lcore_histogram);
//   double p99 = h.Percentile(99.0);   // ns
#pragma once

#include <array>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace fg::stats {

class LatencyHistogram {
 public:
  static constexpr int kSubBits = 7;
  static constexpr uint64_t kSub = 1u << kSubBits;  // 128 sub-buckets per power of two
  static constexpr int kMaxExp = 40;                // values up to 2^40 ns
  static constexpr size_t kBuckets = (kMaxExp - kSubBits + 1) * kSub;

  static size_t Index(uint64_t v) {
    if (v < kSub) return static_cast<size_t>(v);
    if (v >= (uint64_t{1} << kMaxExp)) v = (uint64_t{1} << kMaxExp) - 1;  // clamp, counted in overflow
    const int e = 63 - std::countl_zero(v);                               // >= kSubBits
    return static_cast<size_t>(e - kSubBits + 1) * kSub + ((v >> (e - kSubBits)) & (kSub - 1));
  }
  // The lowest value of bucket i, and its width.
  static uint64_t BucketLow(size_t i) {
    if (i < kSub) return i;
    const int e = static_cast<int>(i / kSub) + kSubBits - 1;
    return (uint64_t{1} << e) + ((i % kSub) << (e - kSubBits));
  }
  static uint64_t BucketWidth(size_t i) { return i < kSub ? 1 : uint64_t{1} << (i / kSub - 1); }

  LatencyHistogram() : counts_(kBuckets, 0) {}

  void Record(uint64_t ns) { Record(ns, 1); }
  // `n` samples of the same value. One thread records; others may take a
  // Snapshot() meanwhile: every field is stored with a relaxed atomic store
  // (a plain mov on x86), as fg::Counter does.
  void Record(uint64_t ns, uint64_t n) {
    Bump(counts_[Index(ns)], n);
    Bump(count_, n);
    Bump(sum_, ns * n);
    if (ns < min_) Store(min_, ns);
    if (ns > max_) Store(max_, ns);
    if (ns >= (uint64_t{1} << kMaxExp)) Bump(overflow_, n);
  }
  // A copy taken while another thread records (relaxed loads: each field is
  // whole, the fields may be a few samples apart).
  LatencyHistogram Snapshot() const;
  void Merge(const LatencyHistogram& o);
  // What was recorded since `base` (an earlier Snapshot of this histogram):
  // counts and sum exact; min and max those of the buckets that grew.
  LatencyHistogram Since(const LatencyHistogram& base) const;
  void Clear();

  uint64_t count() const { return count_; }
  uint64_t min() const { return count_ ? min_ : 0; }
  uint64_t max() const { return max_; }
  double mean() const { return count_ ? static_cast<double>(sum_) / static_cast<double>(count_) : 0; }
  uint64_t overflow() const { return overflow_; }  // samples above 2^40 ns, clamped
  // The p-th percentile (0 < p <= 100), in ns: the middle of the bucket that
  // holds the sample of rank ceil(p/100 * count), clamped to [min, max].
  double Percentile(double p) const;
  const std::vector<uint64_t>& counts() const { return counts_; }

 private:
  static void Store(uint64_t& v, uint64_t x) { std::atomic_ref<uint64_t>(v).store(x, std::memory_order_relaxed); }
  static void Bump(uint64_t& v, uint64_t n) {
    std::atomic_ref<uint64_t> a(v);
    a.store(a.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  static uint64_t Load(const uint64_t& v) {
    return std::atomic_ref<uint64_t>(const_cast<uint64_t&>(v)).load(std::memory_order_relaxed);
  }
  std::vector<uint64_t> counts_;
  uint64_t count_ = 0;
  uint64_t sum_ = 0;
  uint64_t min_ = UINT64_MAX;
  uint64_t max_ = 0;
  uint64_t overflow_ = 0;
};

// A histogram's samples in `rows` rows from its min to its max on a log
// scale (a terminal's view, `show histogram`): row r counts the buckets
// whose middle is at or above from_ns[r] (and below the next row's).
struct LogRows {
  double lo_ns = 0, hi_ns = 0;  // the range shown (lo at least 1 ns; hi above lo)
  std::vector<double> from_ns;  // each row's lower bound
  std::vector<uint64_t> counts;
};
LogRows ToLogRows(const LatencyHistogram& h, int rows);

}  // namespace fg::stats
