// clock/clock_fit.h: map a NIC's clock onto the host's TSC nanoseconds.
//
// TX stamps come from the TSC (ns); a NIC that timestamps received frames
// does so on its own clock: free-running device ticks (mlx5 by default) or a
// PHC in ns (ice, mlx5 with REAL_TIME_CLOCK_ENABLE). To subtract one from the
// other, fabricgen samples both clocks together (TSC, NIC, TSC: the NIC
// reading is taken as the midpoint) and fits nic = a + b * tsc_ns by least
// squares; the inverse gives TSC ns for any NIC value. The control thread
// re-fits periodically; the RX lcore only applies the line.
//
//   fg::clock::ClockFit fit;
//   for (...) fit.Add(tsc_before_ns, nic_value, tsc_after_ns);
//   auto line = fit.Solve();               // nullopt until two distinct samples
//   uint64_t tsc_ns = line->ToTscNs(nic_value);
//   double ppm = line->drift_ppm();        // NIC rate vs TSC, minus one, in ppm
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <vector>

namespace fg::clock {

// tsc_ns = (nic - nic0) / slope + tsc0: the NIC value nic0 was read at tsc0.
// Both points are an exact integer reference plus a double offset from it,
// so a PHC's 1.7e18 ns (beyond a double's 2^53) keeps nanosecond precision.
struct ClockLine {
  double slope = 1;  // NIC units per TSC ns (1e-3 for a microsecond clock, ~1 for a PHC)
  uint64_t nic_ref = 0, tsc_ref = 0;
  double nic0 = 0;         // relative to nic_ref
  double tsc0 = 0;         // relative to tsc_ref
  double residual_ns = 0;  // RMS distance of the samples from the line, in TSC ns
  double max_residual_ns = 0;

  uint64_t ToTscNs(uint64_t nic) const {
    const double d = static_cast<double>(static_cast<int64_t>(nic - nic_ref)) - nic0;
    return tsc_ref + static_cast<uint64_t>(static_cast<int64_t>(std::llround(tsc0 + d / slope)));
  }
  // The inverse: the NIC value at TSC time `tsc_ns` (to schedule a send).
  uint64_t ToNic(uint64_t tsc_ns) const {
    const double d = static_cast<double>(static_cast<int64_t>(tsc_ns - tsc_ref)) - tsc0;
    return nic_ref + static_cast<uint64_t>(static_cast<int64_t>(std::llround(nic0 + d * slope)));
  }
  double drift_ppm() const { return (slope - nominal) / nominal * 1e6; }
  double nominal = 1;  // the slope the NIC claims (e.g. its tick rate in ticks/ns)
};

class ClockFit {
 public:
  // `nominal`: NIC units per ns the driver claims (1 for ns clocks,
  // hz / 1e9 for tick clocks); used only to report drift.
  explicit ClockFit(double nominal = 1, size_t capacity = 64) : nominal_(nominal), capacity_(capacity) {}
  // One bracketed reading: TSC ns before, the NIC value, TSC ns after. Keeps
  // the newest `capacity` samples.
  void Add(uint64_t tsc_before_ns, uint64_t nic, uint64_t tsc_after_ns);
  std::optional<ClockLine> Solve() const;
  size_t size() const { return samples_.size(); }

 private:
  struct Sample {
    double tsc_ns;  // relative to tsc_ref_
    double nic;     // relative to nic_ref_
  };
  uint64_t tsc_ref_ = 0, nic_ref_ = 0;  // the first sample's integer values
  double nominal_;
  size_t capacity_;
  std::vector<Sample> samples_;
};

}  // namespace fg::clock
