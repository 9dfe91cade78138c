// methods/kinds.h: the table of test kinds (each registered once, in
// kinds.cc), and the plan read with every kind.
//
//   auto plan = fg::methods::LoadPlan("configs/rfc2544/throughput.yaml");
//   FG_RETURN_IF_ERROR(fg::methods::PrecheckPlan(*plan));   // before EAL starts
//   const fg::methods::TestKind* kind = fg::methods::FindTestKind(plan->tests[0].kind);
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "config/plan.h"
#include "methods/test_kind.h"

namespace fg::methods {

// Every kind, in the order the plan reference lists them.
const std::vector<const TestKind*>& TestKinds();
// The kind of a parsed test (TestSpec::kind); nullptr for a key no kind has.
const TestKind* FindTestKind(std::string_view key);

// config::LoadPlan / ParsePlan with every kind's parser.
absl::StatusOr<config::Plan> LoadPlan(const std::string& file);
absl::StatusOr<config::Plan> ParsePlan(const std::string& file, const std::string& text);

// What can be checked of a plan before EAL starts: its streams, and what
// each test's kind checks of it (every cell of a throughput matrix), so
// nothing fails once traffic has begun.
absl::Status PrecheckPlan(const config::Plan& plan);

}  // namespace fg::methods
