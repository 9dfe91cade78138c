#include "endpoint/rc_requester.h"

#include "proto/roce.h"

namespace fg::endpoint {

GoBackN::GoBackN(const stream::Program& program, std::vector<stream::Cursor>& cursors, uint64_t timeout, uint64_t tick)
    : program_(&program),
      cursors_(&cursors),
      qps_(cursors.size()),
      timeout_(timeout),
      tick_(tick),
      owed_(cursors.size(), 0) {}

void GoBackN::ShareCount(uint64_t count) {
  share_base_ = count / qps_.size();
  share_extra_ = count % qps_.size();
  share_done_.assign((qps_.size() + 63) / 64, 0);
}

void GoBackN::Arm(uint64_t start, uint64_t clock) {
  next_ = start + tick_;
  for (Qp& g : qps_) g.progress = clock;
}

// The sequence number of the QP's packet with PSN `psn`, counted forward
// from its first unacknowledged one (`acked`, whose PSN the program knows):
// after a go-back the cursor is behind packets already sent, which ACKs may
// still name.
static uint32_t SeqOfPsn(const stream::Program& p, uint32_t acked, uint32_t psn) {
  const uint32_t step = p.psn_step();
  const uint32_t base = (p.psn_start() + acked * step) & proto::roce::kPsnMask;
  const uint32_t ahead = (psn - base) & proto::roce::kPsnMask;
  return acked + (step == 1 ? ahead : ahead / std::max<uint32_t>(step, 1));  // (no division per ACK for RC data)
}

void GoBackN::GoBack(uint32_t q, uint32_t seq, uint64_t clock) {
  stream::Cursor& c = (*cursors_)[q];
  Qp& g = qps_[q];
  g.high = std::max(g.high, c.seq);
  program_->Seek(c, seq);
  g.progress = clock;
  if (!share_done_.empty()) share_done_[q >> 6] &= ~(uint64_t{1} << (q & 63));  // it owes resends: its turns again
  if (!g.behind && c.seq < g.high) {  // resending now: CountResends looks at its frames
    g.behind = 1;
    ++behind_;
  }
  if (ended_ && owed_[q] == 0) {  // after the end: Owing resends up to high
    owed_[q] = 1;
    owing_.push_back(q);
  }
}

void GoBackN::OnAnswer(uint32_t q, const Feedback& fb, uint64_t clock) {
  if (fb.kind != proto::RxKind::kRoceAck && fb.kind != proto::RxKind::kRoceNak) return;
  Qp& g = qps_[q];
  stream::Cursor& c = (*cursors_)[q];
  const uint32_t sent = std::max(g.high, c.seq);  // the highest sequence sent + 1
  const uint32_t seq = SeqOfPsn(*program_, g.acked, fb.psn);
  // ACK: seq and all before it arrived. NAK: all before seq did.
  const uint32_t acked = fb.kind == proto::RxKind::kRoceAck ? seq + 1 : seq;
  if (acked > g.acked && acked <= sent) {  // (a PSN beyond what was sent is not ours: ignored)
    g.acked = acked;
    g.progress = clock;
    // Resending what the responder already holds: go on from there.
    if (acked > c.seq) {
      program_->Seek(c, acked);
      if (g.behind && c.seq >= g.high) {
        g.behind = 0;
        --behind_;
      }
    }
  }
  if (fb.kind == proto::RxKind::kRoceNak && fb.code == 0 && seq < c.seq && seq >= g.acked) {
    ++rewinds_;
    GoBack(q, seq, clock);
  }
}

void GoBackN::Tick(uint64_t tsc, uint64_t clock) {
  next_ = tsc + tick_;
  for (uint32_t q = 0; q < qps_.size(); ++q) {
    Qp& g = qps_[q];
    const uint32_t cursor = (*cursors_)[q].seq;
    if (g.acked >= std::max(g.high, cursor)) {
      g.progress = clock;  // nothing outstanding: the timer starts with the next packet
      continue;
    }
    // (progress is on this clock once the QP has had feedback or a go-back;
    // before that it is Arm's, which the lcore's stalls since leave ahead of
    // it: until the clock passes it the QP's timer has not started, so its
    // first timeout can come that much later.)
    if (g.acked < cursor && clock > g.progress && clock - g.progress > timeout_) {
      ++timeouts_;
      GoBack(q, g.acked, clock);
    }
  }
}

void GoBackN::Ended() {
  ended_ = true;
  for (uint32_t q = 0; q < qps_.size(); ++q) {
    if ((*cursors_)[q].seq < qps_[q].high && owed_[q] == 0) {
      owed_[q] = 1;
      owing_.push_back(q);
    }
  }
}

unsigned GoBackN::Owing(uint32_t* out, unsigned max) {
  unsigned n = 0;
  size_t keep = 0;
  for (size_t k = 0; k < owing_.size(); ++k) {
    const uint32_t q = owing_[k];
    if ((*cursors_)[q].seq >= qps_[q].high) {
      owed_[q] = 0;  // caught up with what it had sent
      continue;
    }
    if (n < max) out[n++] = q;
    owing_[keep++] = q;
  }
  owing_.resize(keep);
  return n;
}

ReactionPoints::ReactionPoints(const config::DcqcnSpec& p, const std::vector<double>& max_bps, int64_t start_ns,
                               int64_t duration_ns) {
  const size_t n = max_bps.size();
  rp_.reserve(n);
  for (double bps : max_bps) rp_.emplace_back(p, bps, 0);
  // At most three points per window (Record): the whole run fits, within
  // the shard's budget.
  const uint64_t points = 3 * static_cast<uint64_t>(std::max<int64_t>(duration_ns, 0) / kRateTimelineNs) + 4;
  const uint64_t cap = std::max<uint64_t>(4, std::min<uint64_t>(points, kRateTimelinePoints / std::max<size_t>(n, 1)));
  timeline_.resize(n);
  last_point_cut_.assign(n, 0);
  in_recovering_.assign(n, 0);
  recovering_.reserve(n);
  for (size_t q = 0; q < n; ++q) {
    timeline_[q].reserve(cap);
    timeline_[q].push_back(RatePoint{start_ns, max_bps[q]});  // each QP at its maximum from its start
  }
  tick_ns_ = std::clamp<int64_t>(p.timer_ns / 2, 10'000, kRateTimelineNs / 2);
}

bool ReactionPoints::OnCnp(uint32_t q, int64_t t_ns, uint64_t bytes) {
  ++cnps_;
  const bool cut = rp_[q].OnCnp(static_cast<uint64_t>(t_ns), bytes);
  if (rp_[q].recovering() && in_recovering_[q] == 0) {
    in_recovering_[q] = 1;
    recovering_.push_back(q);
  }
  if (!cut) return false;
  Record(q, t_ns, true);
  return true;
}

// Three points per window at most: cuts in a row keep the lowest, increases
// in a row the last; an increase between two cuts of one window is dropped
// (the window keeps its low and where it ended).
void ReactionPoints::Record(uint32_t q, int64_t t_ns, bool cut) {
  const double bps = rp_[q].rate_bps();
  std::vector<RatePoint>& tl = timeline_[q];
  const int64_t w = t_ns / kRateTimelineNs;
  const bool same = tl.size() > 1 && tl.back().t_ns / kRateTimelineNs == w;
  const bool last_cut = last_point_cut_[q] != 0;
  if (same && cut == last_cut) {
    if (!cut || bps < tl.back().bps) tl.back() = RatePoint{t_ns, bps};
  } else if (same && cut && tl.size() > 2 && tl[tl.size() - 2].t_ns / kRateTimelineNs == w) {
    tl.pop_back();  // the increase between this window's cuts
    if (bps < tl.back().bps) tl.back() = RatePoint{t_ns, bps};
    last_point_cut_[q] = 1;
  } else if (tl.size() < tl.capacity()) {
    last_point_cut_[q] = cut;
    tl.push_back(RatePoint{t_ns, bps});
  } else {
    truncated_ = true;
  }
}

uint64_t ReactionPoints::cuts() const {
  uint64_t n = 0;
  for (const DcqcnQp& q : rp_) n += q.cuts();
  return n;
}

uint64_t ReactionPoints::ignored() const {
  uint64_t n = 0;
  for (const DcqcnQp& q : rp_) n += q.cnps_ignored();
  return n;
}

}  // namespace fg::endpoint
