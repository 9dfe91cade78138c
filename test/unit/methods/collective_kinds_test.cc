// The collective test kinds' sections (collective, jct, multi_tenant): what
// they accept, what they refuse naming the place, and the figures they make
// from a cell's iterations (busbw, percentiles, a job's completion time).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "methods/cell_trial.h"
#include "methods/collective.h"
#include "methods/jct.h"
#include "methods/kinds.h"
#include "methods/multi_tenant.h"

namespace fg::methods {
namespace {

using ::testing::HasSubstr;

constexpr char kRanks[] = "ranks: {count: 8, qps_per_pair: 2}\ntests:\n";

TEST(CollectiveKinds, ReadEveryKey) {
  auto plan = ParsePlan("c.yaml", std::string(kRanks) + R"(
  - collective: {op: alltoall, algorithm: pairwise, sizes: [1 MiB, 4 MiB], ranks: [4, 8], iterations: 7,
                 warmup_iterations: 2, straggler: {rank: 3, delay: 2 ms}, iteration_timeout: 5 s}
  - jct: {size: 2 MiB, ranks: 4, compute: [10 ms, 20 ms], overlap: 25 %, iterations: 3}
  - multi_tenant: {jobs: [{name: x, rank_ids: [0, 2], size: 64 KiB, compute: 1 ms},
                          {name: y, rank_ids: [1, 3, 5], op: allgather}], iterations: 2}
)");
  ASSERT_TRUE(plan.ok()) << plan.status();
  const auto& c = plan->tests[0].As<CollectiveParams>();
  EXPECT_EQ(c.op, collective::Op::kAllToAll);
  EXPECT_EQ(c.algorithm, collective::Algorithm::kPairwise);
  EXPECT_EQ(c.sizes, (std::vector<uint64_t>{1 << 20, 4 << 20}));
  EXPECT_EQ(c.ranks, (std::vector<uint32_t>{4, 8}));
  EXPECT_EQ(c.iterations, 7u);
  EXPECT_EQ(c.warmup_iterations, 2u);
  ASSERT_TRUE(c.straggler.has_value());
  EXPECT_EQ(c.straggler->rank, 3u);
  EXPECT_EQ(c.straggler->delay_ns, 2'000'000);
  EXPECT_EQ(c.iteration_timeout_ns, 5'000'000'000);
  const auto& j = plan->tests[1].As<JctParams>();
  EXPECT_EQ(j.size_bytes, 2u << 20);
  EXPECT_EQ(j.ranks, 4u);
  EXPECT_EQ(j.compute_ns, (std::vector<int64_t>{10'000'000, 20'000'000}));
  EXPECT_DOUBLE_EQ(j.overlap, 0.25);
  const auto& m = plan->tests[2].As<MultiTenantParams>();
  ASSERT_EQ(m.jobs.size(), 2u);
  EXPECT_EQ(m.jobs[0].rank_ids, (std::vector<uint32_t>{0, 2}));
  EXPECT_EQ(m.jobs[0].play.compute_ns, 1'000'000);
  EXPECT_EQ(m.jobs[0].play.iterations, 3u);  // 2 + the default warm-up of 1
  EXPECT_EQ(m.jobs[1].op, collective::Op::kAllGather);
  EXPECT_EQ(m.jobs[1].rank_ids.size(), 3u);
}

TEST(CollectiveKinds, RefuseWhatCannotRunNamingThePlace) {
  struct Case {
    std::string text, error;
  };
  const std::vector<Case> cases = {
      {"tests:\n  - collective: {}\n", "a plan needs streams (what to send) or ranks"},
      {"streams: [{name: s, rate: 1 kpps}]\ntests:\n  - collective: {}\n", "the plan has no `ranks`"},
      {std::string(kRanks) + "  - collective: {algorithm: halving_doubling, ranks: [6]}\n",
       "6 ranks, 1048576 B: halving_doubling needs a power of two of ranks"},
      {std::string(kRanks) + "  - collective: {op: alltoall, algorithm: ring}\n", "alltoall has no algorithm 'ring'"},
      {std::string(kRanks) + "  - collective: {sizes: [40 B]}\n", "each QP's part needs at least 16 B"},
      {std::string(kRanks) + "  - collective: {ranks: [9]}\n", "c.yaml:3:26: tests[0].collective.ranks[0]: 9 is out of range"},
      {"ranks: {count: 4, retransmit: none}\ntests:\n  - collective: {}\n", "needs its QPs' go-back-N"},
      {std::string(kRanks) + "  - multi_tenant: {jobs: [{rank_ids: [0, 1]}, {rank_ids: [1, 2]}]}\n",
       "rank 1 is in two jobs"},
      {std::string(kRanks) + "  - multi_tenant: {jobs: [{rank_ids: [0, 1]}]}\n", "two or more jobs"},
      {std::string(kRanks) + "  - jct: {compute: []}\n", "compute lists at least one duration"},
  };
  for (const Case& k : cases) {
    auto plan = ParsePlan("c.yaml", k.text);
    ASSERT_FALSE(plan.ok()) << k.text;
    EXPECT_THAT(std::string(plan.status().message()), HasSubstr(k.error)) << k.text;
  }
  // CM set-up and DCQCN are the collective's too.
  auto cm = ParsePlan("c.yaml", "ranks: {count: 4, connect: cm, dcqcn: paper}\ntests:\n  - collective: {}\n");
  ASSERT_TRUE(cm.ok()) << cm.status();
  EXPECT_TRUE(cm->ranks->connect_cm);
  EXPECT_TRUE(cm->ranks->dcqcn.has_value());
}

TEST(CollectiveKinds, BusbwIsEightSOverTheTimeTimesTheBusFactor) {
  CollectivePoint p;
  p.size_bytes = 1'000'000;
  p.bus_factor = 1.5;
  for (int64_t t : {4'000'000, 1'000'000, 2'000'000, 3'000'000}) p.iterations.push_back({0, t, 0, false});
  p.iterations.push_back({4, 0, 0, true});  // failed: left out
  const CollectiveStats s = StatsOf(p);
  EXPECT_EQ(s.n, 4u);
  EXPECT_DOUBLE_EQ(s.mean, 2'500'000);
  EXPECT_DOUBLE_EQ(s.min, 1'000'000);
  EXPECT_DOUBLE_EQ(s.max, 4'000'000);
  EXPECT_DOUBLE_EQ(s.p50, 2'000'000);  // nearest rank: the 2nd of 4
  EXPECT_DOUBLE_EQ(s.p99, 4'000'000);
  EXPECT_DOUBLE_EQ(s.algbw_bps, 8e6 / 2.5e-3);
  EXPECT_DOUBLE_EQ(s.busbw_mean, 8e6 / 2.5e-3 * 1.5);
  EXPECT_DOUBLE_EQ(s.busbw_p99, 8e6 / 4e-3 * 1.5);  // the slow tail: what 99 % of iterations reach
}

// Iterations the tester was held up within are left out of the figures
// (counted apart); when every one was, the figures are over them all and
// flagged.
TEST(CollectiveKinds, IterationsTheTesterHeldUpAreLeftOutOrFlagged) {
  CollectivePoint p;
  p.size_bytes = 1'000'000;
  p.bus_factor = 1.0;
  p.iterations = {{0, 2'000'000, 0, false, 0, false}, {1, 9'000'000, 0, false, 7'000'000, true},
                  {2, 4'000'000, 0, false, 0, false}};
  CollectiveStats s = StatsOf(p);
  EXPECT_EQ(s.n, 2u);
  EXPECT_EQ(s.held, 1u);
  EXPECT_FALSE(s.all_held);
  EXPECT_DOUBLE_EQ(s.mean, 3'000'000);
  EXPECT_DOUBLE_EQ(s.max, 4'000'000);
  for (auto& it : p.iterations) it.tester_held = true;
  s = StatsOf(p);
  EXPECT_TRUE(s.all_held);
  EXPECT_EQ(s.n, 3u);
  EXPECT_EQ(s.held, 0u);
  EXPECT_DOUBLE_EQ(s.mean, 5'000'000);
  // A job's times likewise.
  engine::TrialResult r;
  r.cells.resize(1);
  engine::CellResult& cell = r.cells[0];
  cell.iterations = {{100, 600, true, 0}, {1'100, 1'500, true, 1'000}};
  cell.iterations[1].tester_held = true;
  EXPECT_EQ(JobTimesNs(JobIterations(r, 0, 0, 0)), (std::vector<double>{600}));  // from its compute start (0)
  cell.iterations[0].tester_held = true;
  EXPECT_EQ(JobTimesNs(JobIterations(r, 0, 0, 0)), (std::vector<double>{600, 500}));
  EXPECT_EQ(WrongIterations(cell, 0, 2), 0u);  // held up, not wrong
  EXPECT_TRUE(EveryIterationHeld(cell, 0));
  EXPECT_FALSE(EveryIterationHeld(cell, 2));  // none counted
  cell.iterations.push_back({0, 0, false, 2'000});
  EXPECT_EQ(WrongIterations(cell, 0, 4), 2u);  // one failed, one never run
}

TEST(CollectiveKinds, AJobCompletesAtTheLaterOfItsComputeAndItsLastArrival) {
  engine::TrialResult r;
  r.unix_minus_host_ns = 1'700'000'000'000'000'000;
  r.cells.resize(1);
  r.cells[0].iterations = {{100, 900, true, 0},         // warm-up: left out
                           {1'100, 1'500, true, 1'000},  // communication ends at 1,500: JCT 500
                           {2'100, 2'150, true, 2'000},  // compute (300) ends later: JCT 300
                           {0, 0, false, 3'000}};        // failed: left out
  const std::vector<JobIteration> its = JobIterations(r, 0, 1, 300);
  ASSERT_EQ(its.size(), 3u);
  EXPECT_EQ(its[0].index, 0u);
  EXPECT_EQ(its[0].start_unix_ns, 1'700'000'000'000'001'000);  // its compute's start on the UNIX clock
  EXPECT_EQ(its[1].jct_ns, 300);
  EXPECT_EQ(its[2].jct_ns, 0);  // listed, as failed
  EXPECT_EQ(JobTimesNs(its), (std::vector<double>{500, 300}));
  EXPECT_EQ(Percentile({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 95), 10);
  EXPECT_EQ(Percentile({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 50), 5);
}

}  // namespace
}  // namespace fg::methods
