#include "methods/kinds.h"

#include <cmath>

#include "base/status.h"
#include "methods/burst.h"
#include "methods/collective.h"
#include "methods/dcqcn_convergence.h"
#include "methods/ecn_marking.h"
#include "methods/jct.h"
#include "methods/latency.h"
#include "methods/load_balance.h"
#include "methods/multi_tenant.h"
#include "methods/throughput.h"
#include "stream/stream.h"

namespace fg::methods {

const std::vector<const TestKind*>& TestKinds() {
  // The registration: one line per kind.
  static const std::vector<const TestKind*> kinds = {
      &ThroughputKind(), &LatencyKind(),    &BurstKind(), &LoadBalanceKind(), &DcqcnConvergenceKind(),
      &EcnMarkingKind(), &CollectiveKind(), &JctKind(),   &MultiTenantKind(),
  };
  return kinds;
}

const TestKind* FindTestKind(std::string_view key) {
  for (const TestKind* k : TestKinds()) {
    if (k->key() == key) return k;
  }
  return nullptr;
}

namespace {

const config::TestKindParsers& Parsers() {
  static const config::TestKindParsers parsers(TestKinds().begin(), TestKinds().end());
  return parsers;
}

}  // namespace

absl::StatusOr<config::Plan> LoadPlan(const std::string& file) { return config::LoadPlan(file, Parsers()); }

absl::StatusOr<config::Plan> ParsePlan(const std::string& file, const std::string& text) {
  return config::ParsePlan(file, text, Parsers());
}

absl::Status PrecheckPlan(const config::Plan& plan) {
  FG_RETURN_IF_ERROR(stream::CheckStreams(plan));
  for (size_t t = 0; t < plan.tests.size(); ++t) {
    FG_RETURN_IF_ERROR(FindTestKind(plan.tests[t].kind)->Precheck(plan, t));
  }
  return absl::OkStatus();
}

double Halvings(double range) { return range > 1 ? std::ceil(std::log2(range)) : 1.0; }

}  // namespace fg::methods
