// The closed-loop requester of a TxTask's flows, on their owner lcore: DCQCN's
// reaction point (a CNP cuts the QP's rate; timer and byte events raise it;
// the rate timeline) and RC go-back-N (an ACK moves the first unacknowledged
// PSN, a NAK or a timeout sends the QP back). Fed by endpoint::FeedbackSink
// (engine) and the task's own Poll (the ticks).
#include <algorithm>
#include <bit>

#include "proto/roce.h"
#include "tx/flow_pacer.h"
#include "tx/tx.h"
#include "tx/tx_state.h"

namespace fg::tx {

void TxTask::SetQpRate(State& st, uint32_t f, uint64_t now, int64_t t_ns, bool cut) {
  const double bps = st.rp[f].rate_bps();
  const double pps = bps / st.bits_per_frame;
  const uint64_t now_fp = now > st.start_tsc ? (now - st.start_tsc) << kFpShift : 0;
  st.pacer_pps += pps - st.pacer->rate(f);
  st.pacer->Retime(f, pps, now_fp);
  st.pacer_pps_bits.store(std::bit_cast<uint64_t>(st.pacer_pps), std::memory_order_relaxed);
  // Three points per 100 us window at most: cuts in a row keep the lowest,
  // increases in a row the last; an increase between two cuts of one
  // window is dropped (the window keeps its low and where it ended).
  std::vector<RatePoint>& tl = st.timeline[f];
  const int64_t w = t_ns / kRateTimelineNs;
  const bool same = tl.size() > 1 && tl.back().t_ns / kRateTimelineNs == w;
  const bool last_cut = st.last_point_cut[f] != 0;
  if (same && cut == last_cut) {
    if (!cut || bps < tl.back().bps) tl.back() = RatePoint{t_ns, bps};
  } else if (same && cut && tl.size() > 2 && tl[tl.size() - 2].t_ns / kRateTimelineNs == w) {
    tl.pop_back();  // the increase between this window's cuts
    if (bps < tl.back().bps) tl.back() = RatePoint{t_ns, bps};
    st.last_point_cut[f] = 1;
  } else if (tl.size() < tl.capacity()) {
    st.last_point_cut[f] = cut;
    tl.push_back(RatePoint{t_ns, bps});
  } else {
    st.timeline_truncated = true;
  }
}

// The sequence number of the flow's packet with PSN `psn`, counted forward
// from its first unacknowledged one (`acked`, whose PSN the program knows):
// after a go-back the cursor is behind packets already sent, which ACKs may
// still name.
static uint32_t SeqOfPsn(const stream::Program& p, uint32_t acked, uint32_t psn) {
  const uint32_t step = p.psn_step();
  const uint32_t base = (p.psn_start() + acked * step) & proto::roce::kPsnMask;
  const uint32_t ahead = (psn - base) & proto::roce::kPsnMask;
  return acked + (step == 1 ? ahead : ahead / std::max<uint32_t>(step, 1));  // (no division per ACK for RC data)
}

void TxTask::GoBack(State& st, uint32_t f, uint32_t seq, uint64_t now) {
  stream::Cursor& c = st.cursors[f];
  State::Gbn& g = st.gbn[f];
  g.high = std::max(g.high, c.seq);
  st.s->program.Seek(c, seq);
  g.progress_tsc = now;
  if (st.share_turns) st.share_done[f >> 6] &= ~(uint64_t{1} << (f & 63));  // it owes resends: its turns again
  if (!g.behind && c.seq < g.high) {  // resending now: CountResends looks at its frames
    g.behind = 1;
    ++st.flows_behind;
  }
  if (st.exhausted && st.owed[f] == 0) {  // after the end: Recover resends up to high
    st.owed[f] = 1;
    st.owing.push_back(f);
  }
}

void TxTask::TickRetransmit(State& st, uint64_t tsc) {
  st.gbn_next = tsc + st.gbn_tick;
  const uint64_t now = poll_tsc_;  // the timers count the time this lcore ran (Clock)
  for (uint32_t f = 0; f < st.gbn.size(); ++f) {
    State::Gbn& g = st.gbn[f];
    if (g.acked >= std::max(g.high, st.cursors[f].seq)) {
      g.progress_tsc = now;  // nothing outstanding: the timer starts with the next packet
      continue;
    }
    // (progress_tsc is on this clock once the QP has had feedback or a
    // go-back; before that it is Arm's TSC, which the lcore's stalls since
    // leave ahead of it: until the clock passes it the QP's timer has not
    // started, so its first timeout can come that much later.)
    if (g.acked < st.cursors[f].seq && now > g.progress_tsc && now - g.progress_tsc > st.gbn_timeout) {
      ++st.gbn_timeouts;
      GoBack(st, f, g.acked, now);
    }
  }
}

void TxTask::OnFeedback(size_t i, uint32_t flow, const endpoint::Feedback& fb) {
  State& st = *streams_[i];
  // (after the stream's end too: what it sent is still recovered)
  if (!st.gbn.empty() &&
      (fb.kind == endpoint::Feedback::kRoceAck || fb.kind == endpoint::Feedback::kRoceNak)) {
    // The requester: an ACK acknowledges up to its PSN; a NAK (PSN sequence
    // error) names the first PSN the responder is missing: go back to it.
    State::Gbn& g = st.gbn[flow];
    stream::Cursor& c = st.cursors[flow];
    const uint32_t sent = std::max(g.high, c.seq);  // the highest sequence sent + 1
    const uint32_t seq = SeqOfPsn(st.s->program, g.acked, fb.psn);
    const uint64_t now = poll_tsc_;  // the go-back-N clock at this lcore's last poll (within a loop of now)
    // ACK: seq and all before it arrived. NAK: all before seq did.
    const uint32_t acked = fb.kind == endpoint::Feedback::kRoceAck ? seq + 1 : seq;
    if (acked > g.acked && acked <= sent) {  // (a PSN beyond what was sent is not ours: ignored)
      g.acked = acked;
      g.progress_tsc = now;
      // Resending what the responder already holds: go on from there.
      if (acked > c.seq) {
        st.s->program.Seek(c, acked);
        if (g.behind && c.seq >= g.high) {
          g.behind = 0;
          --st.flows_behind;
        }
      }
    }
    if (fb.kind == endpoint::Feedback::kRoceNak && fb.code == 0 && seq < c.seq && seq >= g.acked) {
      ++st.gbn_rewinds;
      GoBack(st, flow, seq, now);
    }
    return;
  }
  if (fb.kind != endpoint::Feedback::kCnp || st.rp.empty() || st.exhausted) return;
  const uint64_t now = ReadTsc();
  // Stopped or past its end (the drain, before Exhaust): TX has ended, no cut.
  if (now >= st.end_tsc || st.ctl_mode.load(std::memory_order_relaxed) == State::kStopped) return;
  const int64_t t_ns = now > st.run_start_tsc ? static_cast<int64_t>(clock_.ToNs(now - st.run_start_tsc)) : 0;
  ++st.rp_cnps;
  if (st.rp[flow].OnCnp(static_cast<uint64_t>(t_ns), st.flow_sent[flow].bytes)) {
    SetQpRate(st, flow, now, t_ns, true);
    const uint64_t now_ns = clock_.ToNs(now);
    st.rp_reaction.Record(now_ns > fb.rx_ns ? now_ns - fb.rx_ns : 0);
  }
}

// Measured cost: two compares per flow when no event is due (the usual
// case); every rp_tick (10..50 us) for a DCQCN stream only.
void TxTask::TickDcqcn(State& st, uint64_t now) {
  st.rp_next = now + st.rp_tick;
  if (now < st.start_tsc) return;
  const int64_t t_ns = static_cast<int64_t>(clock_.ToNs(now - st.run_start_tsc));
  for (uint32_t f = 0; f < st.rp.size(); ++f) {
    if (st.rp[f].Advance(static_cast<uint64_t>(t_ns), st.flow_sent[f].bytes)) SetQpRate(st, f, now, t_ns, false);
  }
}

DcqcnCounters TxTask::dcqcn(size_t i) const {
  const State& st = *streams_[i];
  DcqcnCounters c;
  c.cnps = st.rp_cnps;
  for (const endpoint::DcqcnQp& q : st.rp) {
    c.cuts += q.cuts();
    c.ignored += q.cnps_ignored();
  }
  c.reaction = st.rp_reaction;
  c.timeline_truncated = st.timeline_truncated;
  return c;
}

RetransmitCounters& RetransmitCounters::operator+=(const RetransmitCounters& o) {
  unique_packets += o.unique_packets;
  unique_bytes += o.unique_bytes;
  retransmitted_packets += o.retransmitted_packets;
  retransmitted_bytes += o.retransmitted_bytes;
  nak_rewinds += o.nak_rewinds;
  timeouts += o.timeouts;
  return *this;
}

bool TxTask::retransmits(size_t i) const { return !streams_[i]->gbn.empty(); }

// Two loads (and a third for go-back-N), on the owner lcore, where RX asks
// once its flow's frames reach the bound it had (rx::FlowTable::Sent). The
// cursor has wrapped once 2^32 frames were stamped: by then at least all but
// a burst's pending frames were accepted.
TxTask::Stamped TxTask::FlowStamped(size_t i, uint32_t flow) const {
  const State& st = *streams_[i];
  uint32_t next = st.cursors[flow].seq;
  if (!st.gbn.empty()) next = std::max(next, st.gbn[flow].high);
  return Stamped{next, st.flow_sent[flow].packets + kTxBurst >= (uint64_t{1} << 32)};
}

RetransmitCounters TxTask::retransmit(size_t i) const {
  const State& st = *streams_[i];
  RetransmitCounters c;
  c.nak_rewinds = st.gbn_rewinds;
  c.timeouts = st.gbn_timeouts;
  for (uint32_t f = 0; f < st.gbn.size(); ++f) {
    // Every packet below the highest sequence sent went out at least once;
    // what was sent beyond that count was sent again.
    const uint64_t unique = std::max(st.gbn[f].high, st.cursors[f].seq);
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
  return st.timeline.empty() ? kNone : st.timeline[flow];
}

// The flows take turns as in Fill, except that a go-back-N stream with a
// count (share_turns) gives a turn only to a flow that owes a resend or has
// not sent its share: strict turns would let the others send the packets of
// a QP held up by its resends (a QP whose NAK came a few frames later than
// another's ended 1-2 packets short, another as many beyond its 1,000, and
// Responder.GoBackNRecoversAfterTheEnd saw 5 NAKs for 4 gaps).
// Flows found done are marked in share_done and skipped 64 at a time, so
// the stream's tail (a few flows left of a million) costs a bitmap scan per
// round, not a visit per flow; GoBack clears a flow's mark. Once the turns
// have gone round (fewer flows left than the burst), a flow's frames given
// earlier in this burst count toward its share.
unsigned TxTask::GenerateShares(State& st, unsigned n, uint64_t now, uint64_t due) {
  FlowPacer::Run runs[kTxBurst];
  const uint32_t nflows = static_cast<uint32_t>(st.cursors.size());
  uint64_t* const done = st.share_done.data();
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
    const uint64_t share = st.share_base + (f < st.share_extra ? 1 : 0);
    const uint64_t end = std::max<uint64_t>(share, st.gbn[f].high);
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
// a NAK's go-back (OnFeedback) or a timeout (TickRetransmit) moves a flow's
// cursor back, and the flows that owe packets resend them here, one frame
// per flow per call (unpaced: at most one go-back window each). Runs on the
// lcore in the run (a stream that ended before the others) and in the
// engine's drain (PollRecovery).
unsigned TxTask::Recover(State& st, uint64_t now) {
  if (now >= st.gbn_next) TickRetransmit(st, now);
  if (st.npending == 0 && !st.owing.empty()) {
    FlowPacer::Run runs[kTxBurst];
    unsigned n = 0;
    size_t keep = 0;
    for (size_t k = 0; k < st.owing.size(); ++k) {
      const uint32_t f = st.owing[k];
      if (st.cursors[f].seq >= st.gbn[f].high) {
        st.owed[f] = 0;  // caught up with what it had sent
        continue;
      }
      if (n < kTxBurst) runs[n++] = FlowPacer::Run{f, 1};
      st.owing[keep++] = f;
    }
    st.owing.resize(keep);
    if (n != 0) Generate(st, n, now, now, runs, n);
  }
  return st.npending != 0 ? SendPending(st, now) : 0;
}

}  // namespace fg::tx
