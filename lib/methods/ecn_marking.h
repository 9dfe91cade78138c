// methods/ecn_marking.h: ECN marking accuracy (the draft's category 3):
// the probability that the bottleneck marks CE as a function of its queue
// depth, and the Kmin, Kmax and Pmax that the curve shows.
//
// The depth a frame found is read from its latency: (latency - base) x the
// bottleneck's rate, the base the P50 of an unloaded run of the same streams
// in the same test. The queue is swept by ramps: each a burst of `frames` of
// every stream at line rate, which fills the bottleneck's queue from empty
// through frames x size bytes (each frame finding the depth its predecessors
// left), then `gap` of silence for it to drain. Frames are binned by depth
// (`bin` wide) and the CE-marked ones counted per bin (the RX analysis keeps
// the marked frames' latencies apart: stats::StreamStats::latency_ce).
//
// What the curve says: Kmax is the lower edge of the first bin from which
// every bin (with at least min_frames frames) is all marked (p >= 0.99); a
// straight line fitted (weighted by frames) to the bins with marks below it
// (but the one just below, which also takes frames within the depth
// estimate's error of the step) gives Kmin (where it crosses 0) and Pmax
// (its value at Kmax). With
// `configured` the deviations of each from the configured value.
//
//   - ecn_marking: {streams: [s], bottleneck: 20 Mbps, bin: 6 KB, ramp: {frames: 130, gap: 100 ms,
//                   repetitions: 100}, configured: {kmin: 30 KB, kmax: 90 KB, pmax: 20 %}}
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "methods/load.h"
#include "methods/test_kind.h"
#include "stats/histogram.h"

namespace fg::methods {

struct EcnMarkingParams : config::TestParams {
  double bottleneck_bps = 0;  // the rate the queue drains at, in the bits of the bytes it counts
  uint64_t bin_bytes = 10'000;
  uint32_t ramp_frames = 100;
  int64_t ramp_gap_ns = 100'000'000;
  int ramp_repetitions = 100;
  double base_load = 0;  // fraction of line (L1): the unloaded run (not given: 1 % of the bottleneck)
  bool base_load_given = false;
  int64_t base_duration_ns = 1'000'000'000;
  uint64_t min_frames = 20;  // a bin with fewer is shown, not used for Kmin, Kmax, Pmax
  struct Configured {
    uint64_t kmin = 0, kmax = 0;
    double pmax = 0;
  };
  std::optional<Configured> configured;
};

struct EcnBin {
  uint64_t depth_bytes = 0;  // the bin's lower edge
  uint64_t frames = 0, marked = 0;
  double probability() const { return frames ? static_cast<double>(marked) / static_cast<double>(frames) : 0; }
};

// Kmin, Kmax and Pmax as the bins show them (each absent when they cannot).
struct EcnCurve {
  std::optional<double> kmin_bytes, kmax_bytes, pmax;
};

struct EcnMarkingResult : TestResult {
  double base_latency_ns = 0;  // P50 of the unloaded run
  double bottleneck_bps = 0;
  uint64_t bin_bytes = 0;
  std::vector<EcnBin> bins;  // from depth 0, every bin up to the deepest frame's
  EcnCurve measured;
  uint64_t frames = 0, marked = 0;  // of the ramps' (their latency samples)
  uint64_t beyond = 0;              // frames deeper than kMaxEcnBins bins: counted, not binned
  std::string observation_point;
};

// The frames of `all` (every latency) and `marked` (the CE-marked ones'),
// by the depth each found: (latency - base_ns) x bps / 8, in bins of
// `bin_bytes` (a depth below 0: the first), at most kMaxEcnBins of them;
// frames deeper are counted in `*beyond` (optional).
inline constexpr size_t kMaxEcnBins = 4096;
std::vector<EcnBin> BinByDepth(const stats::LatencyHistogram& all, const stats::LatencyHistogram& marked,
                               double base_ns, double bps, uint64_t bin_bytes, uint64_t* beyond = nullptr);
// Kmin, Kmax and Pmax from the bins (with at least `min_frames` frames).
EcnCurve FitCurve(const std::vector<EcnBin>& bins, uint64_t bin_bytes, uint64_t min_frames);

const TestKind& EcnMarkingKind();

}  // namespace fg::methods
