// session/test_runner.h: runs one of a plan's tests; shared by `fabricgen
// run` (every test in order) and the CLI's `run TEST`.
//
//   std::vector<fg::session::TestOutcome> done;
//   auto r = fg::session::RunPlanTest(session, streams, 0, opt, done, &std::cout);
//   done.insert(done.end(), r->begin(), r->end());
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "session/session.h"
#include "session/test_report.h"

namespace fg::session {

// "throughput", "latency", "burst", "load_balance".
const char* TestKindName(config::TestSpec::Kind kind);

// The line that announces plan.tests[i] ("test 2 of 5: name (latency, ...)").
std::string TestHeadline(const config::Plan& plan, size_t i);

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

// Runs plan.tests[i]. A throughput test with a matrix gives one outcome per
// cell; the others one. `earlier` are the outcomes of the tests before it
// (at_throughput_of, compare_to); `notes` (optional) gets what the test
// decided on the way (the load taken from an earlier test). A latency test
// whose at_throughput_of has no load to give ends incomplete, saying why.
absl::StatusOr<std::vector<TestOutcome>> RunPlanTest(Session& session,
                                                     const std::vector<stream::CompiledStream>& streams, size_t i,
                                                     const methods::MethodOptions& options,
                                                     const std::vector<TestOutcome>& earlier, std::ostream* notes);

}  // namespace fg::session
