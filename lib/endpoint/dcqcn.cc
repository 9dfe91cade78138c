#include "endpoint/dcqcn.h"

#include <algorithm>
#include <cmath>

namespace fg::endpoint {

DcqcnQp::DcqcnQp(const config::DcqcnSpec& p, double max_bps, uint64_t now_ns)
    : p_(&p), max_(max_bps), rc_(max_bps), rt_(max_bps), alpha_(p.initial_alpha), alpha_next_ns_(now_ns) {
  if (p_->alpha_period_ns > 0) alpha_next_ns_ = now_ns + static_cast<uint64_t>(p_->alpha_period_ns);
}

void DcqcnQp::DecayAlpha(uint64_t now_ns) {
  // Before its first CNP a QP is not rate limited: its state (alpha at
  // initial_alpha) starts with that CNP, as a NIC allocates it then.
  if (!cut_ || p_->alpha_period_ns <= 0 || now_ns < alpha_next_ns_) return;
  const uint64_t period = static_cast<uint64_t>(p_->alpha_period_ns);
  uint64_t n = (now_ns - alpha_next_ns_) / period + 1;
  alpha_next_ns_ += n * period;
  if (cnp_in_period_) {  // alpha_per_period: the first period that ended saw a CNP
    alpha_ = (1 - p_->g) * alpha_ + p_->g;
    cnp_in_period_ = false;
    --n;
  }
  alpha_ *= std::pow(1 - p_->g, static_cast<double>(n));
}

double DcqcnQp::alpha(uint64_t now_ns) const {
  DcqcnQp copy = *this;
  copy.DecayAlpha(now_ns);
  return copy.alpha_;
}

bool DcqcnQp::OnCnp(uint64_t now_ns, uint64_t bytes) {
  DecayAlpha(now_ns);
  // The first CNP starts the QP's state, and its alpha periods' grid.
  if (!cut_ && p_->alpha_period_ns > 0) alpha_next_ns_ = now_ns + static_cast<uint64_t>(p_->alpha_period_ns);
  const bool may_cut = !cut_ || p_->rate_reduce_period_ns <= 0 ||
                       now_ns - last_cut_ns_ >= static_cast<uint64_t>(p_->rate_reduce_period_ns);
  const double before = rc_;
  if (may_cut) {
    rt_ = rc_;
    rc_ = std::max(p_->min_rate_bps, rc_ * std::max(1 - alpha_ / 2, p_->min_dec_factor));
    rc_ = std::min(rc_, max_);
    last_cut_ns_ = now_ns;
    cut_ = true;
    ++cuts_;
    timer_events_ = byte_events_ = 0;
    timer_next_ns_ = now_ns + static_cast<uint64_t>(std::max<int64_t>(p_->timer_ns, 1));
    bytes_next_ = bytes + std::max<uint64_t>(p_->byte_counter, 1);
  } else {
    ++ignored_;
  }
  if (p_->alpha_per_period && p_->alpha_period_ns > 0) {
    cnp_in_period_ = true;  // alpha rises when this period ends (DecayAlpha)
  } else {
    // The paper: this CNP raises alpha now, and its decay restarts from now.
    alpha_ = (1 - p_->g) * alpha_ + p_->g;
    if (p_->alpha_period_ns > 0) alpha_next_ns_ = now_ns + static_cast<uint64_t>(p_->alpha_period_ns);
  }
  return rc_ != before;
}

void DcqcnQp::Increase(bool timer) {
  (timer ? timer_events_ : byte_events_) += 1;
  const uint32_t f = p_->threshold;
  if (std::max(timer_events_, byte_events_) < f) {
    // Fast recovery: halfway back to the rate before the cut.
  } else if (std::min(timer_events_, byte_events_) > f) {
    rt_ = std::min(max_, rt_ + p_->rate_hai_bps);
  } else {
    rt_ = std::min(max_, rt_ + p_->rate_ai_bps);
  }
  rc_ = std::min(max_, (rt_ + rc_) / 2);
}

bool DcqcnQp::AdvanceSlow(uint64_t now_ns, uint64_t bytes) {
  const double before = rc_;
  // Events in the order they fell due: timer expiries by time, byte-counter
  // events in between (the bytes are a total; they count where they are
  // found). Bounded: after a long quiet spell a QP is back at its maximum
  // within a few dozen events, and the counters only saturate.
  const uint64_t timer = static_cast<uint64_t>(std::max<int64_t>(p_->timer_ns, 1));
  const uint64_t b = std::max<uint64_t>(p_->byte_counter, 1);
  for (int k = 0; k < 4096 && (now_ns >= timer_next_ns_ || bytes >= bytes_next_); ++k) {
    if (now_ns >= timer_next_ns_) {
      timer_next_ns_ += timer;
      Increase(true);
    }
    if (bytes >= bytes_next_) {
      bytes_next_ += b;
      Increase(false);
    }
  }
  if (now_ns >= timer_next_ns_) timer_next_ns_ = now_ns + timer;  // the bound was hit: no backlog
  if (bytes >= bytes_next_) bytes_next_ = bytes + b;
  return rc_ != before;
}

}  // namespace fg::endpoint
