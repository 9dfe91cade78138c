// search/search.h: throughput searches over a trial function.
//
// A search only decides which load to try next and what the trials mean; the
// caller's TrialFn runs the traffic (lib/methods: the engine on real ports;
// tests: a simulated DUT). Loads are in whatever unit the caller chose
// (fraction of line rate, pps): the search treats them as numbers.
//
// 1. Rfc2544Binary: RFC 2544 section 26.1. Try the maximum; if it fails,
//    halve the interval between the highest passing and the lowest failing
//    load until it is narrower than the precision. Every trial has the full
//    duration; a trial passes when its loss ratio is at most the tolerance
//    (0: zero loss).
// 2. MultiGoalSearch, in the spirit of MLRsearch (draft-ietf-bmwg-mlrsearch):
//    several goals (e.g. NDR: loss 0, PDR: loss 0.5 %) in one search; every
//    trial is classified against every goal, so one trial narrows them all.
//    Short trials narrow first (a short trial that exceeds a goal's loss
//    ratio is an upper bound: more time only loses more); then only trials
//    of the goal's final duration can make a load a lower bound, repeated at
//    one load until its exceed ratio over the goal's duration sum decides
//    it (a noisy DUT may lose in some trials and not others). A goal is
//    done when its lower bound is a final-duration pass and its upper bound
//    is within the goal width above it; its conditional throughput is the
//    forwarding rate measured at the lower bound.
//
//   fg::search::BinarySpec spec{.min_load = 0.01, .max_load = 1.0, .precision = 0.005, .duration_s = 60};
//   auto r = fg::search::Rfc2544Binary(spec, [&](double load, double secs, const std::string&) { return
//   RunTrialAt(load, secs); }); if (r.ok() && r->found) printf("throughput %.4f\n", r->throughput);
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace fg::search {

// What one trial measured.
struct Measurement {
  uint64_t tx = 0;  // frames offered
  uint64_t rx = 0;  // frames received (unique)
  double loss_ratio() const {
    return tx == 0 ? 0 : static_cast<double>(tx > rx ? tx - rx : 0) / static_cast<double>(tx);
  }
};

// Runs `duration_s` of traffic at `load` and says what came back; `phase`
// names the search step ("max", "binary", "min", "short", "final").
using TrialFn = std::function<absl::StatusOr<Measurement>(double load, double duration_s, const std::string& phase)>;

// One trial as the search used it.
struct Trial {
  double load = 0;
  double duration_s = 0;
  Measurement m;
  std::string phase;  // "max", "binary", "short", "final", ...
};

struct BinarySpec {
  double min_load = 0;        // lowest load worth trying (> 0)
  double max_load = 1;        // first trial
  double precision = 0;       // stop when upper - lower <= precision (absolute, load units)
  double loss_tolerance = 0;  // a trial passes when its loss ratio <= this
  double duration_s = 60;
};

struct BinaryResult {
  bool found = false;     // some load passed
  double throughput = 0;  // the highest passing load (0 when none)
  double upper = 0;       // the lowest failing load (max_load when it passed)
  std::vector<Trial> trials;
  double trial_seconds = 0;  // sum of trial durations
};

absl::StatusOr<BinaryResult> Rfc2544Binary(const BinarySpec& spec, const TrialFn& trial);

struct Goal {
  std::string name;       // "NDR", "PDR"
  double loss_ratio = 0;  // a trial exceeds the goal when its loss ratio is above this
  double final_duration_s = 60;
  double width = 0.005;  // relative: done when (upper - lower) / upper <= width
  // MLRsearch's goal exceed ratio and duration sum: a load is an upper bound
  // once its exceeding trials last more than exceed_ratio x duration_sum, and
  // a lower bound once even the pessimistic view (every second not yet tried
  // exceeding) stays within that, counting final-duration passes only.
  // 0 and 0 (duration_sum = final duration): one exceeding trial makes an
  // upper bound, one final-duration pass a lower bound.
  double exceed_ratio = 0;
  double duration_sum_s = 0;
};

struct MultiGoalSpec {
  double min_load = 0;
  double max_load = 1;
  double initial_duration_s = 1;  // the short trials of the narrowing phase
  std::vector<Goal> goals;
};

struct GoalResult {
  std::string name;
  bool found = false;                 // a final-duration trial met the goal
  double lower_bound = 0;             // the highest load a final-duration trial met the goal at
  double upper_bound = 0;             // the lowest load some trial exceeded the goal at (max_load if none)
  double conditional_throughput = 0;  // load x (1 - loss ratio) of the trial that made the lower bound
  double loss_ratio_at_lower = 0;
};

struct MultiGoalResult {
  std::vector<GoalResult> goals;
  std::vector<Trial> trials;
  double trial_seconds = 0;
};

absl::StatusOr<MultiGoalResult> MultiGoalSearch(const MultiGoalSpec& spec, const TrialFn& trial);

}  // namespace fg::search
