// The throughput test end to end on a DUT of known capacity: a token-bucket
// policer in the mover thread between two ring ports. The searches must find
// its capacity (expressed as a share of the 10 Gbit/s line the ring ports
// report) within 2 %.
#include <gtest/gtest.h>

#include "config/plan.h"
#include "dpdk_test_env.h"
#include "host_holdups.h"
#include "methods/kinds.h"
#include "methods/throughput.h"
#include "ring_path.h"

namespace fg::methods {
namespace {

using fg::testing::Impairments;
using fg::testing::Policer;
using fg::testing::RingPath;
using fg::testing::TestEal;

constexpr double kCapacityPps = 1'000'000;
constexpr double kDepth = 2'000;  // frames the policer lets through in a burst
constexpr double kLineBps = 10e9;
constexpr double kFrameL1Bits = (64 + 20) * 8;

// The searches' trials: short, so that most of them fit between a shared
// host's hold-ups (below).
constexpr double kTrialS = 0.25;

// The load (fraction of line) at which a trial of `secs` just loses nothing.
double TruthLoad(double secs) { return (kCapacityPps + kDepth / secs) * kFrameL1Bits / kLineBps; }

// `dut_stops`: the Mover's stops (the host's), for FG_SKIP_IF_HOST_HELD_UP.
absl::StatusOr<ThroughputResult> RunAgainstPolicer(const std::string& test_yaml,
                                                   std::vector<fg::testing::DutStop>* dut_stops) {
  RingPath path("thr");
  if (!path.ok()) return absl::InternalError(path.error());
  auto plan = methods::ParsePlan("thr.yaml", R"(
ports: [{name: a}, {name: b}]
streams: [{name: s, port: a, rx_port: b, rate: 1 Mpps, frame: {size: 64}}]
tests:
)" + test_yaml);
  if (!plan.ok()) return plan.status();
  auto streams = stream::Compile(*plan, {kLineBps, kLineBps});
  if (!streams.ok()) return streams.status();
  Policer policer(kCapacityPps, kDepth);
  Impairments imp;
  imp.police = [&](uint64_t tx_ns) { return policer.Drop(tx_ns); };
  fg::testing::Mover mover(path.in(), path.out(), path.tx()->pool(), imp);
  MethodOptions opt;
  opt.trial.drain_ns = 50'000'000;
  auto r = RunThroughput(TestEal(), {path.tx(), path.rx()}, *streams, plan->tests[0], opt);
  *dut_stops = mover.stops();
  return r;
}

// The searches below allow 20 tester-limited attempts of a trial (5 by
// default): a trial the host held the lcore up in is never counted (the test
// below checks it), and on the 2-vCPU VM of 2026-12-02 (Zen 5, KVM) a
// busy CPU 1 saw a hold-up over 1 ms every ~5 s (build/app/fabricgen-holdups),
// so six 1 s attempts in a row were all limited in 2 runs of 3. In the evening
// the same VM held CPU 1 up 2-3 times a second: 21 attempts of 1 s in a row
// were limited in all three searches of a CI run. Their trials are 250 ms.
TEST(Throughput, BinarySearchFindsThePolicersCapacity) {
  std::vector<fg::testing::DutStop> stops;
  auto r = RunAgainstPolicer(
      "  - throughput: {search: binary, min: 1 %, max: 20 %, precision: 0.05 %, trial_duration: 250 ms, "
      "warmup: 100 ms, tester_limit_retries: 20}\n",
      &stops);
  ASSERT_TRUE(r.ok()) << r.status();
  FG_SKIP_IF_HOST_HELD_UP(r->complete, r->stopped_because, r->trials, stops);
  ASSERT_TRUE(r->complete) << r->stopped_because;
  ASSERT_EQ(r->goals.size(), 1u);
  const GoalOutcome& g = r->goals[0];
  ASSERT_TRUE(g.found);
  const double truth = TruthLoad(kTrialS);  // 6.79 % of line
  EXPECT_NEAR(g.lower_bound, truth, truth * 0.02) << "found " << g.lower_bound * 100 << " %";
  EXPECT_NEAR(g.lower_bound_pps, kCapacityPps + kDepth / kTrialS, (kCapacityPps + kDepth / kTrialS) * 0.02);
  // The throughput is what TX measured it offered in the deciding trials
  // (the counted ones at the lower bound), with the set load beside it.
  double secs = 0, l1 = 0, fps = 0;
  for (const TrialRecord& t : r->trials) {
    if (!t.included || t.load != g.lower_bound) continue;
    secs += t.duration_s;
    l1 += t.offered_l1_bps * t.duration_s;
    fps += t.offered_fps * t.duration_s;
    EXPECT_DOUBLE_EQ(t.set_l1_bps, t.load * kLineBps);
    EXPECT_NEAR(t.offered_fps, static_cast<double>(t.tx_frames) / t.duration_s, t.offered_fps * 0.01);
  }
  ASSERT_GT(secs, 0);
  EXPECT_DOUBLE_EQ(g.deciding_trial_seconds, secs);
  EXPECT_DOUBLE_EQ(g.lower_bound_l1_bps, l1 / secs);
  EXPECT_DOUBLE_EQ(g.lower_bound_pps, fps / secs);
  EXPECT_DOUBLE_EQ(g.set_l1_bps, g.lower_bound * kLineBps);
  EXPECT_NEAR(g.lower_bound_l1_bps, g.set_l1_bps, g.set_l1_bps * 0.01);  // the tester kept up: offered = set
  ASSERT_EQ(g.port_l1_bps.size(), 1u);
  EXPECT_DOUBLE_EQ(g.port_l1_bps[0], g.lower_bound_l1_bps);
  EXPECT_EQ(r->trials.front().phase, "warm-up");
  EXPECT_FALSE(r->trials.front().included);
  EXPECT_EQ(r->trials[1].phase, "max");
  for (size_t i = 1; i < r->trials.size(); ++i) {
    if (!r->trials[i].tester_limits.empty()) continue;  // not counted, run again (the machine held the tester up)
    EXPECT_TRUE(r->trials[i].included);
    EXPECT_DOUBLE_EQ(r->trials[i].duration_s, kTrialS);
    // The trial's verdict agrees with the policer's arithmetic away from the edge.
    const double l = r->trials[i].load;
    if (l > truth * 1.03) {
      EXPECT_GT(r->trials[i].loss_ratio, 0) << l;
    }
    if (l < truth * 0.97) {
      EXPECT_EQ(r->trials[i].loss_ratio, 0) << l;
    }
  }
}

TEST(Throughput, MultiGoalSearchFindsNdrAndPdr) {
  std::vector<fg::testing::DutStop> stops;
  auto r = RunAgainstPolicer(
      "  - throughput:\n      search: multi_goal\n      min: 1 %\n      max: 20 %\n      trial_duration: 250 ms\n"
      "      initial_duration: 100 ms\n      warmup: none\n      tester_limit_retries: 20\n"
      "      goals: [{name: NDR, loss: 0 %, width: 1 %}, {name: PDR, loss: 5 %, width: 1 %}]\n",
      &stops);
  ASSERT_TRUE(r.ok()) << r.status();
  FG_SKIP_IF_HOST_HELD_UP(r->complete, r->stopped_because, r->trials, stops);
  ASSERT_TRUE(r->complete) << r->stopped_because;
  ASSERT_EQ(r->goals.size(), 2u);
  const double ndr_truth = TruthLoad(kTrialS);
  // PDR: (L - C) * T - depth = 5 % of L * T  ->  L = (C + depth / T) / 0.95
  const double pdr_truth = (kCapacityPps + kDepth / kTrialS) / 0.95 * kFrameL1Bits / kLineBps;
  EXPECT_NEAR(r->goals[0].lower_bound, ndr_truth, ndr_truth * 0.02);
  EXPECT_NEAR(r->goals[1].lower_bound, pdr_truth, pdr_truth * 0.02);
  EXPECT_LE(r->goals[1].conditional_throughput, r->goals[1].lower_bound);
  int finals = 0;
  for (const TrialRecord& t : r->trials) finals += t.phase == "final";
  EXPECT_GE(finals, 2);
  EXPECT_LT(r->trial_seconds, 16 * kTrialS);  // 3.3 s in a run of 2026-12-02 (10 s with 1 s trials)
}

// READ throughput: port a is the responder, so the READ's data (its
// responses, a -> b) crosses the mover and its policer of 150,000 response
// frames a second; the requests come back to a directly (b -> a). The load
// is the data's: the search must find the policer's capacity in READ data,
// each trial counting the response packets the requests asked for against
// those that arrived.
TEST(Throughput, ReadSearchFindsThePolicersCapacityInReadData) {
  constexpr double kReadCapacity = 150'000, kReadDepth = 500;
  RingPath path("rdthr");
  ASSERT_TRUE(path.ok()) << path.error();
  auto plan = methods::ParsePlan("rdthr.yaml", R"(
ports: [{name: a, respond: true}, {name: b}]
streams: [{name: rd, port: b, rx_port: a, rate: 100 Mbps, flows: 4,
           frame: {roce: {op: READ_REQUEST, message: 4096, pmtu: 1024}}}]
tests:
  - throughput: {search: binary, min: 2 %, max: 40 %, precision: 0.1 %, trial_duration: 250 ms, warmup: none,
                 tester_limit_retries: 20}
)");
  ASSERT_TRUE(plan.ok()) << plan.status();
  auto streams = stream::Compile(*plan, {kLineBps, kLineBps});
  ASSERT_TRUE(streams.ok()) << streams.status();
  ASSERT_EQ(streams->size(), 2u);  // the requests, then their responses
  const stream::CompiledStream& data = (*streams)[1];
  EXPECT_EQ(data.name, "rd.responses");
  EXPECT_EQ(data.read_packets, 4u);
  Policer policer(kReadCapacity, kReadDepth);
  Impairments imp;
  imp.police = [&](uint64_t tx_ns) { return policer.Drop(tx_ns); };
  fg::testing::Mover mover(path.in(), path.out(), path.tx()->pool(), imp);
  MethodOptions opt;
  opt.trial.drain_ns = 50'000'000;
  auto r = RunThroughput(TestEal(), {path.tx(), path.rx()}, *streams, plan->tests[0], opt);
  ASSERT_TRUE(r.ok()) << r.status();
  FG_SKIP_IF_HOST_HELD_UP(r->complete, r->stopped_because, r->trials, mover.stops());
  ASSERT_TRUE(r->complete) << r->stopped_because;
  const GoalOutcome& g = r->goals[0];
  ASSERT_TRUE(g.found);
  const double truth = (kReadCapacity + kReadDepth / kTrialS) * (data.frame_size + 20) * 8 / kLineBps;
  EXPECT_NEAR(g.lower_bound, truth, truth * 0.02) << "found " << g.lower_bound * 100 << " %";
  EXPECT_NEAR(g.lower_bound_pps, kReadCapacity + kReadDepth / kTrialS,
              (kReadCapacity + kReadDepth / kTrialS) * 0.02);
  for (const TrialRecord& t : r->trials) {
    if (!t.included) continue;
    // The trial's frames are the response packets asked for: 4 per request.
    EXPECT_EQ(t.tx_frames % 4, 0u) << t.index;
    if (t.load > truth * 1.03) {
      EXPECT_GT(t.loss_ratio, 0) << t.load;
    }
    if (t.load < truth * 0.97) {
      EXPECT_EQ(t.loss_ratio, 0) << t.load;
    }
  }
}

}  // namespace
}  // namespace fg::methods
