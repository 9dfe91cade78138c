// methods/collective.h: the `collective` test (the draft's category 5;
// issue 28): the plan's ranks play a collective (ring AllReduce, AllGather,
// ReduceScatter; AllToAll parallel or pairwise; halving-doubling
// AllReduce) over RC QPs with barriers, `iterations` times after
// `warmup_iterations`, for each (size, ranks) point; each iteration timed
// from the first rank's first frame to the last rank's last arrival;
// algbw = S / t, busbw = algbw x nccl-tests' factor, and the bytes the
// tester's ports put on the wire (S_fabric) with the retransmissions apart.
//
//   tests:
//     - collective: {op: allreduce, algorithm: ring, sizes: [1 MiB, 64 MiB], ranks: [4, 8], iterations: 20}
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "collective/schedule.h"
#include "methods/test_kind.h"

namespace fg::methods {

struct CollectiveParams : config::TestParams {
  collective::Op op = collective::Op::kAllReduce;
  collective::Algorithm algorithm = collective::Algorithm::kRing;
  std::vector<uint64_t> sizes = {1 << 20};
  std::vector<uint32_t> ranks;  // the first N of the plan's ranks, per point; empty: all of them
  uint32_t iterations = 20, warmup_iterations = 5;
  struct Straggler {
    uint32_t rank = 0;
    int64_t delay_ns = 0;  // its sends of every step start this late
  };
  std::optional<Straggler> straggler;
  int64_t iteration_timeout_ns = 10'000'000'000;  // an iteration not done by then failed (the point ends)
};

// One (size, ranks) point.
struct CollectivePoint {
  uint64_t size_bytes = 0;
  uint32_t ranks = 0;
  double bus_factor = 0;
  struct Iteration {
    uint32_t index = 0;  // among the counted iterations
    int64_t duration_ns = 0;
    uint64_t retransmitted_bytes = 0;
    bool failed = false;
    // The tester's own hold-ups within it (engine::CellIteration): its time
    // is not the fabric's, and the statistics leave it out (StatsOf).
    uint64_t tester_holdup_ns = 0;
    bool tester_held = false;
    int64_t start_unix_ns = 0;  // its first send (UNIX ns, engine::TrialResult::unix_minus_host_ns)
  };
  std::vector<Iteration> iterations;  // the counted ones that ran (a failed one ends them)
  uint32_t wrong = 0;                 // counted iterations failed or not run after a failure
  uint64_t s_fabric_bytes = 0;        // per iteration: frames the tester's ports sent, resends excluded (FCS included)
  uint64_t retransmitted_bytes = 0;   // over the counted iterations
  // Over the point's trial (warm-up included): frames resent by go-back-N,
  // and frames the responders discarded behind a gap (out of sequence):
  // every resend is a lost frame or one of those.
  uint64_t retransmitted_frames = 0, discarded_frames = 0;
  uint64_t ce_marks = 0, cnps = 0, pfc_frames = 0;  // seen during the point's trial
  uint64_t rate_cuts = 0;  // ranks.dcqcn: the QPs' reaction points' rate cuts over the trial
  double rank_line_bps = 0;  // the line rate a rank has: its port's L1 rate over the ranks on it (the least)
  std::vector<engine::TesterLimit> tester_limits;  // of the trial that counted (empty: the tester kept up)
};

struct CollectiveResult : TestResult {
  collective::Op op = collective::Op::kAllReduce;
  collective::Algorithm algorithm = collective::Algorithm::kRing;
  std::string straggler;  // "rank R delayed D" or "none"
  std::vector<CollectivePoint> points;
};

// Figures of a point's counted, completed iterations.
struct CollectiveStats {
  double mean = 0, p50 = 0, p95 = 0, p99 = 0, min = 0, max = 0;  // time, ns
  double algbw_bps = 0;                                            // 8 S / mean time
  double busbw_mean = 0, busbw_p50 = 0, busbw_p95 = 0, busbw_p99 = 0;  // bit/s, from each iteration's time
  size_t n = 0;     // iterations the figures are over
  size_t held = 0;  // completed iterations left out: the tester held up within them
  // Every completed iteration was held up: the figures are over them all,
  // and they are the tester's as much as the fabric's.
  bool all_held = false;
};
CollectiveStats StatsOf(const CollectivePoint& p);

const TestKind& CollectiveKind();

}  // namespace fg::methods
