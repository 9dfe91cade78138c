// rx/flow_table.h: the RX analysis state of the flows one lcore owns.
//
// Every flow (a stream's QP, PDC or UDP port) has exactly one owner lcore,
// which holds its sequence, latency and feedback state here; nothing about a
// flow is shared. RX queues only classify: a frame (or a CNP, NAK or NACK)
// received by the owner is observed at once, one received elsewhere reaches
// the owner as a Handoff record over an SPSC ring (base/spsc_ring.h) and is
// observed on the owner's next poll. Records from the receiving lcore's own
// queues and from rings go through the same Deliver(), so the two paths
// count alike.
//
// Slots are the owned flows in increasing global flow id; each flow belongs
// to a stream (by its index: its latency histogram, live counters and events).
//
// A data frame counts for its flow only when its sequence is below what the
// flow's sender has stamped so far (SentSource: the TX task on this same
// lcore, since a flow's owner also sends it); a READ request only when its
// PSN names a request the requester has sent. Anything else was never sent:
// it is counted apart per stream (invalid(), the RX port's
// rx_invalid_packets) and moves no sequence, figure or responder state.
//
//   fg::rx::FlowTable t({{.stream = 0, .flow = 0}, {.stream = 0, .flow = 1}}, /*num_streams=*/1, 4096, true);
//   t.Deliver(recs, n);                    // on the owner lcore
//   auto sums = t.Summaries();             // after the lcore stopped
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "base/counter.h"
#include "base/request_slot.h"
#include "endpoint/feedback.h"
#include "endpoint/responder.h"
#include "stats/flow_analysis.h"

namespace fg::rx {

inline constexpr uint32_t kTopFlowsSlotsPerPoll = 1024;
// Per-flow latency distributions are kept when a table owns at most this
// many flows (4.6 KB each); beyond, per-flow reports give the last and max
// latency only.
inline constexpr uint32_t kPerFlowLatencyFlows = 4096;

// One received frame or feedback packet for the owner of its flow (32 B).
struct Handoff {
  // kRxLate: received in the RX lcore's catch-up after a stall (software RX
  // time late by the tester's own delay): counted, its latency left out.
  // kIcrcBad: RoCEv2 data on a responding port whose ICRC is wrong: counted
  // as the stream's (the device delivered it), not taken by the responder.
  enum Flags : uint8_t { kCe = 1, kPayloadError = 2, kRxLate = 4, kIcrcBad = 8 };
  // What an ACK or NAK said besides its PSN (`seq`).
  struct Said {  // (no member initializers: a union member)
    uint32_t msn;  // the responder's MSN
    uint8_t code;  // a NAK's syndrome code (0: PSN sequence error)
  };
  uint32_t slot = 0;  // in the owner's table
  uint32_t seq = 0;   // data: its sequence number; feedback, READ request: the PSN it names
  union {
    uint64_t tx_ns = 0;  // data: the signature's 48-bit TX stamp
    Said said;           // kRoceAck, kRoceNak: what the responder said
  };
  uint64_t rx_ns = 0;
  uint32_t bytes = 0;  // frame bytes, FCS included
  // kData: a test frame; kRoceReadRequest: a READ request this port answers
  // (seq: its PSN); the others: feedback to the flow's sender.
  proto::RxKind kind = proto::RxKind::kData;
  uint8_t flags = 0;
  // The owner's poll count when the record entered its ring (low 16 bits):
  // the owner measures how many of its polls a handoff took.
  uint16_t owner_poll = 0;
};
static_assert(sizeof(Handoff) == 32);

// How far a flow's sender has got: every frame it stamped has a sequence
// below `next` (RC go-back-N: below the highest sent before going back), and
// `wrapped` once it has sent 2^32 frames (sequences then start over, and a
// frame from before the wrap is still one it sent). `any`: the flow's frames
// are not this run's sender's (its RX port replays a capture `craft` wrote):
// every sequence counts.
struct SentBound {
  uint32_t next = 0;
  bool wrapped = false;
  bool any = false;
};

// The senders of a FlowTable's flows, asked on the owner lcore when a frame
// reaches the bound its flow last had: off the common path (a virtual call
// and two loads, ~20-40 cycles, once per flow per window of frames in
// flight; with one frame in flight per flow, a million flows round robin,
// once a frame).
class SentSource {
 public:
  virtual ~SentSource() = default;
  virtual SentBound Sent(uint32_t slot) const = 0;
};

struct OwnedFlow {
  uint32_t stream = 0;  // the stream's index in the trial
  uint32_t flow = 0;   // global flow id
};

struct RxCounters {
  uint64_t packets = 0;
  uint64_t bytes = 0;  // frame bytes, FCS included
};

// What a stream's counters say during the run (any thread, no locks): a
// counter block (base/counter.h), summed over the tables member by member.
struct StreamLiveView {
  uint64_t packets = 0, bytes = 0;
  uint64_t gap_packets = 0, duplicate = 0, reordered = 0, ce = 0;
  StreamLiveView& operator+=(const StreamLiveView& o) {
    EachCount(*this, o, [](uint64_t& x, uint64_t y) { x += y; });
    return *this;
  }
  StreamLiveView& operator-=(const StreamLiveView& o) {
    EachCount(*this, o, [](uint64_t& x, uint64_t y) { x -= y; });
    return *this;
  }
};

// One flow's figures, for a top-N view.
struct FlowView {
  uint32_t stream = 0, flow = 0;
  uint64_t received = 0, duplicate = 0, reordered = 0, ce = 0, jitter_ns = 0;
  int64_t lost = 0;              // gaps net of late fills (FlowState::lost, the sequence view; not lost_packets)
  uint64_t latency_last_ns = 0;  // the last frame's latency
  // Frames missing when their gap was seen (those that came late included):
  // RX has no TX count to tell lost from (show flows' gap, sequence_gap_packets).
  int64_t gap_packets() const { return lost + static_cast<int64_t>(reordered); }
  // The order of `show flows`: most gaps, then most duplicates and reorders, then most received.
  static bool Worse(const FlowView& a, const FlowView& b) {
    if (a.gap_packets() != b.gap_packets()) return a.gap_packets() > b.gap_packets();
    if (a.duplicate + a.reordered != b.duplicate + b.reordered) {
      return a.duplicate + a.reordered > b.duplicate + b.reordered;
    }
    return a.received > b.received;
  }
};

// One flow after the run (report.json per_flow).
struct FlowResult {
  uint32_t stream = 0, flow = 0;
  uint64_t rx_packets = 0, rx_bytes = 0;
  uint64_t duplicate = 0, reordered = 0, late = 0, ce = 0, cnp = 0, nack = 0, ack = 0;
  int64_t lost_seq = 0;  // gaps net of late fills (the sequence view)
  uint64_t first_rx_ns = 0, last_rx_ns = 0;
  uint64_t latency_last_ns = 0;
  bool latency_distribution = false;  // the percentiles below were kept
  double latency_p50_ns = 0, latency_p99_ns = 0;
  uint64_t latency_max_ns = 0;
  uint64_t jitter_ns = 0;
};

// A top-flows request from the control thread, served between bursts.
struct TopFlowsRequest {
  size_t n = 0;
  std::vector<FlowView> flows;  // filled by the lcore (capacity reserved by Post)
};

class FlowTable {
 public:
  // `flows` in increasing flow id; their slot is their position.
  FlowTable(std::vector<OwnedFlow> flows, uint32_t num_streams, size_t loss_log_capacity, bool per_flow_latency);

  uint32_t size() const { return static_cast<uint32_t>(flows_.size()); }
  // The far end of the owned flows a responding port receives (ACK, NAK,
  // CNP): every data record is also shown to it, and its ACKs due go out at
  // each Flush. Null: no flow of this table is answered.
  void SetResponder(endpoint::Responder* r) { responder_ = r; }
  // The RX time of the burst about to be observed (the responder's ACK delay clock).
  void SetClock(uint64_t now_ns) {
    if (responder_ != nullptr) responder_->SetClock(now_ns);
  }
  // The senders of the owned flows: every CNP, ACK, NAK or NACK matched to a
  // flow is also handed to it (DCQCN's reaction point). Null: counted only.
  void SetFeedbackSink(endpoint::FeedbackSink* s) { feedback_ = s; }
  // How far each owned flow's sender has got (the engine's TX tasks): data
  // and READ requests beyond it are invalid. Null: every sequence is taken.
  void SetSentSource(const SentSource* s) { sent_ = s; }
  const std::vector<OwnedFlow>& owned() const { return owned_; }

  // On the owner lcore: the state a data record will touch, ahead of Deliver.
  void Prefetch(uint32_t slot) const { __builtin_prefetch(&flows_[slot], 1); }
  // On the owner lcore: observes every record (data and feedback).
  void Deliver(const Handoff* recs, size_t n);
  // The same one record at a time (the RX task's own flows, no staging):
  // runs of one stream and one latency are added to the stream's counters and
  // histogram once, at Flush.
  struct Run {
    uint32_t stream = 0;
    uint64_t latency = 0, n = 0;      // frames of equal latency in a row
    uint64_t packets = 0, bytes = 0;  // frames of `stream` in a row
    // Per-flow distributions: frames of one flow with equal latency (`latency`) in a row.
    uint32_t flow_slot = 0, flow_n = 0;
  };
  // A data frame of the flow in `slot` (fields as in Handoff), and a feedback packet for it.
  [[gnu::always_inline]] inline void Observe(uint32_t slot, uint32_t seq, uint64_t tx_ns, uint64_t rx_ns,
                                             uint32_t bytes, uint8_t flags, Run& run);
  [[gnu::always_inline]] inline void ObserveFeedback(const Handoff& h);
  void Flush(Run& run);

  // Thread-safe, during the run.
  RxCounters counters(uint32_t stream) const {
    return RxCounters{live_[stream].packets.Read(), live_[stream].bytes.Read()};
  }
  StreamLiveView live(uint32_t stream) const;
  stats::LatencyHistogram LatencySnapshot(uint32_t stream) const { return streams_[stream].latency.Snapshot(); }
  uint64_t feedback_matched() const { return fb_matched_.Read(); }
  // Frames (data, READ requests) of the stream's flows their senders never
  // sent: counted apart (the stream's RX port's rx_invalid_packets).
  uint64_t invalid(uint32_t stream) const { return live_[stream].invalid.Read(); }

  // Control thread, while the owner polls: posts a top-flows request;
  // Served() turns true once the lcore has scanned every flow (in steps of
  // kTopFlowsSlotsPerPoll, so a million-flow table never stalls a poll).
  void Post(TopFlowsRequest& r);
  bool Served(const TopFlowsRequest& r) const;
  // On the owner lcore, once per poll: one load when nothing is asked.
  void ServeRequests() {
    if (top_ != nullptr || requests_.Pending()) ServeSlow();
  }

  // After the lcore has stopped.
  std::vector<stats::StreamStats> Summaries() const;
  const stats::LossLog& loss_log() const { return log_; }
  std::vector<FlowResult> Flows() const;

 private:
  struct alignas(64) Live {
    Counter packets, bytes;
    Counter invalid;  // frames never sent (written only when one comes)
  };
  void ServeSlow();
  // A READ request: data of its flow, its sequence from its PSN (the
  // responder's view of the QP), no latency (it carries no TX stamp); one
  // the requester never sent is invalid.
  void ObserveRead(const Handoff& h);
  // A data frame with kRxLate or kIcrcBad: counted and sequenced as any.
  // kRxLate: its latency (and its part in the flow's jitter) left out
  // (StreamStats::latency_excluded). kIcrcBad: not shown to the responder.
  // Counted straight into the stream's live counters: Observe's `run` never
  // has its address taken, so it stays in registers on the common path.
  [[gnu::noinline]] void ObserveLate(uint32_t slot, uint32_t seq, uint64_t tx_ns, uint64_t rx_ns, uint32_t bytes,
                                     uint8_t flags);
  // A frame at or beyond its flow's bound (FlowState::sent_bound): asks the
  // sender how far it has got; true when it sent `seq` (the bound moves up),
  // false when it never did (counted invalid).
  [[gnu::noinline]] bool Sent(uint32_t slot, uint32_t seq);
  std::vector<OwnedFlow> owned_;
  std::vector<stats::FlowState> flows_;           // per slot
  std::vector<stats::FlowLatency> flow_latency_;  // per slot, when kept
  bool per_flow_latency_ = false;                 // !flow_latency_.empty()
  std::vector<stats::StreamStats> streams_;
  std::unique_ptr<Live[]> live_;
  std::unique_ptr<stats::GroupLive[]> events_;
  stats::LossLog log_;
  Counter fb_matched_;
  endpoint::Responder* responder_ = nullptr;
  endpoint::FeedbackSink* feedback_ = nullptr;
  const SentSource* sent_ = nullptr;
  RequestSlot<TopFlowsRequest> requests_;
  TopFlowsRequest* top_ = nullptr;
  uint64_t top_seq_ = 0;
  size_t top_pos_ = 0;
};

[[gnu::always_inline]] inline void FlowTable::ObserveFeedback(const Handoff& h) {
  if (h.kind == proto::RxKind::kRoceReadRequest) {
    ObserveRead(h);
    return;
  }
  stats::FlowState& f = flows_[h.slot];
  if (h.kind == proto::RxKind::kRoceCnp) {
    ++f.cnp;
  } else if (h.kind == proto::RxKind::kRoceAck) {
    ++f.ack;
  } else {
    ++f.nack;
  }
  fb_matched_.Add(1);
  if (feedback_ != nullptr) {
    const bool said = h.kind == proto::RxKind::kRoceAck || h.kind == proto::RxKind::kRoceNak;
    feedback_->OnFeedback(h.slot, endpoint::Feedback{h.kind, said ? h.said.code : uint8_t{0}, h.seq,
                                                     said ? h.said.msn : 0, h.rx_ns});
  }
}

[[gnu::always_inline]] inline void FlowTable::Observe(uint32_t slot, uint32_t seq, uint64_t tx_ns, uint64_t rx_ns,
                                                      uint32_t bytes, uint8_t flags, Run& run) {
  stats::FlowState& f = flows_[slot];
  const OwnedFlow o = owned_[slot];
  // Sent? One compare against the bound in the flow's hot line (~1 cycle);
  // a frame at or past it asks the sender (Sent, out of line) once per
  // window of frames in flight, and one it never sent stops here.
  if (seq >= f.sent_bound) [[unlikely]] {
    if (!Sent(slot, seq)) return;  // (`run` untouched)
  }
  if (flags & (Handoff::kPayloadError | Handoff::kRxLate | Handoff::kIcrcBad)) [[unlikely]] {
    if (flags & Handoff::kPayloadError) ++f.payload_errors;
    if (flags & (Handoff::kRxLate | Handoff::kIcrcBad)) {
      return ObserveLate(slot, seq, tx_ns, rx_ns, bytes, flags);  // (`run` untouched)
    }
  }
  if (o.stream != run.stream) [[unlikely]] {
    // Through a copy: `run` itself never has its address taken, so it stays in registers.
    Run done = run;
    Flush(done);
    run = done;
    run.stream = o.stream;
  }
  const uint64_t latency =
      stats::ObserveFlow(f, log_, o.flow, seq, tx_ns, rx_ns, (flags & Handoff::kCe) != 0, &events_[o.stream], bytes);
  if (responder_ != nullptr) responder_->OnData(slot, seq, rx_ns, (flags & Handoff::kCe) != 0);
  // A CE-marked frame's latency also goes to the stream's marked histogram
  // (ecn_marking: marks by queue depth); a test of the flags byte already in
  // a register, taken only for marked frames. Loopback rows 1.003x (1 flow)
  // and 1.033x (10^6 flows) of adb5b6c (docs/benchmarks.md, "the CE-marked frames' latencies").
  if (flags & Handoff::kCe) [[unlikely]]
    streams_[o.stream].latency_ce.Record(latency);
  // One test for the common case: the latency of the frame before, and (with
  // per-flow distributions) its flow. The flow's run has the stream run's
  // latency, so a new latency starts both.
  if (latency != run.latency || (per_flow_latency_ && slot != run.flow_slot)) [[unlikely]] {
    if (latency != run.latency) {
      if (run.n != 0) streams_[run.stream].latency.Record(run.latency, run.n);
      run.n = 0;
    }
    if (per_flow_latency_) {
      if (run.flow_n != 0) flow_latency_[run.flow_slot].Record(run.latency, run.flow_n);
      run.flow_slot = slot;
      run.flow_n = 0;
    }
    run.latency = latency;
  }
  ++run.flow_n;
  ++run.n;
  ++run.packets;
  run.bytes += bytes;
}

}  // namespace fg::rx
