// methods/latency.h: the latency test (RFC 2544 26.2 and the draft).
//
// The test's streams run at a fixed load for `runs` trials. Every frame
// carries a TX timestamp, so every received frame is a latency sample (far
// more than the 10,000 per run the draft asks for). Percentiles come from the
// pooled samples of all counted runs (their histograms merged); each run also
// keeps its own min, max and P50, and the coefficient of variation of the
// runs' P50 says how repeatable they were. Latency figures name their
// observation point (which clocks took the TX and RX times).
//
//   auto r = fg::methods::RunLatency(eal, ports, streams, plan.tests[1], opt);
//   printf("P50 %.0f ns over %lu samples\n", r->pooled.Percentile(50), r->pooled.count());
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "methods/load.h"
#include "methods/test_kind.h"
#include "stats/histogram.h"

namespace fg::methods {

struct LatencyRun {
  TrialRecord trial;
  uint64_t samples = 0;
  uint64_t excluded = 0;  // frames received but left out: drained after an RX lcore's stall (latency_excluded_packets)
  uint64_t min_ns = 0, max_ns = 0;
  double mean_ns = 0, p50_ns = 0, p99_ns = 0;
};

// A `latency` test's section: `runs` trials of `trial_duration` (default
// 120 s, RFC 2544 26.2) at `load`, or at the throughput an earlier test found.
struct LatencyParams : FixedLoadParams {
  std::string compare_to;  // an earlier (e.g. unloaded, single-QP) latency test: the increase factor
  std::string load_from;   // run at the throughput an earlier throughput test found (its first goal)
};

struct LatencyResult : TestResult {
  double load = 0;  // fraction of line rate (L1): the load the runs were sent at
  // With at_throughput_of: the throughput result that load came from (the
  // test's name, with its matrix cell) and its goal (the first: e.g. NDR).
  // Empty: the plan's `load`.
  std::string load_from, load_goal;
  double line_l1_bps = 0;
  std::vector<LatencyRun> runs;  // counted runs
  stats::LatencyHistogram pooled;   // all counted runs' samples
  uint64_t excluded = 0;            // the counted runs' frames left out (LatencyRun::excluded)
  double cv_p50 = 0;                // standard deviation / mean of the runs' P50
  // With `compare_to` (e.g. the unloaded, single-QP test): this P50 and P99 over that test's.
  std::string compared_to;
  double increase_p50 = 0, increase_p99 = 0;
  std::string observation_point;
};

// Fills the latency increase factor of `loaded` against `base`.
void CompareLatency(LatencyResult& loaded, const LatencyResult& base);

absl::StatusOr<LatencyResult> RunLatency(const port::Eal& eal, const std::vector<port::Port*>& ports,
                                         const std::vector<stream::CompiledStream>& streams,
                                         const config::TestSpec& test, const MethodOptions& options);

// The load a latency test runs at: the plan's `load`, or with
// at_throughput_of the lower bound of the first goal (e.g. NDR) an earlier
// throughput outcome found (the first matrix cell that found it). Errors
// (FailedPrecondition): that test has not run yet (the CLI's `run`), or found
// no throughput.
struct LatencyLoad {
  double load = 0;         // fraction of line rate (L1)
  std::string from, goal;  // empty: the plan's load
};
absl::StatusOr<LatencyLoad> ChooseLatencyLoad(const config::Plan& plan, const config::TestSpec& test,
                                              const std::vector<TestOutcome>& earlier);

const TestKind& LatencyKind();

}  // namespace fg::methods
