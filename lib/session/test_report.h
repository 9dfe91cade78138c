// session/test_report.h: report.json and the console summary of a plan's tests.
//
// When a plan has `tests:`, `fabricgen run` runs them in order and writes one
// report.json (schema "tests", version 1): the tool, plan, host and ports,
// then per test its parameters, its results (every load as a fraction of line
// rate and as L1/L2 bit/s and frames/s, keys carrying their unit), and every
// trial: phase, load, duration, frames sent and received, loss ratio,
// whether it counts and why not. The observation point of every count: our
// own analyzer at the fabric boundary (frames sent by TX, unique frames
// received by RX).
//
//   std::string json = fg::session::TestsReportJson(*session, results, started_utc);
//   std::cout << fg::session::TestsSummary(results);
#pragma once

#include <string>
#include <vector>

#include "methods/test_kind.h"
#include "session/session.h"

namespace fg::session {

inline constexpr int kTestsReportSchemaVersion = 1;

// What one test of the plan produced (its kind's result).
using TestOutcome = methods::TestOutcome;

// Trials of these outcomes where the tester itself was the limit.
int TesterLimitedTrials(const std::vector<TestOutcome>& results);

std::string TestsReportJson(Session& session, const std::vector<TestOutcome>& results, const std::string& started_utc,
                            bool interrupted);
std::string TestsSummary(const std::vector<TestOutcome>& results);
// One progress line per trial; `left_s` < 0: no estimate.
// A trial excluded as tester-limited says so in brief (BriefLimits: kinds, counts, the longest hold-up); with
// `verbose`, with each limit's detail (report.json's excluded_because).
std::string TrialLine(const std::string& test, const methods::TrialRecord& t, double elapsed_s, double left_s = -1,
                      bool verbose = false);
// An estimate of a test's run time from its parameters, for progress lines
// (its kind's: the most trials its search can take; multi-goal: a typical count).
double EstimateTestSeconds(const config::TestSpec& test, int64_t drain_ns);

}  // namespace fg::session
