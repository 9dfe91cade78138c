// stats/flow_analysis.h: per-flow sequence and latency analysis.
//
// One FlowState per flow (128 bytes: a hot cache line every frame touches
// and one only events touch), updated by the lcore that owns the flow with every received signature. Sequence numbers
// are compared wrap-safely ((int32_t)(a - b)). A 64-packet window of what
// arrived below the highest sequence tells a duplicate from a late arrival:
//
//   s == next               in order
//   s >  next               gap: next .. s-1 counted lost (a loss event with
//                           the receive times before and after the gap)
//   s <  next, in window    already seen: duplicate; else out of order: one
//                           fewer lost, reordering extent = how far back
//   s <  next - 64          late (too old to classify; stays lost)
//
// Flows start at sequence 0, so frames lost before the first arrival count.
// Frames lost after the last arrival are invisible to sequence numbers: the
// run's loss is TX count minus unique frames received (see StreamStats users).
//
// FlowState::lost is that sequence view (gaps net of late fills, exact whenever
// the reordering is within 64 packets); what reports call lost is
// LostPackets() below. Latency = RX ns - TX ns (48-bit
// wrap-safe) into the stream's histogram; jitter per RFC 3550 (J += (|D| - J)/16,
// kept as 16 J so no division).
//
//   fg::stats::FlowState f;
//   fg::stats::StreamStats g;
//   fg::stats::LossLog log(1024);
//   fg::stats::Observe(f, g, log, /*flow=*/0, seq, tx_ns, rx_ns, /*ce=*/false);
#pragma once

#include <bit>
#include <cstdint>
#include <vector>

#include "base/counter.h"
#include "stats/histogram.h"

namespace fg::stats {

inline constexpr uint64_t kTs48Mask = (uint64_t{1} << 48) - 1;

struct alignas(64) FlowState {
  // First cache line: what every in-order frame reads and writes (the only
  // line the RX loop prefetches).
  uint32_t next_seq = 0;
  // The flow's sender had stamped every sequence below this when last asked
  // (rx::FlowTable: a frame at or beyond it asks again; one never sent is
  // not observed). Not ObserveFlow's.
  uint32_t sent_bound = 0;
  uint64_t window = 0;      // bit i: seq next_seq - 1 - i arrived
  uint64_t received = 0;    // every frame, duplicates included (0: the flow has not started)
  uint64_t rx_bytes = 0;    // frame bytes of every received frame, FCS included
  uint64_t last_rx_ns = 0;  // receive time of the frame that last advanced next_seq
  int64_t last_transit = 0;
  uint64_t jitter16 = 0;     // 16 x RFC 3550 interarrival jitter, ns
  uint64_t first_rx_ns = 0;  // receive time of the first frame
  // Second cache line: touched only by events (a gap, a duplicate, a late or
  // CE-marked frame, feedback), so in-order traffic costs one line per frame.
  alignas(64) int64_t lost = 0;  // net: gaps minus late fills
  uint64_t duplicate = 0;
  uint64_t reordered = 0;
  uint64_t ce = 0;  // ECN CE-marked frames
  uint64_t loss_ns_total = 0;
  uint64_t loss_ns_max = 0;
  uint32_t late = 0;
  uint32_t loss_events = 0;
  uint32_t payload_errors = 0;  // frames whose payload differs from the pattern (when checked)
  uint32_t cnp = 0;             // RoCEv2 CNPs addressed to this flow's QP
  uint32_t nack = 0;            // RoCEv2 NAKs / UET NACKs addressed to this flow
  uint32_t ack = 0;             // RoCEv2 ACKs addressed to this flow (a responder's)
  uint32_t max_extent = 0;      // largest reordering extent seen
  bool started() const { return received != 0; }
};

// One flow's latency distribution, for per-flow reports: log-linear as
// LatencyHistogram but with 32 sub-buckets per power of two (a percentile is
// within 1.6 % of the sample: half a bucket), 32-bit counts. Written by the
// flow's owner lcore; read after the run.
class FlowLatency {
 public:
  static constexpr int kSubBits = 5;
  static constexpr uint64_t kSub = 1u << kSubBits;
  static constexpr int kMaxExp = 40;
  static constexpr size_t kBuckets = (kMaxExp - kSubBits + 1) * kSub;
  static size_t Index(uint64_t v) {
    if (v < kSub) return static_cast<size_t>(v);
    if (v >= (uint64_t{1} << kMaxExp)) v = (uint64_t{1} << kMaxExp) - 1;
    const int e = 63 - std::countl_zero(v);
    return static_cast<size_t>(e - kSubBits + 1) * kSub + ((v >> (e - kSubBits)) & (kSub - 1));
  }
  void Record(uint64_t ns, uint32_t n = 1) {
    counts_[Index(ns)] += n;
    count_ += n;
    if (ns > max_) max_ = ns;
    if (ns < min_) min_ = ns;
  }
  uint64_t count() const { return count_; }
  uint64_t max() const { return max_; }
  // The p-th percentile (0 < p <= 100), ns: the middle of the bucket holding
  // the sample of rank ceil(p/100 * count), clamped to [min, max].
  double Percentile(double p) const;

 private:
  uint32_t counts_[kBuckets] = {};
  uint64_t count_ = 0, max_ = 0, min_ = UINT64_MAX;
};

// Lost, the one meaning fabricgen gives the word (docs/metrics.md, "Lost"):
// frames sent and never received once, tx - (rx - duplicates). After the
// drain it is exact; read while a run goes on, it also holds the frames in
// flight. Frames missing at a sequence gap when the gap is seen are a
// different figure, sequence_gap_packets (those that arrive later are also
// in reordered or late).
inline int64_t LostPackets(uint64_t tx, uint64_t rx, uint64_t duplicate) {
  return static_cast<int64_t>(tx) - static_cast<int64_t>(rx - duplicate);
}
// A flow whose requester resends (RC go-back-N) sends some packets more than
// once, and its resends arrive as duplicates: its lost is the frames sent
// that never arrived, tx - rx (a path that duplicates frames too hides as
// many losses). The loss after recovery is the requester's and responder's
// unrecovered_packets.
inline int64_t LostPackets(uint64_t tx, uint64_t rx, uint64_t duplicate, bool resends) {
  return resends ? static_cast<int64_t>(tx) - static_cast<int64_t>(rx) : LostPackets(tx, rx, duplicate);
}

// Totals of a stream, summed from its flows after a run, plus
// the latency histogram the RX lcore fills directly.
struct StreamStats {
  LatencyHistogram latency;
  // The latencies of the CE-marked frames among them (the ecn_marking
  // test's marks by queue depth: methods/ecn_marking.h).
  LatencyHistogram latency_ce;
  uint64_t received = 0, duplicate = 0, reordered = 0, late = 0, ce = 0, cnp = 0, nack = 0, ack = 0,
           payload_errors = 0;
  int64_t lost = 0;
  uint64_t loss_events = 0, loss_ns_total = 0, loss_ns_max = 0;
  uint32_t max_extent = 0;
  uint64_t jitter_ns_max = 0;
  double jitter_ns_mean = 0;  // over flows with >= 2 packets
  uint64_t jitter_flows = 0;
  uint64_t flows_seen = 0;
  // Frames counted but left out of `latency` (and of their flow's jitter):
  // received in an RX lcore's catch-up after a stall, their software RX time
  // late by the tester's own delay (engine: rx_stall).
  uint64_t latency_excluded = 0;

  void AddFlow(const FlowState& f);
  void Merge(const StreamStats& o);  // latency merged; flow totals added
};

// Events of a stream as they happen, for readers during the run:
// the RX lcore adds to them only when a flow sees a gap, a duplicate, a late
// fill or a CE mark, so in-order traffic costs nothing.
struct alignas(64) GroupLive {
  Counter gap_packets;  // frames missing at gaps when seen (sequence_gap_packets)
  Counter duplicate, reordered, ce;
};

struct LossEvent {
  uint32_t flow = 0;
  uint32_t first_seq = 0;  // first missing sequence number
  uint32_t packets = 0;    // size of the gap
  uint64_t start_ns = 0;   // receive time of the last frame before the gap
  uint64_t end_ns = 0;     // receive time of the frame after it
};

// A bounded log: the first `capacity` events are kept, later ones counted.
class LossLog {
 public:
  explicit LossLog(size_t capacity) { events_.reserve(capacity); }
  void Add(const LossEvent& e) {
    if (events_.size() < events_.capacity()) {
      events_.push_back(e);
    } else {
      ++dropped_;
    }
  }
  const std::vector<LossEvent>& events() const { return events_; }
  uint64_t dropped() const { return dropped_; }

 private:
  std::vector<LossEvent> events_;
  uint64_t dropped_ = 0;
};

// Updates the flow with one arrival and returns its latency (ns), which the
// caller records: an RX burst batches equal latencies (frames of one TX burst
// carry one TX time) into one histogram update.
// `live` (optional) counts the events as they happen.
[[gnu::always_inline]] inline uint64_t ObserveFlow(FlowState& f, LossLog& log, uint32_t flow, uint32_t seq,
                                                   uint64_t tx_ns, uint64_t rx_ns, bool ce, GroupLive* live = nullptr,
                                                   uint32_t bytes = 0) {
  const bool started = f.received != 0;
  ++f.received;
  f.rx_bytes += bytes;
  if (ce) {
    ++f.ce;
    if (live != nullptr) live->ce.Add(1);
  }
  const uint64_t latency = (rx_ns - tx_ns) & kTs48Mask;
  // RFC 3550 jitter on the transit time of consecutive arrivals.
  const int64_t transit = static_cast<int64_t>(latency);
  if (started) {
    const int64_t d = transit - f.last_transit;
    const uint64_t ad = static_cast<uint64_t>(d < 0 ? -d : d);
    f.jitter16 = f.jitter16 + ad - (f.jitter16 >> 4);
  }
  f.last_transit = transit;
  if (!started) {
    // Every flow starts at sequence 0: frames missing before the first one
    // that arrives are lost too (with no receive time before them).
    f.first_rx_ns = rx_ns;
    if (seq != 0 && static_cast<int32_t>(seq) > 0) {
      f.lost += seq;
      if (live != nullptr) live->gap_packets.Add(seq);
      log.Add(LossEvent{flow, 0, seq, 0, rx_ns});
    }
    f.next_seq = seq + 1;
    f.window = 1;
    f.last_rx_ns = rx_ns;
    return latency;
  }
  const int32_t d = static_cast<int32_t>(seq - f.next_seq);
  if (d == 0) {
    f.window = (f.window << 1) | 1;
    ++f.next_seq;
    f.last_rx_ns = rx_ns;
  } else if (d > 0) {
    const uint32_t gap = static_cast<uint32_t>(d);
    f.lost += gap;
    if (live != nullptr) live->gap_packets.Add(gap);
    ++f.loss_events;
    const uint64_t dur = rx_ns - f.last_rx_ns;
    f.loss_ns_total += dur;
    if (dur > f.loss_ns_max) f.loss_ns_max = dur;
    log.Add(LossEvent{flow, f.next_seq, gap, f.last_rx_ns, rx_ns});
    f.window = gap >= 63 ? 1 : ((f.window << (gap + 1)) | 1);
    f.next_seq = seq + 1;
    f.last_rx_ns = rx_ns;
  } else {
    const uint32_t back = static_cast<uint32_t>(-static_cast<int64_t>(d)) - 1;  // 0: seq == next_seq - 1
    if (back < 64) {
      const uint64_t bit = uint64_t{1} << back;
      if (f.window & bit) {
        ++f.duplicate;
        if (live != nullptr) live->duplicate.Add(1);
      } else {
        f.window |= bit;
        --f.lost;
        ++f.reordered;
        if (live != nullptr) live->reordered.Add(1);
        if (back > f.max_extent) f.max_extent = back;
      }
    } else {
      ++f.late;
    }
  }
  return latency;
}

// ObserveFlow() and the latency recorded into the stream at once.
inline void Observe(FlowState& f, StreamStats& g, LossLog& log, uint32_t flow, uint32_t seq, uint64_t tx_ns,
                    uint64_t rx_ns, bool ce) {
  g.latency.Record(ObserveFlow(f, log, flow, seq, tx_ns, rx_ns, ce));
}

}  // namespace fg::stats
