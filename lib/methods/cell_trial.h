// methods/cell_trial.h: what the collective test kinds share (collective,
// jct, multi_tenant): a job (a collective over some of the plan's ranks) as
// a cell, one trial running one or more jobs at once (each its own cell:
// its iterations, compute and overlap), run again while the tester limited
// it, and the figures every kind reads from a cell's iterations.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "collective/cell.h"
#include "config/reader.h"
#include "engine/engine.h"
#include "methods/test_kind.h"
#include "report/json.h"
#include "stream/cell_streams.h"

namespace fg::methods {

// A test of the ranks' collectives needs the plan's ranks, with go-back-N
// and without dcqcn or connect: cm (not run by cells yet); the error names `n`.
absl::Status CheckRanksForCells(const config::Plan& plan, const config::Node& n);
// Reads `op` (default allreduce) and `algorithm` (default ring; alltoall: parallel) of `n`.
absl::Status ParseOpAlgorithm(const config::Node& n, collective::Op& op, collective::Algorithm& algorithm);

// One job: a collective over the plan's ranks `rank_ids` (cell rank i is rank_ids[i]).
struct CellJob {
  std::string name;
  std::vector<uint32_t> rank_ids;
  collective::Op op = collective::Op::kAllReduce;
  collective::Algorithm algorithm = collective::Algorithm::kRing;
  uint64_t size_bytes = 0;
  stream::CellPlay play;
};

// The ranks 0..n-1.
std::vector<uint32_t> FirstRanks(uint32_t n);

// The job's cell (its schedule cut into the ranks' QPs), or why not.
absl::StatusOr<collective::Cell> JobCell(const config::RanksSpec& ranks, const CellJob& job);

// One trial of `jobs` at once; `label` names it in the progress lines. The
// result's cells are the jobs', in order.
absl::StatusOr<engine::TrialResult> RunCellTrial(const TestContext& c, const config::TestSpec& test,
                                                 const std::vector<CellJob>& jobs, const std::string& label,
                                                 std::vector<TrialRecord>& trials);

// The line rate each of the job's ranks has: its port's L1 rate over the
// job's ranks on it (the least over its ports; 0: a port without a speed).
double RankLineBps(const config::RanksSpec& ranks, const std::vector<uint32_t>& rank_ids,
                   const std::vector<port::Port*>& ports);

// The mean of `v` (0 when empty).
double Mean(const std::vector<double>& v);
// `r` marked incomplete, stopped by `st`, as a kind's Run returns it.
std::vector<std::shared_ptr<const TestResult>> Stopped(std::shared_ptr<TestResult> r, const absl::Status& st);

// Nearest-rank percentile of sorted values.
double Percentile(const std::vector<double>& sorted, double q);

// A job's counted iteration (after the warm-up) as reports list it: its
// completion time from its compute's start to the later of the compute's end
// and the last arrival, when that start was, and the tester's hold-ups in it.
struct JobIteration {
  uint32_t index = 0;         // among the counted iterations
  int64_t start_unix_ns = 0;  // its compute's start (UNIX ns, engine::TrialResult::unix_minus_host_ns)
  int64_t jct_ns = 0;         // 0: it failed
  uint64_t tester_holdup_ns = 0;
  bool tester_held = false;
};
// Cell `cell` of `r`'s counted iterations (after `warmup`), each compute_ns
// of compute; up to the first failed one.
std::vector<JobIteration> JobIterations(const engine::TrialResult& r, size_t cell, uint32_t warmup,
                                        int64_t compute_ns);
// `key`: [{index, start_unix_ns, jct_ns, tester_holdup_ns, tester_held}].
void WriteJobIterations(report::JsonWriter& w, std::string_view key, const std::vector<JobIteration>& its);
// The completion times a job's figures are made of: those of its completed
// iterations but the ones the tester held up within (tester_held), unless
// every one was.
std::vector<double> JobTimesNs(const std::vector<JobIteration>& its);
// Of `iterations` counted (after `warmup`), those that did not complete
// (failed, or not run after a failure): the job's #wrong.
uint32_t WrongIterations(const engine::CellResult& cell, uint32_t warmup, uint32_t iterations);
// Whether the tester was held up within every completed counted iteration
// (JobTimesNs then gives them all: the figures are the tester's as much as
// the fabric's, a point's tester_limited).
bool EveryIterationHeld(const engine::CellResult& cell, uint32_t warmup);

}  // namespace fg::methods
