// session/test_runner.h: runs one of a plan's tests; shared by `fabricgen
// run` (every test in order) and the CLI's `run TEST`. What a test does is
// its kind's (methods/test_kind.h); this file gives it the session's ports
// and the DUT's counters.
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

// The line that announces plan.tests[i] ("test 2 of 5: name (latency, ...)").
std::string TestHeadline(const config::Plan& plan, size_t i);

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
