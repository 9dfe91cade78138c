// The closed-loop requester of a TxTask's flows, on their owner lcore: the
// RC requester's state lives in lib/endpoint (rc_requester.h: go-back-N over
// ACKs, NAKs and a timeout; DCQCN's reaction points and rate timelines);
// this file connects it to the flows' cursors and pacer. Fed by
// endpoint::FeedbackSink (engine) and the task's own Poll (the ticks).
#include <algorithm>
#include <bit>

#include "tx/flow_pacer.h"
#include "tx/tx.h"
#include "tx/tx_state.h"

namespace fg::tx {

void TxTask::SetQpRate(State& st, uint32_t f, uint64_t now) {
  if (st.rates.pacer == nullptr) return;  // a cell's QP: SendCell reads its rate at each turn
  const double pps = st.rp.rate_bps(f) / st.bits_per_frame;
  const uint64_t now_fp = now > st.start_tsc ? (now - st.start_tsc) << kFpShift : 0;
  st.rates.pps += pps - st.rates.pacer->rate(f);
  st.rates.pacer->Retime(f, pps, now_fp);
  st.rates.pps_bits.store(std::bit_cast<uint64_t>(st.rates.pps), std::memory_order_relaxed);
}

void TxTask::OnFeedback(size_t i, uint32_t flow, const endpoint::Feedback& fb) {
  State& st = *streams_[i];
  // (after the stream's end too: what it sent is still recovered)
  if (st.gbn.enabled() && (fb.kind == proto::RxKind::kRoceAck || fb.kind == proto::RxKind::kRoceNak)) {
    st.gbn.OnAnswer(flow, fb, poll_tsc_);  // the go-back-N clock at this lcore's last poll (within a loop of now)
    return;
  }
  if (fb.kind != proto::RxKind::kRoceCnp || !st.rp.enabled()) return;
  const uint64_t now = ReadTsc();
  // Exhausted, stopped or past its end (the drain, before Exhaust): TX has
  // ended, no cut; counted, so every CNP sent is one handed or late.
  if (st.exhausted || now >= st.end_tsc || st.ctl_mode.load(std::memory_order_relaxed) == State::kStopped) {
    ++st.cnps_late;
    return;
  }
  const int64_t t_ns = now > st.run_start_tsc ? static_cast<int64_t>(clock_.ToNs(now - st.run_start_tsc)) : 0;
  if (st.rp.OnCnp(flow, t_ns, st.flow_sent[flow].bytes)) {
    SetQpRate(st, flow, now);
    const uint64_t now_ns = clock_.ToNs(now);
    st.rp.RecordReaction(now_ns > fb.rx_ns ? now_ns - fb.rx_ns : 0);
  }
}

// Measured cost: two compares per flow when no event is due (the usual
// case); every rp_tick (10..50 us) for a DCQCN stream only.
void TxTask::TickDcqcn(State& st, uint64_t now) {
  st.rp_next = now + st.rp_tick;
  if (now < st.start_tsc) return;
  const int64_t t_ns = static_cast<int64_t>(clock_.ToNs(now - st.run_start_tsc));
  st.rp.Advance(
      t_ns, [&](uint32_t f) { return st.flow_sent[f].bytes; }, [&](uint32_t f) { SetQpRate(st, f, now); });
}

DcqcnCounters TxTask::dcqcn(size_t i) const {
  const State& st = *streams_[i];
  DcqcnCounters c;
  c.cnps = st.rp.cnps();
  c.cuts = st.rp.cuts();
  c.ignored = st.rp.ignored();
  c.late = st.cnps_late;
  c.held_turns = st.cell.held_turns;
  c.reaction = st.rp.reaction();
  c.timeline_truncated = st.rp.truncated();
  return c;
}

DcqcnCounters& DcqcnCounters::operator+=(const DcqcnCounters& o) {
  cnps += o.cnps;
  cuts += o.cuts;
  ignored += o.ignored;
  late += o.late;
  held_turns += o.held_turns;
  reaction.Merge(o.reaction);
  timeline_truncated = timeline_truncated || o.timeline_truncated;
  return *this;
}

RetransmitCounters& RetransmitCounters::operator+=(const RetransmitCounters& o) {
  EachCount(*this, o, [](uint64_t& x, uint64_t y) { x += y; });
  return *this;
}

bool TxTask::retransmits(size_t i) const { return streams_[i]->gbn.enabled(); }

// Two loads (and a third for go-back-N), on the owner lcore, where RX asks
// once its flow's frames reach the bound it had (rx::FlowTable::Sent). The
// cursor has wrapped once 2^32 frames were stamped: by then at least all but
// a burst's pending frames were accepted.
TxTask::Stamped TxTask::FlowStamped(size_t i, uint32_t flow) const {
  const State& st = *streams_[i];
  const uint32_t next = st.gbn.enabled() ? st.gbn.sent_bound(flow) : st.cursors[flow].seq;
  return Stamped{next, st.flow_sent[flow].packets + kTxBurst >= (uint64_t{1} << 32)};
}

RetransmitCounters TxTask::retransmit(size_t i) const {
  const State& st = *streams_[i];
  RetransmitCounters c;
  c.nak_rewinds = st.gbn.rewinds();
  c.timeouts = st.gbn.timeouts();
  if (st.cell.enabled()) {
    // A cell's messages differ in length: its resends' bytes were counted as they were made.
    for (uint32_t f = 0; f < st.gbn.size(); ++f) {
      c.unique_packets += st.gbn.sent_bound(f);
      c.retransmitted_packets += st.flow_sent[f].packets - std::min<uint64_t>(st.flow_sent[f].packets, st.gbn.sent_bound(f));
      c.unique_bytes += st.flow_sent[f].bytes;
    }
    c.retransmitted_bytes = std::min(st.cell.resent_bytes, c.unique_bytes);
    c.unique_bytes -= c.retransmitted_bytes;
    return c;
  }
  for (uint32_t f = 0; f < st.gbn.size(); ++f) {
    // Every packet below the highest sequence sent went out at least once;
    // what was sent beyond that count was sent again.
    const uint64_t unique = st.gbn.sent_bound(f);
    const uint64_t unique_bytes = st.s->program.BytesOfFirst(unique);
    c.unique_packets += unique;
    c.unique_bytes += unique_bytes;
    c.retransmitted_packets += st.flow_sent[f].packets > unique ? st.flow_sent[f].packets - unique : 0;
    c.retransmitted_bytes += st.flow_sent[f].bytes > unique_bytes ? st.flow_sent[f].bytes - unique_bytes : 0;
  }
  return c;
}

const std::vector<RatePoint>& TxTask::rate_timeline(size_t i, uint32_t flow) const {
  static const std::vector<RatePoint> kNone;
  const State& st = *streams_[i];
  return st.rp.enabled() ? st.rp.timeline(flow) : kNone;
}

// The flows take turns as in Fill, except that a go-back-N stream with a
// count (gbn.shares()) gives a turn only to a flow that owes a resend or has
// not sent its share: strict turns would let the others send the packets of
// a QP held up by its resends (a QP whose NAK came a few frames later than
// another's ended 1-2 packets short, another as many beyond its 1,000, and
// Responder.GoBackNRecoversAfterTheEnd saw 5 NAKs for 4 gaps).
// Flows found done are marked in the go-back-N's share_done and skipped 64
// at a time, so the stream's tail (a few flows left of a million) costs a
// bitmap scan per round, not a visit per flow; a go-back clears a flow's mark. Once the turns
// have gone round (fewer flows left than the burst), a flow's frames given
// earlier in this burst count toward its share.
unsigned TxTask::GenerateShares(State& st, unsigned n, uint64_t now, uint64_t due) {
  FlowPacer::Run runs[kTxBurst];
  const uint32_t nflows = static_cast<uint32_t>(st.cursors.size());
  uint64_t* const done = st.gbn.share_done();
  unsigned k = 0;
  uint32_t f = st.next_flow;
  uint64_t visits = 0;
  for (uint32_t idle = 0; k < n && idle < nflows;) {
    if (const uint64_t open = ~done[f >> 6] >> (f & 63); (open & 1) == 0) {
      // Done: on to the next flow not marked (or the word's end, or the last flow's).
      const uint32_t step = std::min<uint32_t>(open == 0 ? 64 - (f & 63) : std::countr_zero(open), nflows - f);
      idle += step;
      visits += step;
      f = f + step == nflows ? 0 : f + step;
      continue;
    }
    const uint64_t end = std::max<uint64_t>(st.gbn.share(f), st.gbn.qp(f).high);
    uint64_t at = st.cursors[f].seq;
    if (visits >= nflows) {
      for (unsigned r = 0; r < k; ++r) at += runs[r].flow == f;
    }
    if (at < end) {
      runs[k++] = FlowPacer::Run{f, 1};
      idle = 0;
    } else {
      if (at == st.cursors[f].seq) done[f >> 6] |= uint64_t{1} << (f & 63);
      ++idle;
    }
    ++visits;
    if (++f == nflows) f = 0;
  }
  if (k == 0) {  // every flow has sent its share and owes nothing
    Exhaust(st, std::min(now, st.end_tsc));
    return 0;
  }
  const uint32_t first = st.next_flow;
  st.next_flow = f;
  if (Generate(st, k, now, due, runs, k)) return k;
  st.next_flow = first;  // nothing made: the same turns next time
  return 0;
}

// After its end an RC requester sends nothing new but recovers what it sent:
// a NAK's go-back (OnFeedback) or a timeout (GoBackN::Tick) moves a flow's
// cursor back, and the flows that owe packets resend them here, one frame
// per flow per call (unpaced: at most one go-back window each). Runs on the
// lcore in the run (a stream that ended before the others) and in the
// engine's drain (PollRecovery).
unsigned TxTask::Recover(State& st, uint64_t now) {
  if (st.gbn.TimerDue(now)) st.gbn.Tick(now, poll_tsc_);
  if (st.npending == 0 && st.gbn.owes()) {
    uint32_t qps[kTxBurst];
    FlowPacer::Run runs[kTxBurst];
    const unsigned n = st.gbn.Owing(qps, kTxBurst);
    for (unsigned k = 0; k < n; ++k) runs[k] = FlowPacer::Run{qps[k], 1};
    if (n != 0) Generate(st, n, now, now, runs, n);
  }
  return st.npending != 0 ? SendPending(st, now) : 0;
}

}  // namespace fg::tx
