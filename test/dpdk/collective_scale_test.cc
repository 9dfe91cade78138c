// Scale on the loopback (issue 28): ring AllReduce of 64 MiB over 1,024
// ranks and AllToAll over 256 ranks complete with every byte accounted
// (#wrong 0: every iteration completes, the unique bytes are the schedule's
// frames to the byte), and the same with every 1,000th frame dropped by the
// impairing path's mover: every drop recovered by go-back-N, what went out
// again = the drops + what the responders discarded behind their gaps.
#include <gtest/gtest.h>

#include "absl/strings/str_format.h"
#include "collective/cell.h"
#include "config/plan.h"
#include "dpdk_test_env.h"
#include "engine/engine.h"
#include "ring_path.h"
#include "stream/cell_streams.h"

namespace fg::engine {
namespace {

using fg::testing::Impairments;
using fg::testing::LoopPath;
using fg::testing::RingPath;

std::shared_ptr<const stream::CellStreams> MakeCell(const std::string& ranks_yaml, collective::Op op,
                                                    collective::Algorithm alg, uint32_t n, uint64_t bytes) {
  auto plan = config::ParsePlan("scale.yaml", ranks_yaml + "streams: [{name: unused, rate: 1 kpps}]\n");
  EXPECT_TRUE(plan.ok()) << plan.status();
  auto s = collective::Schedule::Make(op, alg, n, bytes);
  EXPECT_TRUE(s.ok()) << s.status();
  auto cell = collective::Cell::Make(*s, plan->ranks->qps_per_pair, plan->ranks->message, plan->ranks->pmtu);
  EXPECT_TRUE(cell.ok()) << cell.status();
  stream::CellPlay play;
  play.iterations = 1;
  play.timeout_ns = 120'000'000'000;
  auto cs = stream::CellStreams::Make(*plan->ranks, config::PlaceRanks(*plan->ranks), std::move(*cell), 0, play);
  EXPECT_TRUE(cs.ok()) << cs.status();
  return *cs;
}

// Every frame of the iteration once (unique), the resends apart: every
// frame sent and not accepted was lost on the way, discarded behind a gap
// or a duplicate of one accepted before (a timer's go-back), exactly.
void ExpectEveryByteAccounted(const TrialResult& r, const stream::CellStreams& cs, uint64_t drops) {
  ASSERT_EQ(r.cells.size(), 1u);
  ASSERT_EQ(r.cells[0].iterations.size(), 1u);
  EXPECT_TRUE(r.cells[0].iterations[0].completed);  // #wrong 0
  uint64_t expected = 0, unique = 0, resent = 0, discarded = 0, lost = 0, dups = 0;
  for (uint32_t qp = 0; qp < cs.cell.qps().size(); ++qp) expected += cs.frames.IterationBytes(qp);
  for (const StreamResult& s : r.streams) {
    unique += s.retx.unique_bytes;
    resent += s.retx.retransmitted_packets;
    discarded += s.responder.out_of_sequence;
    dups += s.responder.duplicates;
    lost += s.tx.packets - s.rx.packets;
    EXPECT_EQ(s.responder.delivered_packets, s.retx.unique_packets) << s.name;
  }
  EXPECT_EQ(unique, expected);
  EXPECT_EQ(lost, drops);
  EXPECT_EQ(resent, drops + discarded + dups);
  if (drops == 0) {
    EXPECT_EQ(resent, 0u);  // nothing lost: nothing sent again
  }
  std::printf("  %u QPs, %.3f s: %lu B, %lu drops, %lu frames resent (%lu discarded behind gaps, %lu duplicates)\n",
              static_cast<unsigned>(cs.cell.qps().size()), r.cells[0].iterations[0].time_ns() / 1e9,
              static_cast<unsigned long>(unique), static_cast<unsigned long>(drops),
              static_cast<unsigned long>(resent), static_cast<unsigned long>(discarded),
              static_cast<unsigned long>(dups));
}

// The clean runs' QPs go back only after 2 s without an ACK: the mover (the
// DUT, on the main lcore's CPU) queues what 1,024 or 65,280 QPs release at
// once, and on a slow host hour that queue held frames past the default
// 64 ms (116,040 frames sent again with none lost, the accounting exact):
// go-back-N doing its job on a path that is slow, not lossy. A clean path
// must show nothing resent; the lossy runs keep 64 ms, so a lost tail
// comes back fast.
std::vector<stream::CompiledStream> Patient(std::vector<stream::CompiledStream> streams, bool patient) {
  if (patient) {
    for (auto& s : streams) s.retransmit_timeout_ns = 2'000'000'000;
  }
  return streams;
}

// 1,024 ranks alternating between two ring ports (every ring neighbour on the
// other port), 64 MiB: 2,046 steps of 64 KiB segments, 137 GB of payload.
TEST(CollectiveScale, RingAllReduceOf64MiBOver1024Ranks) {
  auto cs = MakeCell("ports: [{name: a}, {name: b}]\nranks: {count: 1024, placement: round_robin}\n",
                     collective::Op::kAllReduce, collective::Algorithm::kRing, 1024, 64 << 20);
  ASSERT_NE(cs, nullptr);
  auto streams = stream::CellStreams::Streams(cs, 0, "ring1024", 300'000'000'000);
  ASSERT_TRUE(streams.ok()) << streams.status();
  for (const uint32_t every : {0u, 1000u}) {
    RingPath path("scale");
    ASSERT_TRUE(path.ok()) << path.error();
    Impairments imp;
    imp.drop_every = every;
    auto r = path.Run(Patient(*streams, every == 0), imp);
    ASSERT_TRUE(r.ok()) << r.status();
    ExpectEveryByteAccounted(*r, *cs, path.dropped_every());
    if (every != 0) {
      EXPECT_GT(path.dropped_every(), 0u);
    }
  }
}

// 256 ranks on one looped port, every pair's block at once: 65,280 QPs.
TEST(CollectiveScale, AllToAllOver256Ranks) {
  auto cs = MakeCell("ports: [{name: a}]\nranks: {count: 256}\n", collective::Op::kAllToAll,
                     collective::Algorithm::kParallel, 256, 16 << 20);
  ASSERT_NE(cs, nullptr);
  auto streams = stream::CellStreams::Streams(cs, 0, "alltoall256", 300'000'000'000);
  ASSERT_TRUE(streams.ok()) << streams.status();
  for (const uint32_t every : {0u, 1000u}) {
    LoopPath path("scaleloop");
    ASSERT_TRUE(path.ok()) << path.error();
    Impairments imp;
    imp.drop_every = every;
    auto r = path.Run(Patient(*streams, every == 0), imp, 300'000'000'000);
    ASSERT_TRUE(r.ok()) << r.status();
    ExpectEveryByteAccounted(*r, *cs, path.dropped_every());
    if (every != 0) {
      EXPECT_GT(path.dropped_every(), 0u);
    }
  }
}

}  // namespace
}  // namespace fg::engine
