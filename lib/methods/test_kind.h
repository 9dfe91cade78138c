// methods/test_kind.h: a test kind is one small object (testpmd's forwarding
// engines): it reads its section of a plan's `tests:` item, runs the test,
// writes its part of report.json and the summary, and estimates how long it
// takes. Each kind lives in its own file and is listed once in kinds.cc.
//
//   const fg::methods::TestKind* kind = fg::methods::FindTestKind(test.kind);
//   auto results = kind->Run(context, test);              // one result (a matrix: one per cell)
//   std::cout << kind->Summary(*results->front());
//
// Adding a kind: its file (a TestKind and the TestParams and TestResult it
// derives), one line in kinds.cc, its sources in meson.build, and its docs.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "config/plan.h"
#include "methods/load.h"
#include "report/json.h"

namespace fg::methods {

// What every kind's result has: its name (a throughput matrix cell's
// included), streams, every trial it ran and whether it ended as planned.
struct TestResult {
  virtual ~TestResult() = default;
  std::string name;
  std::vector<std::string> streams;
  std::vector<TrialRecord> trials;  // warm-up and tester-limited attempts included, each saying so
  bool complete = true;             // false: interrupted, or a trial could not be judged
  std::string stopped_because;
};

class TestKind;

// What one test of the plan produced.
struct TestOutcome {
  const TestKind* kind = nullptr;
  size_t test_index = 0;  // in Plan::tests (a throughput matrix gives several outcomes per test)
  std::shared_ptr<const TestResult> result;

  // The kind's result; `R` must be the type its kind made.
  template <typename R>
  const R& As() const {
    const R* r = dynamic_cast<const R*>(result.get());
    if (r == nullptr) std::abort();  // a bug: a kind reading another kind's result
    return *r;
  }
};

// The DUT's own transmit counters of one link (load_balance; later failover).
struct LinkCounters {
  uint64_t tx_packets = 0, tx_bytes = 0;
};
// Reads the DUT's counters, by link name (the plan's dut_counters command).
using LinkCounterReader = std::function<absl::StatusOr<std::map<std::string, LinkCounters>>()>;

// What a test runs with.
struct TestContext {
  const config::Plan& plan;
  const port::Eal& eal;
  const std::vector<port::Port*>& ports;
  const std::vector<stream::CompiledStream>& streams;  // the plan's, compiled
  const MethodOptions& options;
  const std::vector<TestOutcome>& earlier;  // outcomes of the tests before it (at_throughput_of, compare_to)
  std::ostream* notes = nullptr;            // what the test decided on the way (optional)
  LinkCounterReader read_dut_counters;
};

class TestKind : public config::TestKindParser {
 public:
  // The headline's parenthesis: "burst, 1..10000 frames, 50 repetitions per length".
  virtual std::string Describe(const config::TestSpec& test) const = 0;
  // Seconds the test takes, from its parameters (the most trials its search
  // can take; multi-goal: a typical count), for progress lines.
  virtual double EstimateSeconds(const config::TestSpec& test, int64_t drain_ns) const = 0;
  // What can be checked before EAL starts, beyond the plan's streams (a
  // throughput matrix's cells); errors name the plan entry at fault.
  virtual absl::Status Precheck(const config::Plan& plan, size_t test_index) const {
    (void)plan, (void)test_index;
    return absl::OkStatus();
  }
  // Whether the test can run now, given the outcomes so far (the CLI's
  // `run TEST`: a latency test at_throughput_of a test not run yet).
  virtual absl::Status Ready(const config::Plan& plan, const config::TestSpec& test,
                             const std::vector<TestOutcome>& earlier) const {
    (void)plan, (void)test, (void)earlier;
    return absl::OkStatus();
  }
  // Runs the test: one result, or one per cell of a matrix.
  virtual absl::StatusOr<std::vector<std::shared_ptr<const TestResult>>> Run(const TestContext& context,
                                                                             const config::TestSpec& test) const = 0;
  // report.json: inside the test's "parameters" object; then, in the test's
  // object, its results (name, kind, streams and the trials are written
  // around them for every kind).
  virtual void WriteParameters(report::JsonWriter& w, const config::TestSpec& test, const TestResult& r) const = 0;
  virtual void WriteResults(report::JsonWriter& w, const config::TestSpec& test, const TestResult& r) const = 0;
  // The console summary: a line naming the test, then its figures.
  virtual std::string Summary(const TestResult& r) const = 0;
};

// For kinds: the ceiling of log2(range), at least 1 (the halvings of a binary search).
double Halvings(double range);

}  // namespace fg::methods
