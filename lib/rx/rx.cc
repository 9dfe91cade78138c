#include "rx/rx.h"

#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_mbuf_dyn.h>
#include <rte_prefetch.h>

#include <algorithm>
#include <cstring>

#include "base/units.h"
#include "proto/signature.h"

namespace fg::rx {

RxTask::RxTask(uint16_t port_id, uint16_t queue, uint32_t total_flows, const std::vector<GroupRange>& groups,
               uint32_t num_groups, TscClock clock, size_t loss_log_capacity, int ts_offset, uint64_t ts_flag,
               clock::ClockLine ts_line, int template_tag_offset, const clock::SharedClockLine* ts_shared)
    : port_id_(port_id),
      queue_(queue),
      clock_(clock),
      flow_to_slot_(total_flows, kNoSlot),
      group_verify_(num_groups, 0),
      groups_(num_groups),
      live_(new Live[num_groups + 1]),
      num_groups_(num_groups),
      log_(loss_log_capacity),
      stall_ticks_(clock.FromNs(kRxStallNs)),
      ts_offset_(ts_offset),
      ts_flag_(ts_flag),
      tag_off_(template_tag_offset),
      ts_shared_(ts_shared),
      ts_line_(ts_line) {
  UseLine(ts_line_);
  events_.reset(new stats::GroupLive[num_groups]);
  // Slots of the groups whose data arrives here first, then those whose
  // feedback only returns here (their signed frames find no slot).
  std::vector<GroupRange> ordered;
  for (const GroupRange& g : groups) {
    if (g.data) ordered.push_back(g);
  }
  for (const GroupRange& g : groups) {
    if (!g.data) ordered.push_back(g);
  }
  uint32_t slots = 0;
  for (const GroupRange& g : ordered) {
    slots += g.flows;
    if (g.data) data_slots_ += g.flows;
  }
  flows_.resize(slots);
  slot_group_.resize(slots);
  slot_flow_.resize(slots);
  // When the task's data flows are one contiguous run of ids in slot order
  // (the usual case), slot = flow - first: no table load per frame.
  identity_first_ = ordered.empty() ? 0 : ordered[0].first_flow;
  identity_ = true;
  uint32_t before = 0;
  for (const GroupRange& g : ordered) {
    if (!g.data) break;
    identity_ = identity_ && g.first_flow == identity_first_ + before;
    before += g.flows;
  }
  uint32_t slot = 0;
  for (const GroupRange& g : ordered) {
    if (g.verify_payload) group_verify_[g.group] = 1;
    for (uint32_t i = 0; i < g.flows; ++i, ++slot) {
      if (g.data) flow_to_slot_[g.first_flow + i] = slot;
      slot_group_[slot] = g.group;
      slot_flow_[slot] = g.first_flow + i;
      if (g.key_kind != GroupRange::KeyKind::kNone) {
        key_to_slot_.emplace(uint64_t{static_cast<uint8_t>(g.key_kind)} << 32 | (g.key_base + i), slot);
      }
    }
  }
}

// A frame without a signature: feedback addressed to one of our flows, or
// nothing we know. Off the fast path: control frames are few.
void RxTask::CountFeedback(const uint8_t* frame, uint32_t len) {
  const proto::Feedback fb = proto::ClassifyFeedback(frame, len);
  if (fb.kind == proto::Feedback::Kind::kNone) return;
  const GroupRange::KeyKind kind =
      fb.kind == proto::Feedback::Kind::kUetNack ? GroupRange::KeyKind::kUetPdc : GroupRange::KeyKind::kRoceQp;
  (fb.kind == proto::Feedback::Kind::kRoceCnp   ? fb_cnp_
   : fb.kind == proto::Feedback::Kind::kRoceNak ? fb_nak_
                                                : fb_nack_)
      .Add(1);
  auto it = key_to_slot_.find(uint64_t{static_cast<uint8_t>(kind)} << 32 | fb.key);
  if (it == key_to_slot_.end()) {
    fb_unmatched_.Add(1);
    return;
  }
  stats::FlowState& f = flows_[it->second];
  if (fb.kind == proto::Feedback::Kind::kRoceCnp) {
    ++f.cnp;
  } else {
    ++f.nack;
  }
}

RxTask::~RxTask() = default;

// Two passes over the burst (VPP's shape): the first finds each frame's
// signature and flow slot and prefetches that flow's state, the second
// updates it, so the cache misses of a million-flow table overlap instead of
// stalling one after another.
unsigned RxTask::Poll() { return ts_offset_ >= 0 ? PollImpl<true>() : PollImpl<false>(); }

void RxTask::Post(RxRequest& r) {
  if (r.kind == RxRequest::Kind::kTopFlows) {
    r.flows.clear();
    r.flows.reserve(r.n);
  } else if (r.kind == RxRequest::Kind::kCapture) {
    r.data.assign(r.n * r.snaplen, 0);
    r.caplen.assign(r.n, 0);
    r.wire_len.assign(r.n, 0);
    r.rx_ns.assign(r.n, 0);
    r.captured.store(0, std::memory_order_relaxed);
  }
  req_.store(&r, std::memory_order_relaxed);
  req_seq_.store(req_seq_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
}

bool RxTask::Served(const RxRequest& r) const {
  return req_.load(std::memory_order_relaxed) == &r &&
         ack_seq_.load(std::memory_order_acquire) == req_seq_.load(std::memory_order_relaxed);
}

// On the lcore, between bursts: one load when nothing is asked.
void RxTask::ServeRequest() {
  const uint64_t seq = req_seq_.load(std::memory_order_acquire);
  if (seq == handled_seq_) return;
  handled_seq_ = seq;
  RxRequest& r = *req_.load(std::memory_order_relaxed);
  switch (r.kind) {
    case RxRequest::Kind::kTopFlows:
      top_ = &r;
      top_seq_ = seq;
      top_pos_ = 0;
      break;
    case RxRequest::Kind::kCapture:
      capture_ = &r;
      capture_seq_ = seq;
      if (r.n == 0) {
        capture_ = nullptr;
        ack_seq_.store(seq, std::memory_order_release);
      }
      break;
    case RxRequest::Kind::kCancel:
      capture_ = nullptr;
      top_ = nullptr;
      ack_seq_.store(seq, std::memory_order_release);
      break;
  }
}

// Part of a top-flows request: at most kTopFlowsSlotsPerPoll flows (about
// 2 us of a poll), answered once every flow has been seen. Flows scanned
// early show their figures of that moment: a view, not a snapshot.
void RxTask::ScanTopFlows() {
  RxRequest& r = *top_;
  // The n worst flows, kept sorted in the reserved vector (no allocation).
  auto worse = [](const FlowView& a, const FlowView& b) {
    if (a.lost != b.lost) return a.lost > b.lost;
    if (a.duplicate + a.reordered != b.duplicate + b.reordered) {
      return a.duplicate + a.reordered > b.duplicate + b.reordered;
    }
    return a.received > b.received;
  };
  if (r.n == 0) top_pos_ = flows_.size();  // nothing asked for
  const size_t end = std::min(flows_.size(), top_pos_ + kTopFlowsSlotsPerPoll);
  for (size_t slot = top_pos_; slot < end; ++slot) {
    const stats::FlowState& f = flows_[slot];
    if (!f.started) continue;
    const FlowView v{slot_group_[slot], slot_flow_[slot], f.received,
                     f.duplicate,       f.reordered,      f.ce,
                     f.jitter16 >> 4,   f.lost,           static_cast<uint64_t>(f.last_transit)};
    if (r.flows.size() == r.n && !worse(v, r.flows.back())) continue;
    if (r.flows.size() == r.n) r.flows.pop_back();
    r.flows.insert(std::upper_bound(r.flows.begin(), r.flows.end(), v, worse), v);
  }
  top_pos_ = end;
  if (top_pos_ == flows_.size()) {
    top_ = nullptr;
    ack_seq_.store(top_seq_, std::memory_order_release);
  }
}

void RxTask::CaptureFrames(rte_mbuf** pkts, uint16_t n, uint64_t rx_ns) {
  RxRequest& r = *capture_;
  size_t k = r.captured.load(std::memory_order_relaxed);
  for (uint16_t i = 0; i < n && k < r.n; ++i, ++k) {
    const rte_mbuf* m = pkts[i];
    const uint32_t len = std::min<uint32_t>(rte_pktmbuf_data_len(m), r.snaplen);
    std::memcpy(r.data.data() + k * r.snaplen, rte_pktmbuf_mtod(m, const uint8_t*), len);
    r.caplen[k] = len;
    r.wire_len[k] = m->pkt_len;
    r.rx_ns[k] = rx_ns;
  }
  r.captured.store(k, std::memory_order_release);
  if (k == r.n) {
    capture_ = nullptr;
    ack_seq_.store(capture_seq_, std::memory_order_release);
  }
}

// Measured cost (tools/count_instructions.sh, as for TxTask::Poll): 267 instructions per
// packet in Poll on the net_ring loopback, 1 flow, 10^6 frames of 78 B
// (263 before the per-poll stall check: +1.5 %, empty polls included).
template <bool kPerPacketTs>
unsigned RxTask::PollImpl() {
  ServeRequest();
  if (top_ != nullptr) ScanTopFlows();
  rte_mbuf* pkts[kRxBurst];
  const uint64_t before = ReadTsc();
  const uint64_t since = before - last_poll_tsc_;
  const bool polled_before = last_poll_tsc_ != 0;
  last_poll_tsc_ = before;
  const uint16_t n = rte_eth_rx_burst(port_id_, queue_, pkts, kRxBurst);
  if (n == 0) return 0;
  if (since > stall_ticks_ && polled_before) {
    // Held up with frames waiting: the lcore was elsewhere (descheduled, or
    // a long TX poll on the same lcore); say so beside the latency figures.
    stalls_.Add(1);
    const uint64_t ns = clock_.ToNs(since);
    if (ns > stall_max_ns_.Read()) stall_max_ns_.Set(ns);
  }
  const uint64_t rx_ns = clock_.ToNs(ReadTsc());
  if (capture_ != nullptr) CaptureFrames(pkts, n, rx_ns);
  if constexpr (kPerPacketTs) {
    if (ts_shared_ != nullptr && ts_shared_->Refresh(ts_line_, ts_seen_)) UseLine(ts_line_);
  }
  const uint32_t nflows = static_cast<uint32_t>(flow_to_slot_.size());
  const uint32_t nslots = data_slots_;
  int32_t sig[kRxBurst];
  uint32_t end[kRxBurst];
  uint32_t slots[kRxBurst];
  uint8_t ecn[kRxBurst];
  rte_prefetch0(rte_pktmbuf_mtod(pkts[0], void*));
  for (uint16_t i = 0; i < n; ++i) {
    if (i + 1 < n) rte_prefetch0(rte_pktmbuf_mtod(pkts[i + 1], void*));
    const rte_mbuf* m = pkts[i];
    const uint8_t* d = rte_pktmbuf_mtod(m, const uint8_t*);
    ecn[i] = 0;
    sig[i] = proto::FindSignatureOffset(d, m->data_len, proto::SignatureParse{}, &ecn[i], &end[i]);
    slots[i] = kNoSlot;
    if (sig[i] >= 0) {
      const uint32_t flow = proto::Load24(d + sig[i] + 3);
      if (identity_) {
        if (flow - identity_first_ < nslots) slots[i] = flow - identity_first_;
      } else if (flow < nflows) {
        slots[i] = flow_to_slot_[flow];
      }
      if (slots[i] != kNoSlot) {
        // Both cache lines of the flow's state: pass 2 touches each.
        rte_prefetch0(&flows_[slots[i]]);
        rte_prefetch0(reinterpret_cast<const char*>(&flows_[slots[i]]) + 64);
      }
    }
  }
  // Runs of equal latency in one group (a TX burst shares its TX time, a
  // software RX time its burst) go into the histogram as one update.
  uint32_t run_group = 0;
  uint64_t run_latency = 0, run_n = 0;
  for (uint16_t i = 0; i < n; ++i) {
    const rte_mbuf* m = pkts[i];
    const uint8_t* d = rte_pktmbuf_mtod(m, const uint8_t*);
    const uint64_t bytes = m->pkt_len + kEthFcsLen;  // PMDs strip the FCS
    const uint32_t slot = slots[i];
    if (slot == kNoSlot) {
      live_[num_groups_].packets.Add(1);
      live_[num_groups_].bytes.Add(bytes);
      if (sig[i] < 0) CountFeedback(d, m->data_len);
      continue;
    }
    const uint8_t* s = d + sig[i];
    const uint32_t group = slot_group_[slot];
    uint64_t t = rx_ns;
    if constexpr (kPerPacketTs) {
      if (m->ol_flags & ts_flag_) {
        const uint64_t v = *RTE_MBUF_DYNFIELD(m, ts_offset_, const uint64_t*);
        const double d = static_cast<double>(static_cast<int64_t>(v - ts_nic_ref_));
        t = ts_tsc_ref_ + static_cast<uint64_t>(static_cast<int64_t>(ts_c_ + d * ts_ns_per_unit_));
      }
    }
    if (group_verify_[group] && proto::CountPayloadErrors(d, static_cast<uint32_t>(sig[i]), end[i]) != 0) {
      ++flows_[slot].payload_errors;
    }
    const uint64_t latency = stats::ObserveFlow(flows_[slot], log_, proto::Load24(s + 3), proto::Load32(s + 6),
                                                proto::Load48(s + 10), t, ecn[i] == 3, &events_[group]);
    if (latency != run_latency || group != run_group) {
      if (run_n != 0) groups_[run_group].latency.Record(run_latency, run_n);
      run_group = group;
      run_latency = latency;
      run_n = 0;
    }
    ++run_n;
    live_[group].packets.Add(1);
    live_[group].bytes.Add(bytes);
  }
  if (run_n != 0) groups_[run_group].latency.Record(run_latency, run_n);
  // Whatever wrote these frames (a NIC, a test's mover), TX must not take
  // them for intact templates when they come back from the pool.
  // Back to the pool in one put when every mbuf is direct, unshared, one
  // segment and from one pool (what the PMD's fast-free offload assumes);
  // otherwise the general free.
  rte_mempool* pool = pkts[0]->pool;
  bool simple = true;
  for (uint16_t i = 0; i < n; ++i) {
    rte_mbuf* m = pkts[i];
    if (tag_off_ >= 0) *RTE_MBUF_DYNFIELD(m, tag_off_, uint64_t*) = 0;
    simple &=
        m->pool == pool && rte_mbuf_refcnt_read(m) == 1 && m->next == nullptr && m->nb_segs == 1 && RTE_MBUF_DIRECT(m);
  }
  if (simple) {
    rte_mempool_put_bulk(pool, reinterpret_cast<void**>(pkts), n);
  } else {
    rte_pktmbuf_free_bulk(pkts, n);
  }
  return n;
}

RxCounters RxTask::counters(uint32_t group) const {
  return RxCounters{live_[group].packets.Read(), live_[group].bytes.Read()};
}

RxCounters RxTask::unknown() const { return counters(num_groups_); }

GroupLiveView RxTask::live(uint32_t group) const {
  const stats::GroupLive& e = events_[group];
  return GroupLiveView{live_[group].packets.Read(), live_[group].bytes.Read(), e.gap_packets.Read(),
                       e.duplicate.Read(),          e.reordered.Read(),        e.ce.Read()};
}

std::vector<stats::GroupStats> RxTask::Summaries() const {
  std::vector<stats::GroupStats> out(groups_.size());
  for (size_t g = 0; g < groups_.size(); ++g) out[g].latency.Merge(groups_[g].latency);
  for (size_t s = 0; s < flows_.size(); ++s) out[slot_group_[s]].AddFlow(flows_[s]);
  return out;
}

}  // namespace fg::rx
