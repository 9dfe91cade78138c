#include "methods/throughput.h"

#include <map>

#include "absl/strings/str_format.h"
#include "base/status.h"

namespace fg::methods {
namespace {

constexpr double kL1OverheadBytes = 20;  // preamble + SFD (8) and inter-frame gap (12)

}  // namespace

absl::StatusOr<ThroughputResult> RunThroughput(const port::Eal& eal, const std::vector<port::Port*>& ports,
                                               const std::vector<stream::CompiledStream>& streams,
                                               const config::TestSpec& test, const MethodOptions& options) {
  ThroughputResult out;
  out.name = test.name;
  out.search = test.search == config::TestSpec::Search::kBinary ? "binary" : "multi_goal";

  // The test's streams, and how many of them share each TX port.
  std::vector<stream::CompiledStream> base;
  std::map<size_t, int> per_port;
  for (size_t i : test.streams) {
    const stream::CompiledStream& s = streams.at(i);
    if (s.burst_frames != 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "test %s: stream %s has a burst schedule; a throughput test paces its streams at the searched load",
          test.name, s.name));
    }
    base.push_back(s);
    ++per_port[s.tx_port];
    out.streams.push_back(s.name);
  }
  if (base.empty()) return absl::InvalidArgumentError(absl::StrFormat("test %s: no streams", test.name));
  double frame_sum = 0;
  for (const auto& [port_index, n] : per_port) {
    const double line = ports.at(port_index)->capabilities().line_bps();
    if (line <= 0) {
      return absl::FailedPreconditionError(
          absl::StrFormat("test %s: port %s reports no link speed, so a load cannot be a share of its line rate",
                          test.name, ports[port_index]->name()));
    }
    out.line_l1_bps += line;
  }
  for (const auto& s : base) frame_sum += s.frame_size;
  out.mean_frame_size = frame_sum / static_cast<double>(base.size());

  // One trial: every stream at `load` of its port's line rate, shared.
  auto run = [&](double load, double duration_s, const std::string& phase) -> absl::StatusOr<TrialRecord> {
    std::vector<stream::CompiledStream> ts = base;
    for (stream::CompiledStream& s : ts) {
      const double line = ports[s.tx_port]->capabilities().line_bps();
      s.pps = load * line / per_port[s.tx_port] / ((s.frame_size + kL1OverheadBytes) * 8);
      s.count = 0;
      s.duration_ns = static_cast<int64_t>(duration_s * 1e9);
    }
    engine::TrialOptions opt;
    opt.drain_ns = options.drain_ns;
    opt.interrupt = options.interrupt;
    opt.sample_interval_ns = 0;
    FG_ASSIGN_OR_RETURN(engine::TrialResult r, engine::RunTrial(eal, ports, ts, opt));
    if (r.interrupted) return absl::CancelledError("interrupted");
    TrialRecord t;
    t.index = static_cast<int>(out.trials.size());
    t.phase = phase;
    t.load = load;
    t.duration_s = duration_s;
    double tx_l1_bits = 0, rx_l1_bits = 0;
    for (const engine::StreamResult& s : r.streams) {
      const uint64_t unique = s.rx.packets - std::min(s.rx.packets, s.analysis.duplicate);
      t.tx_frames += s.tx.packets;
      t.rx_frames += unique;
      tx_l1_bits += static_cast<double>(s.tx.bytes + s.tx.packets * 20) * 8;
      rx_l1_bits += static_cast<double>(unique) * (s.frame_size + kL1OverheadBytes) * 8;
    }
    const double secs = r.duration_ns > 0 ? r.duration_ns / 1e9 : duration_s;
    t.offered_l1_bps = tx_l1_bits / secs;
    t.received_l1_bps = rx_l1_bits / secs;
    t.loss_ratio = search::Measurement{t.tx_frames, t.rx_frames}.loss_ratio();
    t.timestamp_source = r.timestamp_source;
    return t;
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

  if (test.search == config::TestSpec::Search::kBinary) {
    const search::BinarySpec spec{.min_load = test.min_load,
                                  .max_load = test.max_load,
                                  .precision = test.precision,
                                  .loss_tolerance = test.loss_tolerance,
                                  .duration_s = test.trial_duration_ns / 1e9};
    auto r = search::Rfc2544Binary(spec, fn);
    if (!r.ok()) {
      out.complete = false;
      out.stopped_because = std::string(r.status().message());
      return out;
    }
    double loss_at = 0;
    for (const search::Trial& t : r->trials) {
      if (t.load == r->throughput) loss_at = t.m.loss_ratio();
    }
    out.goals.push_back(to_outcome("throughput", test.loss_tolerance, r->found, r->throughput, r->upper, loss_at));
  } else {
    search::MultiGoalSpec spec{.min_load = test.min_load,
                               .max_load = test.max_load,
                               .initial_duration_s = test.initial_duration_ns / 1e9,
                               .goals = {}};
    for (const config::GoalSpec& g : test.goals) {
      spec.goals.push_back(search::Goal{
          .name = g.name, .loss_ratio = g.loss_ratio, .final_duration_s = g.final_duration_ns / 1e9, .width = g.width});
    }
    auto r = search::MultiGoalSearch(spec, fn);
    if (!r.ok()) {
      out.complete = false;
      out.stopped_because = std::string(r.status().message());
      return out;
    }
    for (size_t i = 0; i < r->goals.size(); ++i) {
      const search::GoalResult& g = r->goals[i];
      out.goals.push_back(
          to_outcome(g.name, spec.goals[i].loss_ratio, g.found, g.lower_bound, g.upper_bound, g.loss_ratio_at_lower));
    }
  }
  return out;
}

}  // namespace fg::methods
