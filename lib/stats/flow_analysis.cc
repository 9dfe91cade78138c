#include "stats/flow_analysis.h"

#include <algorithm>

namespace fg::stats {

void GroupStats::AddFlow(const FlowState& f) {
  cnp += f.cnp;
  nack += f.nack;
  payload_errors += f.payload_errors;
  if (!f.started) return;
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

void GroupStats::Merge(const GroupStats& o) {
  latency.Merge(o.latency);
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
  payload_errors += o.payload_errors;
  loss_events += o.loss_events;
  loss_ns_total += o.loss_ns_total;
  loss_ns_max = std::max(loss_ns_max, o.loss_ns_max);
  max_extent = std::max(max_extent, o.max_extent);
  jitter_ns_max = std::max(jitter_ns_max, o.jitter_ns_max);
}

}  // namespace fg::stats
