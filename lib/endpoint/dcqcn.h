// endpoint/dcqcn.h: the DCQCN reaction point of one QP (its sender).
//
// As in roce.md (Zhu et al., SIGCOMM 2015; the ConnectX firmware's
// parameters as a preset), with rates in bit/s and times in ns:
//
// - On a CNP: Rt = Rc; Rc = Rc x max(1 - alpha/2, min_dec_factor), at least
//   min_rate; alpha = (1 - g) alpha + g; the timer, byte counter and both
//   stage counters restart. With rate_reduce_period, at most one cut per
//   period (a CNP within it updates alpha only).
// - Every alpha_period without a CNP: alpha = (1 - g) alpha. With
//   alpha_per_period (ConnectX's fixed point) alpha moves only at a period's
//   end, on a grid from the first CNP: (1 - g) alpha + g when the period saw
//   a CNP, else (1 - g) alpha; a cut uses alpha as it stands. A QP's state
//   starts at its first CNP (alpha = initial_alpha then), as a NIC allocates
//   a rate limiter for a QP when it is first notified.
// - A rate-increase event every `timer` since the last cut and every
//   `byte_counter` bytes sent since it; each counts in its stage counter,
//   then: both counters below `threshold` (F): fast recovery; both above F:
//   hyper increase (Rt += rate_hai); otherwise additive (Rt += rate_ai); and
//   Rc = (Rt + Rc) / 2. Rt and Rc never exceed the QP's maximum (its set
//   rate: the line it starts at).
//
// The owner lcore calls OnCnp when a CNP for the QP arrives and Advance from
// its poll loop; both say whether the rate changed. Times are the caller's
// ns, bytes the QP's total sent. Nothing allocates.
//
//   fg::endpoint::DcqcnQp qp(fg::config::DcqcnSpec::Paper(), /*max_bps=*/10e9, /*now_ns=*/0);
//   if (qp.OnCnp(t, bytes)) pacer.SetRate(f, qp.rate_bps() / bits_per_frame, now_fp);
//   if (qp.Advance(t, bytes)) ...
#pragma once

#include <cstdint>

#include "config/frame_spec.h"

namespace fg::endpoint {

class DcqcnQp {
 public:
  DcqcnQp() = default;
  DcqcnQp(const config::DcqcnSpec& p, double max_bps, uint64_t now_ns);

  // A CNP for this QP at `now_ns`, `bytes` sent so far: true when Rc changed.
  bool OnCnp(uint64_t now_ns, uint64_t bytes);
  // Applies the alpha decay and the rate-increase events due by `now_ns` and
  // `bytes`: true when Rc changed. Cheap when nothing is due (two compares).
  bool Advance(uint64_t now_ns, uint64_t bytes) {
    if (!cut_ || (now_ns < timer_next_ns_ && bytes < bytes_next_)) return false;
    return AdvanceSlow(now_ns, bytes);
  }

  double rate_bps() const { return rc_; }
  double target_bps() const { return rt_; }
  // Cut and not yet back at its maximum (rate and target): only such a QP
  // has increase events to apply (Advance changes nothing for the others).
  bool recovering() const { return cut_ && (rc_ < max_ || rt_ < max_); }
  double max_bps() const { return max_; }
  // alpha as of `now_ns` (decayed over the periods without a CNP).
  double alpha(uint64_t now_ns) const;
  uint64_t cuts() const { return cuts_; }
  uint64_t cnps_ignored() const { return ignored_; }  // within rate_reduce_period of the last cut

 private:
  bool AdvanceSlow(uint64_t now_ns, uint64_t bytes);
  void DecayAlpha(uint64_t now_ns);
  void Increase(bool timer);
  const config::DcqcnSpec* p_ = nullptr;
  double max_ = 0, rc_ = 0, rt_ = 0, alpha_ = 1;
  uint64_t alpha_next_ns_ = 0;  // the next alpha decay
  uint64_t timer_next_ns_ = UINT64_MAX, bytes_next_ = UINT64_MAX;
  uint64_t last_cut_ns_ = 0;
  uint32_t timer_events_ = 0, byte_events_ = 0;  // stage counters since the last cut
  bool cut_ = false;  // cut at least once (before, there is nothing to recover)
  bool cnp_in_period_ = false;  // alpha_per_period: the current alpha period saw a CNP
  uint64_t cuts_ = 0, ignored_ = 0;
};

}  // namespace fg::endpoint
