// stream/rate_change: a port's streams within its line rate, a READ's rate
// its data's, one flow's rate set with the others keeping theirs.
#include "stream/rate_change.h"

#include <gtest/gtest.h>

#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace fg::stream {
namespace {

CompiledStream Paced(const char* name, size_t port, double pps, double frame_size) {
  CompiledStream s;
  s.name = name;
  s.tx_port = port;
  s.pps = pps;
  s.frame_size = frame_size;
  return s;
}

TEST(RateChange, APortsStreamsStayWithinItsLineRateCountingTheOthersAtTheirCurrentRates) {
  // 10 Gbit/s; 1,000 B frames take 8,160 bits L1 each: 1,225,490 pps fill it.
  std::vector<CompiledStream> s = {Paced("a", 0, 600'000, 1000), Paced("b", 0, 600'000, 1000),
                                   Paced("other_port", 1, 1e6, 1000)};
  auto set = [&](size_t j) -> std::optional<double> { return s[j].pps; };
  EXPECT_TRUE(CheckRateChange(s, 0, 625'490, 10e9, "p0", set).ok());
  const absl::Status over = CheckRateChange(s, 0, 625'500, 10e9, "p0", set);
  ASSERT_FALSE(over.ok());
  EXPECT_NE(over.message().find("would need 10.00"), std::string::npos) << over.message();
  EXPECT_NE(over.message().find("on port p0"), std::string::npos) << over.message();
  // A stopped stream sends no more: the whole line is a's.
  auto b_stopped = [&](size_t j) -> std::optional<double> {
    if (j == 1) return std::nullopt;
    return s[j].pps;
  };
  EXPECT_TRUE(CheckRateChange(s, 0, 1'225'490, 10e9, "p0", b_stopped).ok());
  EXPECT_FALSE(CheckRateChange(s, 0, 1'225'500, 10e9, "p0", b_stopped).ok());
  // Below the TX minimum: refused; max and an unknown line rate: taken.
  EXPECT_FALSE(CheckRateChange(s, 0, kMinPps / 2, 10e9, "p0", set).ok());
  EXPECT_TRUE(CheckRateChange(s, 0, std::numeric_limits<double>::infinity(), 10e9, "p0", set).ok());
  EXPECT_TRUE(CheckRateChange(s, 0, 1e9, 0, "p0", set).ok());
}

TEST(RateChange, AReadsRateIsItsDatas) {
  std::vector<CompiledStream> s = {Paced("r", 0, 100, 90), Paced("r.responses", 1, 400, 1100)};
  s[0].read_responses = 1;
  s[0].read_packets = 4;
  EXPECT_DOUBLE_EQ(SetReadRate(s, 0, 10'000), 2'500);
  EXPECT_DOUBLE_EQ(s[0].pps, 2'500);
  EXPECT_DOUBLE_EQ(s[1].pps, 10'000);
}

TEST(RateChange, SettingOneFlowsRateLeavesTheOthersAndMovesTheStreamsSum) {
  CompiledStream s = Paced("w", 0, 400, 128);
  s.flows = 4;
  s.flow_weight = {1, 1, 1, 1};
  EXPECT_DOUBLE_EQ(FlowRate(s, 0), 100);
  SetFlowRate(s, 0, 250);
  EXPECT_DOUBLE_EQ(FlowRate(s, 0), 250);
  for (size_t f = 1; f < 4; ++f) EXPECT_DOUBLE_EQ(FlowRate(s, f), 100) << f;
  EXPECT_DOUBLE_EQ(s.pps, 550);
  SetFlowRate(s, 3, 10);
  EXPECT_DOUBLE_EQ(FlowRate(s, 0), 250);
  EXPECT_DOUBLE_EQ(FlowRate(s, 3), 10);
  EXPECT_DOUBLE_EQ(s.pps, 460);
}

}  // namespace
}  // namespace fg::stream
