// endpoint/responder.h: the far end of every QP whose data a responding port
// receives: RC responder (ACK, NAK) and DCQCN notification point (CNP).
//
// fabricgen plays both ends of a QP. A port with `respond` set answers the
// RoCEv2 data of every stream received there, on the owner lcore of each
// flow (the one that holds its RX analysis), from the records RX hands it:
//
// - RC SEND and WRITE: an expected PSN per QP. A packet at the expected PSN
//   is accepted (the PSN advances; MSN counts messages completed); an ACK is
//   due on its AckReq and at least every `ack_every` accepted packets, and
//   ACKs due go out at the end of each burst the owner observes (one ACK
//   covers every PSN before it: coalescing). With an ACK delay
//   (Answers::ack_delay_ns, a collective's QPs), a QP whose oldest
//   unacknowledged packet was accepted that long ago is acknowledged too, at
//   the end of a burst: a NIC's coalescing timer, so a QP that sends a few
//   packets and then waits its turn long is not left to its requester's
//   timeout. A packet ahead of the expected
//   PSN reveals a gap: it is answered by one NAK (PSN sequence error, naming
//   the expected PSN). When the requester goes back (`roce.retransmit:
//   go_back_n`: the stream is `strict`), what comes until the resend of the
//   expected PSN is dropped and no second NAK is sent for the gap; when it
//   does not (`retransmit: none`), the responder resynchronises on that
//   packet (counted as out of sequence) instead of waiting for a resend that
//   never comes, and NAKs each gap. A packet behind the expected PSN (a
//   duplicate) is acknowledged again.
// - RC READ: each request (no signature: RX knows it by its QP and PSN,
//   OnReadRequest) is executed: the responder asks its ReadSink to send the
//   request's responses (the READ's responses stream, stream.h) and counts
//   the message as delivered. A request ahead of the expected PSN is
//   executed all the same; the ones it skips over are counted
//   (out_of_sequence, per request) and, when one of them comes after all
//   (reordered, up to 63 requests behind the newest), it is executed then (read_late): what never
//   came is the requests' loss (fabricgen's requester does not re-issue
//   READs, so no NAK asks it to). Any other request behind (a duplicate) is
//   counted and not executed again. READ responses are never acknowledged.
//   A PSN no request of the requester's has (off the requests' PSN grid,
//   behind its first request, or at or past what it has sent so far) is
//   none: it is refused (OnReadRequest returns nothing) and moves nothing,
//   so a forged request can never make the responder skip genuine ones.
// - Data with a bad ICRC (RX checks it on a responding port) is dropped, as
//   a RoCE NIC drops it: no ACK, no NAK, no CNP, not delivered (OnIcrcError
//   counts it). Data the flow's sender never sent never reaches the
//   responder (rx::FlowTable checks its sequence first).
// - UC, UD: no ACK or NAK.
// - Every transport: a CE-marked frame of a QP makes a CNP to it, at most one
//   per QP per `cnp_interval`; the others are suppressed, so
//   ce_seen = cnp_sent + cnp_suppressed + cnp_dropped exactly (dropped: the
//   answer queue was full, or the run ended before the CNP went out).
//
// A count of ACKs, NAKs or CNPs sent is of frames handed to the PMD: answers
// still queued when the lcores stop are taken off (Unsent).
//
// The PSN, the message position and AckReq of a data frame follow from its
// signature's sequence number (fabricgen's requesters stamp PSN = start +
// sequence x step), so the RX path carries nothing new. Answers address the
// requester's QP by the flow's key (fabricgen numbers a QP alike at both
// ends), go from the data's destination address to its source, keep its MAC
// addresses and VLAN, and carry a valid ICRC (stream::Program::Emit).
//
//   // stream::Compile gives each stream received on a responding port its stream::Answers
//   fg::endpoint::Responder r(streams, owned, &queue);      // one per owner lcore
//   r.OnData(slot, seq, rx_ns, ce);                         // each data record
//   r.Flush();                                              // once per burst: the ACKs due
//   r.Unsent(queue);                                        // after the lcores stopped
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "base/counter.h"
#include "config/plan.h"
#include "endpoint/answer_queue.h"
#include "proto/roce.h"
#include "stream/answers.h"

namespace fg::endpoint {

// A responding stream's figures (summed over its flows' owners): a counter
// block (base/counter.h), uint64_t counts only, summed member by member.
struct ResponderCounters {
  uint64_t acks_sent = 0, naks_sent = 0;
  uint64_t duplicates = 0;       // packets behind the expected PSN (acknowledged again)
  uint64_t out_of_sequence = 0;  // packets ahead of it, dropped (the first of each gap NAKed)
  uint64_t ce_seen = 0, cnp_sent = 0, cnp_suppressed = 0;
  uint64_t cnp_dropped = 0;      // CE marks whose CNP was never sent (queue full, or still queued at the end)
  uint64_t answers_dropped = 0;  // ACKs, NAKs and CNPs never sent (the same causes): a tester limit
  uint64_t delivered_packets = 0, delivered_bytes = 0;  // accepted in order (RC): payload bytes, each PSN once
  uint64_t read_late = 0;  // READ: requests executed late (skipped over when a later one came, then came)
  uint64_t icrc_dropped = 0;  // data with a bad ICRC, dropped as a RoCE NIC drops it (not acknowledged)
  ResponderCounters& operator+=(const ResponderCounters& o);
  ResponderCounters& operator-=(const ResponderCounters& o);  // counts since `o` (an earlier reading)
};

// Where an executed READ request's responses are sent from: the owner's TX
// task of the READ's responses stream (the engine connects it).
class ReadSink {
 public:
  virtual ~ReadSink() = default;
  // On the owner lcore: the request `seq` of the flow in `slot` was
  // executed; its responses are that flow's response packets
  // seq x k .. seq x k + k - 1 (k: the READ's packets per request).
  virtual void OnRead(uint32_t slot, uint32_t seq) = 0;
};

// Where a watched QP's arrivals are reported: a collective's barriers (the
// engine connects it). Called on the owner lcore when a QP's expected PSN
// reaches the PSN watched for it (Responder::Watch): every packet before it
// has been accepted, in order.
class ArrivalSink {
 public:
  virtual ~ArrivalSink() = default;
  // `rx_ns`: the receive time of the packet that completed it.
  virtual void OnReached(uint32_t slot, uint64_t rx_ns) = 0;
};

class Responder {
 public:
  // `streams[g]`: stream g's answers (CompiledStream::answers), or nullptr when it is not answered;
  // `owned[slot]`: the flows of the owner's FlowTable (stream, global flow id);
  // answers go into `out`.
  struct Flow {
    uint32_t stream = 0, flow = 0;
  };
  Responder(std::vector<const stream::Answers*> streams, const std::vector<Flow>& owned, AnswerQueue* out);

  bool answers(uint32_t stream) const { return stream < streams_.size() && streams_[stream] != nullptr; }
  // A data frame of the flow in `slot` (its signature's sequence, its RX time, CE).
  // Inline for the common frame (RC, no CE mark, at the expected PSN); the
  // rest in OnDataSlow.
  [[gnu::always_inline]] inline void OnData(uint32_t slot, uint32_t seq, uint64_t rx_ns, bool ce);
  // A READ request of the flow in `slot` with BTH PSN `psn`: executed
  // (ReadSink) when not a duplicate; returns its sequence number (its
  // place among the flow's requests, counting on past PSN wraps). `sent`:
  // the requests the requester has sent so far (none: not known). A PSN
  // that names no request it sent returns nothing and changes nothing (no
  // CNP for its CE mark either).
  std::optional<uint32_t> OnReadRequest(uint32_t slot, uint32_t psn, uint64_t rx_ns, bool ce,
                                        std::optional<uint32_t> sent = std::nullopt);
  // A data frame of the flow in `slot` with a bad ICRC: dropped, counted.
  void OnIcrcError(uint32_t slot);
  void SetReadSink(ReadSink* s) { read_ = s; }
  // On the owner lcore: tell `s` when the flow in `slot` has accepted every
  // packet before `psn` (once; Watch again for the next). An ACK goes out
  // then too, whatever ack_every says: the requester learns it at once.
  void SetArrivalSink(ArrivalSink* s) { arrivals_ = s; }
  void Watch(uint32_t slot, uint32_t psn) { qps_[slot].watch = psn; }
  // The owner's RX time now (once per burst, before its records): the
  // clock an ACK delay is read against.
  void SetClock(uint64_t now_ns) { now_ns_ = now_ns; }
  // The ACKs due (once per QP), into the answer queue; with an ACK delay,
  // those of the QPs whose oldest unacknowledged packet is that old.
  void Flush() {
    if (stale_count_ != 0) [[unlikely]] DueStale();
    if (!due_.empty()) FlushSlow();
  }

  // Any thread (relaxed reads): a stream's counts on this owner.
  ResponderCounters counters(uint32_t stream) const;
  // After the lcores stopped (this thread is then the counters' one writer):
  // the answers left in `q` were never sent; they are counted as dropped,
  // not sent, and removed.
  void Unsent(AnswerQueue& q);

 private:
  struct alignas(64) StreamCounters {
    Counter acks_sent, naks_sent, duplicates, out_of_sequence, ce_seen, cnp_sent, cnp_suppressed, cnp_dropped,
        answers_dropped, delivered_packets, delivered_bytes, read_late, icrc_dropped;
  };
  // One cache line per QP: the fast path (OnData) touches nothing else but
  // its stream's Answers and counters, which it reaches from here.
  struct alignas(64) Qp {
    const stream::Answers* g = nullptr;  // its stream's answers; null when the stream is not answered
    StreamCounters* n = nullptr;          // its stream's counters on this owner
    uint32_t epsn = 0;     // expected PSN
    uint32_t msn = 0;      // messages completed (24 bits on the wire)
    uint32_t pos = 0;      // packet index inside the message being received
    uint32_t unacked = 0;  // accepted since the last ACK
    uint32_t rseq = 0;     // READ: the sequence of the request expected next
    uint64_t read_missing = 0;  // READ: bit j set: request rseq - 1 - j was skipped over and has not come yet
    uint64_t last_cnp_ns = 0;
    uint32_t watch = kNoWatch;  // ArrivalSink: the PSN whose reaching is reported
    bool cnp_sent = false, ack_due = false, nak_sent = false;
    bool ack_vars = false;  // ack_vars_[slot] holds the ACK program's FlowVars of this QP
  };
  static_assert(sizeof(Qp) == 64, "one cache line per QP");
  // A QP's ACK delay state, beside its line (Qp fills 64 B exactly: these in
  // it made it two lines and cost the closed loop with ack_req last 3 %).
  struct Delayed {
    uint64_t unacked_ns = 0;  // when its oldest unacknowledged packet was accepted
    uint64_t stale_ns = 0;    // ... as it was when the QP took its place in stale_
    bool in_stale = false;    // in stale_ (its unacknowledged packets watched)
  };
  static constexpr uint32_t kNoWatch = ~uint32_t{0};  // above every 24-bit PSN
  void FlushSlow();
  // ACK delay: QP `slot`'s first unacknowledged packet since its last ACK, at rx_ns.
  [[gnu::noinline]] void Arm(uint32_t slot, uint64_t rx_ns);
  // ACK delay: the watched QPs whose oldest unacknowledged packet is as old as their delay, due.
  void DueStale();
  [[gnu::noinline]] void Reached(Qp& q, uint32_t slot, uint64_t rx_ns);
  // OnData for a CE mark, UC/UD, or a PSN other than the expected one.
  void OnDataSlow(uint32_t slot, uint32_t seq, uint64_t rx_ns, bool ce);
  // An RC packet at the expected PSN: accepted (PSN, MSN, counts, ACK due).
  [[gnu::always_inline]] inline void Accept(const stream::Answers& g, Qp& q, uint32_t slot, uint64_t rx_ns);
  // A CE mark on the flow in `slot`: a CNP, or suppressed within cnp_interval.
  void Notify(const stream::Answers& g, StreamCounters& n, Qp& q, uint32_t slot, uint64_t rx_ns);
  // Queues one answer; false (counted in answers_dropped) when the ring is full.
  bool Emit(const stream::Answers& g, proto::RxKind kind, uint32_t slot, uint32_t psn, uint32_t msn);

  std::vector<const stream::Answers*> streams_;
  std::vector<Flow> owned_;
  std::vector<Qp> qps_;  // per slot
  // Per slot, made at its first ACK: the ACK program's per-flow constants
  // (addresses, checksums, ICRC folds), so an ACK is a copy and a stamp.
  std::vector<stream::FlowVars> ack_vars_;
  std::vector<uint32_t> due_;  // slots with an ACK due (capacity: every slot)
  // ACK delay: the QPs with unacknowledged packets, oldest first (a ring
  // of every slot's room: each slot at most once), and the clock the delay
  // is read against (SetClock: once per RX burst; stored per packet, it
  // cost 3.5 % of the closed loop).
  std::vector<uint32_t> stale_;
  std::vector<Delayed> delayed_;  // by slot; empty when no stream has an ACK delay
  size_t stale_head_ = 0, stale_count_ = 0;
  uint64_t now_ns_ = 0;
  std::unique_ptr<StreamCounters[]> counters_;
  AnswerQueue* out_;
  ReadSink* read_ = nullptr;
  ArrivalSink* arrivals_ = nullptr;
};

// Measured cost: see OnDataSlow (responder.cc).
[[gnu::always_inline]] inline void Responder::OnData(uint32_t slot, uint32_t seq, uint64_t rx_ns, bool ce) {
  Qp& q = qps_[slot];
  const stream::Answers* g = q.g;
  if (g == nullptr) return;
  if (ce || !g->reliable ||
      ((g->psn_start + seq * g->psn_step) & proto::roce::kPsnMask) != q.epsn) [[unlikely]] {
    OnDataSlow(slot, seq, rx_ns, ce);
    return;
  }
  Accept(*g, q, slot, rx_ns);
}

[[gnu::always_inline]] inline void Responder::Accept(const stream::Answers& g, Qp& q, uint32_t slot,
                                                     uint64_t rx_ns) {
  StreamCounters& n = *q.n;
  q.epsn = (q.epsn + g.psn_step) & proto::roce::kPsnMask;
  q.nak_sent = false;
  // A collective's segment complete (one compare in the QP's line; never
  // equal for a stream: kNoWatch is no PSN).
  if (q.epsn == q.watch) [[unlikely]] Reached(q, slot, rx_ns);
  n.delivered_packets.Add(1);
  bool last = true;
  if (g.msg_packets == 1) {
    n.delivered_bytes.Add(g.payload[0]);
  } else {
    n.delivered_bytes.Add(g.payload[q.pos == 0 ? 0 : (q.pos + 1 == g.msg_packets ? 2 : 1)]);
    if (++q.pos == g.msg_packets) {
      q.pos = 0;
    } else {
      last = false;
    }
  }
  if (last) q.msn = (q.msn + 1) & proto::roce::kPsnMask;
  const bool ack_req =
      g.ack_req == config::RoceSpec::AckReq::kEvery || (g.ack_req == config::RoceSpec::AckReq::kLast && last);
  // ACK delay (a collective's QPs): the first packet unacknowledged since
  // the last ACK takes the QP's place in stale_. Measured cost of this test,
  // SetClock and Flush's look at stale_ for streams without a delay: closed
  // loop with ack_req last 0.979-0.989x, ack_req never 0.996x
  // (tools/bench_vs_testpmd.sh ab; docs/benchmarks.md, "a collective's ACKs every 64 packets").
  if (q.unacked == 0 && g.ack_delay_ns != 0) [[unlikely]] Arm(slot, rx_ns);
  if ((++q.unacked >= g.spec.ack_every || ack_req) && !q.ack_due) {
    q.ack_due = true;
    due_.push_back(slot);
  }
}

}  // namespace fg::endpoint
