// The memory a plan's flows need, counted from the engine's own per-flow
// structures, and the refusal that names the key driving it (issue 26: 16,777,216
// QPs grew to 11 GB after "~111 MiB needed" was printed).
#include "methods/memory.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "engine/engine.h"
#include "engine/memory.h"
#include "methods/kinds.h"

namespace fg::methods {
namespace {

using ::testing::HasSubstr;

TEST(Memory, AFlowCostsARecordInEveryRoomThatKeepsOne) {
  engine::StreamFootprint s;
  const uint64_t plain = engine::BytesPerFlow(s, /*report=*/false, /*rx_ports=*/1);
  EXPECT_GE(plain, sizeof(stats::FlowState) + sizeof(rx::OwnedFlow) + sizeof(stream::Cursor) +
                       sizeof(stream::FlowVars) + 3 * sizeof(uint32_t));
  // The report built at the end holds every flow's before the worst are kept.
  EXPECT_GE(engine::BytesPerFlow(s, true, 1), plain + sizeof(engine::FlowReport) + sizeof(rx::FlowResult));
  // Each room a flow enters adds its record.
  for (auto more : {&engine::StreamFootprint::keyed, &engine::StreamFootprint::answered,
                    &engine::StreamFootprint::go_back_n, &engine::StreamFootprint::per_flow_pacing,
                    &engine::StreamFootprint::dcqcn, &engine::StreamFootprint::read_requests}) {
    engine::StreamFootprint x;
    x.*more = true;
    EXPECT_GT(engine::BytesPerFlow(x, false, 1), plain);
  }
  // A DCQCN flow's rate timeline: its reserved points, and their copy in the report.
  engine::TrialFootprint t;
  t.streams.push_back(engine::StreamFootprint{.flows = 4, .dcqcn = true, .duration_ns = 100'000'000});
  t.per_flow_report = 0;
  const uint64_t without_report = engine::TrialStateBytes(t);
  EXPECT_GE(without_report, 4 * (3 * 1000 + 4) * sizeof(tx::RatePoint));
}

TEST(Memory, SixteenMillionQpsNeedGigabytesAndTheRefusalNamesTheKey) {
  auto plan = ParsePlan("f.yaml",
                        "streams:\n  - {name: q, rate: 1 Mpps, flows: 16777216, frame: {roce: {op: WRITE, dest_qp: 0}}}\n");
  ASSERT_TRUE(plan.ok()) << plan.status();
  const MemoryEstimate need = EstimateMemory(*plan, 2);
  EXPECT_GT(need.bytes, uint64_t{16777216} * 600);  // the audit saw 11 GB of RSS
  EXPECT_EQ(need.flows, 16777216u);
  EXPECT_EQ(need.trial, "the plan's streams");
  EXPECT_EQ(need.key, "f.yaml:2:36: streams[0].flows '16777216'");
  EXPECT_EQ(need.key_flows, 16777216u);
  const absl::Status refused = CheckMemory(need, uint64_t{100} << 20, uint64_t{4} << 30);
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(refused.message()),
              HasSubstr("f.yaml:2:36: streams[0].flows '16777216': 16,777,216 flows need ~"));
  EXPECT_THAT(std::string(refused.message()),
              HasSubstr("in the plan's streams), and the mbuf pools and EAL ~100.0 MiB: more than the 4.00 GiB this "
                        "machine has available (MemAvailable in /proc/meminfo)"));
  EXPECT_TRUE(CheckMemory(need, 0, uint64_t{1} << 40).ok());
  EXPECT_TRUE(CheckMemory(need, 0, 0).ok());  // MemAvailable unknown: not checked
}

// A throughput matrix's QP count and a dcqcn_convergence test's m set a
// trial's flows of their own; the largest trial is named by its entry.
TEST(Memory, MatrixCellsAndConvergenceTrialsAreCountedByTheirEntry) {
  const std::string head =
      "ports: [{name: a}, {name: b, respond: true}]\n"
      "streams:\n"
      "  - {name: w, port: a, rx_port: b, rate: 1 Mpps, frame: {roce: {op: WRITE, dest_qp: 0}}}\n"
      "  - {name: d, port: a, rx_port: b, rate: 80 kpps, flows: 8, frame: {roce: {dcqcn: connectx, dest_qp: 0x800000}}}\n"
      "tests:\n"
      "  - throughput: {streams: [w], qps: [1, 65536], directions: [uni, bi]}\n";
  auto matrix = ParsePlan("t.yaml", head);
  ASSERT_TRUE(matrix.ok()) << matrix.status();
  const MemoryEstimate cell = EstimateMemory(*matrix, 2);
  EXPECT_EQ(cell.trial, "test throughput, cell 'qps=65536, bi'");
  EXPECT_EQ(cell.key, "t.yaml:6:41: tests[0].throughput.qps[1] '65536'");
  EXPECT_EQ(cell.flows, 2u * 65536);  // each way
  // 2 x 4,096 QPs, each with a rate timeline reserved for the trial and copied into the report.
  auto both = ParsePlan("t.yaml", head + "  - dcqcn_convergence: {streams: [d], m: [4, 4096]}\n");
  ASSERT_TRUE(both.ok()) << both.status();
  const MemoryEstimate m = EstimateMemory(*both, 2);
  EXPECT_EQ(m.trial, "test dcqcn_convergence, m 4096 (2 x 4096 QPs)");
  EXPECT_EQ(m.key, "t.yaml:7:46: tests[1].dcqcn_convergence.m[1] '4096'");
  EXPECT_GT(m.bytes, cell.bytes);
}

TEST(Memory, FiguresPrintInBinaryUnits) {
  EXPECT_EQ(FormatMemory(uint64_t{3} << 29), "1.50 GiB");
  EXPECT_EQ(FormatMemory(uint64_t{312} << 20), "312.0 MiB");
  EXPECT_EQ(FormatMemory(900 * 1024), "900 KiB");
}

}  // namespace
}  // namespace fg::methods
