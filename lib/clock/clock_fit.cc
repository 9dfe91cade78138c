#include "clock/clock_fit.h"

#include <cmath>

namespace fg::clock {

void ClockFit::Add(uint64_t tsc_before_ns, uint64_t nic, uint64_t tsc_after_ns) {
  if (tsc_ref_ == 0 && nic_ref_ == 0) {
    tsc_ref_ = tsc_before_ns;
    nic_ref_ = nic;
  }
  // Differences from the references are exact in a double up to 2^53 (104 days of ns).
  const double mid = static_cast<double>(static_cast<int64_t>(tsc_before_ns - tsc_ref_)) +
                     static_cast<double>(tsc_after_ns - tsc_before_ns) / 2;
  if (samples_.size() == capacity_) samples_.erase(samples_.begin());
  samples_.push_back({mid, static_cast<double>(static_cast<int64_t>(nic - nic_ref_))});
}

std::optional<ClockLine> ClockFit::Solve() const {
  const size_t n = samples_.size();
  if (n < 2) return std::nullopt;
  // Centre on the first sample kept (samples are already relative to the references).
  const double t0 = samples_.front().tsc_ns, v0 = samples_.front().nic;
  double st = 0, sv = 0;
  for (const Sample& s : samples_) st += s.tsc_ns - t0, sv += s.nic - v0;
  const double mt = st / n, mv = sv / n;
  double stt = 0, stv = 0;
  for (const Sample& s : samples_) {
    const double dt = s.tsc_ns - t0 - mt, dv = s.nic - v0 - mv;
    stt += dt * dt;
    stv += dt * dv;
  }
  if (stt == 0) return std::nullopt;  // all samples at one instant
  ClockLine line;
  line.nominal = nominal_;
  line.slope = stv / stt;
  if (!(line.slope > 0)) return std::nullopt;
  line.tsc_ref = tsc_ref_;
  line.nic_ref = nic_ref_;
  line.tsc0 = t0 + mt;
  line.nic0 = v0 + mv;
  double sq = 0;
  for (const Sample& s : samples_) {
    const double r = (s.nic - line.nic0) / line.slope + line.tsc0 - s.tsc_ns;
    sq += r * r;
    line.max_residual_ns = std::max(line.max_residual_ns, std::fabs(r));
  }
  line.residual_ns = std::sqrt(sq / n);
  return line;
}

}  // namespace fg::clock
