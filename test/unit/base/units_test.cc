#include "base/units.h"

#include <gtest/gtest.h>

#include <cmath>

namespace fg {
namespace {

TEST(ParseRate, PacketRates) {
  auto r = ParseRate("1.5 Mpps");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->kind, Rate::Kind::kPps);
  EXPECT_DOUBLE_EQ(r->value, 1.5e6);
  EXPECT_DOUBLE_EQ(ParseRate("10kpps")->value, 1e4);
}

TEST(ParseRate, BitRatesL1AndL2) {
  auto l2 = ParseRate("25 Gbps");
  ASSERT_TRUE(l2.ok());
  EXPECT_EQ(l2->kind, Rate::Kind::kBpsL2);
  auto l1 = ParseRate("25 Gbps L1");
  ASSERT_TRUE(l1.ok());
  EXPECT_EQ(l1->kind, Rate::Kind::kBpsL1);
  // 64 B frames at 10 Gbit/s L1: 10e9 / (84 * 8) = 14,880,952.38 pps.
  EXPECT_NEAR(ParseRate("10 Gbps L1")->ToPps(64, 0), 14880952.38, 0.01);
  EXPECT_NEAR(ParseRate("10 Gbps")->ToPps(64, 0), 19531250.0, 0.01);
  EXPECT_NEAR(ParseRate("100%")->ToPps(64, 10e9), 14880952.38, 0.01);
}

TEST(ParseRate, MaxIsUnpaced) {
  auto r = ParseRate("max");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->kind, Rate::Kind::kMax);
  EXPECT_TRUE(std::isinf(r->ToPps(64, 10e9)));
  EXPECT_EQ(FormatRate(*r), "max (unpaced)");
}

TEST(ParseRate, RejectsNegativeZeroAndUnknown) {
  EXPECT_EQ(ParseRate("-5 kpps").status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(ParseRate("0 pps").status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(ParseRate("101%").status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(ParseRate("5 furlongs").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseRate("5 Mpps L1").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseRate("fast").status().code(), absl::StatusCode::kInvalidArgument);
}

// Issue 26: rates past any port's speed are refused as written (no 300-digit
// figure), and a huge figure made of bounded ones prints in a few characters.
TEST(ParseRate, HugeRatesAreRefusedAndHugeFiguresPrintShort) {
  auto pps = ParseRate("1e300 pps");
  ASSERT_FALSE(pps.ok());
  EXPECT_EQ(std::string(pps.status().message()), "rate '1e300 pps' is above the maximum of 10.000 Gpps (no port sends faster)");
  auto bps = ParseRate("100 Tbps");
  ASSERT_FALSE(bps.ok());
  EXPECT_EQ(std::string(bps.status().message()), "rate '100 Tbps' is above the maximum of 10.000 Tbit/s (no port sends faster)");
  EXPECT_FALSE(ParseRate("20 Tbps L1").ok());
  EXPECT_TRUE(ParseRate("10 Gpps").ok());
  EXPECT_TRUE(ParseRate("1.6 Tbps").ok());
  EXPECT_EQ(FormatPacketRate(1.6e17), "1.6e+17 pps");
  EXPECT_EQ(FormatBitRate(1e300), "1e+300 bit/s");
  EXPECT_EQ(FormatBitRate(1.6e12), "1.600 Tbit/s");
}

TEST(ParseDuration, Units) {
  EXPECT_EQ(*ParseDuration("250ms"), 250'000'000);
  EXPECT_EQ(*ParseDuration("1.5 s"), 1'500'000'000);
  EXPECT_EQ(*ParseDuration("2 min"), 120'000'000'000);
  EXPECT_EQ(*ParseDuration("10 us"), 10'000);
  EXPECT_FALSE(ParseDuration("10").ok());  // a unit is required
  EXPECT_FALSE(ParseDuration("-1 s").ok());
}

TEST(ParseBytes, DecimalAndBinary) {
  EXPECT_EQ(*ParseBytes("64"), 64u);
  EXPECT_EQ(*ParseBytes("1 KB"), 1000u);
  EXPECT_EQ(*ParseBytes("4 KiB"), 4096u);
  EXPECT_EQ(*ParseBytes("1 MiB"), 1048576u);
  EXPECT_FALSE(ParseBytes("1.5 B").ok());
  EXPECT_FALSE(ParseBytes("-1 B").ok());
  EXPECT_FALSE(ParseBytes("1 parsec").ok());
}

TEST(Format, CarriesUnits) {
  EXPECT_EQ(FormatBitRate(9.95e9), "9.950 Gbit/s");
  EXPECT_EQ(FormatPacketRate(1234), "1.234 kpps");
  EXPECT_EQ(FormatDuration(1'500'000'000), "1.500 s");
  EXPECT_EQ(FormatDuration(250), "250 ns");
  EXPECT_EQ(FormatCount(1234567), "1,234,567");
  EXPECT_EQ(FormatCount(999), "999");
  EXPECT_EQ(FormatCount(0), "0");
}

}  // namespace
}  // namespace fg
