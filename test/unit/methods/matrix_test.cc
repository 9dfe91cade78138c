#include "methods/matrix.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "methods/kinds.h"
#include "methods/throughput.h"

namespace fg::methods {
namespace {

TEST(Matrix, EveryMessageSizeQpCountAndDirectionIsACell) {
  auto plan = methods::ParsePlan("m.yaml", R"(
ports: [{name: a}, {name: b}]
streams:
  - {name: w, port: a, rx_port: b, rate: 1 Mpps, frame: {roce: {op: WRITE, message: 4096}}}
  - {name: u, port: a, rx_port: b, rate: 1 Mpps, frame: {size: 64}}
tests:
  - throughput: {streams: [w], message_sizes: [256, 1 MiB], qps: [1, 32], directions: [uni, bi]}
  - throughput: {name: udp, streams: [u], message_sizes: [128]}
)");
  ASSERT_TRUE(plan.ok()) << plan.status();
  const std::vector<MatrixCell> cells = ExpandMatrix(*plan, plan->tests[0]);
  ASSERT_EQ(cells.size(), 8u);
  EXPECT_EQ(cells[0].label, "msg=256 B, qps=1, uni");
  EXPECT_EQ(cells[7].label, "msg=1048576 B, qps=32, bi");
  for (const MatrixCell& c : cells) {
    const config::StreamSpec& w = c.plan.streams[0];
    EXPECT_EQ(w.frame.roce.message, c.message_size);
    EXPECT_EQ(w.flows, c.qps);
    EXPECT_EQ(w.rate.kind, Rate::Kind::kMax);      // the test's load sets it; the planned 1 Mpps is not checked
    EXPECT_EQ(c.plan.streams[1].frame.size, 64u);  // not in the test: untouched
    if (c.bidirectional) {
      ASSERT_EQ(c.test.streams.size(), 2u);
      const config::StreamSpec& back = c.plan.streams[c.test.streams[1]];
      EXPECT_EQ(back.name, "w-reverse");
      EXPECT_EQ(back.port, w.rx_port);
      EXPECT_EQ(back.rx_port, w.port);
      EXPECT_EQ(back.frame.roce.message, c.message_size);
    } else {
      EXPECT_EQ(c.test.streams, std::vector<size_t>{0});
    }
  }
  // UDP: the message size is the frame size. No matrix: one cell, no label.
  const auto udp = ExpandMatrix(*plan, plan->tests[1]);
  ASSERT_EQ(udp.size(), 1u);
  EXPECT_EQ(udp[0].plan.streams[1].frame.size, 128u);
  config::TestSpec plain = plan->tests[1];
  auto params = std::make_shared<ThroughputParams>(plain.As<ThroughputParams>());
  params->message_sizes.clear();
  plain.params = params;
  const auto one = ExpandMatrix(*plan, plain);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].label, "");
}

}  // namespace
TEST(Matrix, EveryCellIsCheckedBeforeAnythingRunsNamingItsEntry) {
  auto check = [](const std::string& test) {
    auto plan = methods::ParsePlan("m.yaml",
                                  "ports: [{name: a, mtu: 9000}, {name: b}]\n"
                                  "streams: [{name: u, port: a, rx_port: b, rate: 1 Mpps, frame: {size: 64}}]\n"
                                  "tests:\n  - throughput: " +
                                      test + "\n");
    EXPECT_TRUE(plan.ok()) << plan.status();
    return plan.ok() ? PrecheckPlan(*plan) : plan.status();
  };
  EXPECT_TRUE(check("{message_sizes: [64, 1500], qps: [1, 32], directions: [uni, bi]}").ok());
  EXPECT_EQ(check("{message_sizes: [64, 40]}").message(),
            "m.yaml:4:38: tests[0].throughput.message_sizes[1]: in cell 'msg=40 B', stream 'u' frame.size: 40 B is "
            "too small: headers and the 16 B test signature need at least 62 B (FCS included)");
  // 9000 B fits port a's MTU, not port b's, from which `bi` sends it back.
  EXPECT_TRUE(check("{message_sizes: [9000]}").ok());
  EXPECT_THAT(std::string(check("{message_sizes: [9000], directions: [uni, bi]}").message()),
              ::testing::HasSubstr("m.yaml:4:34: tests[0].throughput.message_sizes[0]: in cell 'msg=9000 B, bi', "
                                   "stream 'u-reverse' frame.size: the largest frame carries 8982 B of IP packet, "
                                   "more than port 'b' MTU of 1500 B"));
  EXPECT_THAT(std::string(check("{qps: [4, 65000]}").message()),
              ::testing::HasSubstr("m.yaml:4:27: tests[0].throughput.qps[1]: in cell 'qps=65000', stream 'u' flows: "
                                   "65000 flows from UDP destination port 5001 run past 65535"));
}

// A cell's QP count takes per-flow rates with it (flow i at rates[i % len]):
// one weight per flow of the cell, never fewer than the flows TX paces.
TEST(Matrix, PerFlowRatesFollowTheCellsQpCount) {
  auto plan = methods::ParsePlan("m.yaml", "ports: [{name: a}, {name: b}]\n"
                                           "streams: [{name: w, port: a, rx_port: b, flows: {count: 2, rates: [1 kpps, "
                                           "3 kpps]}}]\n"
                                           "tests:\n  - throughput: {qps: [5]}\n");
  ASSERT_TRUE(plan.ok()) << plan.status();
  const std::vector<MatrixCell> cells = ExpandMatrix(*plan, plan->tests[0]);
  ASSERT_EQ(cells.size(), 1u);
  EXPECT_EQ(cells[0].plan.streams[0].flows, 5u);
  EXPECT_EQ(cells[0].plan.streams[0].flow_weights, (std::vector<double>{1000, 3000, 1000, 3000, 1000}));
}

// Issue 26: a RoCE message size whose packets cannot all carry the 16 B
// signature (the last of 1030 B at the path MTU of 1024 B has 6 B) is refused
// at its matrix entry, quoting it as written.
TEST(Matrix, AMessageSizeWhosePacketsCannotAllCarryTheSignatureIsRefused) {
  auto check = [](const std::string& test) {
    auto plan = methods::ParsePlan(
        "m.yaml", "ports: [{name: a}, {name: b}]\n"
                  "streams: [{name: w, port: a, rx_port: b, rate: 1 Mpps, frame: {roce: {op: WRITE, message: 4096}}}]\n"
                  "tests:\n  - throughput: " + test + "\n");
    EXPECT_TRUE(plan.ok()) << plan.status();
    return plan.ok() ? PrecheckPlan(*plan) : plan.status();
  };
  EXPECT_TRUE(check("{message_sizes: [16, 1024, 1040, 4096]}").ok());
  EXPECT_EQ(check("{message_sizes: [1]}").message(),
            "m.yaml:4:34: tests[0].throughput.message_sizes[0]: in cell 'msg=1 B', stream 'w' frame.roce.message: 1 B "
            "is one packet with 1 B of payload: each packet of a message must carry at least the 16 B test signature; "
            "the smallest message that works is 16 B");
  EXPECT_EQ(check("{message_sizes: [4096, 1.03 KB]}").message(),
            "m.yaml:4:40: tests[0].throughput.message_sizes[1] '1.03 KB': in cell 'msg=1030 B', stream 'w' "
            "frame.roce.message: 1030 B at pmtu 1024 is 2 packets, the last (packet 2) with 6 B of payload: each "
            "packet of a message must carry at least the 16 B test signature; the smallest message from 1030 B up "
            "that works is 1040 B (or 1024 B: 1 whole packet)");
}

}  // namespace fg::methods
