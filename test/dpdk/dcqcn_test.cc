// DCQCN convergence at scale through the engine: 64 QPs a group (128 in
// all) on the ring path, whose mover marks every 50th data frame CE (an ECN
// switch queue). The test completes, and every mark is accounted for in each
// trial: seen by the responder, answered by a CNP or suppressed by its
// interval, and each CNP sent reached its QP's reaction point.
#include <gtest/gtest.h>

#include <map>

#include "config/plan.h"
#include "dpdk_test_env.h"
#include "host_holdups.h"
#include "methods/dcqcn_convergence.h"
#include "methods/kinds.h"
#include "ring_path.h"

namespace fg::methods {
namespace {

using fg::testing::Impairments;
using fg::testing::Mover;
using fg::testing::RingPath;
using fg::testing::TestEal;

TEST(DcqcnConvergence, SixtyFourQpsAGroupCompleteWithEveryCeMarkAccounted) {
  RingPath path("dcqscale");
  ASSERT_TRUE(path.ok()) << path.error();
  auto plan = methods::ParsePlan("dcqcn-scale.yaml", R"(
ports: [{name: a}, {name: b, respond: {cnp_interval: 50 us}}]
streams:
  - {name: q, port: a, rx_port: b, rate: 2 Gbps, flows: 64,
     frame: {roce: {op: WRITE, message: 1024, pmtu: 1024, dcqcn: paper}}}
tests:
  - dcqcn_convergence: {streams: [q], m: [64], trial_duration: 200 ms, t0: 50 ms, hold: 10 ms,
                        parameter_sets: [paper, connectx], tester_limit_retries: 10}
)");
  ASSERT_TRUE(plan.ok()) << plan.status();
  auto streams = stream::Compile(*plan, {10e9, 10e9});
  ASSERT_TRUE(streams.ok()) << streams.status();
  Impairments imp;
  imp.ce_every = 50;
  Mover mover(path.in(), path.out(), path.tx()->pool(), imp);
  // The marks of each trial (attempts the tester was held up in included).
  std::map<int, uint64_t> marks;
  uint64_t before = 0;
  MethodOptions opt;
  opt.trial.drain_ns = 50'000'000;
  opt.on_trial = [&](const TrialRecord& t) {
    const uint64_t now = mover.marked_every();
    marks[t.index] = now - before;
    before = now;
  };
  const std::vector<port::Port*> ports = {path.tx(), path.rx()};
  const std::vector<TestOutcome> earlier;
  const TestContext ctx{.plan = *plan,
                        .eal = TestEal(),
                        .ports = ports,
                        .streams = *streams,
                        .options = opt,
                        .earlier = earlier,
                        .notes = nullptr,
                        .read_dut_counters = nullptr};
  auto res = DcqcnConvergenceKind().Run(ctx, plan->tests[0]);
  ASSERT_TRUE(res.ok()) << res.status();
  ASSERT_EQ(res->size(), 1u);
  const auto& r = static_cast<const DcqcnConvergenceResult&>(*res->front());
  FG_SKIP_IF_HOST_HELD_UP(r.complete, r.stopped_because, r.trials, mover.stops());
  ASSERT_TRUE(r.complete) << r.stopped_because;
  ASSERT_EQ(r.points.size(), 2u);  // m = 64 under two parameter sets
  for (const ConvergencePoint& p : r.points) {
    EXPECT_EQ(p.m, 64u);
    ASSERT_EQ(p.runs.size(), 1u);
    const ConvergenceRun& run = p.runs[0];
    ASSERT_TRUE(marks.count(run.trial)) << p.parameter_set;
    const uint64_t m = marks[run.trial];
    std::fprintf(stderr,
                 "  %s: %llu marks; responder saw %llu, sent %llu CNPs, suppressed %llu; %llu reached the "
                 "requesters; %s\n",
                 p.parameter_set.c_str(), static_cast<unsigned long long>(m),
                 static_cast<unsigned long long>(run.ecn_ce_packets), static_cast<unsigned long long>(run.cnp_sent),
                 static_cast<unsigned long long>(run.cnp_suppressed), static_cast<unsigned long long>(run.cnp_received),
                 run.converged ? "converged" : "not converged");
    EXPECT_GT(m, 1000u) << p.parameter_set;
    EXPECT_EQ(run.ecn_ce_packets, m) << p.parameter_set;                 // every mark seen
    EXPECT_EQ(run.cnp_sent + run.cnp_suppressed, m) << p.parameter_set;  // each answered or suppressed
    EXPECT_EQ(run.lost_packets, 0) << p.parameter_set;
    // Each CNP sent reached its QP (a reaction point, or after its TX ended).
    EXPECT_EQ(run.cnp_received, run.cnp_sent) << p.parameter_set;
  }
}

}  // namespace
}  // namespace fg::methods
