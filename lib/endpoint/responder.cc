#include "endpoint/responder.h"

#include <utility>

#include "proto/roce.h"

namespace fg::endpoint {

ResponderCounters& ResponderCounters::operator+=(const ResponderCounters& o) {
  EachCount(*this, o, [](uint64_t& x, uint64_t y) { x += y; });
  return *this;
}

ResponderCounters& ResponderCounters::operator-=(const ResponderCounters& o) {
  EachCount(*this, o, [](uint64_t& x, uint64_t y) { x -= y; });
  return *this;
}

Responder::Responder(std::vector<const stream::Answers*> streams, const std::vector<Flow>& owned, AnswerQueue* out)
    : streams_(std::move(streams)),
      owned_(owned),
      qps_(owned.size()),
      ack_vars_(owned.size()),
      counters_(new StreamCounters[streams_.size()]),
      out_(out) {
  due_.reserve(owned.size());
  bool delayed = false;
  for (const stream::Answers* g : streams_) delayed = delayed || (g != nullptr && g->ack_delay_ns != 0);
  if (delayed) {
    stale_.resize(owned.size());
    delayed_.resize(owned.size());
  }
  for (size_t slot = 0; slot < owned_.size(); ++slot) {
    const uint32_t stream = owned_[slot].stream;
    if (!answers(stream)) continue;
    qps_[slot].g = streams_[stream];
    qps_[slot].n = &counters_[stream];
    qps_[slot].epsn = streams_[stream]->psn_start;
  }
}

bool Responder::Emit(const stream::Answers& g, proto::RxKind kind, uint32_t slot, uint32_t psn, uint32_t msn) {
  const uint32_t stream = owned_[slot].stream;
  Answer* a = out_->Reserve();
  if (a == nullptr) {
    counters_[stream].answers_dropped.Add(1);
    if (kind == proto::RxKind::kRoceCnp) counters_[stream].cnp_dropped.Add(1);
    return false;
  }
  const stream::Program& p = kind == proto::RxKind::kRoceAck ? g.ack : kind == proto::RxKind::kRoceNak ? g.nak : g.cnp;
  stream::Cursor c;
  c.psn = psn;
  c.message = msn;
  const uint32_t index = owned_[slot].flow - g.first_flow_id;
  if (kind == proto::RxKind::kRoceAck) {
    Qp& q = qps_[slot];
    if (!q.ack_vars) {
      ack_vars_[slot] = g.Vars(p, index);
      q.ack_vars = true;
    }
    // ACKs are most of the answers: the ACK shape's own stamp (no per-field
    // tests); a collective's with the ranks' addresses per QP.
    switch (p.shape()) {
      case stream::shape::kRoceAnswer:
        a->len = static_cast<uint16_t>(p.EmitUntimed<stream::shape::kRoceAnswer>(a->bytes, c, ack_vars_[slot]));
        break;
      case stream::shape::kRoceCellAnswer:
        a->len = static_cast<uint16_t>(p.EmitUntimed<stream::shape::kRoceCellAnswer>(a->bytes, c, ack_vars_[slot]));
        break;
      default: a->len = static_cast<uint16_t>(p.Emit(a->bytes, c, 0, ack_vars_[slot])); break;
    }
  } else {
    a->len = static_cast<uint16_t>(p.Emit(a->bytes, c, 0, g.Vars(p, index)));
  }
  if (g.addresses != nullptr) g.addresses->WriteMacs(a->bytes, index);
  a->port = g.port;
  a->stream = static_cast<uint16_t>(stream);
  a->kind = kind;
  out_->Commit();
  return true;
}

// Measured cost: the responder's work per in-order data packet (OnData,
// Accept, inline in responder.h) is ~50 instructions: RX's poll is 380 per
// packet with it against 322 without (callgrind, 8 RC QPs on the loopback,
// ack_req never; 94 more in an out-of-line OnData before it moved inline).
// An ACK's whole round trip on one lcore (Emit, EmitUntimed's stamp, the
// worker's send, RX's classification, the requester) ~850 (1,700 before).
// tools/count_instructions.sh build closed: 654.2 / 759.1 / 998.3 per data
// packet open loop / ack_req never / last; tools/bench_vs_testpmd.sh build 10
// closed: 0.74x-0.86x and 0.54x-0.71x the open loop (docs/benchmarks.md
// "Issue 14: the responder's fast path").
void Responder::OnDataSlow(uint32_t slot, uint32_t seq, uint64_t rx_ns, bool ce) {
  Qp& q = qps_[slot];
  const stream::Answers& g = *q.g;
  StreamCounters& n = *q.n;
  if (ce) Notify(g, n, q, slot, rx_ns);
  if (!g.reliable) return;
  const uint32_t psn = (g.psn_start + seq * g.psn_step) & proto::roce::kPsnMask;
  const uint32_t ahead = (psn - q.epsn) & proto::roce::kPsnMask;
  if (ahead != 0 && ahead < (proto::roce::kPsnMask + 1) / 2) {
    n.out_of_sequence.Add(1);
    if (g.strict) {
      // RC: one NAK naming the expected PSN per gap; what comes until the
      // requester goes back to it is dropped.
      if (!q.nak_sent && Emit(g, proto::RxKind::kRoceNak, slot, q.epsn, q.msn)) {
        q.nak_sent = true;
        n.naks_sent.Add(1);
      }
      return;
    }
    // The requester does not go back (retransmit: none): a NAK, then
    // resynchronise on this packet rather than drop every later one.
    if (Emit(g, proto::RxKind::kRoceNak, slot, q.epsn, q.msn)) n.naks_sent.Add(1);
    q.epsn = psn;
    q.pos = g.msg_packets == 1 ? 0 : seq % g.msg_packets;
  } else if (ahead != 0) {
    n.duplicates.Add(1);
    if (!q.ack_due) {
      q.ack_due = true;
      due_.push_back(slot);
    }
    return;
  }
  Accept(g, q, slot, rx_ns);
}

void Responder::Reached(Qp& q, uint32_t slot, uint64_t rx_ns) {
  q.watch = kNoWatch;
  if (!q.ack_due) {
    q.ack_due = true;
    due_.push_back(slot);
  }
  if (arrivals_ != nullptr) arrivals_->OnReached(slot, rx_ns);
}

void Responder::Notify(const stream::Answers& g, StreamCounters& n, Qp& q, uint32_t slot, uint64_t rx_ns) {
  n.ce_seen.Add(1);
  // Signed: a frame received before the last CNP's (one flow on two
  // queues, a NIC stamp beside a handed-off record) is within the interval.
  const int64_t since = static_cast<int64_t>(rx_ns - q.last_cnp_ns);
  if (!q.cnp_sent || since >= g.spec.cnp_interval_ns) {
    if (Emit(g, proto::RxKind::kRoceCnp, slot, 0, 0)) {
      q.cnp_sent = true;
      q.last_cnp_ns = rx_ns;
      n.cnp_sent.Add(1);
    }
  } else {
    n.cnp_suppressed.Add(1);
  }
}

std::optional<uint32_t> Responder::OnReadRequest(uint32_t slot, uint32_t psn, uint64_t rx_ns, bool ce,
                                                 std::optional<uint32_t> sent) {
  const uint32_t stream = owned_[slot].stream;
  const stream::Answers& g = *streams_[stream];
  StreamCounters& n = counters_[stream];
  Qp& q = qps_[slot];
  // Requests step the PSN by their response packets: the distance in
  // requests is the PSN distance over that step (a division per request,
  // none when each request is one packet). Every request's PSN is on that
  // grid (the expected PSN is): one off it, behind the first request, or at
  // or past what the requester has sent is none of its requests, and is
  // refused before anything moves.
  const uint32_t step = g.psn_step;
  const uint32_t ahead = (psn - q.epsn) & proto::roce::kPsnMask;
  auto execute = [&](uint32_t seq) {
    n.delivered_packets.Add(1);
    n.delivered_bytes.Add(g.read_bytes);
    q.msn = (q.msn + 1) & proto::roce::kPsnMask;
    if (read_ != nullptr) read_->OnRead(slot, seq);
  };
  if (ahead >= (proto::roce::kPsnMask + 1) / 2) {  // behind
    const uint32_t back = (proto::roce::kPsnMask + 1) - ahead;
    if (step != 1 && back % step != 0) return std::nullopt;
    const uint32_t requests = step == 1 ? back : back / step;  // >= 1
    if (requests > q.rseq) return std::nullopt;               // before the first request
    if (ce) Notify(g, n, q, slot, rx_ns);
    const uint32_t seq = q.rseq - requests;
    const uint32_t bit = requests - 1;  // request rseq - 1 - bit
    if (bit < 64 && (q.read_missing >> bit & 1) != 0) {
      // One that a later request skipped over, late (reordered): executed now.
      q.read_missing &= ~(uint64_t{1} << bit);
      n.read_late.Add(1);
      execute(seq);
    } else {
      n.duplicates.Add(1);  // seen before: not executed again
    }
    return seq;
  }
  if (step != 1 && ahead % step != 0) return std::nullopt;
  const uint32_t skipped = step == 1 ? ahead : ahead / step;
  const uint32_t seq = q.rseq + skipped;
  if (sent && seq >= *sent) return std::nullopt;  // a request the requester has not sent
  if (ce) Notify(g, n, q, slot, rx_ns);
  if (skipped != 0) n.out_of_sequence.Add(skipped);  // requests it skips over: lost, or late
  // The window moves past this request: the ones skipped are missing (bits 1..skipped).
  const uint64_t shifted = skipped + 1 >= 64 ? 0 : q.read_missing << (skipped + 1);
  const uint64_t gap = skipped == 0 ? 0 : skipped >= 63 ? ~uint64_t{1} : ((uint64_t{1} << skipped) - 1) << 1;
  q.read_missing = shifted | gap;
  q.epsn = (psn + step) & proto::roce::kPsnMask;
  q.rseq = seq + 1;
  execute(seq);
  return seq;
}

void Responder::OnIcrcError(uint32_t slot) {
  if (qps_[slot].n != nullptr) qps_[slot].n->icrc_dropped.Add(1);
}

void Responder::Arm(uint32_t slot, uint64_t rx_ns) {
  Delayed& d = delayed_[slot];
  d.unacked_ns = rx_ns;
  if (d.in_stale) return;  // still in its place from an earlier run of packets: moved back when reached
  d.in_stale = true;
  d.stale_ns = rx_ns;
  stale_[(stale_head_ + stale_count_++) % stale_.size()] = slot;
}

// The ring is in the order the QPs took their places (stale_ns), so its
// head is the oldest: nothing behind it is due before it. Each slot is in
// it at most once, so it holds at most every slot. A QP acknowledged since
// it took its place leaves; one acknowledged and armed again (its oldest
// packet newer than its place says) goes to the back with its new time, at
// most 8 a call (the rest at the next), so a call costs O(1) amortised.
void Responder::DueStale() {
  for (int moved = 0; stale_count_ != 0;) {
    const uint32_t slot = stale_[stale_head_];
    Qp& q = qps_[slot];
    Delayed& d = delayed_[slot];
    const bool acked = q.unacked == 0;
    // (signed: a record handed from another lcore may carry an older time than the clock's)
    const bool stale =
        !acked && static_cast<int64_t>(now_ns_ - d.unacked_ns) >= static_cast<int64_t>(q.g->ack_delay_ns);
    if (!acked && !stale) {
      if (d.unacked_ns == d.stale_ns || moved++ == 8) return;  // the oldest is not due yet
      stale_head_ = (stale_head_ + 1) % stale_.size();
      stale_[(stale_head_ + stale_count_ - 1) % stale_.size()] = slot;
      d.stale_ns = d.unacked_ns;
      continue;
    }
    stale_head_ = (stale_head_ + 1) % stale_.size();
    --stale_count_;
    d.in_stale = false;
    if (stale && !q.ack_due) {
      q.ack_due = true;
      due_.push_back(slot);
    }
  }
}

void Responder::FlushSlow() {
  for (uint32_t slot : due_) {
    Qp& q = qps_[slot];
    q.ack_due = false;
    q.unacked = 0;
    const stream::Answers& g = *streams_[owned_[slot].stream];
    // The last PSN accepted: every one before it is acknowledged too.
    if (Emit(g, proto::RxKind::kRoceAck, slot, (q.epsn - g.psn_step) & proto::roce::kPsnMask, q.msn)) {
      counters_[owned_[slot].stream].acks_sent.Add(1);
    }
  }
  due_.clear();
}

void Responder::Unsent(AnswerQueue& q) {
  while (const Answer* a = q.Front()) {
    StreamCounters& n = counters_[a->stream];
    using K = proto::RxKind;
    Counter& sent = a->kind == K::kRoceAck ? n.acks_sent : a->kind == K::kRoceNak ? n.naks_sent : n.cnp_sent;
    sent.Set(sent.Read() - 1);
    if (a->kind == proto::RxKind::kRoceCnp) n.cnp_dropped.Add(1);
    n.answers_dropped.Add(1);
    q.Pop();
  }
}

ResponderCounters Responder::counters(uint32_t stream) const {
  const StreamCounters& n = counters_[stream];
  return ResponderCounters{n.acks_sent.Read(),  n.naks_sent.Read(), n.duplicates.Read(),
                           n.out_of_sequence.Read(), n.ce_seen.Read(), n.cnp_sent.Read(),
                           n.cnp_suppressed.Read(), n.cnp_dropped.Read(), n.answers_dropped.Read(),
                           n.delivered_packets.Read(), n.delivered_bytes.Read(), n.read_late.Read(),
                           n.icrc_dropped.Read()};
}

}  // namespace fg::endpoint
