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

  // A trial the tester kept up in (limited attempts are recorded, not counted, and run again).
  auto run = [&](double load, double duration_s, const std::string& phase) -> absl::StatusOr<TrialRecord> {
    FG_ASSIGN_OR_RETURN(engine::TrialResult r,
                        runner.RunUnlimited([&] { return runner.Run(load, duration_s, options); },
                                            [&](const engine::TrialResult& x, int index) {
                                              return runner.Record(x, load, duration_s, phase, index);
                                            },
                                            test.tester_limit_retries, options, out.trials));
    return runner.Record(r, load, duration_s, phase, static_cast<int>(out.trials.size()));
  };
  auto record = [&](TrialRecord t) {
    out.trials.push_back(t);
    if (t.included) out.trial_seconds += t.duration_s;
    if (options.on_trial) options.on_trial(out.trials.back());
  };

  if (test.warmup_ns > 0) {
    const double secs = test.warmup_ns / 1e9;
    auto w = runner.Run(test.min_load, secs, options);
    if (!w.ok()) {
      out.complete = false;
      out.stopped_because = std::string(w.status().message());
      return out;
    }
    TrialRecord t = runner.Record(*w, test.min_load, secs, "warm-up", 0);
    t.included = false;
    t.excluded_because = "warm-up: fills address tables and queues before the first counted trial";
    record(t);
  }

  // The search sees only measurements; the phase of each trial is filled in
  // from the search's own record afterwards.
  const search::TrialFn fn = [&](double load, double secs,
                                 const std::string& phase) -> absl::StatusOr<search::Measurement> {
    FG_ASSIGN_OR_RETURN(TrialRecord t, run(load, secs, phase));
    record(t);
    return search::Measurement{t.tx_frames, t.rx_frames};
  };
  // The goal's figures: the load it holds at as set, and as TX measured it
  // in the deciding trials (the counted ones at that load since trial
  // `first`, of `final_s` when given: a multi-goal search's final trials).
  auto to_outcome = [&](const std::string& name, double loss_ratio, bool found, double lower, double upper,
                        double loss_at_lower, size_t first, double final_s) {
    GoalOutcome g;
    g.name = name;
    g.loss_ratio = loss_ratio;
    g.found = found;
    g.lower_bound = lower;
    g.upper_bound = upper;
    g.conditional_throughput = lower * (1 - loss_at_lower);
    g.set_l1_bps = lower * out.line_l1_bps;
    g.set_pps = g.set_l1_bps / ((out.mean_frame_size + kL1OverheadBytes) * 8);
    g.set_l2_bps = g.set_pps * out.mean_frame_size * 8;
    double secs = 0, l1 = 0, l2 = 0, fps = 0;
    std::vector<double> ports(out.tx_ports.size(), 0);
    for (int pass = 0; pass < 2 && secs == 0; ++pass) {
      for (size_t i = first; i < out.trials.size(); ++i) {
        const TrialRecord& t = out.trials[i];
        if (!t.included || t.load != lower || (pass == 0 && final_s > 0 && t.duration_s != final_s)) continue;
        secs += t.duration_s;
        l1 += t.offered_l1_bps * t.duration_s;
        l2 += t.offered_l2_bps * t.duration_s;
        fps += t.offered_fps * t.duration_s;
        for (size_t p = 0; p < ports.size() && p < t.port_offered_l1_bps.size(); ++p) {
          ports[p] += t.port_offered_l1_bps[p] * t.duration_s;
        }
      }
    }
    g.deciding_trial_seconds = secs;
    if (secs > 0) {
      g.lower_bound_l1_bps = l1 / secs;
      g.lower_bound_l2_bps = l2 / secs;
      g.lower_bound_pps = fps / secs;
      for (double& x : ports) x /= secs;
      g.port_l1_bps = ports;
    }
    return g;
  };

  // One search; its goals' outcomes.
  auto search_once = [&]() -> absl::StatusOr<std::vector<GoalOutcome>> {
    std::vector<GoalOutcome> goals;
    const size_t first = out.trials.size();
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
      goals.push_back(to_outcome("throughput", test.loss_tolerance, r.found, r.throughput, r.upper, loss_at, first, 0));
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
      goals.push_back(to_outcome(g.name, spec.goals[i].loss_ratio, g.found, g.lower_bound, g.upper_bound,
                                 g.loss_ratio_at_lower, first, spec.goals[i].final_duration_s));
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
    o.repetition_lower_bounds.clear();
    GoalOutcome sum;
    sum.port_l1_bps.assign(out.tx_ports.size(), 0);
    o.port_l1_bps.assign(out.tx_ports.size(), 0);
    int decided = 0;  // searches with deciding trials for this goal
    for (const auto& r : reps) {
      decided += r[g].deciding_trial_seconds > 0;
      o.found = o.found && r[g].found;
      o.repetition_lower_bounds.push_back(r[g].lower_bound);
      o.upper_bound = std::max(o.upper_bound, r[g].upper_bound);
      for (auto [to, from] :
           {std::pair{&sum.lower_bound, r[g].lower_bound},
            std::pair{&sum.conditional_throughput, r[g].conditional_throughput},
            std::pair{&sum.lower_bound_l1_bps, r[g].lower_bound_l1_bps},
            std::pair{&sum.lower_bound_l2_bps, r[g].lower_bound_l2_bps},
            std::pair{&sum.lower_bound_pps, r[g].lower_bound_pps}, std::pair{&sum.set_l1_bps, r[g].set_l1_bps},
            std::pair{&sum.set_l2_bps, r[g].set_l2_bps}, std::pair{&sum.set_pps, r[g].set_pps},
            std::pair{&sum.deciding_trial_seconds, r[g].deciding_trial_seconds}}) {
        *to += from;
      }
      for (size_t p = 0; p < sum.port_l1_bps.size() && p < r[g].port_l1_bps.size(); ++p) {
        sum.port_l1_bps[p] += r[g].port_l1_bps[p];
      }
    }
    // Each goal's figures are the mean over the searches; the measured ones
    // over the searches that had deciding trials.
    const double n = static_cast<double>(reps.size());
    const double mean = sum.lower_bound / n;
    double sq = 0;
    for (double x : o.repetition_lower_bounds) sq += (x - mean) * (x - mean);
    o.cv = reps.size() > 1 && mean > 0 ? std::sqrt(sq / (n - 1)) / mean : 0;
    o.lower_bound = mean;
    o.conditional_throughput = sum.conditional_throughput / n;
    o.set_l1_bps = sum.set_l1_bps / n;
    o.set_l2_bps = sum.set_l2_bps / n;
    o.set_pps = sum.set_pps / n;
    o.deciding_trial_seconds = sum.deciding_trial_seconds;
    const double measured = static_cast<double>(decided);
    o.lower_bound_l1_bps = measured > 0 ? sum.lower_bound_l1_bps / measured : 0;
    o.lower_bound_l2_bps = measured > 0 ? sum.lower_bound_l2_bps / measured : 0;
    o.lower_bound_pps = measured > 0 ? sum.lower_bound_pps / measured : 0;
    for (size_t p = 0; p < o.port_l1_bps.size(); ++p) {
      o.port_l1_bps[p] = measured > 0 ? sum.port_l1_bps[p] / measured : 0;
    }
  }
  return out;
}

}  // namespace fg::methods
