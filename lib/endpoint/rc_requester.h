// endpoint/rc_requester.h: the requester side of RoCEv2 RC QPs, on their
// owner lcore: go-back-N over the responder's ACKs, NAKs and a timeout
// (GoBackN), and DCQCN's reaction point with the rate timeline it leaves
// (ReactionPoints).
//
// Each object holds the QPs of one stream shard, the ones a TX task sends
// (tx::TxTask): a QP is its index there. Per QP it owns the send side's
// state (the highest sequence sent, its share of a counted stream, its
// rate) and the receive side's (the first sequence not acknowledged, when
// that last moved, its reaction point); the frames are made by TX from the
// QPs' cursors, which a go-back moves (Program::Seek). The state is kept as
// arrays over the QPs rather than an array of QP objects: TX's hot loop
// reads only the cursors, and a million QPs' go-back state stays 24 B each.
//
// Times: GoBackN counts the owner's go-back-N clock (TSC ticks with the
// lcore's hold-ups left out, tx::TxTask::Clock), ReactionPoints ns since
// the run's start. Nothing here allocates after construction but the rate
// timelines (reserved up front) and GoBackN's list of QPs owing resends.
//
//   fg::endpoint::GoBackN g(program, cursors, timeout_ticks, tick_ticks);
//   g.OnAnswer(qp, feedback, clock);                  // an ACK or NAK (the cursor may move back)
//   if (g.TimerDue(tsc)) g.Tick(tsc, clock);          // QPs without progress for the timeout go back
//   resent += g.CountResends(frame_qps, n);           // after TX made n frames (when g.any_behind())
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "config/frame_spec.h"
#include "endpoint/dcqcn.h"
#include "endpoint/feedback.h"
#include "stats/histogram.h"
#include "stream/program.h"

namespace fg::endpoint {

class GoBackN {
 public:
  struct Qp {
    uint32_t acked = 0;     // the first sequence not acknowledged
    uint32_t high = 0;      // the highest sequence sent before going back, + 1
    uint32_t burst_k = 0;   // CountResends' scratch: this QP's frames counted back in the burst
    uint8_t behind = 0;     // its cursor is below high: what it sends now is resent
    uint64_t progress = 0;  // when its acknowledgements last moved (go-back-N clock)
  };

  GoBackN() = default;  // no QP: not a requester
  // The QPs of `cursors` (one per QP, TX's; moved by go-backs), sending
  // `program`'s packets; a QP goes back when nothing was acknowledged for
  // `timeout` ticks, checked every `tick`.
  GoBackN(const stream::Program& program, std::vector<stream::Cursor>& cursors, uint64_t timeout, uint64_t tick);
  // Moved into its owner's state once; never copied (it points at the cursors).
  GoBackN(GoBackN&&) = default;
  GoBackN& operator=(GoBackN&&) = default;
  GoBackN(const GoBackN&) = delete;
  GoBackN& operator=(const GoBackN&) = delete;

  bool enabled() const { return !qps_.empty(); }
  // Each QP sends its share of `count` packets (count / QPs, one more for
  // the first count % QPs) and its resends in its own turns (TX's
  // GenerateShares): a QP held up by resends does not leave its last packets
  // to the others.
  void ShareCount(uint64_t count);
  // The run starts: timers from `start` (TSC), every QP's progress at `clock`.
  void Arm(uint64_t start, uint64_t clock);

  // An ACK (all up to its PSN arrived) or a NAK (all before its PSN did; a
  // PSN sequence error sends the QP back to it) for `qp` at `clock`. Other
  // kinds and PSNs beyond what was sent are ignored. After the end too: what
  // was sent is still recovered.
  void OnAnswer(uint32_t qp, const Feedback& fb, uint64_t clock);
  bool TimerDue(uint64_t tsc) const { return tsc >= next_; }
  // The retransmission timer at `tsc` (next one a tick later): each QP with
  // packets outstanding and no progress for the timeout (on `clock`) goes
  // back to its first unacknowledged packet.
  void Tick(uint64_t tsc, uint64_t clock);

  // TX sends nothing new from here on: the QPs a go-back left below what
  // they had sent owe resends (Owing), and so will any that go back later.
  void Ended();
  // Up to `max` QPs owing a resend, one frame each, into `qps`; those that
  // caught up with what they had sent leave the list.
  unsigned Owing(uint32_t* qps, unsigned max);
  bool owes() const { return !owing_.empty(); }

  // After TX made `n` frames, the i-th of QP frame_qp[i]: counts those that
  // are resends (below the QP's highest sequence sent) and clears `behind`
  // for the QPs that caught up. A QP's frames in a burst carry consecutive
  // sequences ending below its cursor. Two passes over the burst; only when
  // any_behind().
  uint64_t CountResends(const uint32_t* frame_qp, unsigned n) {
    uint64_t resent = 0;
    for (unsigned i = n; i-- != 0;) {
      Qp& g = qps_[frame_qp[i]];
      resent += (*cursors_)[frame_qp[i]].seq - ++g.burst_k < g.high;
    }
    for (unsigned i = 0; i < n; ++i) {
      const uint32_t q = frame_qp[i];
      Qp& g = qps_[q];
      g.burst_k = 0;
      if (g.behind && (*cursors_)[q].seq >= g.high) {  // caught up: sending new packets again
        g.behind = 0;
        --behind_;
      }
    }
    return resent;
  }
  bool any_behind() const { return behind_ != 0; }

  // Every sequence below this was sent at least once (the highest sent + 1).
  uint32_t sent_bound(uint32_t qp) const { return std::max(qps_[qp].high, (*cursors_)[qp].seq); }
  const Qp& qp(uint32_t q) const { return qps_[q]; }
  size_t size() const { return qps_.size(); }

  // Shares (ShareCount): a bit per QP, set once its share is sent and no
  // resend is owed (TX skips it in the turns; a go-back clears it).
  bool shares() const { return !share_done_.empty(); }
  uint64_t share(uint32_t qp) const { return share_base_ + (qp < share_extra_ ? 1 : 0); }
  uint64_t* share_done() { return share_done_.data(); }

  uint64_t rewinds() const { return rewinds_; }    // go-backs on a NAK
  uint64_t timeouts() const { return timeouts_; }  // go-backs on the timer

 private:
  void GoBack(uint32_t q, uint32_t seq, uint64_t clock);  // resend QP q from packet seq
  const stream::Program* program_ = nullptr;
  std::vector<stream::Cursor>* cursors_ = nullptr;
  std::vector<Qp> qps_;
  uint64_t timeout_ = 0, tick_ = 0, next_ = 0;
  uint64_t rewinds_ = 0, timeouts_ = 0;
  uint32_t behind_ = 0;  // QPs with `behind` set (0: CountResends has nothing to count)
  bool ended_ = false;
  std::vector<uint32_t> owing_;  // after the end: QPs a go-back left behind (owed_[q] set while listed)
  std::vector<uint8_t> owed_;
  uint64_t share_base_ = 0, share_extra_ = 0;
  std::vector<uint64_t> share_done_;
};

// A QP's rate over the run: from t_ns on, bps (L2, FCS included).
struct RatePoint {
  int64_t t_ns = 0;
  double bps = 0;
};
// The timeline's resolution: at most three points per window of this (a
// window's lowest cut, and where it ended).
inline constexpr int64_t kRateTimelineNs = 100'000;
// Points per stream shard at most, over its QPs (the timelines' memory bound).
inline constexpr size_t kRateTimelinePoints = 4'000'000;

// DCQCN's reaction point of each QP (endpoint/dcqcn.h) and its rate
// timeline. The owner tells it of CNPs and advances it from its poll loop;
// both say which QPs' rates changed, which the owner's pacer then applies.
class ReactionPoints {
 public:
  ReactionPoints() = default;  // no QP: no DCQCN
  // One QP per entry of `max_bps` (each starts there, its maximum), for a
  // stream of `duration_ns` starting at `start_ns`; its timelines share
  // kRateTimelinePoints. Advance every `tick_ns`.
  ReactionPoints(const config::DcqcnSpec& p, const std::vector<double>& max_bps, int64_t start_ns, int64_t duration_ns);
  bool enabled() const { return !rp_.empty(); }
  // Half the increase timer, 10 us at least, 50 us at most: each increase
  // event applied within that, the timeline kept at its resolution.
  int64_t tick_ns() const { return tick_ns_; }

  // A CNP for `qp` at `t_ns` (since the run's start), `bytes` sent by it so
  // far: true when its rate was cut (rate_bps(qp)), recorded in its timeline.
  bool OnCnp(uint32_t qp, int64_t t_ns, uint64_t bytes);
  // Timers and byte counters at `t_ns`; bytes(qp): the QP's bytes sent.
  // Calls changed(qp) for each QP whose rate rose. Walks only the QPs that
  // are recovering from a cut (a QP joins at its first cut, leaves when back
  // at its maximum): an AllToAll's 65,280 QPs with a few cut cost a few
  // compares a tick, not a walk of 6.5 MB. Two compares a QP when nothing is
  // due (the usual case).
  template <class Bytes, class Changed>
  void Advance(int64_t t_ns, Bytes bytes, Changed changed) {
    for (size_t i = 0; i < recovering_.size();) {
      const uint32_t q = recovering_[i];
      if (rp_[q].Advance(static_cast<uint64_t>(t_ns), bytes(q))) {
        Record(q, t_ns, false);
        changed(q);
      }
      if (rp_[q].recovering()) {
        ++i;
      } else {
        in_recovering_[q] = 0;
        recovering_[i] = recovering_.back();
        recovering_.pop_back();
      }
    }
  }
  void RecordReaction(uint64_t ns) { reaction_.Record(ns); }  // CNP received -> its cut in the pacer

  double rate_bps(uint32_t qp) const { return rp_[qp].rate_bps(); }
  const std::vector<RatePoint>& timeline(uint32_t qp) const { return timeline_[qp]; }
  uint64_t cnps() const { return cnps_; }
  uint64_t cuts() const;
  uint64_t ignored() const;  // CNPs within rate_reduce_period of the last cut
  const stats::LatencyHistogram& reaction() const { return reaction_; }
  bool truncated() const { return truncated_; }  // a timeline ran out of room

 private:
  void Record(uint32_t qp, int64_t t_ns, bool cut);
  std::vector<DcqcnQp> rp_;
  std::vector<std::vector<RatePoint>> timeline_;
  std::vector<uint8_t> last_point_cut_;  // per QP: its timeline's last point is a cut
  std::vector<uint32_t> recovering_;      // the QPs Advance walks (DcqcnQp::recovering)
  std::vector<uint8_t> in_recovering_;    // per QP: in recovering_
  int64_t tick_ns_ = 0;
  uint64_t cnps_ = 0;
  stats::LatencyHistogram reaction_;
  bool truncated_ = false;
};

}  // namespace fg::endpoint
