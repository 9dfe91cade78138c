// methods/jct.h: the `jct` test (the draft's category 6): a synthetic
// training iteration, compute C (every rank idle) then a collective of S
// bytes over N ranks, `iterations` times for each C; the job completion
// time (JCT) per iteration from the compute's start to the later of its end
// and the collective's last arrival; with `overlap` the communication starts
// that share of C early. Against the sequential roofline C + 8 S x factor /
// B_acc (B_acc: a rank's line rate) it gives the JCT Ratio. The
// communication time without compute is measured first, in the same test.
//
//   tests:
//     - jct: {op: allreduce, size: 64 MiB, ranks: 8, compute: [20 ms, 50 ms], overlap: 50 %, iterations: 10}
#pragma once

#include <cstdint>
#include <vector>

#include "collective/schedule.h"
#include "methods/cell_trial.h"
#include "methods/test_kind.h"

namespace fg::methods {

struct JctParams : config::TestParams {
  collective::Op op = collective::Op::kAllReduce;
  collective::Algorithm algorithm = collective::Algorithm::kRing;
  uint64_t size_bytes = 1 << 20;
  uint32_t ranks = 0;  // the plan's first N; 0: all of them
  std::vector<int64_t> compute_ns = {20'000'000};
  double overlap = 0;  // 0..1
  uint32_t iterations = 10, warmup_iterations = 1;
  int64_t iteration_timeout_ns = 10'000'000'000;
};

struct JctPoint {
  int64_t compute_ns = 0;
  double jct_mean = 0, jct_p50 = 0, jct_p99 = 0;  // ns
  double roofline_ns = 0;   // C + 8 S x factor / B_acc
  double jct_ratio = 0;     // mean JCT / roofline
  double measured_overlap = 0;  // (C + T_comm - JCT) / min(C, T_comm): the share of the shorter one hidden
  uint32_t wrong = 0;       // iterations failed or not run
  bool tester_limited = false;
  std::vector<JobIteration> iterations;  // the counted ones, as run
};

struct JctResult : TestResult {
  collective::Op op = collective::Op::kAllReduce;
  collective::Algorithm algorithm = collective::Algorithm::kRing;
  uint64_t size_bytes = 0;
  uint32_t ranks = 0;
  double bus_factor = 0, rank_line_bps = 0, overlap = 0;
  double comm_ns = 0;  // T_comm: the collective's mean time without compute, measured first
  std::vector<JobIteration> comm_iterations;  // T_comm's run's counted iterations
  std::vector<JctPoint> points;
};

const TestKind& JctKind();

}  // namespace fg::methods
