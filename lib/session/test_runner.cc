#include "session/test_runner.h"

#include "absl/strings/str_format.h"
#include "base/status.h"
#include "base/units.h"
#include "methods/matrix.h"
#include "session/dut_counters.h"

namespace fg::session {

const char* TestKindName(config::TestSpec::Kind kind) {
  switch (kind) {
    case config::TestSpec::Kind::kLatency: return "latency";
    case config::TestSpec::Kind::kBurst: return "burst";
    case config::TestSpec::Kind::kLoadBalance: return "load_balance";
    case config::TestSpec::Kind::kThroughput: break;
  }
  return "throughput";
}

std::string TestHeadline(const config::Plan& plan, size_t i) {
  const config::TestSpec& test = plan.tests[i];
  const std::string head = absl::StrFormat("test %d of %d: %s", i + 1, plan.tests.size(), test.name);
  switch (test.kind) {
    case config::TestSpec::Kind::kBurst:
      return absl::StrFormat("%s (burst, %d..%d frames, %d repetitions per length)", head, test.min_frames,
                             test.max_frames, test.repetitions);
    case config::TestSpec::Kind::kLoadBalance:
      return absl::StrFormat("%s (load balance over %d links, %d run(s) of %s at %.3f %% of line)", head,
                             test.links.size(), test.runs, FormatDuration(test.trial_duration_ns), test.load * 100);
    case config::TestSpec::Kind::kLatency:
      return absl::StrFormat("%s (latency, %d runs of %s at %s)", head, test.runs,
                             FormatDuration(test.trial_duration_ns),
                             test.load_from.empty() ? absl::StrFormat("%.3f %% of line", test.load * 100)
                                                    : "the throughput of " + test.load_from);
    case config::TestSpec::Kind::kThroughput: break;
  }
  return absl::StrFormat("%s (throughput, %s search)", head,
                         test.search == config::TestSpec::Search::kBinary ? "binary" : "multi-goal");
}

absl::StatusOr<LatencyLoad> ChooseLatencyLoad(const config::Plan& plan, const config::TestSpec& test,
                                              const std::vector<TestOutcome>& earlier) {
  if (test.load_from.empty()) return LatencyLoad{.load = test.load, .from = "", .goal = ""};
  bool ran = false;
  for (const TestOutcome& e : earlier) {
    if (e.kind != config::TestSpec::Kind::kThroughput || plan.tests[e.test_index].name != test.load_from) continue;
    ran = true;
    if (!e.throughput.goals.empty() && e.throughput.goals[0].found) {
      return LatencyLoad{
          .load = e.throughput.goals[0].lower_bound, .from = e.throughput.name, .goal = e.throughput.goals[0].name};
    }
  }
  return absl::FailedPreconditionError(
      ran ? absl::StrFormat("%s runs at the throughput of %s, which found none (its first goal has no lower bound)",
                            test.name, test.load_from)
          : absl::StrFormat("%s runs at the throughput of %s: run %s first", test.name, test.load_from,
                            test.load_from));
}

absl::StatusOr<std::vector<TestOutcome>> RunPlanTest(Session& session,
                                                     const std::vector<stream::CompiledStream>& streams, size_t i,
                                                     const methods::MethodOptions& opt,
                                                     const std::vector<TestOutcome>& earlier, std::ostream* notes) {
  const config::Plan& plan = session.plan();
  const config::TestSpec& test = plan.tests[i];
  std::vector<TestOutcome> out;
  TestOutcome o;
  o.kind = test.kind;
  o.test_index = i;
  switch (test.kind) {
    case config::TestSpec::Kind::kBurst: {
      FG_ASSIGN_OR_RETURN(o.burst, methods::RunBurst(session.eal(), session.ports(), streams, test, opt));
      break;
    }
    case config::TestSpec::Kind::kLoadBalance: {
      FG_ASSIGN_OR_RETURN(o.load_balance, methods::RunLoadBalance(session.eal(), session.ports(), streams, test, opt,
                                                                  [&] { return ReadDutCounters(plan.dut_counters); }));
      break;
    }
    case config::TestSpec::Kind::kLatency: {
      // RFC 2544 26.2: at the throughput an earlier test found, when named.
      absl::StatusOr<LatencyLoad> load = ChooseLatencyLoad(plan, test, earlier);
      if (!load.ok()) {
        o.latency.name = test.name;
        o.latency.load_from = test.load_from;
        o.latency.complete = false;
        o.latency.stopped_because = std::string(load.status().message());
        if (notes != nullptr) *notes << "  " << o.latency.stopped_because << "\n";
        break;
      }
      config::TestSpec at = test;
      at.load = load->load;
      if (notes != nullptr && !load->from.empty()) {
        *notes << absl::StrFormat("  at the throughput of %s (its %s lower bound): %.3f %% of line\n", load->from,
                                  load->goal, at.load * 100);
      }
      FG_ASSIGN_OR_RETURN(o.latency, methods::RunLatency(session.eal(), session.ports(), streams, at, opt));
      o.latency.load_from = load->from;
      o.latency.load_goal = load->goal;
      for (const TestOutcome& e : earlier) {
        if (e.kind == config::TestSpec::Kind::kLatency && e.latency.name == test.compare_to) {
          methods::CompareLatency(o.latency, e.latency);
        }
      }
      break;
    }
    case config::TestSpec::Kind::kThroughput: {
      // One search per matrix cell (message size x QP count x direction).
      const std::vector<methods::MatrixCell> cells = methods::ExpandMatrix(plan, test);
      std::vector<double> lines;
      for (port::Port* p : session.ports()) lines.push_back(p->capabilities().line_bps());
      for (size_t c = 0; c < cells.size(); ++c) {
        FG_ASSIGN_OR_RETURN(const std::vector<stream::CompiledStream> cell_streams,
                            stream::Compile(cells[c].plan, lines));
        FG_ASSIGN_OR_RETURN(methods::ThroughputResult r,
                            methods::RunThroughput(session.eal(), session.ports(), cell_streams, cells[c].test, opt));
        r.cell = cells[c].label;
        r.message_size = cells[c].message_size;
        r.qps = cells[c].qps;
        r.bidirectional = cells[c].bidirectional;
        if (!cells[c].label.empty()) r.name = test.name + " [" + cells[c].label + "]";
        TestOutcome cell = o;
        cell.throughput = std::move(r);
        out.push_back(std::move(cell));
        if (opt.interrupt != nullptr && opt.interrupt->load()) break;
      }
      return out;
    }
  }
  out.push_back(std::move(o));
  return out;
}

}  // namespace fg::session
