#include "methods/load_balance.h"

#include <gtest/gtest.h>

#include "session/dut_counters.h"

namespace fg::methods {
namespace {

// The draft's definitions (category 4): MMR = max / mean, JFI = (sum)^2 / (N sum^2).
TEST(LoadBalance, MaxMeanRatioAndJainIndexOfKnownSpreads) {
  EXPECT_DOUBLE_EQ(MaxMeanRatio({5, 5, 5, 5}), 1.0);
  EXPECT_DOUBLE_EQ(JainFairnessIndex({5, 5, 5, 5}), 1.0);
  EXPECT_DOUBLE_EQ(MaxMeanRatio({8, 0, 0, 0}), 4.0);        // all on one of 4: N
  EXPECT_DOUBLE_EQ(JainFairnessIndex({8, 0, 0, 0}), 0.25);  // 1/N
  // 3 and 1 over 2 links: mean 2, max 3; 16 / (2 * 10) = 0.8.
  EXPECT_DOUBLE_EQ(MaxMeanRatio({3, 1}), 1.5);
  EXPECT_DOUBLE_EQ(JainFairnessIndex({3, 1}), 0.8);
  EXPECT_DOUBLE_EQ(MaxMeanRatio({0, 0}), 0.0);
  EXPECT_DOUBLE_EQ(JainFairnessIndex({0, 0}), 0.0);
}

TEST(DutCounters, ParsesTheJsonOfLinks) {
  auto c = session::ParseDutCounters(
      R"({"leaf0-spine0": {"tx_packets": 12, "tx_bytes": 3456, "rx_packets": 1},
          "leaf0-spine1": {"tx_packets": 18446744073709551615, "tx_bytes": 0}})");
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->size(), 2u);
  EXPECT_EQ(c->at("leaf0-spine0").tx_packets, 12u);
  EXPECT_EQ(c->at("leaf0-spine0").tx_bytes, 3456u);
  EXPECT_EQ(c->at("leaf0-spine1").tx_packets, 18446744073709551615u);
}

TEST(DutCounters, NamesWhatIsWrong) {
  auto c = session::ParseDutCounters(R"({"l0": {"tx_packets": 1}})");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(), "link 'l0': tx_bytes is missing or not a count");
  EXPECT_FALSE(session::ParseDutCounters("[1, 2]").ok());
  EXPECT_FALSE(session::ParseDutCounters(R"({"l0": {"tx_packets": -3, "tx_bytes": 1}})").ok());
}

TEST(DutCounters, RunsTheCommandWithoutAShell) {
  auto c = session::ReadDutCounters({"printf", R"({"a b": {"tx_packets": 7, "tx_bytes": 700}})"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->at("a b").tx_bytes, 700u);
  auto failed = session::ReadDutCounters({"false"});
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().message(), "dut_counters (false): exited with status 1 (its stderr is above)");
  EXPECT_FALSE(session::ReadDutCounters({"/nonexistent/counters"}).ok());
}

}  // namespace
}  // namespace fg::methods
