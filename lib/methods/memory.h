// methods/memory.h: the memory a plan's largest trial needs for its flows,
// and the key that drives it, so a plan that would not fit is refused up
// front (before EAL starts) instead of swapping for minutes.
//
// The trials counted: the plan's streams as planned (a `run`, and every test
// that sends them as they are), each cell of a throughput matrix (its `qps`
// and `bi`), and each `m` of a dcqcn_convergence test (2m QPs, each with its
// rate timeline reported). engine/memory.h counts the bytes per flow.
//
//   fg::methods::MemoryEstimate need = fg::methods::EstimateMemory(plan, /*workers=*/3);
//   FG_RETURN_IF_ERROR(fg::methods::CheckMemory(need, /*other_bytes=*/pools, fg::engine::MemAvailableBytes()));
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "config/plan.h"

namespace fg::methods {

struct MemoryEstimate {
  uint64_t bytes = 0;  // the largest trial's per-flow state
  uint64_t flows = 0;  // that trial's flows in all (a READ's responses included)
  std::string trial;   // which trial: "the plan's streams", "test t, cell 'qps=4096'"
  // The key whose value drives it, located and as written:
  // "plan.yaml:7:35: streams[0].flows '16777216'".
  std::string key;
  uint64_t key_flows = 0;       // the flows that key gives the trial
  uint64_t bytes_per_flow = 0;  // what each of them costs
};

// `workers`: the worker lcores the trial will have (an upper bound will do).
MemoryEstimate EstimateMemory(const config::Plan& plan, uint32_t workers);

// Refused (with the figures and the key) when the per-flow state plus
// `other_bytes` (mbuf pools and EAL, when they come from the same memory)
// exceed `available_bytes`; 0 available: not known, not checked.
absl::Status CheckMemory(const MemoryEstimate& need, uint64_t other_bytes, uint64_t available_bytes);

// "1.50 GiB", "312.0 MiB", "900 KiB".
std::string FormatMemory(uint64_t bytes);

}  // namespace fg::methods
