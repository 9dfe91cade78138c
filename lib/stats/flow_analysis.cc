#include "stats/flow_analysis.h"

#include <algorithm>
#include <cmath>

namespace fg::stats {

double FlowLatency::Percentile(double p) const {
  if (count_ == 0) return 0;
  const uint64_t rank = std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(p / 100.0 * static_cast<double>(count_))));
  uint64_t seen = 0;
  for (size_t i = 0; i < kBuckets; ++i) {
    seen += counts_[i];
    if (seen < rank) continue;
    double low, width;
    if (i < kSub) {
      low = static_cast<double>(i);
      width = 1;
    } else {
      const int e = static_cast<int>(i / kSub) + kSubBits - 1;
      width = static_cast<double>(uint64_t{1} << (e - kSubBits));
      low = static_cast<double>(uint64_t{1} << e) + static_cast<double>(i % kSub) * width;
    }
    const double mid = i < kSub ? low : low + width / 2;
    return std::clamp(mid, static_cast<double>(min_), static_cast<double>(max_));
  }
  return static_cast<double>(max_);
}

void StreamStats::AddFlow(const FlowState& f) {
  cnp += f.cnp;
  nack += f.nack;
  ack += f.ack;
  payload_errors += f.payload_errors;
  if (!f.started()) return;
  ++flows_seen;
  received += f.received;
  lost += f.lost;
  duplicate += f.duplicate;
  reordered += f.reordered;
  late += f.late;
  ce += f.ce;
  loss_events += f.loss_events;
  loss_ns_total += f.loss_ns_total;
  loss_ns_max = std::max(loss_ns_max, f.loss_ns_max);
  max_extent = std::max(max_extent, f.max_extent);
  const uint64_t j = f.jitter16 >> 4;
  jitter_ns_max = std::max(jitter_ns_max, j);
  // Running mean over flows that had at least two packets.
  if (f.received >= 2) {
    ++jitter_flows;
    jitter_ns_mean += (static_cast<double>(j) - jitter_ns_mean) / static_cast<double>(jitter_flows);
  }
}

void StreamStats::Merge(const StreamStats& o) {
  latency.Merge(o.latency);
  latency_ce.Merge(o.latency_ce);
  const double total = static_cast<double>(jitter_flows + o.jitter_flows);
  if (total > 0) {
    jitter_ns_mean =
        (jitter_ns_mean * static_cast<double>(jitter_flows) + o.jitter_ns_mean * static_cast<double>(o.jitter_flows)) /
        total;
  }
  jitter_flows += o.jitter_flows;
  flows_seen += o.flows_seen;
  received += o.received;
  lost += o.lost;
  duplicate += o.duplicate;
  reordered += o.reordered;
  late += o.late;
  ce += o.ce;
  cnp += o.cnp;
  nack += o.nack;
  ack += o.ack;
  payload_errors += o.payload_errors;
  latency_excluded += o.latency_excluded;
  loss_events += o.loss_events;
  loss_ns_total += o.loss_ns_total;
  loss_ns_max = std::max(loss_ns_max, o.loss_ns_max);
  max_extent = std::max(max_extent, o.max_extent);
  jitter_ns_max = std::max(jitter_ns_max, o.jitter_ns_max);
}

}  // namespace fg::stats
