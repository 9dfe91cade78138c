#include "methods/latency.h"

#include <cmath>

#include "absl/strings/str_format.h"
#include "base/status.h"
#include "base/units.h"
#include "config/reader.h"
#include "methods/throughput.h"

namespace fg::methods {

void CompareLatency(LatencyResult& loaded, const LatencyResult& base) {
  loaded.compared_to = base.name;
  const double b50 = base.pooled.Percentile(50), b99 = base.pooled.Percentile(99);
  loaded.increase_p50 = b50 > 0 ? loaded.pooled.Percentile(50) / b50 : 0;
  loaded.increase_p99 = b99 > 0 ? loaded.pooled.Percentile(99) / b99 : 0;
}

absl::StatusOr<LatencyResult> RunLatency(const port::Eal& eal, const std::vector<port::Port*>& ports,
                                         const std::vector<stream::CompiledStream>& streams,
                                         const config::TestSpec& test, const MethodOptions& options) {
  const LatencyParams& lp = test.As<LatencyParams>();
  LatencyResult out;
  out.name = test.name;
  out.load = lp.load;
  FG_ASSIGN_OR_RETURN(const LoadRunner runner,
                      LoadRunner::Make(eal, ports, streams, test, {.bursts = false}));
  out.streams = runner.stream_names();
  out.line_l1_bps = runner.line_l1_bps();
  // A run the tester kept up in (limited attempts are recorded, not counted, and run again).
  auto trial = [&](double secs) -> absl::StatusOr<engine::TrialResult> {
    auto r = runner.RunUnlimited(
        [&] { return runner.Run(lp.load, secs, options); },
        [&](const engine::TrialResult& x, int index) { return runner.Record(x, lp.load, secs, "run", index); },
        test.tester_limit_retries, options, out.trials);
    if (!r.ok()) {
      out.complete = false;
      out.stopped_because = std::string(r.status().message());
    }
    return r;
  };
  if (absl::Status w = RunWarmup(runner, test, lp.load, options, out.trials); !w.ok()) {
    out.complete = false;
    out.stopped_because = std::string(w.message());
    return out;
  }
  const double secs = lp.trial_duration_ns / 1e9;
  for (int i = 0; i < lp.runs; ++i) {
    auto r = trial(secs);
    if (!r.ok()) return out;
    LatencyRun run;
    run.trial = runner.Record(*r, lp.load, secs, "run", static_cast<int>(out.trials.size()));
    stats::LatencyHistogram h;
    for (const engine::StreamResult& s : r->streams) {
      h.Merge(s.analysis.latency);
      run.excluded += s.analysis.latency_excluded;
    }
    run.samples = h.count();
    out.excluded += run.excluded;
    run.min_ns = h.min();
    run.max_ns = h.max();
    run.mean_ns = h.mean();
    run.p50_ns = h.Percentile(50);
    run.p99_ns = h.Percentile(99);
    out.pooled.Merge(h);
    out.observation_point = r->timestamp_source;
    out.trials.push_back(run.trial);
    out.runs.push_back(run);
    if (options.on_trial) options.on_trial(run.trial);
  }
  double mean = 0, sq = 0;
  for (const LatencyRun& r : out.runs) mean += r.p50_ns / static_cast<double>(out.runs.size());
  for (const LatencyRun& r : out.runs) sq += (r.p50_ns - mean) * (r.p50_ns - mean);
  if (out.runs.size() > 1 && mean > 0) out.cv_p50 = std::sqrt(sq / static_cast<double>(out.runs.size() - 1)) / mean;
  return out;
}

absl::StatusOr<LatencyLoad> ChooseLatencyLoad(const config::Plan& plan, const config::TestSpec& test,
                                              const std::vector<TestOutcome>& earlier) {
  const LatencyParams& lp = test.As<LatencyParams>();
  if (lp.load_from.empty()) return LatencyLoad{.load = lp.load, .from = "", .goal = ""};
  bool ran = false;
  for (const TestOutcome& e : earlier) {
    if (e.kind != &ThroughputKind() || plan.tests[e.test_index].name != lp.load_from) continue;
    ran = true;
    const auto& t = e.As<ThroughputResult>();
    if (!t.goals.empty() && t.goals[0].found) {
      return LatencyLoad{.load = t.goals[0].lower_bound, .from = t.name, .goal = t.goals[0].name};
    }
  }
  return absl::FailedPreconditionError(
      ran ? absl::StrFormat("%s runs at the throughput of %s, which found none (its first goal has no lower bound)",
                            test.name, lp.load_from)
          : absl::StrFormat("%s runs at the throughput of %s: run %s first", test.name, lp.load_from, lp.load_from));
}

namespace {

class Latency final : public TestKind {
 public:
  std::string_view key() const override { return "latency"; }
  std::vector<std::string_view> own_keys() const override {
    std::vector<std::string_view> keys(std::begin(kFixedLoadKeys), std::end(kFixedLoadKeys));
    keys.insert(keys.end(), {"compare_to", "at_throughput_of"});
    return keys;
  }

  absl::StatusOr<std::shared_ptr<const config::TestParams>> Parse(const config::Plan& plan, const config::Node& n,
                                                                  const config::TestSpec&) const override {
    auto t = std::make_shared<LatencyParams>();
    t->trial_duration_ns = 120'000'000'000;  // RFC 2544 26.2
    FG_RETURN_IF_ERROR(ParseFixedLoad(n, *t));
    if (auto a = n.Optional("at_throughput_of")) {
      if (n.Optional("load")) return a->Error("a latency test has either a load or at_throughput_of, not both");
      FG_RETURN_IF_ERROR(config::EarlierTest(plan, *a, ThroughputKind().key(), t->load_from));
    }
    if (auto c = n.Optional("compare_to")) {
      FG_RETURN_IF_ERROR(config::EarlierTest(plan, *c, key(), t->compare_to));
    }
    return t;
  }

  std::string Describe(const config::TestSpec& test) const override {
    const LatencyParams& t = test.As<LatencyParams>();
    return absl::StrFormat("latency, %d runs of %s at %s", t.runs, FormatDuration(t.trial_duration_ns),
                           t.load_from.empty() ? absl::StrFormat("%.3f %% of line", t.load * 100)
                                               : "the throughput of " + t.load_from);
  }

  double EstimateSeconds(const config::TestSpec& test, int64_t drain_ns) const override {
    const LatencyParams& t = test.As<LatencyParams>();
    return test.warmup_ns / 1e9 + t.runs * ((t.trial_duration_ns + drain_ns) / 1e9);
  }

  absl::Status Ready(const config::Plan& plan, const config::TestSpec& test,
                     const std::vector<TestOutcome>& earlier) const override {
    return ChooseLatencyLoad(plan, test, earlier).status();
  }

  absl::StatusOr<std::vector<std::shared_ptr<const TestResult>>> Run(const TestContext& c,
                                                                     const config::TestSpec& test) const override {
    const LatencyParams& lp = test.As<LatencyParams>();
    // RFC 2544 26.2: at the throughput an earlier test found, when named.
    absl::StatusOr<LatencyLoad> load = ChooseLatencyLoad(c.plan, test, c.earlier);
    auto out = std::make_shared<LatencyResult>();
    if (!load.ok()) {
      out->name = test.name;
      out->load_from = lp.load_from;
      out->complete = false;
      out->stopped_because = std::string(load.status().message());
      if (c.notes != nullptr) *c.notes << "  " << out->stopped_because << "\n";
      return std::vector<std::shared_ptr<const TestResult>>{out};
    }
    config::TestSpec at = test;
    auto params = std::make_shared<LatencyParams>(lp);
    params->load = load->load;
    at.params = params;
    if (c.notes != nullptr && !load->from.empty()) {
      *c.notes << absl::StrFormat("  at the throughput of %s (its %s lower bound): %.3f %% of line\n", load->from,
                                  load->goal, params->load * 100);
    }
    FG_ASSIGN_OR_RETURN(*out, RunLatency(c.eal, c.ports, c.streams, at, c.options));
    out->load_from = load->from;
    out->load_goal = load->goal;
    for (const TestOutcome& e : c.earlier) {
      if (e.kind == this && e.result->name == lp.compare_to) CompareLatency(*out, e.As<LatencyResult>());
    }
    return std::vector<std::shared_ptr<const TestResult>>{out};
  }

  void WriteParameters(report::JsonWriter& w, const config::TestSpec& test, const TestResult& result) const override {
    const LatencyParams& t = test.As<LatencyParams>();
    const auto& r = static_cast<const LatencyResult&>(result);
    w.Field("load_fraction_of_line", r.load);  // the load used (with at_throughput_of, not the plan's)
    if (!t.load_from.empty()) {
      w.Field("at_throughput_of", t.load_from);
      w.Field("load_from", r.load_from);  // the throughput result (matrix cell included) and its goal
      w.Field("load_from_goal", r.load_goal);
    }
    w.Field("runs", t.runs);
    w.Field("trial_duration_s", t.trial_duration_ns / 1e9);
    w.Field("warmup_s", test.warmup_ns / 1e9);
  }

  void WriteResults(report::JsonWriter& w, const config::TestSpec&, const TestResult& result) const override {
    const auto& r = static_cast<const LatencyResult&>(result);
    w.Field("line_rate_bps_l1", r.line_l1_bps);
    w.Field("observation_point", r.observation_point);
    const stats::LatencyHistogram& h = r.pooled;
    w.Key("pooled");
    w.BeginObject();
    w.Field("samples", h.count());
    w.Field("excluded", r.excluded);
    w.Field("min_ns", h.min());
    w.Field("mean_ns", h.mean());
    for (const auto& [key, p] : {std::pair{"p50_ns", 50.0}, std::pair{"p95_ns", 95.0}, std::pair{"p99_ns", 99.0},
                                 std::pair{"p99_9_ns", 99.9}, std::pair{"p99_99_ns", 99.99}}) {
      w.Field(key, h.Percentile(p));
    }
    w.Field("max_ns", h.max());
    // The non-empty buckets: [lowest ns, width ns, samples] (log-linear, <= 0.4 % wide).
    w.Key("histogram_ns");
    w.BeginArray();
    for (size_t i = 0; i < h.counts().size(); ++i) {
      if (h.counts()[i] == 0) continue;
      w.BeginArray();
      w.Uint(stats::LatencyHistogram::BucketLow(i));
      w.Uint(stats::LatencyHistogram::BucketWidth(i));
      w.Uint(h.counts()[i]);
      w.EndArray();
    }
    w.EndArray();
    w.EndObject();
    w.Field("cv_of_run_p50", r.cv_p50);
    if (!r.compared_to.empty()) {
      w.Key("increase_factor");
      w.BeginObject();
      w.Field("against", r.compared_to);
      w.Field("p50_ratio", r.increase_p50);
      w.Field("p99_ratio", r.increase_p99);
      w.EndObject();
    }
    w.Key("runs");
    w.BeginArray();
    for (const LatencyRun& run : r.runs) {
      w.BeginObject();
      w.Field("trial_index", run.trial.index);
      w.Field("samples", run.samples);
      w.Field("excluded", run.excluded);
      w.Field("min_ns", run.min_ns);
      w.Field("mean_ns", run.mean_ns);
      w.Field("p50_ns", run.p50_ns);
      w.Field("p99_ns", run.p99_ns);
      w.Field("max_ns", run.max_ns);
      w.Field("loss_ratio", run.trial.loss_ratio);
      w.EndObject();
    }
    w.EndArray();
  }

  std::string Summary(const TestResult& result) const override {
    const auto& r = static_cast<const LatencyResult&>(result);
    const stats::LatencyHistogram& h = r.pooled;
    auto d = [](double ns) { return FormatDuration(static_cast<int64_t>(ns)); };
    std::string out = absl::StrFormat(
        "test %s (latency at %.3f %% of line%s, %d runs, %s samples pooled%s)%s\n  min %s, mean %s, P50 %s, P95 %s, "
        "P99 %s, P99.9 %s, P99.99 %s, max %s; CV of the runs' P50 %.2f %%\n  observation point: %s\n",
        r.name, r.load * 100, r.load_goal.empty() ? "" : absl::StrFormat(", the %s of %s", r.load_goal, r.load_from),
        r.runs.size(), FormatCount(h.count()),
        r.excluded == 0 ? ""
                        : absl::StrFormat("; %s frames left out: they waited through an RX lcore's stall (rx_stall)",
                                          FormatCount(r.excluded)),
        r.complete ? "" : ", INCOMPLETE: " + r.stopped_because,
        d(static_cast<double>(h.min())), d(h.mean()), d(h.Percentile(50)), d(h.Percentile(95)), d(h.Percentile(99)),
        d(h.Percentile(99.9)), d(h.Percentile(99.99)), d(static_cast<double>(h.max())), r.cv_p50 * 100,
        r.observation_point);
    if (!r.compared_to.empty()) {
      out += absl::StrFormat("  latency increase against %s: P50 x%.2f, P99 x%.2f\n", r.compared_to, r.increase_p50,
                             r.increase_p99);
    }
    return out;
  }
};

}  // namespace

const TestKind& LatencyKind() {
  static const Latency kind;
  return kind;
}

}  // namespace fg::methods
