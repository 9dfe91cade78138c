// A collective cell's QP frames decoded byte by byte: each QP's whole
// iteration is RC WRITE messages of the cut's lengths (FIRST / MIDDLE / LAST,
// ONLY), PSNs and signature sequences contiguous across messages of
// different lengths, RETH DMA lengths, every payload byte of its segments
// once, the two ranks' MACs, addresses and the QP's number, valid IPv4
// checksums and ICRCs (the bit-by-bit reference).
#include "stream/cell_frames.h"

#include <gtest/gtest.h>

#include "config/plan.h"
#include "proto/bytes.h"
#include "proto/checksum.h"
#include "proto/icrc.h"
#include "proto/signature.h"

namespace fg::stream {
namespace {

TEST(CellFrames, EveryQpsIterationAsRcWriteMessages) {
  auto plan = config::ParsePlan("r.yaml", R"(
ports: [{name: a, device: net_null0}, {name: b, device: net_null1}]
ranks: {count: 4, qps_per_pair: 2, message: 4 KiB, pmtu: 1024}
streams: [{name: s, port: a, rx_port: b, rate: 1 kpps}]
)");
  ASSERT_TRUE(plan.ok()) << plan.status();
  const std::vector<config::Rank> placed = config::PlaceRanks(*plan->ranks);
  // Ring AllReduce of 100,000 B: 25,000 B chunks, 12,500 B per QP a step:
  // three 4,096 B messages (4 packets each) and one of 212 B (ONLY).
  auto s = collective::Schedule::Make(collective::Op::kAllReduce, collective::Algorithm::kRing, 4, 100000);
  auto cell = collective::Cell::Make(*s, 2, 4096, 1024);
  ASSERT_TRUE(cell.ok()) << cell.status();
  auto frames = CellFrames::Compile(*plan->ranks, placed, *cell, 7);
  ASSERT_TRUE(frames.ok()) << frames.status();
  EXPECT_EQ(frames->programs(), 2u * 2 * 2);  // (a, b) x (a, b) x {212, 4096}
  // QP 1 -> 2, q 1: from a to b (ranks 0-1 on a at 198.18.0.1-2, 2-3 on b at 198.18.16.1-2).
  const uint32_t qp = *cell->QpIndex(1, 2, 1);
  // The shape TX stamps them with (GenerateCell: Stamp<kRoceCell>, checked
  // against the generic stamp in program_test.cc).
  EXPECT_EQ(frames->ProgramFor(qp, 4096).shape(), shape::kRoceCell);
  EXPECT_EQ(frames->ProgramFor(qp, 212).shape(), shape::kRoceCell);
  std::vector<uint8_t> opcodes;
  uint64_t payload = 0, frames_seen = 0;
  uint32_t expect_psn = 0;
  frames->ForEachFrame(qp, [&](std::span<const uint8_t> f) {
    ASSERT_GE(f.size(), 14u + 20 + 8 + 12 + 4 + 16);
    EXPECT_TRUE(std::equal(f.begin(), f.begin() + 6, config::RankMac(2).bytes.begin()));
    EXPECT_TRUE(std::equal(f.begin() + 6, f.begin() + 12, config::RankMac(1).bytes.begin()));
    const uint8_t* ip = f.data() + 14;
    EXPECT_EQ(proto::Load32(ip + 12), 0xC6120002u);  // 198.18.0.2
    EXPECT_EQ(proto::Load32(ip + 16), 0xC6121001u);  // 198.18.16.1
    EXPECT_EQ(proto::InternetChecksum(ip, 20), 0) << frames_seen;
    const uint8_t* bth = f.data() + 14 + 20 + 8;
    const uint8_t op = bth[0];
    opcodes.push_back(op);
    EXPECT_EQ(proto::Load24(bth + 5), frames->key(qp));
    EXPECT_EQ(proto::Load24(bth + 9), expect_psn++);
    uint32_t hdr = 12;
    if (op == 0x06 || op == 0x0A) {  // WRITE_FIRST, WRITE_ONLY: RETH with the message's length
      EXPECT_EQ(proto::Load32(bth + 12 + 12), op == 0x06 ? 4096u : 212u);
      hdr += 16;
    }
    const uint32_t udp_len = proto::Load16(f.data() + 14 + 20 + 4);
    payload += udp_len - 8 - hdr - 4;
    const int sig = proto::FindSignatureOffset(f.data(), f.size());
    ASSERT_GE(sig, 0);
    const proto::Signature g = proto::ReadSignature(f.data() + sig);
    EXPECT_EQ(g.flow_id, frames->flow_id(qp));
    EXPECT_EQ(g.seq, frames_seen);
    EXPECT_EQ(proto::LoadIcrc(f.data() + f.size() - 4),
              proto::IcrcReference(f.data(), proto::IcrcLayout{14, false, static_cast<uint32_t>(f.size() - 4)}))
        << "frame " << frames_seen;
    ++frames_seen;
  });
  EXPECT_EQ(frames_seen, 6u * 13);
  EXPECT_EQ(frames_seen, cell->qps()[qp].packets);
  EXPECT_EQ(payload, 6u * 12500);
  // One step: FIRST MIDDLE MIDDLE LAST three times, then ONLY.
  const std::vector<uint8_t> step = {6, 7, 7, 8, 6, 7, 7, 8, 6, 7, 7, 8, 0x0A};
  ASSERT_EQ(opcodes.size(), 78u);
  for (size_t k = 0; k < 6; ++k) {
    EXPECT_TRUE(std::equal(step.begin(), step.end(), opcodes.begin() + 13 * k)) << "step " << k;
  }
}

// Flow order groups the QPs by (sending port, receiving port): each group
// is one engine stream, its flows' ids and QP numbers consecutive.
TEST(CellFrames, FlowOrderGroupsQpsByPortPair) {
  auto plan = config::ParsePlan("r.yaml", R"(
ports: [{name: a, device: net_null0}, {name: b, device: net_null1}]
ranks: {count: 6, placement: round_robin, qps_per_pair: 2}
streams: [{name: s, port: a, rx_port: b, rate: 1 kpps}]
)");
  ASSERT_TRUE(plan.ok()) << plan.status();
  const std::vector<config::Rank> placed = config::PlaceRanks(*plan->ranks);
  auto s = collective::Schedule::Make(collective::Op::kAllToAll, collective::Algorithm::kParallel, 6, 6 * 6 * 64);
  auto cell = collective::Cell::Make(*s, 2, 4096, 1024);
  ASSERT_TRUE(cell.ok()) << cell.status();
  auto frames = CellFrames::Compile(*plan->ranks, placed, *cell, 100);
  ASSERT_TRUE(frames.ok()) << frames.status();
  // 6 x 5 pairs x 2 QPs; ranks alternate ports, so each of the 4 port pairs has some.
  ASSERT_EQ(cell->qps().size(), 60u);
  ASSERT_EQ(frames->pairs().size(), 4u);
  uint32_t next = 0;
  std::vector<int> seen(60, 0);
  for (const CellFrames::Pair& pr : frames->pairs()) {
    EXPECT_EQ(pr.first, next);
    next += pr.count;
    for (uint32_t p = pr.first; p < pr.first + pr.count; ++p) {
      const uint32_t qp = frames->qp_at(p);
      ++seen[qp];
      EXPECT_EQ(frames->position(qp), p);
      EXPECT_EQ(placed[cell->qps()[qp].from].port, pr.from_port);
      EXPECT_EQ(placed[cell->qps()[qp].to].port, pr.to_port);
      EXPECT_EQ(frames->flow_id(qp), 100 + p);
      EXPECT_EQ(frames->key(qp), kFirstQpKey + 100 + p);
      // The pair's programs count keys and flow ids from its first QP's.
      EXPECT_EQ(frames->ProgramFor(qp, cell->message_lengths().front()).key_base(), kFirstQpKey + 100 + pr.first);
      EXPECT_EQ(frames->VarsFor(qp, cell->message_lengths().front()).key, kFirstQpKey + 100 + p);
    }
  }
  EXPECT_EQ(next, 60u);
  for (int k : seen) EXPECT_EQ(k, 1);
}

}  // namespace
}  // namespace fg::stream
