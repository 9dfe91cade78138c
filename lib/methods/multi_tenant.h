// methods/multi_tenant.h: the `multi_tenant` test (the draft's category 6):
// two or more jobs on disjoint sets of the plan's ranks, each a collective
// with its own compute, run first one at a time (each job's isolated
// baseline) and then all at once; each job's JCT Interference Factor is its
// mean JCT shared over its mean JCT isolated, all measured in the same test.
//
//   tests:
//     - multi_tenant: {jobs: [{name: a, rank_ids: [0, 1, 2, 3], size: 1 MiB},
//                             {name: b, rank_ids: [4, 5, 6, 7], size: 1 MiB}], iterations: 10}
#pragma once

#include <string>
#include <vector>

#include "methods/cell_trial.h"
#include "methods/test_kind.h"

namespace fg::methods {

struct MultiTenantParams : config::TestParams {
  std::vector<CellJob> jobs;  // each job's play: iterations, compute (overlap none)
  uint32_t iterations = 10, warmup_iterations = 1;
  int64_t iteration_timeout_ns = 10'000'000'000;
};

struct TenantJob {
  std::string name;
  uint32_t ranks = 0;
  double isolated_jct_ns = 0, shared_jct_ns = 0;  // means over the counted iterations
  double interference_factor = 0;                 // shared / isolated
  uint32_t wrong = 0;                             // iterations failed or not run, both trials
  std::vector<JobIteration> isolated_iterations, shared_iterations;  // the counted ones of each trial
};

struct MultiTenantResult : TestResult {
  std::vector<TenantJob> jobs;
};

const TestKind& MultiTenantKind();

}  // namespace fg::methods
