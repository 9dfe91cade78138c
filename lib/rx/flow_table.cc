#include "rx/flow_table.h"

#include <algorithm>
#include <optional>

namespace fg::rx {

FlowTable::FlowTable(std::vector<OwnedFlow> flows, uint32_t num_streams, size_t loss_log_capacity,
                     bool per_flow_latency)
    : owned_(std::move(flows)),
      flows_(owned_.size()),
      streams_(num_streams),
      live_(new Live[num_streams]),
      events_(new stats::GroupLive[num_streams]),
      log_(loss_log_capacity) {
  if (per_flow_latency && owned_.size() <= kPerFlowLatencyFlows) flow_latency_.resize(owned_.size());
  per_flow_latency_ = !flow_latency_.empty();
}

// The cost per frame is in RxTask::PollImpl's comment (tools/count_instructions.sh).
void FlowTable::Deliver(const Handoff* recs, size_t n) {
  Run run;
  for (size_t i = 0; i < n; ++i) {
    if (i + 4 < n) Prefetch(recs[i + 4].slot);
    const Handoff& r = recs[i];
    if (r.kind != proto::RxKind::kData) [[unlikely]] {
      ObserveFeedback(r);
    } else {
      Observe(r.slot, r.seq, r.tx_ns, r.rx_ns, r.bytes, r.flags, run);
    }
  }
  Run done = run;
  Flush(done);
}

bool FlowTable::Sent(uint32_t slot, uint32_t seq) {
  stats::FlowState& f = flows_[slot];
  if (sent_ == nullptr) {  // no sender to ask: every sequence is taken
    f.sent_bound = UINT32_MAX;
    return true;
  }
  const SentBound b = sent_->Sent(slot);
  if (b.any) {
    f.sent_bound = UINT32_MAX;
    return true;
  }
  if (seq < b.next) {
    f.sent_bound = b.next;
    return true;
  }
  // Past the sender's wrap: a sequence of the last 2^31 before it (in flight then) was sent too.
  if (b.wrapped && static_cast<uint32_t>(b.next - 1 - seq) < (uint32_t{1} << 31)) return true;
  live_[owned_[slot].stream].invalid.Add(1);
  return false;
}

void FlowTable::ObserveLate(uint32_t slot, uint32_t seq, uint64_t tx_ns, uint64_t rx_ns, uint32_t bytes,
                            uint8_t flags) {
  stats::FlowState& f = flows_[slot];
  const OwnedFlow o = owned_[slot];
  const bool late = (flags & Handoff::kRxLate) != 0;
  const bool started = f.received != 0;
  const int64_t transit = f.last_transit;
  const uint64_t jitter16 = f.jitter16;
  const bool ce = (flags & Handoff::kCe) != 0;
  const uint64_t latency = stats::ObserveFlow(f, log_, o.flow, seq, tx_ns, rx_ns, ce, &events_[o.stream], bytes);
  if (late) {
    if (started) {  // the jitter goes on from the last frame whose time was its own
      f.last_transit = transit;
      f.jitter16 = jitter16;
    }
    ++streams_[o.stream].latency_excluded;
  } else {  // its latency is the device's: recorded here, outside Observe's runs
    streams_[o.stream].latency.Record(latency);
    if (ce) streams_[o.stream].latency_ce.Record(latency);
    if (per_flow_latency_) flow_latency_[slot].Record(latency);
  }
  if (responder_ != nullptr) {
    if (flags & Handoff::kIcrcBad) {
      responder_->OnIcrcError(slot);  // dropped, as a RoCE NIC drops it: no ACK, no delivery, no CNP
    } else {
      responder_->OnData(slot, seq, rx_ns, ce);
    }
  }
  live_[o.stream].packets.Add(1);
  live_[o.stream].bytes.Add(bytes);
}

void FlowTable::ObserveRead(const Handoff& h) {
  if (responder_ == nullptr) return;  // (the port's dispatch names only answered READs)
  const OwnedFlow o = owned_[h.slot];
  const bool ce = (h.flags & Handoff::kCe) != 0;
  // The requests the requester has sent bound which PSNs name one.
  std::optional<uint32_t> sent;
  if (sent_ != nullptr) {
    const SentBound b = sent_->Sent(h.slot);
    if (!b.wrapped && !b.any) sent = b.next;
  }
  const std::optional<uint32_t> seq = responder_->OnReadRequest(h.slot, h.seq, h.rx_ns, ce, sent);
  if (!seq) {  // no request the requester sent: moves nothing
    live_[o.stream].invalid.Add(1);
    return;
  }
  stats::ObserveFlow(flows_[h.slot], log_, o.flow, *seq, h.rx_ns, h.rx_ns, ce, &events_[o.stream], h.bytes);
  live_[o.stream].packets.Add(1);
  live_[o.stream].bytes.Add(h.bytes);
}

void FlowTable::Flush(Run& run) {
  if (run.n != 0) streams_[run.stream].latency.Record(run.latency, run.n);
  if (run.packets != 0) {
    live_[run.stream].packets.Add(run.packets);
    live_[run.stream].bytes.Add(run.bytes);
  }
  if (run.flow_n != 0 && per_flow_latency_) flow_latency_[run.flow_slot].Record(run.latency, run.flow_n);
  run.n = run.packets = run.bytes = 0;
  run.flow_n = 0;
  if (responder_ != nullptr) responder_->Flush();
}

StreamLiveView FlowTable::live(uint32_t stream) const {
  const stats::GroupLive& e = events_[stream];
  return StreamLiveView{live_[stream].packets.Read(), live_[stream].bytes.Read(), e.gap_packets.Read(),
                       e.duplicate.Read(),          e.reordered.Read(),        e.ce.Read()};
}

void FlowTable::Post(TopFlowsRequest& r) {
  r.flows.clear();
  r.flows.reserve(r.n);
  requests_.Post(r);
}

bool FlowTable::Served(const TopFlowsRequest& r) const { return requests_.Served(r); }

// A new request starts a scan; a scan in progress covers at most
// kTopFlowsSlotsPerPoll flows (about 2 us) per poll, answered once every
// flow has been seen. Flows scanned early show their figures of that moment:
// a view, not a snapshot.
void FlowTable::ServeSlow() {
  if (auto [r, seq] = requests_.Take(); r != nullptr) {
    top_ = r;
    top_seq_ = seq;
    top_pos_ = 0;
  }
  if (top_ == nullptr) return;
  TopFlowsRequest& r = *top_;
  const auto worse = &FlowView::Worse;
  if (r.n == 0) top_pos_ = flows_.size();
  const size_t end = std::min(flows_.size(), top_pos_ + kTopFlowsSlotsPerPoll);
  for (size_t slot = top_pos_; slot < end; ++slot) {
    const stats::FlowState& f = flows_[slot];
    if (!f.started()) continue;
    const FlowView v{owned_[slot].stream, owned_[slot].flow, f.received,
                     f.duplicate,        f.reordered,       f.ce,
                     f.jitter16 >> 4,    f.lost,            static_cast<uint64_t>(f.last_transit)};
    if (r.flows.size() == r.n && !worse(v, r.flows.back())) continue;
    if (r.flows.size() == r.n) r.flows.pop_back();
    r.flows.insert(std::upper_bound(r.flows.begin(), r.flows.end(), v, worse), v);
  }
  top_pos_ = end;
  if (top_pos_ == flows_.size()) {
    top_ = nullptr;
    requests_.Answer(top_seq_);
  }
}

std::vector<stats::StreamStats> FlowTable::Summaries() const {
  std::vector<stats::StreamStats> out(streams_.size());
  for (size_t g = 0; g < streams_.size(); ++g) {
    out[g].latency.Merge(streams_[g].latency);
    out[g].latency_ce.Merge(streams_[g].latency_ce);
    out[g].latency_excluded = streams_[g].latency_excluded;
  }
  for (size_t s = 0; s < flows_.size(); ++s) out[owned_[s].stream].AddFlow(flows_[s]);
  return out;
}

std::vector<FlowResult> FlowTable::Flows() const {
  std::vector<FlowResult> out(flows_.size());
  for (size_t s = 0; s < flows_.size(); ++s) {
    const stats::FlowState& f = flows_[s];
    FlowResult& r = out[s];
    r.stream = owned_[s].stream;
    r.flow = owned_[s].flow;
    r.rx_packets = f.received;
    r.rx_bytes = f.rx_bytes;
    r.duplicate = f.duplicate;
    r.reordered = f.reordered;
    r.late = f.late;
    r.ce = f.ce;
    r.cnp = f.cnp;
    r.nack = f.nack;
    r.ack = f.ack;
    r.lost_seq = f.lost;
    r.first_rx_ns = f.first_rx_ns;
    r.last_rx_ns = f.last_rx_ns;
    r.latency_last_ns = static_cast<uint64_t>(f.last_transit);
    r.jitter_ns = f.jitter16 >> 4;
    if (!flow_latency_.empty() && flow_latency_[s].count() != 0) {
      r.latency_distribution = true;
      r.latency_p50_ns = flow_latency_[s].Percentile(50);
      r.latency_p99_ns = flow_latency_[s].Percentile(99);
      r.latency_max_ns = flow_latency_[s].max();
    }
  }
  return out;
}

}  // namespace fg::rx
