// methods/matrix.h: a throughput test's matrix of message size x QP count x
// direction, each cell a plan of its own.
//
// The draft reports throughput per message size (64 B .. 4 MB), QP count (1, 4,
// 16, 32) and direction (uni, bi). Each cell copies the plan, sets the test's
// streams' message size (RoCE / UET message bytes, or the UDP frame size) and
// flow count, and for `bi` adds each stream's reverse (from its rx_port back
// to its port) to the test; the caller compiles the cell's plan and runs the
// search on it.
//
//   FG_RETURN_IF_ERROR(fg::methods::PrecheckMatrix(plan, 0));   // before EAL starts
//   for (const auto& cell : fg::methods::ExpandMatrix(plan, plan.tests[0])) { ... }
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "config/plan.h"

namespace fg::methods {

struct MatrixCell {
  uint64_t message_size = 0;  // 0: as planned
  uint32_t qps = 0;           // 0: as planned
  bool bidirectional = false;
  std::string label;      // "msg=1024 B, qps=4, bi"
  config::Plan plan;      // the plan with this cell's streams
  config::TestSpec test;  // the test over them
};

// One cell when the test names no matrix.
// `test` is a throughput test.
std::vector<MatrixCell> ExpandMatrix(const config::Plan& plan, const config::TestSpec& test);

// What can be checked of throughput test plan.tests[t] before EAL starts:
// every cell of its matrix, as each would be compiled (stream::CheckStreams:
// frames against the MTU, flow keys, rates), so nothing fails once traffic
// has begun. An error about a cell names the matrix entry (file:line:col).
absl::Status PrecheckMatrix(const config::Plan& plan, size_t t);

}  // namespace fg::methods
