// rx/rx.h: the RX lcore task: receive, find the signature, analyse per flow.
//
// One RxTask serves one (port, queue). Each frame is parsed only as far as
// the signature (proto::FindSignatureOffset, which also returns the ECN
// bits); its flow id selects the flow's state in a flat table built before
// the run, and stats::Observe updates sequence analysis (loss, duplicates,
// reordering, loss events), RFC 3550 jitter and the stream's latency
// histogram. Frames without a signature, or with a flow id this port does
// not expect, are counted apart as "unknown", so every frame is accounted.
//
// Latency is RX minus TX time on the TSC of this host, both read in
// software: TX just before rte_eth_tx_burst, RX right after rte_eth_rx_burst
// (one reading per burst). Its observation point is therefore the tester's
// software, including the NIC queues in both directions.
//
//   std::vector<fg::rx::GroupRange> groups = {{.group = 0, .first_flow = 0, .flows = 1000}};
//   fg::rx::RxTask task(port.id(), 0, /*total_flows=*/1000, groups, /*num_groups=*/1, clock);
//   while (running) task.Poll();                    // on the lcore
//   auto summaries = task.Summaries();              // after the lcore stopped
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "base/counter.h"
#include "base/poll_task.h"
#include "base/tsc.h"
#include "clock/clock_fit.h"
#include "clock/shared_line.h"
#include "stats/flow_analysis.h"

struct rte_mbuf;

namespace fg::rx {

inline constexpr unsigned kRxBurst = 32;
inline constexpr uint32_t kNoSlot = UINT32_MAX;
inline constexpr uint32_t kTopFlowsSlotsPerPoll = 1024;
inline constexpr uint64_t kRxStallNs = 1'000'000;

struct RxCounters {
  uint64_t packets = 0;
  uint64_t bytes = 0;  // frame bytes, FCS included
};

// The flows of one stream (a group) this task may receive.
struct GroupRange {
  uint32_t group = 0;
  uint32_t first_flow = 0;
  uint32_t flows = 0;
  // Flow keys, to attribute feedback (CNP, NAK, NACK) that carries no
  // signature: flow i has key key_base + i.
  enum class KeyKind : uint8_t { kNone, kRoceQp, kUetPdc } key_kind = KeyKind::kNone;
  uint32_t key_base = 0;
  bool verify_payload = false;  // check every payload byte against the pattern
  // false: this port is only where the stream's feedback returns (its TX
  // port, when it is received elsewhere): its signed frames arriving here
  // are counted as unknown, never as the stream's.
  bool data = true;
};

// Feedback frames seen by a task, matched to a flow or not.
struct FeedbackCounters {
  uint64_t cnp = 0, roce_nak = 0, uet_nack = 0, unmatched = 0;
};

// What a group's counters say during the run (any thread, no locks).
struct GroupLiveView {
  uint64_t packets = 0, bytes = 0;
  uint64_t gap_packets = 0, duplicate = 0, reordered = 0, ce = 0;
};

// One flow's figures, for a top-N view.
struct FlowView {
  uint32_t group = 0, flow = 0;
  uint64_t received = 0, duplicate = 0, reordered = 0, ce = 0, jitter_ns = 0;
  int64_t lost = 0;
  uint64_t latency_last_ns = 0;  // the last frame's latency
};

// A request the control thread posts to a running RX lcore, which serves it
// between bursts: the data path is never locked, and pays only when asked.
// Post() one at a time; Wait() until Served().
struct RxRequest {
  enum class Kind : uint8_t { kTopFlows, kCapture, kCancel } kind = Kind::kTopFlows;
  size_t n = 0;  // top flows: how many; capture: frames
  // Top flows: by net lost, then duplicates + reordered, then received. The
  // lcore scans kTopFlowsSlotsPerPoll flows per poll, so a million-flow table
  // costs many short pauses rather than one long one.
  std::vector<FlowView> flows;  // filled by the lcore (capacity reserved by Post)
  // Capture: the next n frames received (any frame, signature or not), cut at snaplen.
  uint32_t snaplen = 2048;                 // the engine sets it: up to 16 KiB per frame, within 64 MiB per request
  std::vector<uint8_t> data;               // n x snaplen
  std::vector<uint32_t> caplen, wire_len;  // per frame
  std::vector<uint64_t> rx_ns;             // per frame, this host's ns
  std::atomic<size_t> captured{0};         // frames written so far
};

class RxTask : public PollTask {
 public:
  // With `ts_offset` >= 0, a received mbuf whose ol_flags has `ts_flag`
  // carries its RX time at that dynfield offset, mapped to ns by `ts_line`
  // (or by the newest line `ts_shared` holds: re-fitted by the control thread);
  // otherwise the TSC read after rte_eth_rx_burst is used.
  RxTask(uint16_t port_id, uint16_t queue, uint32_t total_flows, const std::vector<GroupRange>& groups,
         uint32_t num_groups, TscClock clock, size_t loss_log_capacity = 4096, int ts_offset = -1, uint64_t ts_flag = 0,
         clock::ClockLine ts_line = {}, int template_tag_offset = -1,
         const clock::SharedClockLine* ts_shared = nullptr);
  ~RxTask() override;

  unsigned Poll() override;
  bool Done() const override { return false; }  // RX runs until the engine stops it

  // Thread-safe, during the run.
  RxCounters counters(uint32_t group) const;
  RxCounters unknown() const;
  GroupLiveView live(uint32_t group) const;
  stats::LatencyHistogram LatencySnapshot(uint32_t group) const { return groups_[group].latency.Snapshot(); }

  // Control thread, while an lcore polls this task: posts a request (sizing
  // its buffers first); Served() turns true once the lcore has answered (a
  // capture: when n frames are in, or after a kCancel request is served).
  void Post(RxRequest& r);
  bool Served(const RxRequest& r) const;

  // After the lcore has stopped: per group, the latency histogram and the
  // sums over its flows.
  std::vector<stats::GroupStats> Summaries() const;
  const stats::LossLog& loss_log() const { return log_; }
  FeedbackCounters feedback() const { return {fb_cnp_.Read(), fb_nak_.Read(), fb_nack_.Read(), fb_unmatched_.Read()}; }
  // Times this task's lcore came back more than kRxStallNs after its last
  // poll to find frames waiting (their latency includes the tester's own
  // delay), and the longest such gap in ns.
  uint64_t stalls() const { return stalls_.Read(); }
  uint64_t stall_max_ns() const { return stall_max_ns_.Read(); }

 private:
  struct alignas(64) Live {
    Counter packets, bytes;
  };
  uint16_t port_id_, queue_;
  TscClock clock_;
  std::vector<uint32_t> flow_to_slot_;  // global flow id -> slot
  bool identity_ = false;               // slot = flow - identity_first_ for every flow of the task
  uint32_t identity_first_ = 0;
  std::vector<uint32_t> slot_group_;     // slot -> group
  std::vector<uint32_t> slot_flow_;      // slot -> global flow id (top-N views)
  std::vector<uint8_t> group_verify_;    // group -> verify its payloads
  std::vector<stats::FlowState> flows_;  // per slot
  std::vector<stats::GroupStats> groups_;
  std::unique_ptr<Live[]> live_;  // num_groups + 1 (the last: unknown)
  uint32_t num_groups_;
  stats::LossLog log_;
  absl::flat_hash_map<uint64_t, uint32_t> key_to_slot_;  // (KeyKind << 32 | key) -> slot
  Counter fb_cnp_, fb_nak_, fb_nack_, fb_unmatched_;
  Counter stalls_, stall_max_ns_;
  uint64_t last_poll_tsc_ = 0;  // lcore
  uint64_t stall_ticks_;

  void CountFeedback(const uint8_t* frame, uint32_t len);
  void ServeRequest();
  void ScanTopFlows();
  RxRequest* top_ = nullptr;  // lcore: the top-flows request in progress
  uint64_t top_seq_ = 0;
  size_t top_pos_ = 0;       // next slot to scan
  uint32_t data_slots_ = 0;  // slots [0, data_slots_) take signed frames; the rest only feedback
  void CaptureFrames(rte_mbuf** pkts, uint16_t n, uint64_t rx_ns);
  std::unique_ptr<stats::GroupLive[]> events_;  // per group
  // Requests: the control thread writes req_ then bumps req_seq_ (release);
  // the lcore answers by storing the sequence it served in ack_seq_.
  alignas(64) std::atomic<uint64_t> req_seq_{0};
  std::atomic<RxRequest*> req_{nullptr};
  alignas(64) std::atomic<uint64_t> ack_seq_{0};
  uint64_t handled_seq_ = 0;      // lcore
  RxRequest* capture_ = nullptr;  // lcore: the capture in progress
  uint64_t capture_seq_ = 0;
  // The loop, compiled once with and once without per-packet timestamps.
  template <bool kPerPacketTs>
  unsigned PollImpl();
  int ts_offset_;
  uint64_t ts_flag_;
  int tag_off_;  // TX template tag: cleared on every received mbuf (its data may be a NIC's)
  // The line, with its division done once: ns = ts_tsc_ref_ + ts_c_ + (stamp - ts_nic_ref_) * ts_ns_per_unit_.
  uint64_t ts_nic_ref_ = 0, ts_tsc_ref_ = 0;
  double ts_c_ = 0, ts_ns_per_unit_ = 1;
  const clock::SharedClockLine* ts_shared_;
  clock::ClockLine ts_line_;
  uint64_t ts_seen_ = 0;  // the shared line's sequence last copied
  void UseLine(const clock::ClockLine& l) {
    ts_nic_ref_ = l.nic_ref;
    ts_tsc_ref_ = l.tsc_ref;
    ts_ns_per_unit_ = 1.0 / l.slope;
    ts_c_ = l.tsc0 - l.nic0 * ts_ns_per_unit_;
  }
};

}  // namespace fg::rx
