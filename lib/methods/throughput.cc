#include "methods/throughput.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"
#include "base/status.h"
#include "base/units.h"
#include "config/reader.h"
#include "methods/matrix.h"
#include "stream/stream.h"

namespace fg::methods {

absl::StatusOr<ThroughputResult> RunThroughput(const port::Eal& eal, const std::vector<port::Port*>& ports,
                                               const std::vector<stream::CompiledStream>& streams,
                                               const config::TestSpec& test, const MethodOptions& options) {
  const ThroughputParams& tp = test.As<ThroughputParams>();
  ThroughputResult out;
  out.name = test.name;
  out.search = tp.search == ThroughputParams::Search::kBinary ? "binary" : "multi_goal";
  FG_ASSIGN_OR_RETURN(const LoadRunner runner, LoadRunner::Make(eal, ports, streams, test, {}));
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
    auto w = runner.Run(tp.min_load, secs, options);
    if (!w.ok()) {
      out.complete = false;
      out.stopped_because = std::string(w.status().message());
      return out;
    }
    TrialRecord t = runner.Record(*w, tp.min_load, secs, "warm-up", 0);
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
    g.set_pps = g.set_l1_bps / ((out.mean_frame_size + kEthL1Overhead) * 8);
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
    if (tp.search == ThroughputParams::Search::kBinary) {
      const search::BinarySpec spec{.min_load = tp.min_load,
                                    .max_load = tp.max_load,
                                    .precision = tp.precision,
                                    .loss_tolerance = tp.loss_tolerance,
                                    .duration_s = tp.trial_duration_ns / 1e9};
      FG_ASSIGN_OR_RETURN(search::BinaryResult r, search::Rfc2544Binary(spec, fn));
      double loss_at = 0;
      for (const search::Trial& t : r.trials) {
        if (t.load == r.throughput) loss_at = t.m.loss_ratio();
      }
      goals.push_back(to_outcome("throughput", tp.loss_tolerance, r.found, r.throughput, r.upper, loss_at, first, 0));
      return goals;
    }
    search::MultiGoalSpec spec{.min_load = tp.min_load,
                               .max_load = tp.max_load,
                               .initial_duration_s = tp.initial_duration_ns / 1e9,
                               .goals = {}};
    for (const GoalSpec& g : tp.goals) {
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
  for (int k = 0; k < tp.search_repetitions; ++k) {
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
    // The mean as the first plus the mean difference from it: repetitions
    // that all found the same load give exactly that load, and a CV of
    // exactly 0 (sum / n of three 0.2s is 0.20000000000000004).
    const double first = o.repetition_lower_bounds.empty() ? 0 : o.repetition_lower_bounds[0];
    double diff = 0;
    for (double x : o.repetition_lower_bounds) diff += x - first;
    const double mean = first + diff / n;
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

namespace {

using config::Node;
using config::Opt;

config::Location Where(const Node& n) { return config::Location{n.line(), n.column()}; }

class Throughput final : public TestKind {
 public:
  std::string_view key() const override { return "throughput"; }
  std::vector<std::string_view> own_keys() const override {
    return {"search", "min",   "max",         "precision", "loss_tolerance", "trial_duration", "initial_duration",
            "goals",  "message_sizes", "qps", "directions", "repetitions"};
  }

  absl::StatusOr<std::shared_ptr<const config::TestParams>> Parse(const config::Plan& plan, const Node& n,
                                                                  const config::TestSpec& test) const override {
    auto t = std::make_shared<ThroughputParams>();
    if (auto list = n.Optional("message_sizes")) {
      FG_ASSIGN_OR_RETURN(std::vector<Node> items, list->Items());
      for (const Node& i : items) {
        FG_ASSIGN_OR_RETURN(uint64_t b, i.Bytes(1, uint64_t{1} << 31));
        t->message_sizes.push_back(b);
        t->message_sizes_at.push_back(Where(i));
      }
    }
    if (auto list = n.Optional("qps")) {
      FG_ASSIGN_OR_RETURN(std::vector<Node> items, list->Items());
      for (const Node& i : items) {
        FG_ASSIGN_OR_RETURN(int64_t q, i.Int(1, 1 << 24));
        t->qps.push_back(static_cast<uint32_t>(q));
        t->qps_at.push_back(Where(i));
      }
    }
    if (auto list = n.Optional("directions")) {
      FG_ASSIGN_OR_RETURN(std::vector<Node> items, list->Items());
      for (const Node& i : items) {
        FG_ASSIGN_OR_RETURN(std::string d, i.OneOf({"uni", "bi"}));
        t->bidirectional.push_back(d == "bi");
        t->directions_at.push_back(Where(i));
        // `bi` sends each stream back from its rx_port: a stream received on
        // its own port has no way back, and its cell would run one way only.
        for (size_t k : test.streams) {
          const config::StreamSpec& s = plan.streams[k];
          if (d == "bi" && s.rx_port == s.port) {
            return i.Error(absl::StrFormat(
                "'bi' also runs each stream back from its rx_port to its port, but stream '%s' is received on its "
                "own port '%s'; give it an rx_port of its own, leave it out of this test's streams, or use uni",
                s.name, plan.ports[s.port].name));
          }
        }
      }
    }
    if (auto s = n.Optional("search")) {
      FG_ASSIGN_OR_RETURN(std::string v, s->OneOf({"binary", "multi_goal"}));
      t->search = v == "binary" ? ThroughputParams::Search::kBinary : ThroughputParams::Search::kMultiGoal;
    }
    using config::PercentIn;
    FG_RETURN_IF_ERROR(Opt(n, "min", t->min_load, PercentIn(0.0001, 100)));
    FG_RETURN_IF_ERROR(Opt(n, "max", t->max_load, PercentIn(0.0001, 100)));
    if (t->min_load > t->max_load) return n.At("min").Error("min must not be above max");
    FG_RETURN_IF_ERROR(Opt(n, "precision", t->precision, PercentIn(0.0001, 100)));
    FG_RETURN_IF_ERROR(Opt(n, "loss_tolerance", t->loss_tolerance, PercentIn(0, 99.9)));
    FG_RETURN_IF_ERROR(Opt(n, "repetitions", t->search_repetitions, config::IntIn(1, 1000)));
    FG_RETURN_IF_ERROR(Opt(n, "trial_duration", t->trial_duration_ns, config::DurationIn()));
    FG_RETURN_IF_ERROR(Opt(n, "initial_duration", t->initial_duration_ns, config::DurationIn()));
    // A trial shorter than kMinTrialNs measures the tester's start, not the device.
    for (auto [key, ns] : {std::pair{"trial_duration", t->trial_duration_ns},
                           std::pair{"initial_duration", t->initial_duration_ns}}) {
      if (n.Optional(key) && ns < kMinTrialNs) {
        return n.At(key).Error(absl::StrFormat("%s '%s' is shorter than the minimum of %s", key, n.At(key).text(),
                                               FormatDuration(kMinTrialNs)));
      }
    }
    if (!n.Optional("initial_duration")) {
      t->initial_duration_ns = std::min(t->initial_duration_ns, t->trial_duration_ns);  // default: 1 s or shorter
    } else if (t->initial_duration_ns > t->trial_duration_ns) {
      return n.At("initial_duration").Error("initial_duration must be at most trial_duration");
    }
    if (auto g = n.Optional("goals")) {
      if (t->search != ThroughputParams::Search::kMultiGoal) return g->Error("goals belong to search: multi_goal");
      FG_ASSIGN_OR_RETURN(std::vector<Node> items, g->Items());
      for (const Node& i : items) {
        FG_RETURN_IF_ERROR(i.CheckKeys({"name", "loss", "final_duration", "width", "exceed_ratio", "duration_sum"}));
        GoalSpec goal;
        FG_ASSIGN_OR_RETURN(Node name, i.Required("name"));
        FG_ASSIGN_OR_RETURN(goal.name, name.String());
        FG_ASSIGN_OR_RETURN(Node loss, i.Required("loss"));
        FG_ASSIGN_OR_RETURN(goal.loss_ratio, loss.Percent(0, 99.9));
        FG_RETURN_IF_ERROR(Opt(i, "final_duration", goal.final_duration_ns, config::DurationIn()));
        if (i.Optional("final_duration") && goal.final_duration_ns < kMinTrialNs) {
          return i.At("final_duration")
              .Error(absl::StrFormat("final_duration '%s' is shorter than the minimum of %s",
                                     i.At("final_duration").text(), FormatDuration(kMinTrialNs)));
        }
        FG_RETURN_IF_ERROR(Opt(i, "width", goal.width, PercentIn(0.0001, 50)));
        FG_RETURN_IF_ERROR(Opt(i, "exceed_ratio", goal.exceed_ratio, PercentIn(0, 99)));
        FG_RETURN_IF_ERROR(Opt(i, "duration_sum", goal.duration_sum_ns, config::DurationIn()));
        t->goals.push_back(goal);
      }
      if (t->goals.empty()) return g->Error("goals: list is empty");
    } else if (t->search == ThroughputParams::Search::kMultiGoal) {
      t->goals = {GoalSpec{.name = "NDR", .loss_ratio = 0}, GoalSpec{.name = "PDR", .loss_ratio = 0.005}};
    }
    for (GoalSpec& goal : t->goals) {
      if (goal.final_duration_ns == 0) goal.final_duration_ns = t->trial_duration_ns;
    }
    return t;
  }

  std::string Describe(const config::TestSpec& test) const override {
    return absl::StrFormat(
        "throughput, %s search",
        test.As<ThroughputParams>().search == ThroughputParams::Search::kBinary ? "binary" : "multi-goal");
  }

  double EstimateSeconds(const config::TestSpec& test, int64_t drain_ns) const override {
    const ThroughputParams& t = test.As<ThroughputParams>();
    const double drain = drain_ns / 1e9, warm = test.warmup_ns / 1e9;
    if (t.search == ThroughputParams::Search::kBinary) {
      return warm + (2 + Halvings((t.max_load - t.min_load) / t.precision)) * (t.trial_duration_ns / 1e9 + drain);
    }
    double finals = 0;
    double narrowest = 1;
    for (const GoalSpec& g : t.goals) {
      finals += 2 * (g.final_duration_ns / 1e9 + drain);
      narrowest = std::min(narrowest, g.width);
    }
    return warm + finals +
           Halvings((t.max_load - t.min_load) / (narrowest * t.max_load)) * (t.initial_duration_ns / 1e9 + drain);
  }

  absl::Status Precheck(const config::Plan& plan, size_t test_index) const override {
    return PrecheckMatrix(plan, test_index);
  }

  absl::StatusOr<std::vector<std::shared_ptr<const TestResult>>> Run(const TestContext& c,
                                                                     const config::TestSpec& test) const override {
    // One search per matrix cell (message size x QP count x direction).
    const std::vector<MatrixCell> cells = ExpandMatrix(c.plan, test);
    std::vector<double> lines;
    for (port::Port* p : c.ports) lines.push_back(p->capabilities().line_bps());
    std::vector<std::shared_ptr<const TestResult>> out;
    for (const MatrixCell& cell : cells) {
      FG_ASSIGN_OR_RETURN(const std::vector<stream::CompiledStream> cell_streams, stream::Compile(cell.plan, lines));
      FG_ASSIGN_OR_RETURN(ThroughputResult r, RunThroughput(c.eal, c.ports, cell_streams, cell.test, c.options));
      r.cell = cell.label;
      r.message_size = cell.message_size;
      r.qps = cell.qps;
      r.bidirectional = cell.bidirectional;
      if (!cell.label.empty()) r.name = test.name + " [" + cell.label + "]";
      out.push_back(std::make_shared<ThroughputResult>(std::move(r)));
      if (c.options.interrupt != nullptr && c.options.interrupt->load()) break;
    }
    return out;
  }

  void WriteParameters(report::JsonWriter& w, const config::TestSpec& test, const TestResult&) const override {
    const ThroughputParams& t = test.As<ThroughputParams>();
    w.Field("min_load_fraction_of_line", t.min_load);
    w.Field("max_load_fraction_of_line", t.max_load);
    if (t.search == ThroughputParams::Search::kBinary) {
      w.Field("precision_fraction_of_line", t.precision);
      w.Field("loss_tolerance_ratio", t.loss_tolerance);
    } else {
      w.Field("initial_trial_duration_s", t.initial_duration_ns / 1e9);
    }
    w.Field("trial_duration_s", t.trial_duration_ns / 1e9);
    w.Field("warmup_s", test.warmup_ns / 1e9);
    w.Field("repetitions", t.search_repetitions);
  }

  void WriteResults(report::JsonWriter& w, const config::TestSpec&, const TestResult& result) const override {
    const auto& r = static_cast<const ThroughputResult&>(result);
    w.Field("search", r.search);
    if (!r.cell.empty()) {
      w.Key("matrix_cell");
      w.BeginObject();
      w.Field("label", r.cell);
      w.Field("message_size_bytes", r.message_size);
      w.Field("qps", r.qps);
      w.Field("direction", r.bidirectional ? "bi" : "uni");
      w.EndObject();
    }
    w.Field("line_rate_bps_l1", r.line_l1_bps);
    w.Field("mean_frame_size_bytes", r.mean_frame_size);
    w.Field("load_accounting", "L1: frame + FCS + preamble/SFD (8 B) + inter-frame gap (12 B); L2: frame + FCS");
    w.Field("observation_point",
            "fabricgen analyzer at the fabric boundary: frames sent by TX, unique frames "
            "received by RX (duplicates not counted)");
    w.Key("goals");
    w.BeginArray();
    for (const GoalOutcome& g : r.goals) {
      w.BeginObject();
      w.Field("name", g.name);
      w.Field("loss_ratio_goal", g.loss_ratio);
      w.Field("found", g.found);
      w.Field("lower_bound_fraction_of_line", g.lower_bound);
      w.Field("upper_bound_fraction_of_line", g.upper_bound);
      // Measured offered load of the deciding trials; the set load beside it.
      w.Field("throughput_bps_l1", g.lower_bound_l1_bps);
      w.Field("throughput_bps_l2", g.lower_bound_l2_bps);
      w.Field("throughput_pps", g.lower_bound_pps);
      w.Field("deciding_trial_seconds", g.deciding_trial_seconds);
      w.Field("set_bps_l1", g.set_l1_bps);
      w.Field("set_bps_l2", g.set_l2_bps);
      w.Field("set_pps", g.set_pps);
      w.Field("conditional_throughput_fraction_of_line", g.conditional_throughput);
      // Measured over theoretical: the share of the line rate (L1) the goal holds at.
      w.Field("efficiency_of_line_rate", g.lower_bound);
      w.Key("repetitions_lower_bound_fraction_of_line");
      w.BeginArray();
      for (double x : g.repetition_lower_bounds) w.Double(x);
      w.EndArray();
      w.Field("cv_of_repetitions", g.cv);
      w.Key("per_port");
      w.BeginArray();
      for (size_t p = 0; p < r.tx_ports.size(); ++p) {
        w.BeginObject();
        w.Field("port", r.tx_ports[p].first);
        w.Field("throughput_bps_l1", p < g.port_l1_bps.size() ? g.port_l1_bps[p] : 0.0);
        w.Field("set_bps_l1", g.lower_bound * r.tx_ports[p].second);
        w.EndObject();
      }
      w.EndArray();
      w.EndObject();
    }
    w.EndArray();
  }

  std::string Summary(const TestResult& result) const override {
    const auto& r = static_cast<const ThroughputResult&>(result);
    int counted = 0;
    for (const auto& t : r.trials) counted += t.included;
    std::string out = absl::StrFormat("test %s (throughput, %s search): %d trials (%d counted, %.1f trial-seconds)%s\n",
                                      r.name, r.search, r.trials.size(), counted, r.trial_seconds,
                                      r.complete ? "" : ", INCOMPLETE: " + r.stopped_because);
    for (const GoalOutcome& g : r.goals) {
      if (!g.found) {
        out += absl::StrFormat("  %-10s loss <= %.3f %%: not found (fails at %.3f %% of line)\n", g.name,
                               g.loss_ratio * 100, g.upper_bound * 100);
        continue;
      }
      out += absl::StrFormat(
          "  %-10s loss <= %.3f %%: %s L1, %s L2, %s offered (set %.3f %% of line = %s L1; upper bound %.3f %%)\n",
          g.name, g.loss_ratio * 100, FormatBitRate(g.lower_bound_l1_bps), FormatBitRate(g.lower_bound_l2_bps),
          FormatPacketRate(g.lower_bound_pps), g.lower_bound * 100, FormatBitRate(g.set_l1_bps), g.upper_bound * 100);
    }
    return out;
  }
};

}  // namespace

const TestKind& ThroughputKind() {
  static const Throughput kind;
  return kind;
}

}  // namespace fg::methods
