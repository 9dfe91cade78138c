// The dcqcn_convergence kind: its plan section and its judgement of rate
// timelines worked by hand.
#include "methods/dcqcn_convergence.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "methods/kinds.h"

namespace fg::methods {
namespace {

using ::testing::HasSubstr;
using Tl = std::vector<tx::RatePoint>;
constexpr int64_t kMs = 1'000'000;

// Four QPs, fair share 100 (bottleneck 400): two there all along; QP2 within
// 10 % from 13 ms; QP3 within from 12 ms, out (80) over [15, 15.5) ms, back.
std::vector<Tl> Timelines() {
  return {Tl{{0, 100}}, Tl{{0, 100}}, Tl{{10 * kMs, 200}, {13 * kMs, 105}},
          Tl{{10 * kMs, 200}, {12 * kMs, 95}, {15 * kMs, 80}, {15 * kMs + kMs / 2, 100}}};
}

TEST(DcqcnConvergence, ConvergedWhenEveryQpStaysWithinToleranceForTheHold) {
  ConvergenceRun r = JudgeConvergence(Timelines(), 10 * kMs, 30 * kMs, 0.10, kMs, 400);
  EXPECT_TRUE(r.converged);
  EXPECT_EQ(r.convergence_ns, 3 * kMs);  // all within over [13, 15) ms: 2 ms >= the 1 ms hold
  EXPECT_DOUBLE_EQ(r.fair_share_bps, 100);
  EXPECT_FALSE(r.fair_share_measured);
  // Over the last fifth, [26, 30] ms, QP2 is at 105: 5 % above the fair share.
  EXPECT_NEAR(r.final_deviation, 0.05, 1e-12);
  // A 3 ms hold does not fit before QP3's dip: from 15.5 ms on.
  r = JudgeConvergence(Timelines(), 10 * kMs, 30 * kMs, 0.10, 3 * kMs, 400);
  EXPECT_TRUE(r.converged);
  EXPECT_EQ(r.convergence_ns, 5 * kMs + kMs / 2);
  // 1 % tolerance: QP2 at 105 never is.
  r = JudgeConvergence(Timelines(), 10 * kMs, 30 * kMs, 0.01, kMs, 400);
  EXPECT_FALSE(r.converged);
  // A hold longer than what is left after the last entry: not converged.
  r = JudgeConvergence(Timelines(), 10 * kMs, 16 * kMs, 0.10, 3 * kMs, 400);
  EXPECT_FALSE(r.converged);
}

TEST(DcqcnConvergence, AMeasuredFairShareIsTheQpsMeanRateOverTheLastFifth) {
  ConvergenceRun r = JudgeConvergence(Timelines(), 10 * kMs, 30 * kMs, 0.10, kMs, 0);
  EXPECT_TRUE(r.fair_share_measured);
  EXPECT_DOUBLE_EQ(r.fair_share_bps, (100 + 100 + 105 + 100) / 4.0);
  EXPECT_TRUE(r.converged);
}

constexpr char kPlan[] = R"(
duration: 1 s
ports: [{name: a}, {name: b, respond: true}]
streams: [{name: s, port: a, rx_port: b, rate: 80 kpps, flows: 8, frame: {roce: {dcqcn: connectx}}}]
tests:
)";

absl::StatusOr<config::Plan> Plan(const std::string& test) { return ParsePlan("c.yaml", kPlan + test); }

TEST(DcqcnConvergence, ItsSectionHasDefaultsAndTakesParameterSets) {
  auto plan = Plan("  - dcqcn_convergence: {}\n"
                   "  - dcqcn_convergence: {name: sens, m: [4, 16, 64], repetitions: 3, trial_duration: 400 ms,\n"
                   "                        t0: 100 ms, tolerance: 5 %, hold: 2 ms, bottleneck: 10 Gbps,\n"
                   "                        parameter_sets: [paper, {preset: connectx, g: 1/64}, none]}\n");
  ASSERT_TRUE(plan.ok()) << plan.status();
  const auto& d = plan->tests[0].As<DcqcnConvergenceParams>();
  EXPECT_EQ(d.m, (std::vector<uint32_t>{4}));
  EXPECT_EQ(d.set_names, (std::vector<std::string>{"stream (connectx)"}));  // the stream's own
  EXPECT_EQ(d.bottleneck_bps, 0);                                            // measured
  const auto& t = plan->tests[1].As<DcqcnConvergenceParams>();
  EXPECT_EQ(t.m, (std::vector<uint32_t>{4, 16, 64}));
  EXPECT_EQ(t.repetitions, 3);
  EXPECT_EQ(t.t0_ns, 100 * kMs);
  EXPECT_DOUBLE_EQ(t.tolerance, 0.05);
  EXPECT_EQ(t.hold_ns, 2 * kMs);
  EXPECT_DOUBLE_EQ(t.bottleneck_bps, 10e9);
  ASSERT_EQ(t.parameter_sets.size(), 3u);
  EXPECT_EQ(t.set_names, (std::vector<std::string>{"paper", "set 1", "none"}));
  EXPECT_FALSE(t.parameter_sets[2].has_value());  // no reaction point: the open-loop contrast
  EXPECT_EQ(t.parameter_sets[1]->preset, "connectx");
  EXPECT_DOUBLE_EQ(t.parameter_sets[1]->g, 1.0 / 64);
  const TestKind* k = FindTestKind("dcqcn_convergence");
  EXPECT_EQ(k->Describe(plan->tests[1]),
            "DCQCN convergence, m 4/16/64 then m more at 100.000 ms, 3 parameter set(s), 3 repetition(s) of "
            "400.000 ms");
  EXPECT_DOUBLE_EQ(k->EstimateSeconds(plan->tests[1], 100 * kMs), 3 * 3 * 3 * 0.5);
}

TEST(DcqcnConvergence, ItsErrorsNameWhatIsMissing) {
  auto no_respond = ParsePlan("c.yaml", R"(
ports: [{name: a}, {name: b}]
streams: [{name: s, port: a, rx_port: b, rate: 8 kpps, flows: 8, frame: {roce: {dcqcn: paper}}}]
tests: [{dcqcn_convergence: {}}]
)");
  ASSERT_FALSE(no_respond.ok());
  EXPECT_THAT(std::string(no_respond.status().message()), HasSubstr("its rx_port b must respond"));
  auto no_dcqcn = ParsePlan("c.yaml", "streams: [{name: s, rate: 8 kpps}]\ntests: [{dcqcn_convergence: {}}]\n");
  ASSERT_FALSE(no_dcqcn.ok());
  EXPECT_THAT(std::string(no_dcqcn.status().message()), HasSubstr("RoCEv2 with frame.roce.dcqcn"));
  auto late = Plan("  - dcqcn_convergence: {trial_duration: 100 ms, t0: 100 ms}\n");
  ASSERT_FALSE(late.ok());
  EXPECT_THAT(std::string(late.status().message()), HasSubstr("t0 (100.000 ms) must come before the trial's end"));
  auto set = Plan("  - dcqcn_convergence: {parameter_sets: [{preset: paper, k: 1}]}\n");
  ASSERT_FALSE(set.ok());
  EXPECT_THAT(std::string(set.status().message()), HasSubstr("unknown field 'k'"));
}

}  // namespace
}  // namespace fg::methods
