#include "methods/load_balance.h"

#include <gtest/gtest.h>

#include <chrono>

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

// Issue 26: `dut_counters: [sleep, "100"]` hung the test for ever. Past its
// timeout the command's process group is killed (here a shell and the sleep
// it started, which holds the pipe) and the read fails naming the command.
TEST(DutCounters, ACommandThatDoesNotAnswerIsKilledAtItsTimeout) {
  const auto t0 = std::chrono::steady_clock::now();
  auto c = session::ReadDutCounters({"sh", "-c", "sleep 100 & sleep 100"}, 300'000'000);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(c.status().message(),
            "dut_counters (sh -c sleep 100 & sleep 100): no answer within 300.000 ms (the dut_counters timeout); its "
            "process group was killed: the DUT's counters are missing");
  EXPECT_LT(took, 5.0);
  // One that closes its stdout and goes on is bounded the same way.
  c = session::ReadDutCounters({"sh", "-c", "exec >&-; sleep 100"}, 300'000'000);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(session::kDutCountersTimeoutNs, 10'000'000'000);  // as docs/plan-reference.md says
}

}  // namespace
}  // namespace fg::methods
