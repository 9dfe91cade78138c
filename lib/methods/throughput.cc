#include "methods/throughput.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"
#include "base/status.h"

namespace fg::methods {

absl::StatusOr<ThroughputResult> RunThroughput(const port::Eal& eal, const std::vector<port::Port*>& ports,
                                               const std::vector<stream::CompiledStream>& streams,
                                               const config::TestSpec& test, const MethodOptions& options) {
  ThroughputResult out;
  out.name = test.name;
  out.search = test.search == config::TestSpec::Search::kBinary ? "binary" : "multi_goal";
  FG_ASSIGN_OR_RETURN(const LoadRunner runner, LoadRunner::Make(eal, ports, streams, test));
  out.streams = runner.stream_names();
  out.line_l1_bps = runner.line_l1_bps();
  out.tx_ports = runner.tx_ports();
  out.mean_frame_size = runner.mean_frame_size();

  auto run = [&](double load, double duration_s, const std::string& phase) -> absl::StatusOr<TrialRecord> {
    FG_ASSIGN_OR_RETURN(engine::TrialResult r, runner.Run(load, duration_s, options));
    return runner.Record(r, load, duration_s, phase, static_cast<int>(out.trials.size()));
  };
  auto record = [&](TrialRecord t) {
    out.trials.push_back(t);
    if (t.included) out.trial_seconds += t.duration_s;
    if (options.on_trial) options.on_trial(out.trials.back());
  };

  if (test.warmup_ns > 0) {
    auto w = run(test.min_load, test.warmup_ns / 1e9, "warm-up");
    if (!w.ok()) {
      out.complete = false;
      out.stopped_because = std::string(w.status().message());
      return out;
    }
    w->included = false;
    w->excluded_because = "warm-up: fills address tables and queues before the first counted trial";
    record(*w);
  }

  // The search sees only measurements; the phase of each trial is filled in
  // from the search's own record afterwards.
  const search::TrialFn fn = [&](double load, double secs,
                                 const std::string& phase) -> absl::StatusOr<search::Measurement> {
    FG_ASSIGN_OR_RETURN(TrialRecord t, run(load, secs, phase));
    record(t);
    return search::Measurement{t.tx_frames, t.rx_frames};
  };
  auto to_outcome = [&](const std::string& name, double loss_ratio, bool found, double lower, double upper,
                        double loss_at_lower) {
    GoalOutcome g;
    g.name = name;
    g.loss_ratio = loss_ratio;
    g.found = found;
    g.lower_bound = lower;
    g.upper_bound = upper;
    g.conditional_throughput = lower * (1 - loss_at_lower);
    g.lower_bound_l1_bps = lower * out.line_l1_bps;
    g.lower_bound_pps = g.lower_bound_l1_bps / ((out.mean_frame_size + kL1OverheadBytes) * 8);
    g.lower_bound_l2_bps = g.lower_bound_pps * out.mean_frame_size * 8;
    return g;
  };

  // One search; its goals' outcomes.
  auto search_once = [&]() -> absl::StatusOr<std::vector<GoalOutcome>> {
    std::vector<GoalOutcome> goals;
    if (test.search == config::TestSpec::Search::kBinary) {
      const search::BinarySpec spec{.min_load = test.min_load,
                                    .max_load = test.max_load,
                                    .precision = test.precision,
                                    .loss_tolerance = test.loss_tolerance,
                                    .duration_s = test.trial_duration_ns / 1e9};
      FG_ASSIGN_OR_RETURN(search::BinaryResult r, search::Rfc2544Binary(spec, fn));
      double loss_at = 0;
      for (const search::Trial& t : r.trials) {
        if (t.load == r.throughput) loss_at = t.m.loss_ratio();
      }
      goals.push_back(to_outcome("throughput", test.loss_tolerance, r.found, r.throughput, r.upper, loss_at));
      return goals;
    }
    search::MultiGoalSpec spec{.min_load = test.min_load,
                               .max_load = test.max_load,
                               .initial_duration_s = test.initial_duration_ns / 1e9,
                               .goals = {}};
    for (const config::GoalSpec& g : test.goals) {
      search::Goal goal{
          .name = g.name, .loss_ratio = g.loss_ratio, .final_duration_s = g.final_duration_ns / 1e9, .width = g.width};
      goal.exceed_ratio = g.exceed_ratio;
      goal.duration_sum_s = g.duration_sum_ns / 1e9;
      spec.goals.push_back(goal);
    }
    FG_ASSIGN_OR_RETURN(search::MultiGoalResult r, search::MultiGoalSearch(spec, fn));
    for (size_t i = 0; i < r.goals.size(); ++i) {
      const search::GoalResult& g = r.goals[i];
      goals.push_back(
          to_outcome(g.name, spec.goals[i].loss_ratio, g.found, g.lower_bound, g.upper_bound, g.loss_ratio_at_lower));
    }
    return goals;
  };

  // `repetitions` searches: each goal's result is the mean of their lower
  // bounds (found when every search found it), with their spread.
  std::vector<std::vector<GoalOutcome>> reps;
  for (int k = 0; k < test.search_repetitions; ++k) {
    auto goals = search_once();
    if (!goals.ok()) {
      out.complete = false;
      out.stopped_because = std::string(goals.status().message());
      break;
    }
    reps.push_back(*std::move(goals));
  }
  if (reps.empty()) return out;
  out.goals = reps[0];
  for (size_t g = 0; g < out.goals.size(); ++g) {
    GoalOutcome& o = out.goals[g];
    double sum = 0, cond = 0;
    o.repetition_lower_bounds.clear();
    for (const auto& r : reps) {
      o.found = o.found && r[g].found;
      o.repetition_lower_bounds.push_back(r[g].lower_bound);
      sum += r[g].lower_bound;
      cond += r[g].conditional_throughput;
      o.upper_bound = std::max(o.upper_bound, r[g].upper_bound);
    }
    const double n = static_cast<double>(reps.size());
    const double mean = sum / n;
    double sq = 0;
    for (double x : o.repetition_lower_bounds) sq += (x - mean) * (x - mean);
    o.cv = reps.size() > 1 && mean > 0 ? std::sqrt(sq / (n - 1)) / mean : 0;
    const GoalOutcome averaged = to_outcome(o.name, o.loss_ratio, o.found, mean, o.upper_bound, 0);
    o.lower_bound = averaged.lower_bound;
    o.lower_bound_l1_bps = averaged.lower_bound_l1_bps;
    o.lower_bound_l2_bps = averaged.lower_bound_l2_bps;
    o.lower_bound_pps = averaged.lower_bound_pps;
    o.conditional_throughput = cond / n;
  }
  return out;
}

}  // namespace fg::methods
