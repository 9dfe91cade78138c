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

// Four QPs, fair share 100: two there all along; QP2 at 200 from 10 ms, at
// 105 from 13 ms; QP3 at 200 from 10 ms, 95 from 12 ms, 70 over [15, 15.5) ms,
// then 100. Judged in 1 ms windows from t0 = 10 ms: QP3's window [15, 16)
// averages (70 + 100) / 2 = 85, out of 10 %.
std::vector<Tl> Timelines() {
  return {Tl{{0, 100}}, Tl{{0, 100}}, Tl{{10 * kMs, 200}, {13 * kMs, 105}},
          Tl{{10 * kMs, 200}, {12 * kMs, 95}, {15 * kMs, 70}, {15 * kMs + kMs / 2, 100}}};
}

TEST(DcqcnConvergence, ConvergedAtTheFirstWindowFromWhichEveryQpStaysWithinToleranceForTheHold) {
  ConvergenceRun r = JudgeConvergence(Timelines(), 10 * kMs, 30 * kMs, kMs, 0.10, kMs, 100);
  EXPECT_TRUE(r.converged);
  EXPECT_EQ(r.convergence_ns, 3 * kMs);  // window [13, 14) ms: QP2 at 105, QP3 at 95
  EXPECT_DOUBLE_EQ(r.fair_share_bps, 100);
  // Over the last fifth, [26, 30] ms, QP2 is at 105: 5 % above the fair share.
  EXPECT_NEAR(r.final_deviation, 0.05, 1e-12);
  // Two windows: [13, 15) ms.
  r = JudgeConvergence(Timelines(), 10 * kMs, 30 * kMs, kMs, 0.10, 2 * kMs, 100);
  EXPECT_EQ(r.convergence_ns, 3 * kMs);
  // Three windows do not fit before QP3's dip (window [15, 16) at 85): from 16 ms on.
  r = JudgeConvergence(Timelines(), 10 * kMs, 30 * kMs, kMs, 0.10, 3 * kMs, 100);
  EXPECT_TRUE(r.converged);
  EXPECT_EQ(r.convergence_ns, 6 * kMs);
  // A hold that is not a whole number of windows takes the next: 2.5 ms is 3 windows.
  r = JudgeConvergence(Timelines(), 10 * kMs, 30 * kMs, kMs, 0.10, 2 * kMs + kMs / 2, 100);
  EXPECT_EQ(r.convergence_ns, 6 * kMs);
  // Half-millisecond windows see the dip's own window [15, 15.5) at 70, the next at 100: from 15.5 ms.
  r = JudgeConvergence(Timelines(), 10 * kMs, 30 * kMs, kMs / 2, 0.10, 3 * kMs, 100);
  EXPECT_EQ(r.convergence_ns, 5 * kMs + kMs / 2);
  // 1 % tolerance: QP2 at 105 never is.
  r = JudgeConvergence(Timelines(), 10 * kMs, 30 * kMs, kMs, 0.01, kMs, 100);
  EXPECT_FALSE(r.converged);
  // A hold longer than what is left after the last entry: not converged.
  r = JudgeConvergence(Timelines(), 10 * kMs, 18 * kMs, kMs, 0.10, 3 * kMs, 100);
  EXPECT_FALSE(r.converged);
  // Senders above what the bottleneck delivers (a fair share of 50): never within.
  r = JudgeConvergence(Timelines(), 10 * kMs, 30 * kMs, kMs, 0.10, kMs, 50);
  EXPECT_FALSE(r.converged);
  EXPECT_NEAR(r.final_deviation, 105.0 / 50 - 1, 1e-12);
}

TEST(DcqcnConvergence, JainsIndexPerWindowCountsTheQpsThatHaveStarted) {
  const ConvergenceRun r = JudgeConvergence(Timelines(), 10 * kMs, 30 * kMs, kMs, 0.10, kMs, 100);
  // Windows from 0 (t0 - 10 windows) to [29, 30) ms.
  ASSERT_EQ(r.window_start_ns.size(), 30u);
  EXPECT_EQ(r.window_start_ns.front(), 0);
  EXPECT_DOUBLE_EQ(r.jfi[0], 1.0);  // QP0 and QP1 alone, both at 100
  // [10, 11) ms: 100, 100, 200, 200: 600^2 / (4 x 100,000).
  EXPECT_DOUBLE_EQ(r.jfi[10], 0.9);
  // [15, 16) ms: 100, 100, 105, 85: 390^2 / (4 x 38,250).
  EXPECT_NEAR(r.jfi[15], 390.0 * 390 / (4 * 38250.0), 1e-12);
}

TEST(DcqcnConvergence, TheDefaultWindowIsTwentyRateIncreaseTimersOfTheSlowestSet) {
  config::DcqcnSpec paper = config::DcqcnSpec::Paper();
  EXPECT_EQ(DefaultWindowNs({paper}), 1'100'000);  // 20 x 55 us
  paper.scale_to_bps = 100e6;                        // 40 GbE / 400: T = 22 ms
  EXPECT_EQ(DefaultWindowNs({config::DcqcnSpec::ConnectX(), paper, std::nullopt}), 440 * kMs);
  EXPECT_EQ(DefaultWindowNs({config::DcqcnSpec::ConnectX()}), 6 * kMs);  // 20 x 300 us
  EXPECT_EQ(DefaultWindowNs({std::nullopt}), 100 * kMs);                // no reaction point
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
  EXPECT_EQ(d.bottleneck_bps, 0);                                            // not given
  EXPECT_EQ(d.window_ns, 6 * kMs);  // connectx's default: 20 x its 300 us timer
  const auto& t = plan->tests[1].As<DcqcnConvergenceParams>();
  EXPECT_EQ(t.m, (std::vector<uint32_t>{4, 16, 64}));
  EXPECT_EQ(t.repetitions, 3);
  EXPECT_EQ(t.t0_ns, 100 * kMs);
  EXPECT_DOUBLE_EQ(t.tolerance, 0.05);
  EXPECT_EQ(t.hold_ns, 2 * kMs);
  EXPECT_DOUBLE_EQ(t.bottleneck_bps, 10e9);
  EXPECT_FALSE(t.bottleneck_l1);
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
  // A hold that cannot fit after t0, a trial that is all start-up, more QPs than a figure can hold.
  auto hold = Plan("  - dcqcn_convergence: {trial_duration: 300 ms, t0: 100 ms, hold: 1 h}\n");
  ASSERT_FALSE(hold.ok());
  EXPECT_THAT(std::string(hold.status().message()),
              HasSubstr("c.yaml:6:67: tests[0].dcqcn_convergence.hold: hold 3600.000 s in windows of 6.000 ms"));
  EXPECT_THAT(std::string(hold.status().message()), HasSubstr("does not fit in the 200.000 ms after t0"));
  auto window = Plan("  - dcqcn_convergence: {trial_duration: 300 ms, t0: 100 ms, window: 250 ms}\n");
  ASSERT_FALSE(window.ok());
  EXPECT_THAT(std::string(window.status().message()), HasSubstr("dcqcn_convergence.window: hold 1.000 ms in windows of 250.000 ms"));
  auto tiny = Plan("  - dcqcn_convergence: {trial_duration: 2 ns, t0: 1 ns}\n");
  ASSERT_FALSE(tiny.ok());
  EXPECT_THAT(std::string(tiny.status().message()), HasSubstr("trial_duration (2 ns) must be at least 10.000 ms"));
  auto many = Plan("  - dcqcn_convergence: {m: [1048576]}\n");
  ASSERT_FALSE(many.ok());
  EXPECT_THAT(std::string(many.status().message()), HasSubstr("4096"));
  auto l1 = Plan("  - dcqcn_convergence: {bottleneck: 100 Mbps L1}\n");
  ASSERT_TRUE(l1.ok()) << l1.status();
  EXPECT_TRUE(l1->tests[0].As<DcqcnConvergenceParams>().bottleneck_l1);
  auto set = Plan("  - dcqcn_convergence: {parameter_sets: [{preset: paper, k: 1}]}\n");
  ASSERT_FALSE(set.ok());
  EXPECT_THAT(std::string(set.status().message()), HasSubstr("unknown field 'k'"));
}

}  // namespace
}  // namespace fg::methods
