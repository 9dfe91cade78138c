#include "session/test_report.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"
#include "base/units.h"
#include "report/json.h"
#include "session/run_report.h"

namespace fg::session {

namespace {

void WriteTrial(report::JsonWriter& w, const methods::TrialRecord& t) {
  w.BeginObject();
  w.Field("index", t.index);
  w.Field("phase", t.phase);
  w.Field("load_fraction_of_line", t.load);
  if (t.burst_frames != 0) {
    w.Field("burst_frames_per_sender", t.burst_frames);
    w.Field("senders", t.senders);
  }
  w.Field("duration_s", t.duration_s);
  w.Field("tx_frames", t.tx_frames);
  w.Field("rx_frames_unique", t.rx_frames);
  w.Field("rx_frames_other", t.rx_other_frames);
  w.Field("loss_ratio", t.loss_ratio);
  // Measured (what TX sent over the trial's TX time) and set (what the load called for).
  w.Field("offered_bps_l1", t.offered_l1_bps);
  w.Field("offered_bps_l2", t.offered_l2_bps);
  w.Field("offered_fps", t.offered_fps);
  w.Field("set_bps_l1", t.set_l1_bps);
  w.Field("set_fps", t.set_fps);
  w.Field("received_bps_l1", t.received_l1_bps);
  w.Field("included", t.included);
  if (!t.included) w.Field("excluded_because", t.excluded_because);
  w.Field("tester_limited", !t.tester_limits.empty());
  WriteTesterLimits(w, t.tester_limits);
  w.Key("port_counters");
  w.BeginObject();
  for (const auto& [k, v] : t.port_counters) w.Field(k, v);
  w.EndObject();
  w.EndObject();
}

void WriteAccounting(report::JsonWriter& w, const std::vector<methods::TrialRecord>& trials) {
  int counted = 0, limited = 0;
  double seconds = 0;
  for (const auto& t : trials) {
    counted += t.included;
    limited += !t.tester_limits.empty() && t.phase != "warm-up";  // a warm-up never counts anyway
    if (t.included) seconds += t.duration_s;
  }
  w.Key("trial_accounting");
  w.BeginObject();
  w.Field("attempted", static_cast<int64_t>(trials.size()));
  w.Field("included", counted);
  w.Field("excluded", static_cast<int64_t>(trials.size()) - counted);
  w.Field("excluded_tester_limited", limited);
  w.Field("included_trial_seconds", seconds);
  w.EndObject();
  w.Key("trials");
  w.BeginArray();
  for (const methods::TrialRecord& t : trials) WriteTrial(w, t);
  w.EndArray();
}

// A test's name, kind and streams, and opens its "parameters" object.
void BeginTest(report::JsonWriter& w, const std::string& name, const char* kind,
               const std::vector<std::string>& streams) {
  w.Field("name", name);
  w.Field("kind", kind);
  w.Key("streams");
  w.BeginArray();
  for (const std::string& s : streams) w.String(s);
  w.EndArray();
  w.Key("parameters");
  w.BeginObject();
}

void WriteLatency(report::JsonWriter& w, const methods::LatencyResult& r, const config::TestSpec& spec) {
  BeginTest(w, r.name, "latency", r.streams);
  w.Field("load_fraction_of_line", r.load);  // the load used (with at_throughput_of, not the plan's)
  if (!spec.load_from.empty()) {
    w.Field("at_throughput_of", spec.load_from);
    w.Field("load_from", r.load_from);  // the throughput result (matrix cell included) and its goal
    w.Field("load_from_goal", r.load_goal);
  }
  w.Field("runs", spec.runs);
  w.Field("trial_duration_s", spec.trial_duration_ns / 1e9);
  w.Field("warmup_s", spec.warmup_ns / 1e9);
  w.EndObject();
  w.Field("line_rate_bps_l1", r.line_l1_bps);
  w.Field("observation_point", r.observation_point);
  w.Field("complete", r.complete);
  if (!r.complete) w.Field("stopped_because", r.stopped_because);
  const stats::LatencyHistogram& h = r.pooled;
  w.Key("pooled");
  w.BeginObject();
  w.Field("samples", h.count());
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
  for (const methods::LatencyRun& run : r.runs) {
    w.BeginObject();
    w.Field("trial_index", run.trial.index);
    w.Field("samples", run.samples);
    w.Field("min_ns", run.min_ns);
    w.Field("mean_ns", run.mean_ns);
    w.Field("p50_ns", run.p50_ns);
    w.Field("p99_ns", run.p99_ns);
    w.Field("max_ns", run.max_ns);
    w.Field("loss_ratio", run.trial.loss_ratio);
    w.EndObject();
  }
  w.EndArray();
  WriteAccounting(w, r.trials);
}

void WriteBurst(report::JsonWriter& w, const methods::BurstResult& r, const config::TestSpec& spec) {
  BeginTest(w, r.name, "burst", r.streams);
  w.Field("min_frames", spec.min_frames);
  w.Field("max_frames", spec.max_frames);
  w.Field("repetitions", spec.repetitions);
  w.Field("gap_s", spec.gap_ns / 1e9);
  w.Key("incast");
  w.BeginArray();
  for (int n : spec.incast) w.Int(n);
  w.EndArray();
  w.EndObject();
  w.Field("observation_point",
          "fabricgen analyzer at the fabric boundary: a burst length passes when every frame "
          "of every repetition arrives");
  w.Field("complete", r.complete);
  if (!r.complete) w.Field("stopped_because", r.stopped_because);
  w.Key("incast");
  w.BeginArray();
  for (const methods::BurstPoint& p : r.points) {
    w.BeginObject();
    w.Field("incast_ratio", absl::StrFormat("%d:1", p.senders));
    w.Field("senders", p.senders);
    w.Field("virtual_senders_sharing_a_port", p.virtual_senders);
    w.Field("found", p.found);
    w.Field("absorbed_burst_frames_per_sender", p.absorbed_frames);
    w.Field("first_loss_burst_frames_per_sender", p.first_loss_frames);
    w.EndObject();
  }
  w.EndArray();
  WriteAccounting(w, r.trials);
}

void WriteLinks(report::JsonWriter& w, const std::vector<methods::LinkLoad>& links) {
  w.Key("links");
  w.BeginArray();
  for (const methods::LinkLoad& l : links) {
    w.BeginObject();
    w.Field("name", l.name);
    w.Field("tx_packets", l.tx_packets);
    w.Field("tx_bytes", l.tx_bytes);
    w.EndObject();
  }
  w.EndArray();
}

void WriteLoadBalance(report::JsonWriter& w, const methods::LoadBalanceResult& r, const config::TestSpec& spec) {
  BeginTest(w, r.name, "load_balance", r.streams);
  w.Field("load_fraction_of_line", spec.load);
  w.Field("runs", spec.runs);
  w.Field("trial_duration_s", spec.trial_duration_ns / 1e9);
  w.Field("warmup_s", spec.warmup_ns / 1e9);
  w.Key("links");
  w.BeginArray();
  for (const std::string& l : spec.links) w.String(l);
  w.EndArray();
  w.EndObject();
  w.Field("line_rate_bps_l1", r.line_l1_bps);
  w.Field("flows", r.flows);
  w.Field("observation_point",
          "the DUT's own per-link transmit counters (plan dut_counters), read before and after each run; "
          "L_i = bytes sent on link i");
  w.Field("complete", r.complete);
  if (!r.complete) w.Field("stopped_because", r.stopped_because);
  w.Field("mmr", r.mmr);
  w.Field("jfi", r.jfi);
  w.Field("link_packets", r.link_packets);
  w.Field("rx_frames_unique", r.rx_frames);
  WriteLinks(w, r.links);
  w.Key("runs");
  w.BeginArray();
  for (const methods::LoadBalanceRun& run : r.runs) {
    w.BeginObject();
    w.Field("trial_index", run.trial.index);
    w.Field("mmr", run.mmr);
    w.Field("jfi", run.jfi);
    WriteLinks(w, run.links);
    w.EndObject();
  }
  w.EndArray();
  WriteAccounting(w, r.trials);
}

}  // namespace

int TesterLimitedTrials(const std::vector<TestOutcome>& results) {
  int n = 0;
  for (const TestOutcome& o : results) {
    for (const methods::TrialRecord& t : o.trials()) n += !t.tester_limits.empty() && t.phase != "warm-up";
  }
  return n;
}

std::string TestsReportJson(Session& session, const std::vector<TestOutcome>& results, const std::string& started_utc,
                            bool interrupted) {
  const config::Plan& plan = session.plan();
  report::JsonWriter w;
  w.BeginObject();
  w.Field("schema", "tests");
  w.Field("schema_version", kTestsReportSchemaVersion);
  WriteReportHeader(w, session, started_utc);
  bool complete = !interrupted && !results.empty() && results.back().test_index + 1 == plan.tests.size();
  for (const auto& r : results) complete = complete && r.complete();
  w.Field("complete", complete);
  w.Field("interrupted", interrupted);
  // Some trial had the tester as its limit (not counted, run again: see each test's trial_accounting).
  w.Field("tester_limited", TesterLimitedTrials(results) != 0);
  for (auto [key, pairs] : {std::pair{"dut", &plan.dut}, std::pair{"host", &plan.host}}) {
    w.Key(key);
    w.BeginObject();
    for (const auto& [k, v] : *pairs) w.Field(k, v);
    w.EndObject();
  }
  w.Field("topology", plan.topology);
  w.Key("environment");
  w.BeginObject();
  WriteEalFields(w, session);
  w.Key("ports");
  w.BeginArray();
  std::vector<port::Port*> ports = session.ports();
  for (size_t i = 0; i < ports.size(); ++i) {
    const port::Capabilities& c = ports[i]->capabilities();
    w.BeginObject();
    w.Field("name", ports[i]->name());
    w.Field("device", plan.ports[i].device);
    w.Field("driver", c.driver);
    w.Field("line_rate_bps_l1", c.line_bps());
    w.Field("rx_timestamps", ports[i]->rx_timestamp().observation_point());
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();

  w.Key("tests");
  w.BeginArray();
  for (size_t ti = 0; ti < results.size(); ++ti) {
    const config::TestSpec& spec = plan.tests[results[ti].test_index];
    w.BeginObject();
    if (results[ti].kind == config::TestSpec::Kind::kLatency) {
      WriteLatency(w, results[ti].latency, spec);
      w.EndObject();
      continue;
    }
    if (results[ti].kind == config::TestSpec::Kind::kBurst) {
      WriteBurst(w, results[ti].burst, spec);
      w.EndObject();
      continue;
    }
    if (results[ti].kind == config::TestSpec::Kind::kLoadBalance) {
      WriteLoadBalance(w, results[ti].load_balance, spec);
      w.EndObject();
      continue;
    }
    const methods::ThroughputResult& r = results[ti].throughput;
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
    BeginTest(w, r.name, "throughput", r.streams);
    w.Field("min_load_fraction_of_line", spec.min_load);
    w.Field("max_load_fraction_of_line", spec.max_load);
    if (spec.search == config::TestSpec::Search::kBinary) {
      w.Field("precision_fraction_of_line", spec.precision);
      w.Field("loss_tolerance_ratio", spec.loss_tolerance);
    } else {
      w.Field("initial_trial_duration_s", spec.initial_duration_ns / 1e9);
    }
    w.Field("trial_duration_s", spec.trial_duration_ns / 1e9);
    w.Field("warmup_s", spec.warmup_ns / 1e9);
    w.Field("repetitions", spec.search_repetitions);
    w.EndObject();
    w.Field("line_rate_bps_l1", r.line_l1_bps);
    w.Field("mean_frame_size_bytes", r.mean_frame_size);
    w.Field("load_accounting", "L1: frame + FCS + preamble/SFD (8 B) + inter-frame gap (12 B); L2: frame + FCS");
    w.Field("observation_point",
            "fabricgen analyzer at the fabric boundary: frames sent by TX, unique frames "
            "received by RX (duplicates not counted)");
    w.Field("complete", r.complete);
    if (!r.complete) w.Field("stopped_because", r.stopped_because);
    w.Key("goals");
    w.BeginArray();
    for (const methods::GoalOutcome& g : r.goals) {
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
    WriteAccounting(w, r.trials);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return w.Take();
}

double EstimateTestSeconds(const config::TestSpec& t, int64_t drain_ns) {
  const double drain = drain_ns / 1e9, trial = t.trial_duration_ns / 1e9, warm = t.warmup_ns / 1e9;
  auto halvings = [](double range) { return range > 1 ? std::ceil(std::log2(range)) : 1.0; };
  switch (t.kind) {
    case config::TestSpec::Kind::kLatency:
    case config::TestSpec::Kind::kLoadBalance: return warm + t.runs * (trial + drain);
    case config::TestSpec::Kind::kBurst: {
      const double per_trial = t.repetitions * (t.gap_ns / 1e9) + drain;
      const double ratios = t.incast.empty() ? 1 : static_cast<double>(t.incast.size());
      return warm + ratios * (1 + halvings(t.max_frames - t.min_frames + 1)) * per_trial;
    }
    default:
      if (t.search == config::TestSpec::Search::kBinary) {
        return warm + (2 + halvings((t.max_load - t.min_load) / t.precision)) * (trial + drain);
      }
      double finals = 0;
      double narrowest = 1;
      for (const config::GoalSpec& g : t.goals) {
        finals += 2 * (g.final_duration_ns / 1e9 + drain);
        narrowest = std::min(narrowest, g.width);
      }
      return warm + finals +
             halvings((t.max_load - t.min_load) / (narrowest * t.max_load)) * (t.initial_duration_ns / 1e9 + drain);
  }
}

std::string TrialLine(const std::string& test, const methods::TrialRecord& t, double elapsed_s, double left_s) {
  const std::string what = t.burst_frames != 0 ? absl::StrFormat("bursts of %d frames", t.burst_frames)
                                               : absl::StrFormat("load %.3f %% of line", t.load * 100);
  return absl::StrFormat("  %s trial %d (%s): %s for %s: %s sent, %s received, loss %.4f %%%s; %.1f s elapsed%s\n",
                         test, t.index, t.phase, what, FormatDuration(static_cast<int64_t>(t.duration_s * 1e9)),
                         FormatCount(t.tx_frames), FormatCount(t.rx_frames), t.loss_ratio * 100,
                         t.included ? "" : " (not counted: " + t.excluded_because + ")", elapsed_s,
                         left_s < 0 ? "" : absl::StrFormat(", ~%.0f s left (estimate)", left_s));
}

std::string TestsSummary(const std::vector<TestOutcome>& results) {
  std::string out;
  if (const int n = TesterLimitedTrials(results); n != 0) {
    out += absl::StrFormat(
        "warning: tester-limited: in %d trial(s) the tester itself fell behind; they are not counted and decide "
        "nothing (each trial's excluded_because in report.json names the cause)\n",
        n);
  }
  for (const TestOutcome& o : results) {
    if (o.kind == config::TestSpec::Kind::kLoadBalance) {
      const methods::LoadBalanceResult& r = o.load_balance;
      out +=
          absl::StrFormat("test %s (load balance at %.3f %% of line, %d flows over %d links)%s\n", r.name, r.load * 100,
                          r.flows, r.links.size(), r.complete ? "" : ", INCOMPLETE: " + r.stopped_because);
      for (const methods::LinkLoad& l : r.links) {
        out += absl::StrFormat("  %-20s %s frames, %s bytes\n", l.name, FormatCount(l.tx_packets),
                               FormatCount(l.tx_bytes));
      }
      out += absl::StrFormat("  MMR %.4f, JFI %.4f (of bytes); the links carried %s frames, the analyzer received %s\n",
                             r.mmr, r.jfi, FormatCount(r.link_packets), FormatCount(r.rx_frames));
      continue;
    }
    if (o.kind == config::TestSpec::Kind::kBurst) {
      const methods::BurstResult& r = o.burst;
      out += absl::StrFormat("test %s (burst, %d repetitions per length)%s\n", r.name, r.repetitions,
                             r.complete ? "" : ", INCOMPLETE: " + r.stopped_because);
      for (const methods::BurstPoint& p : r.points) {
        out += absl::StrFormat(
            "  incast %d:1%s: %s\n", p.senders,
            p.virtual_senders ? absl::StrFormat(" (%d virtual senders)", p.virtual_senders) : "",
            p.found ? absl::StrFormat("absorbs %d frames per sender; %s", p.absorbed_frames,
                                      p.first_loss_frames ? absl::StrFormat("first loss at %d", p.first_loss_frames)
                                                          : "no loss up to the maximum")
                    : "loses frames even at the shortest burst");
      }
      continue;
    }
    if (o.kind == config::TestSpec::Kind::kLatency) {
      const methods::LatencyResult& r = o.latency;
      const stats::LatencyHistogram& h = r.pooled;
      auto d = [](double ns) { return FormatDuration(static_cast<int64_t>(ns)); };
      out += absl::StrFormat(
          "test %s (latency at %.3f %% of line%s, %d runs, %s samples pooled)%s\n  min %s, mean %s, P50 %s, P95 %s, "
          "P99 %s, P99.9 %s, P99.99 %s, max %s; CV of the runs' P50 %.2f %%\n  observation point: %s\n",
          r.name, r.load * 100, r.load_goal.empty() ? "" : absl::StrFormat(", the %s of %s", r.load_goal, r.load_from),
          r.runs.size(), FormatCount(h.count()), r.complete ? "" : ", INCOMPLETE: " + r.stopped_because,
          d(static_cast<double>(h.min())), d(h.mean()), d(h.Percentile(50)), d(h.Percentile(95)), d(h.Percentile(99)),
          d(h.Percentile(99.9)), d(h.Percentile(99.99)), d(static_cast<double>(h.max())), r.cv_p50 * 100,
          r.observation_point);
      if (!r.compared_to.empty()) {
        out += absl::StrFormat("  latency increase against %s: P50 x%.2f, P99 x%.2f\n", r.compared_to, r.increase_p50,
                               r.increase_p99);
      }
      continue;
    }
    const methods::ThroughputResult& r = o.throughput;
    int counted = 0;
    for (const auto& t : r.trials) counted += t.included;
    out += absl::StrFormat("test %s (throughput, %s search): %d trials (%d counted, %.1f trial-seconds)%s\n", r.name,
                           r.search, r.trials.size(), counted, r.trial_seconds,
                           r.complete ? "" : ", INCOMPLETE: " + r.stopped_because);
    for (const methods::GoalOutcome& g : r.goals) {
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
  }
  return out;
}

}  // namespace fg::session
