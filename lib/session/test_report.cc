#include "session/test_report.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/units.h"
#include "methods/kinds.h"
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
  if (!t.label.empty()) w.Field("label", t.label);
  w.Field("duration_s", t.duration_s);
  w.Field("start_unix_ns", t.start_unix_ns);
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
  WriteQpSetup(w, t.qp_setup);  // the trial's connection initiation latency (its QPs' CM set-up)
  w.Field("drain_ns", t.drain_ns);
  w.Key("lcore_holdups");  // the workers' turns over 1 ms apart: how many, their time, the longest
  w.BeginObject();
  w.Field("count", t.lcore_holdups);
  w.Field("total_ns", t.lcore_holdup_ns);
  w.Field("longest_ns", t.lcore_holdup_max_ns);
  w.Field("short_count", t.lcore_short_holdups);  // turns 0.1 to 1 ms apart
  w.Field("short_total_ns", t.lcore_short_holdup_ns);
  w.EndObject();
  w.Key("warnings");
  w.BeginArray();
  for (const std::string& x : t.warnings) w.String(x);
  w.EndArray();
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

}  // namespace

int TesterLimitedTrials(const std::vector<TestOutcome>& results) {
  int n = 0;
  for (const TestOutcome& o : results) {
    for (const methods::TrialRecord& t : o.result->trials) n += !t.tester_limits.empty() && t.phase != "warm-up";
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
  for (const auto& r : results) complete = complete && r.result->complete;
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
    w.Field("rx_distribution", ports[i]->rx_spread().description);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();

  w.Key("tests");
  w.BeginArray();
  for (const TestOutcome& o : results) {
    // What every kind has around its own parameters and results.
    const config::TestSpec& spec = plan.tests[o.test_index];
    const methods::TestResult& r = *o.result;
    w.BeginObject();
    w.Field("name", r.name);
    w.Field("kind", spec.kind);
    w.Key("streams");
    w.BeginArray();
    for (const std::string& s : r.streams) w.String(s);
    w.EndArray();
    w.Key("parameters");
    w.BeginObject();
    o.kind->WriteParameters(w, spec, r);
    w.EndObject();
    w.Field("complete", r.complete);
    if (!r.complete) w.Field("stopped_because", r.stopped_because);
    o.kind->WriteResults(w, spec, r);
    WriteAccounting(w, r.trials);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return w.Take();
}

double EstimateTestSeconds(const config::TestSpec& test, int64_t drain_ns) {
  return methods::FindTestKind(test.kind)->EstimateSeconds(test, drain_ns);
}

std::string TrialLine(const std::string& test, const methods::TrialRecord& t, double elapsed_s, double left_s,
                      bool verbose) {
  const std::string why = verbose || t.tester_limits.empty()
                              ? t.excluded_because
                              : "tester-limited: " + BriefLimits(t.tester_limits, 100);
  const std::string what = !t.label.empty()      ? t.label
                           : t.burst_frames != 0 ? absl::StrFormat("bursts of %d frames", t.burst_frames)
                                                 : absl::StrFormat("load %.3f %% of line", t.load * 100);
  return absl::StrFormat("  %s trial %d (%s): %s for %s: %s sent, %s received, loss %.4f %%%s; %.1f s elapsed%s\n",
                         test, t.index, t.phase, what, FormatDuration(static_cast<int64_t>(t.duration_s * 1e9)),
                         FormatCount(t.tx_frames), FormatCount(t.rx_frames), t.loss_ratio * 100,
                         t.included ? "" : " (not counted: " + why + ")", elapsed_s,
                         left_s < 0 ? "" : absl::StrFormat(", ~%.0f s left (estimate)", left_s)) +
         absl::StrJoin(t.warnings, "", [](std::string* out, const std::string& w) {
           absl::StrAppend(out, "    warning: ", w, "\n");
         });
}

std::string TestsSummary(const std::vector<TestOutcome>& results) {
  std::string out;
  if (const int n = TesterLimitedTrials(results); n != 0) {
    out += absl::StrFormat(
        "warning: tester-limited: in %d trial(s) the tester itself fell behind; they are not counted and decide "
        "nothing (each trial's excluded_because in report.json names the cause)\n",
        n);
  }
  for (const TestOutcome& o : results) out += o.kind->Summary(*o.result);
  return out;
}

}  // namespace fg::session
