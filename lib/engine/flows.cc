#include "engine/engine.h"

#include <algorithm>

namespace fg::engine {

// Per-flow figures (StreamResult::per_flow): TX counts from the shards, RX
// from the owners' tables; every flow of a stream with at most
// options_.per_flow flows, else that many worst by loss, then by latency.
void LiveRun::CollectFlows() {
  if (options_.per_flow == 0) return;
  std::vector<std::vector<FlowReport>> flows(streams_.size());
  std::vector<std::vector<uint64_t>> txp(streams_.size()), txb(streams_.size()), skipped(streams_.size());
  std::vector<bool> per_flow_paced(streams_.size(), false);
  for (size_t i = 0; i < streams_.size(); ++i) {
    flows[i].resize(streams_[i].flows);
    txp[i].assign(streams_[i].flows, 0);
    txb[i].assign(streams_[i].flows, 0);
    skipped[i].assign(streams_[i].flows, 0);
  }
  for (const auto& t : txs_) {
    for (size_t i = 0; i < t->num_streams(); ++i) {
      const uint32_t k = t->stream(i).index;
      t->FlowSent(i, txp[k], txb[k]);
      if (t->FlowSkipped(i, skipped[k])) per_flow_paced[k] = true;
      if (!t->stream(i).dcqcn) continue;
      const std::vector<uint32_t>& fl = t->flows(i);
      for (uint32_t f = 0; f < fl.size(); ++f) flows[k][fl[f]].rate_timeline = t->rate_timeline(i, f);
    }
  }
  for (const auto& table : tables_) {
    for (const rx::FlowResult& f : table->Flows()) {
      const stream::CompiledStream& s = streams_[f.stream];
      flows[f.stream][f.flow - s.flow_id].rx = f;
    }
  }
  for (size_t i = 0; i < streams_.size(); ++i) {
    const stream::CompiledStream& s = streams_[i];
    for (uint32_t f = 0; f < s.flows; ++f) {
      FlowReport& r = flows[i][f];
      r.index = f;
      r.key = s.program.Flow(s.flow_id, f).key;
      r.owner_lcore = lcores_[placement_.owner[s.flow_id + f]];
      r.tx_packets = txp[i][f];
      r.tx_bytes = txb[i][f];
      if (per_flow_paced[i]) r.tx_slots_skipped = static_cast<int64_t>(skipped[i][f]);
      r.retransmits = result_.streams[i].retransmits;
    }
    StreamResult& sr = result_.streams[i];
    if (flows[i].size() <= options_.per_flow) {
      sr.per_flow = std::move(flows[i]);
      continue;
    }
    sr.per_flow_all = false;
    auto worse = [](const FlowReport& a, const FlowReport& b) {
      if (a.lost() != b.lost()) return a.lost() > b.lost();
      const uint64_t la = a.rx.latency_distribution ? a.rx.latency_max_ns : a.rx.latency_last_ns;
      const uint64_t lb = b.rx.latency_distribution ? b.rx.latency_max_ns : b.rx.latency_last_ns;
      if (la != lb) return la > lb;
      return a.index < b.index;
    };
    std::partial_sort(flows[i].begin(), flows[i].begin() + options_.per_flow, flows[i].end(), worse);
    flows[i].resize(options_.per_flow);
    std::sort(flows[i].begin(), flows[i].end(),
              [](const FlowReport& a, const FlowReport& b) { return a.index < b.index; });
    sr.per_flow = std::move(flows[i]);
  }
}

}  // namespace fg::engine
