// rx/rx.h: the RX queue task: receive, classify, hand each frame to its flow's owner.
//
// One RxTask serves one (port, queue) on one lcore. Each frame is parsed only
// as far as the signature, which also gives the ECN bits: the queue's
// proto::SignatureFinder answers a frame of its last test frame's header
// layout with one masked compare of 64 bytes and walks the headers
// (proto::FindSignatureOffset's walk) for any other; its flow id names the flow's owner lcore and its slot there
// (PortDispatch). Frames of flows this lcore owns are observed at once in its
// FlowTable; the others become Handoff records pushed to the owner's SPSC
// ring, which the owner drains on its next poll. Feedback without a
// signature (CNP, RoCE ACK and NAK, UET NACK) is matched by its QP or PDC and goes
// the same way. Any other frame without a signature is offered to the port's
// frame handlers (endpoint/frame_handler.h: ARP, ND, echo), which count it
// apart and may answer it; what none takes, and frames with a flow id this
// port does not expect, are counted apart as "unknown", so every frame is
// accounted.
//
// A frame counts for a stream only when it is one the stream could have
// sent. Its headers agree with each other and with its length (the walk,
// proto/signature.h); its signature's flags are the ones every stream
// writes and its TX time lies within the run (here, in the first pass:
// ~3 cycles a frame); its flow id is one of the run's; and its sequence is
// below what the flow's sender has stamped so far (the owner's FlowTable,
// one compare). Feedback and READ requests are held to the spec's shape
// (length, reserved bytes, ICRC: proto::ClassifyFeedback). Anything else
// is counted apart as "invalid" (report.json ports[].rx_invalid_packets),
// never as a stream's frame, loss or duplicate, nor as feedback. On a
// responding port the ICRC of RoCEv2 data is checked too (a CRC a frame):
// a frame with a bad one is the stream's (the device delivered it) but the
// responder, as a RoCE NIC, takes nothing from it.
//
// When an owner's ring is full the records wait in the task, and the task
// takes no new frames from its queue until they are out (the queue then
// backs up into the PMD's imissed: a tester limit, never a silent loss).
//
// Latency is RX minus TX time on the TSC of this host, both read in
// software: TX just before rte_eth_tx_burst, RX right after rte_eth_rx_burst
// (one reading per burst), unless the NIC stamps frames (ts_offset).
//
//   auto d = std::make_shared<fg::rx::PortDispatch>(...);     // engine: who owns what
//   fg::rx::RxTask task(port.id(), 0, /*self=*/0, d, &table, rings, polls, clock);
//   while (running) task.Poll();                               // on the lcore
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "base/counter.h"
#include "base/poll_task.h"
#include "base/request_slot.h"
#include "base/spsc_ring.h"
#include "base/tsc.h"
#include "clock/clock_fit.h"
#include "clock/shared_line.h"
#include "endpoint/frame_handler.h"
#include "proto/signature.h"
#include "rx/flow_table.h"
#include "stream/program.h"

struct rte_mbuf;

namespace fg::rx {

inline constexpr unsigned kRxBurst = 32;
inline constexpr uint32_t kNoSlot = UINT32_MAX;
// PortDispatch::Target::owner of a frame whose signature no stream sent
// (its flags, or its TX time outside the run): counted invalid.
inline constexpr uint32_t kForged = UINT32_MAX - 1;
// The signature's TX time must lie within [run start - kTxBeforeStartNs,
// RX time + kTxAfterRxNs]: TX stamps no frame before the run's start, nor
// one received before it was sent (a scheduled TX time runs ahead of the
// wire by its lead; the slack covers it and a NIC that sends early).
inline constexpr uint64_t kTxBeforeStartNs = 1'000'000;
inline constexpr uint64_t kTxAfterRxNs = 1'000'000'000;
// A run longer than this (39 h, half the 48-bit stamps' range) checks its last kTxWindowMaxNs only.
inline constexpr uint64_t kTxWindowMaxNs = uint64_t{1} << 47;
inline constexpr uint64_t kRxStallNs = 1'000'000;
inline constexpr size_t kHandoffRing = 8192;  // records per (producer, owner) ring

using HandoffRing = SpscRing<Handoff>;

// Where the frames and feedback one port receives go: owner lcore (worker
// index) and slot in its FlowTable, per global flow id.
struct PortDispatch {
  struct Target {
    uint32_t owner = kNoSlot;  // kNoSlot: not expected here
    uint32_t slot = kNoSlot;
  };
  // Data frames whose stream is received on this port. With `modulo` > 0
  // (flows placed by flow id over that many owners, every flow in one table
  // per owner) the target is computed: flows [lo, hi) are expected, owner =
  // flow % modulo, slot = flow / modulo; no table is read per frame.
  uint32_t modulo = 0, lo = 0, hi = 0;
  std::vector<Target> data;  // otherwise: by flow id
  // Feedback returning here (to the streams' TX port): (KeyKind << 32 | key) -> target.
  using KeyKind = stream::KeyKind;  // kRoceQp, kUetPdc: what feedback names
  absl::flat_hash_map<uint64_t, Target> keys;
  // READ requests this port answers (no signature: known by their QP): QP -> target.
  absl::flat_hash_map<uint32_t, Target> reads;
  // Flow ids of the run's streams are below this: a signature with another
  // is none a stream sent (invalid); one of the run's this port does not
  // receive is unknown here.
  uint32_t flows = UINT32_MAX;
  // The port responds (`respond`): the ICRC of RoCEv2 data is checked, so
  // the responder takes nothing from a frame with a bad one.
  bool check_icrc = false;
  // Feedback (CNP, ACK, NAK) and READ requests: taken only with a valid
  // ICRC, unless RX takes the very mbufs TX built (the built-in loopback,
  // as check_icrc) and no stream sends bad ICRCs on purpose.
  bool check_feedback_icrc = true;
  // Groups (streams) whose payload is checked byte by byte.
  std::vector<uint8_t> verify;  // by stream
  std::vector<uint32_t> group_of;  // by flow id (payload checks only)

  Target DataTarget(uint32_t flow) const {
    if (modulo != 0) {
      if (flow - lo >= hi - lo) return {};
      return modulo == 1 ? Target{0, flow} : Target{flow % modulo, flow / modulo};
    }
    return flow < data.size() ? data[flow] : Target{};
  }
};

// Feedback frames seen by a task, matched to a flow or not.
struct FeedbackCounters {
  uint64_t cnp = 0, roce_nak = 0, uet_nack = 0, unmatched = 0, roce_ack = 0;
};

// A request the control thread posts to a running RX lcore, which serves it
// between bursts: the data path is never locked, and pays only when asked.
// Post() one at a time; Wait() until Served().
struct RxRequest {
  enum class Kind : uint8_t { kCapture, kCancel } kind = Kind::kCapture;
  size_t n = 0;  // frames
  // Capture: the next n frames received (any frame, signature or not), cut at snaplen.
  uint32_t snaplen = 2048;                 // the engine sets it: up to 16 KiB per frame, within 64 MiB per request
  std::vector<uint8_t> data;               // n x snaplen
  std::vector<uint32_t> caplen, wire_len;  // per frame
  std::vector<uint64_t> rx_ns;             // per frame, this host's ns
  std::atomic<size_t> captured{0};         // frames written so far
};

class RxTask : public PollTask {
 public:
  // `self`: this lcore's worker index; `table`: its FlowTable; `out[w]`: the
  // ring to owner w (null for self); `owner_polls[w]`: owner w's poll count.
  // With `ts_offset` >= 0, a received mbuf whose ol_flags has `ts_flag`
  // carries its RX time at that dynfield offset, mapped to ns by `ts_line`
  // (or by the newest line `ts_shared` holds: re-fitted by the control thread);
  // otherwise the TSC read after rte_eth_rx_burst is used.
  RxTask(uint16_t port_id, uint16_t queue, uint32_t self, std::shared_ptr<const PortDispatch> dispatch,
         FlowTable* table, std::vector<HandoffRing*> out, std::vector<const Counter*> owner_polls, TscClock clock,
         int ts_offset = -1, uint64_t ts_flag = 0, clock::ClockLine ts_line = {}, int template_tag_offset = -1,
         const clock::SharedClockLine* ts_shared = nullptr);
  ~RxTask() override;

  unsigned Poll() override { return PollAt(ReadTsc()); }
  // Poll with the loop's TSC read just before (engine/worker.cc), the time
  // since the last poll is judged by (an RX stall); the frames' RX time is
  // read after the burst arrives, as in Poll.
  unsigned PollAt(uint64_t now);
  bool Done() const override { return false; }  // RX runs until the engine stops it

  // Thread-safe, during the run.
  RxCounters unknown() const { return RxCounters{unknown_packets_.Read(), unknown_bytes_.Read()}; }
  // Frames this queue took that carried a signature of a stream received
  // here (and READ requests it answers); the flow's owner may still find one
  // its sender never sent (FlowTable::invalid: counted invalid there).
  RxCounters data() const { return RxCounters{data_packets_.Read(), data_bytes_.Read()}; }
  // Frames whose headers contradict each other or their length, whose
  // signature no stream sent, or shaped as feedback or a READ request and
  // not one (Feedback::Kind::kInvalid).
  RxCounters invalid() const { return RxCounters{invalid_packets_.Read(), invalid_bytes_.Read()}; }
  // Frames a frame handler took (neighbour and echo traffic): counted
  // apart, by kind, in handlers()' counts.
  RxCounters handled() const { return RxCounters{handled_packets_.Read(), handled_bytes_.Read()}; }
  // Before the lcores start: the frame handlers of this queue's port (none: every frame
  // without a signature that is no feedback is unknown).
  void SetHandlers(std::unique_ptr<endpoint::FrameHandlers> h) { handlers_ = std::move(h); }
  const endpoint::FrameHandlers* handlers() const { return handlers_.get(); }
  // Before the lcores start: the run's start (this host's ns, the TX
  // timebase): a signature's TX time must lie between it and the frame's
  // arrival. Without it (a task outside a LiveRun) the time is not checked.
  void SetRunStart(uint64_t ns) {
    tx_lo_ = ns - kTxBeforeStartNs;
    tx_window_ = true;
  }
  uint64_t handed_off() const { return handed_off_.Read(); }      // records sent to other owners
  uint64_t handoff_waits() const { return handoff_waits_.Read(); }  // polls that found an owner's ring full

  // Control thread, while an lcore polls this task: posts a request (sizing
  // its buffers first); Served() turns true once the lcore has answered (a
  // capture: when n frames are in, or after a kCancel request is served).
  void Post(RxRequest& r);
  bool Served(const RxRequest& r) const;

  // After the lcores have stopped (main thread): records still held back for
  // a full ring go straight into their owners' tables (`owners[w]`); adds
  // how many to `delivered[w]`.
  void HandOver(const std::vector<FlowTable*>& owners, std::vector<uint64_t>& delivered);

  FeedbackCounters feedback() const {
    return {fb_cnp_.Read(), fb_nak_.Read(), fb_nack_.Read(), fb_unmatched_.Read(), fb_ack_.Read()};
  }
  // Times this task's lcore came back more than kRxStallNs after its last
  // poll to find frames waiting, the longest such gap in ns, and the frames
  // it then drained (software RX times: marked kRxLate, their latency the
  // tester's own delay, left out; with the NIC's stamps none).
  uint64_t stalls() const { return stalls_.Read(); }
  uint64_t stall_max_ns() const { return stall_max_ns_.Read(); }
  uint64_t stall_frames() const { return stall_frames_.Read(); }

 private:
  uint16_t port_id_, queue_;
  uint32_t self_;
  std::shared_ptr<const PortDispatch> dispatch_;
  FlowTable* table_;
  std::vector<HandoffRing*> out_;
  std::vector<const Counter*> owner_polls_;
  TscClock clock_;
  // Records for other owners that did not fit their ring yet.
  std::vector<std::vector<Handoff>> waiting_;
  size_t waiting_total_ = 0;
  bool FlushWaiting();  // true when nothing waits any more
  Counter unknown_packets_, unknown_bytes_, data_packets_, data_bytes_, handed_off_, handoff_waits_;
  Counter invalid_packets_, invalid_bytes_, handled_packets_, handled_bytes_;
  std::unique_ptr<endpoint::FrameHandlers> handlers_;
  uint64_t tx_lo_ = 0;      // the earliest TX time a signature may carry (SetRunStart)
  bool tx_window_ = false;  // tx_lo_ is set: TX times are checked
  Counter fb_cnp_, fb_nak_, fb_nack_, fb_unmatched_, fb_ack_;
  Counter stalls_, stall_max_ns_, stall_frames_;
  uint64_t last_poll_tsc_ = 0;  // lcore
  // After a stall, the frames that waited through it (sent before the lcore
  // came back) are drained burst by burst, each marked Handoff::kRxLate and
  // its latency left out, until a poll comes back short or empty or a
  // burst's data frames were all sent after it came back.
  bool catching_up_ = false;    // lcore: draining the frames that waited through a stall
  uint64_t catch_up_ns_ = 0;    // lcore: when it came back: frames sent before it waited (48-bit TX time)
  uint64_t stall_ticks_;

  // What a frame that is no data of a stream received here counts as.
  enum class Apart : uint8_t { kUnknown, kData, kInvalid, kHandled };
  // A frame without a signature: feedback (counted, and handed to its flow's
  // owner; unknown), a READ request this port answers (data of its stream),
  // invalid (its headers inconsistent, or shaped as feedback and not one:
  // proto::ClassifyFeedback), taken by a frame handler (handled), or
  // nothing we know (unknown).
  Apart CountFeedback(const uint8_t* frame, uint32_t len, uint64_t rx_ns, uint32_t bytes);
  [[gnu::noinline]] void EmitRemote(uint32_t owner, const Handoff& h);
  void ServeRequest();
  void CaptureFrames(rte_mbuf** pkts, uint16_t n, uint64_t rx_ns);
  RequestSlot<RxRequest> requests_;  // captures from the control thread
  RxRequest* capture_ = nullptr;  // lcore: the capture in progress
  uint64_t capture_seq_ = 0;
  // The loop, compiled once with and once without per-packet timestamps.
  template <bool kPerPacketTs>
  unsigned PollImpl(uint64_t before);
  int ts_offset_;
  uint64_t ts_flag_;
  int tag_off_;  // TX template tag: cleared on every received mbuf (its data may be a NIC's)
  proto::SignatureFinder finder_;  // the queue's last test-frame layout (proto/signature.h)
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
