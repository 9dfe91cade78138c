#include "session/test_runner.h"

#include "absl/strings/str_format.h"
#include "base/status.h"
#include "methods/kinds.h"
#include "session/dut_counters.h"

namespace fg::session {

std::string TestHeadline(const config::Plan& plan, size_t i) {
  const config::TestSpec& test = plan.tests[i];
  return absl::StrFormat("test %d of %d: %s (%s)", i + 1, plan.tests.size(), test.name,
                         methods::FindTestKind(test.kind)->Describe(test));
}

absl::StatusOr<std::vector<TestOutcome>> RunPlanTest(Session& session,
                                                     const std::vector<stream::CompiledStream>& streams, size_t i,
                                                     const methods::MethodOptions& opt,
                                                     const std::vector<TestOutcome>& earlier, std::ostream* notes) {
  const config::Plan& plan = session.plan();
  const config::TestSpec& test = plan.tests[i];
  const methods::TestKind* kind = methods::FindTestKind(test.kind);
  const std::vector<port::Port*> ports = session.ports();
  const methods::TestContext context{.plan = plan,
                                     .eal = session.eal(),
                                     .ports = ports,
                                     .streams = streams,
                                     .options = opt,
                                     .earlier = earlier,
                                     .notes = notes,
                                     .read_dut_counters = [&] { return ReadDutCounters(plan.dut_counters); }};
  FG_ASSIGN_OR_RETURN(std::vector<std::shared_ptr<const methods::TestResult>> results, kind->Run(context, test));
  std::vector<TestOutcome> out;
  for (auto& r : results) out.push_back(TestOutcome{.kind = kind, .test_index = i, .result = std::move(r)});
  return out;
}

}  // namespace fg::session
