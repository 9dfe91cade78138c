// The DCQCN reaction point (endpoint/dcqcn.h) against sequences worked by
// hand from roce.md's rules.
#include "endpoint/dcqcn.h"

#include <gtest/gtest.h>

#include <cmath>

namespace fg::endpoint {
namespace {

constexpr double kG = 10e9;

TEST(Dcqcn, ACnpCutsByHalfAlphaThenTheTimerRecoversHalfwayEachPeriod) {
  const config::DcqcnSpec p = config::DcqcnSpec::Paper();  // g 1/256, K = T = 55 us, B 10 MB, F 5
  DcqcnQp qp(p, kG, 0);
  EXPECT_FALSE(qp.Advance(1'000'000, 0));  // nothing to recover before a cut
  EXPECT_TRUE(qp.OnCnp(1'000'000, 0));
  EXPECT_DOUBLE_EQ(qp.rate_bps(), 5e9);  // alpha 1: Rc x (1 - 1/2)
  EXPECT_DOUBLE_EQ(qp.target_bps(), kG);
  EXPECT_DOUBLE_EQ(qp.alpha(1'000'000), 1.0);  // (1 - g) x 1 + g
  EXPECT_FALSE(qp.Advance(1'054'999, 0));
  // Four timer events of fast recovery: halfway to Rt each.
  const double fast[] = {7.5e9, 8.75e9, 9.375e9, 9.6875e9};
  for (int i = 0; i < 4; ++i) {
    EXPECT_TRUE(qp.Advance(1'000'000 + 55'000 * (i + 1), 0)) << i;
    EXPECT_DOUBLE_EQ(qp.rate_bps(), fast[i]) << i;
  }
  // The fifth reaches F: additive increase (Rt is already at the maximum).
  EXPECT_TRUE(qp.Advance(1'000'000 + 55'000 * 5, 0));
  EXPECT_DOUBLE_EQ(qp.target_bps(), kG);
  EXPECT_DOUBLE_EQ(qp.rate_bps(), (kG + 9.6875e9) / 2);
}

TEST(Dcqcn, AlphaDecaysOncePerPeriodWithoutACnpAndSetsTheNextCut) {
  const config::DcqcnSpec p = config::DcqcnSpec::Paper();
  DcqcnQp qp(p, kG, 0);
  qp.OnCnp(0, 0);
  EXPECT_DOUBLE_EQ(qp.alpha(54'999), 1.0);
  EXPECT_DOUBLE_EQ(qp.alpha(55'000), 255.0 / 256);
  EXPECT_DOUBLE_EQ(qp.alpha(110'000), std::pow(255.0 / 256, 2));
  // A second CNP at 1 ms: 18 periods without a CNP (1000 / 55 = 18.2).
  const double a = std::pow(255.0 / 256, 18);
  EXPECT_NEAR(qp.alpha(1'000'000), a, 1e-15);
  const double cut = qp.rate_bps();
  EXPECT_TRUE(qp.Advance(1'000'000, 0));  // 18 timer events meanwhile
  const double before = qp.rate_bps();
  EXPECT_GT(before, cut);
  EXPECT_TRUE(qp.OnCnp(1'000'000, 0));
  EXPECT_DOUBLE_EQ(qp.target_bps(), before);
  EXPECT_NEAR(qp.rate_bps(), before * (1 - a / 2), 1e-3);
  EXPECT_NEAR(qp.alpha(1'000'000), (1 - 1.0 / 256) * a + 1.0 / 256, 1e-15);
}

TEST(Dcqcn, ByteCounterEventsRecoverToo) {
  config::DcqcnSpec p = config::DcqcnSpec::Paper();
  p.timer_ns = 1'000'000'000;  // out of the way
  DcqcnQp qp(p, kG, 0);
  qp.OnCnp(0, 1'000);  // 5 Gbit/s; the byte counter counts from 1,000
  EXPECT_FALSE(qp.Advance(10, 1'000 + 9'999'999));
  EXPECT_TRUE(qp.Advance(20, 1'000 + 25'000'000));  // two events of 10 MB
  EXPECT_DOUBLE_EQ(qp.rate_bps(), 8.75e9);
}

TEST(Dcqcn, HyperIncreaseWhenBothCountersPassTheThreshold) {
  config::DcqcnSpec p = config::DcqcnSpec::Paper();
  p.threshold = 1;
  p.rate_ai_bps = 10e6;
  p.rate_hai_bps = 100e6;
  p.byte_counter = 1000;
  p.timer_ns = 100;
  DcqcnQp qp(p, 1e9, 0);
  qp.OnCnp(0, 0);  // Rc 500 Mbit/s, Rt 1 Gbit/s
  // Drive Rt down first: a second cut from a lower Rc.
  qp.OnCnp(0, 0);  // Rt = 500 M, Rc = 250 M (alpha 1 still)
  ASSERT_DOUBLE_EQ(qp.target_bps(), 500e6);
  ASSERT_DOUBLE_EQ(qp.rate_bps(), 250e6);
  // t=100, bytes 1000: timer event (T=1, B=0: max 1 >= F, min 0: additive),
  // then byte event (T=1, B=1: min 1, not > F: additive).
  EXPECT_TRUE(qp.Advance(100, 1000));
  EXPECT_DOUBLE_EQ(qp.target_bps(), 520e6);
  EXPECT_DOUBLE_EQ(qp.rate_bps(), ((250e6 + 510e6) / 2 + 520e6) / 2);
  // t=200, bytes 2000: T=2, B=1 additive; then T=2, B=2: both > F: hyper.
  const double rc = qp.rate_bps();
  EXPECT_TRUE(qp.Advance(200, 2000));
  EXPECT_DOUBLE_EQ(qp.target_bps(), 520e6 + 10e6 + 100e6);
  EXPECT_DOUBLE_EQ(qp.rate_bps(), ((rc + 530e6) / 2 + 630e6) / 2);
}

TEST(Dcqcn, ConnectXCutsAtMostOncePerMonitorPeriodAndKeepsHalf) {
  const config::DcqcnSpec p = config::DcqcnSpec::ConnectX();  // 4 us, min_dec_factor 50 %
  DcqcnQp qp(p, 100e9, 0);
  EXPECT_TRUE(qp.OnCnp(1'000, 0));
  EXPECT_NEAR(qp.rate_bps(), 100e9 * (1 - (1023.0 / 1024) / 2), 1);
  EXPECT_FALSE(qp.OnCnp(3'000, 0));  // within 4 us of the cut: alpha only
  EXPECT_EQ(qp.cnps_ignored(), 1u);
  EXPECT_TRUE(qp.OnCnp(5'000, 0));
  EXPECT_EQ(qp.cuts(), 2u);
}

TEST(Dcqcn, ACutNeverGoesBelowTheMinimumRateNorBeyondTheMaximum) {
  const config::DcqcnSpec p = config::DcqcnSpec::Paper();
  DcqcnQp qp(p, 100e6, 0);
  for (int i = 0; i < 100; ++i) qp.OnCnp(static_cast<uint64_t>(i) * 10, 0);
  EXPECT_DOUBLE_EQ(qp.rate_bps(), 1e6);  // min_rate
  // A long quiet spell: back at the maximum, never above it.
  EXPECT_TRUE(qp.Advance(10'000'000'000ull, 0));
  EXPECT_DOUBLE_EQ(qp.rate_bps(), 100e6);
  EXPECT_DOUBLE_EQ(qp.target_bps(), 100e6);
}

}  // namespace
}  // namespace fg::endpoint
