#include "search/search.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>

#include "absl/strings/str_format.h"

namespace fg::search {
namespace {

absl::Status CheckLoads(double min_load, double max_load) {
  if (!(min_load > 0) || !(max_load >= min_load) || !std::isfinite(max_load)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("search bounds: need 0 < min_load <= max_load, got %g .. %g", min_load, max_load));
  }
  return absl::OkStatus();
}

// Runs trials and keeps the record.
class Recorder {
 public:
  explicit Recorder(const TrialFn& fn) : fn_(fn) {}
  absl::StatusOr<const Trial*> Run(double load, double duration_s, const char* phase) {
    auto m = fn_(load, duration_s, phase);
    if (!m.ok()) return m.status();
    trials_.push_back(Trial{load, duration_s, *m, phase});
    seconds_ += duration_s;
    return &trials_.back();
  }
  std::vector<Trial>& trials() { return trials_; }
  double seconds() const { return seconds_; }

 private:
  const TrialFn& fn_;
  std::vector<Trial> trials_;
  double seconds_ = 0;
};

}  // namespace

absl::StatusOr<BinaryResult> Rfc2544Binary(const BinarySpec& spec, const TrialFn& trial) {
  if (auto st = CheckLoads(spec.min_load, spec.max_load); !st.ok()) return st;
  if (!(spec.precision > 0)) return absl::InvalidArgumentError("search precision must be greater than zero");
  if (!(spec.duration_s > 0)) return absl::InvalidArgumentError("trial duration must be greater than zero");
  if (!(spec.loss_tolerance >= 0 && spec.loss_tolerance < 1)) {
    return absl::InvalidArgumentError("loss tolerance must be in [0, 1)");
  }
  Recorder rec(trial);
  BinaryResult r;
  auto passes = [&](double load, const char* phase) -> absl::StatusOr<bool> {
    auto t = rec.Run(load, spec.duration_s, phase);
    if (!t.ok()) return t.status();
    return (*t)->m.loss_ratio() <= spec.loss_tolerance;
  };
  auto finish = [&]() {
    r.trials = std::move(rec.trials());
    r.trial_seconds = rec.seconds();
    return r;
  };
  auto at_max = passes(spec.max_load, "max");
  if (!at_max.ok()) return at_max.status();
  if (*at_max) {
    r.found = true;
    r.throughput = r.upper = spec.max_load;
    return finish();
  }
  double lo = spec.min_load, hi = spec.max_load;
  bool lo_passed = false;
  while (hi - lo > spec.precision) {
    const double mid = (lo + hi) / 2;
    auto p = passes(mid, "binary");
    if (!p.ok()) return p.status();
    if (*p) {
      lo = mid;
      lo_passed = true;
    } else {
      hi = mid;
    }
  }
  if (!lo_passed) {  // every probe failed: does the floor itself pass?
    auto p = passes(lo, "min");
    if (!p.ok()) return p.status();
    lo_passed = *p;
    if (!lo_passed) hi = lo;
  }
  r.found = lo_passed;
  r.throughput = lo_passed ? lo : 0;
  r.upper = hi;
  return finish();
}

namespace {

// What the trials so far say about one goal.
struct GoalState {
  double hi;  // lowest upper-bound load; max_load if none
  bool hi_seen = false;
  std::optional<double> lo_final;    // highest lower-bound load below hi
  const Trial* lo_trial = nullptr;   // a final-duration pass there (for the conditional throughput)
  std::optional<double> lo_pending;  // highest undecided load below hi that some trial met the goal at
};

GoalState Classify(const Goal& g, const std::vector<Trial>& trials, double max_load) {
  const double sum = std::max(g.duration_sum_s, g.final_duration_s);
  const double allowed = g.exceed_ratio * sum;  // seconds of exceeding trials a lower bound may have
  struct LoadTotals {
    double exceeding = 0, passing_final = 0;
    bool passed = false;
    const Trial* final_pass = nullptr;
  };
  std::map<double, LoadTotals> by_load;
  for (const Trial& t : trials) {
    LoadTotals& l = by_load[t.load];
    if (t.m.loss_ratio() > g.loss_ratio) {
      l.exceeding += t.duration_s;
    } else {
      l.passed = true;
      if (t.duration_s >= g.final_duration_s) {
        l.passing_final += t.duration_s;
        l.final_pass = &t;
      }
    }
  }
  GoalState s;
  s.hi = max_load;
  auto upper = [&](const LoadTotals& l) { return allowed == 0 ? l.exceeding > 0 : l.exceeding > allowed; };
  for (const auto& [load, l] : by_load) {
    if (upper(l) && (!s.hi_seen || load < s.hi)) {
      s.hi = load;
      s.hi_seen = true;
    }
  }
  for (const auto& [load, l] : by_load) {
    if ((s.hi_seen && load >= s.hi) || upper(l) || !l.passed) continue;
    // Pessimistic: every second of the duration sum not yet tried at full length exceeds.
    const bool lower =
        l.passing_final > 0 && l.exceeding + std::max(0.0, sum - l.passing_final - l.exceeding) <= allowed;
    if (lower) {
      if (!s.lo_final || load > *s.lo_final) {
        s.lo_final = load;
        s.lo_trial = l.final_pass;
      }
    } else if (!s.lo_pending || load > *s.lo_pending) {
      s.lo_pending = load;
    }
  }
  return s;
}

}  // namespace

absl::StatusOr<MultiGoalResult> MultiGoalSearch(const MultiGoalSpec& spec, const TrialFn& trial) {
  if (auto st = CheckLoads(spec.min_load, spec.max_load); !st.ok()) return st;
  if (spec.goals.empty()) return absl::InvalidArgumentError("a multi-goal search needs at least one goal");
  if (!(spec.initial_duration_s > 0)) return absl::InvalidArgumentError("initial trial duration must be > 0");
  for (const Goal& g : spec.goals) {
    if (!(g.width > 0 && g.width < 1) || !(g.final_duration_s >= spec.initial_duration_s) ||
        !(g.loss_ratio >= 0 && g.loss_ratio < 1)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "goal %s: need 0 <= loss ratio < 1, 0 < width < 1 and final duration >= the initial duration", g.name));
    }
  }
  Recorder rec(trial);
  // Every goal starts from a short trial at the maximum load.
  if (auto t = rec.Run(spec.max_load, spec.initial_duration_s, "short"); !t.ok()) return t.status();

  constexpr int kMaxTrials = 1000;
  for (int n = 0; n < kMaxTrials; ++n) {
    // Each unfinished goal proposes its next trial; the shortest goes first
    // (narrow with short trials before spending final-duration ones), and
    // every trial then counts for all goals.
    std::optional<std::pair<double, double>> next;  // (duration, load)
    for (const Goal& g : spec.goals) {
      const GoalState s = Classify(g, rec.trials(), spec.max_load);
      if (s.hi_seen && s.hi <= spec.min_load) continue;  // nothing passes: done, not found
      const double lo_any = std::max({s.lo_final.value_or(0), s.lo_pending.value_or(0), 0.0});
      std::pair<double, double> want;
      if (!s.hi_seen && !s.lo_final) {
        want = {g.final_duration_s, spec.max_load};  // max passed short: confirm it at full duration
      } else if (!s.hi_seen) {
        continue;  // max met the goal at full duration
      } else if (lo_any == 0) {
        // No pass below the failure yet: go down (halfway to the floor, or the floor itself).
        const double down = std::max(spec.min_load, s.hi / 2);
        want = {spec.initial_duration_s, s.hi - spec.min_load <= g.width * s.hi ? spec.min_load : down};
        if (want.second == spec.min_load) want.first = g.final_duration_s;
      } else if ((s.hi - lo_any) / s.hi > g.width) {
        want = {spec.initial_duration_s, (lo_any + s.hi) / 2};  // narrow
      } else if (!s.lo_final || *s.lo_final < lo_any) {
        want = {g.final_duration_s, lo_any};  // narrow enough: confirm the lower bound at full duration
      } else {
        continue;  // done: a final-duration pass within the width below the failure
      }
      if (!next || want.first < next->first) next = want;
    }
    if (!next) break;
    if (auto t = rec.Run(next->second, next->first, next->first > spec.initial_duration_s ? "final" : "short");
        !t.ok()) {
      return t.status();
    }
  }

  MultiGoalResult r;
  for (const Goal& g : spec.goals) {
    const GoalState s = Classify(g, rec.trials(), spec.max_load);
    GoalResult gr;
    gr.name = g.name;
    gr.upper_bound = s.hi;
    if (s.lo_final && s.lo_trial != nullptr) {
      gr.found = true;
      gr.lower_bound = *s.lo_final;
      gr.loss_ratio_at_lower = s.lo_trial->m.loss_ratio();
      gr.conditional_throughput = s.lo_trial->load * (1 - gr.loss_ratio_at_lower);
    }
    r.goals.push_back(gr);
  }
  r.trials = std::move(rec.trials());
  r.trial_seconds = rec.seconds();
  return r;
}

}  // namespace fg::search
