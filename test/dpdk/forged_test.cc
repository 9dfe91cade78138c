// Hostile input at a running port (issue 26): frames forged from the run's
// own, or shaped as feedback and not it, injected between the ports while a
// trial runs. None is a stream's frame, loss, duplicate or reorder, none is
// taken for feedback: each is counted apart as the RX port's
// rx_invalid_packets, and every figure is the path's alone. (The checks one
// by one, on known byte vectors: test/unit/proto/signature_test.cc, Hostile;
// test/unit/rx/flow_table_test.cc; test/unit/endpoint/responder_test.cc.)
#include <gtest/gtest.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <thread>
#include <vector>

#include "engine/engine.h"
#include "proto/bytes.h"
#include "proto/frame.h"
#include "proto/roce.h"
#include "proto/signature.h"
#include "ring_path.h"

namespace fg::engine {
namespace {

using fg::testing::FrameMbuf;
using fg::testing::Impairments;
using fg::testing::RingPath;

// A copy of `m` from `pool`, `grow` bytes longer, changed by `edit` (the
// frame, its signature's offset); null when the pool is empty.
rte_mbuf* Forge(const rte_mbuf* m, rte_mempool* pool, const std::function<void(uint8_t*, int)>& edit,
                uint16_t grow = 0) {
  rte_mbuf* c = rte_pktmbuf_copy(m, pool, 0, UINT32_MAX);
  if (c == nullptr) return nullptr;
  if (grow != 0 && rte_pktmbuf_append(c, grow) == nullptr) {
    rte_pktmbuf_free(c);
    return nullptr;
  }
  uint8_t* d = rte_pktmbuf_mtod(c, uint8_t*);
  edit(d, proto::FindSignatureOffset(d, m->data_len));
  return c;
}

// Every way to forge a frame of a plain UDP stream (IPv4, untagged: the IP
// header at 14, UDP at 34, the signature at 42) that the audit tried or
// that follows from it: a sequence the flow never sent (the audit's 500
// frames: lost -500, sequence_gap_packets 85,900,345,649), other flags, a
// TX time before the run or after the frame's arrival, a flow id no stream
// has, and headers that contradict the frame's length.
std::vector<rte_mbuf*> ForgeUdp(const rte_mbuf* m, rte_mempool* pool) {
  using proto::Load32;
  using proto::Load48;
  using proto::Store16;
  using proto::Store32;
  using proto::Store48;
  return {
      Forge(m, pool, [](uint8_t* d, int s) { Store32(d + s + 6, Load32(d + s + 6) + 1'000'000); }),
      Forge(m, pool, [](uint8_t* d, int s) { Store32(d + s + 6, 0xFFFFFFFF); }),
      Forge(m, pool, [](uint8_t* d, int s) { d[s + 2] = 0x00; }),
      Forge(m, pool, [](uint8_t* d, int s) { Store48(d + s + 10, 0); }),
      Forge(m, pool,
            [](uint8_t* d, int s) { Store48(d + s + 10, (Load48(d + s + 10) + 10'000'000'000) & 0xFFFFFFFFFFFF); }),
      Forge(m, pool, [](uint8_t* d, int s) { proto::Store24(d + s + 3, 0xFFFFFF); }),
      Forge(m, pool, [](uint8_t* d, int) { Store16(d + 38, 7); }),
      Forge(m, pool, [](uint8_t* d, int) { Store16(d + 38, 0); }),
      Forge(m, pool, [](uint8_t* d, int) { Store16(d + 38, 65535); }),
      Forge(m, pool, [](uint8_t* d, int) { Store16(d + 16, 65535); }),
      Forge(m, pool, [](uint8_t* d, int) { d[14] = 0x4C; }),  // IHL 12, no options
  };
}
constexpr uint64_t kForgedPerFrame = 11;

// A UDP stream of 10,000 frames through a lossless path; after each of its
// frames 1,000-1,099 the path injects the 11 forgeries of it: 1,100 frames
// no stream sent. The stream's figures are exactly the path's (all
// received, none lost, duplicated, reordered or missing at a gap), and the
// RX port counts the 1,100 apart: rx_packets = 10,000 + 1,100.
TEST(Forged, FramesNoStreamSentAreCountedApartAndBendNoFigure) {
  RingPath path("forge");
  ASSERT_TRUE(path.ok()) << path.error();
  Impairments imp;
  imp.inject = [](const rte_mbuf* m, rte_mempool* pool) -> std::vector<rte_mbuf*> {
    const uint8_t* d = rte_pktmbuf_mtod(m, const uint8_t*);
    const int s = proto::FindSignatureOffset(d, m->data_len);
    if (s < 0) return {};
    const uint32_t seq = proto::Load32(d + s + 6);
    if (seq < 1000 || seq >= 1100) return {};
    return ForgeUdp(m, pool);
  };
  auto res = path.RunPlan(R"(
duration: 10 s
ports: [{name: a}, {name: b}]
streams: [{name: s, port: a, rx_port: b, rate: 200 kpps, count: 10000, frame: {size: 128}}]
)",
                          imp);
  ASSERT_TRUE(res.ok()) << res.status();
  const StreamResult& s = res->streams[0];
  EXPECT_EQ(s.tx.packets, 10000u);
  EXPECT_EQ(s.rx.packets, 10000u);
  EXPECT_EQ(s.rx.bytes, s.tx.bytes);
  EXPECT_EQ(s.lost(), 0);
  EXPECT_EQ(s.analysis.lost, 0);
  EXPECT_EQ(s.sequence_gap_packets(), 0u);
  EXPECT_EQ(s.analysis.duplicate, 0u);
  EXPECT_EQ(s.analysis.reordered, 0u);
  EXPECT_EQ(s.analysis.late, 0u);
  EXPECT_EQ(s.analysis.loss_events, 0u);
  const PortResult& b = res->ports[1];
  EXPECT_EQ(b.rx_invalid_packets, 100 * kForgedPerFrame);
  EXPECT_EQ(b.rx_unknown_packets, 0u);
  EXPECT_EQ(b.rx_packets, 10000 + 100 * kForgedPerFrame);
  EXPECT_EQ(b.hw.rx_packets, b.rx_packets);  // every frame the PMD took, accounted
  EXPECT_EQ(res->ports[0].rx_invalid_packets, 0u);
}

// The audit's forged READ_RESPONSEs (lost -151 and goodput inflated): a
// READ with port a responding, its responses crossing the path to b. After
// each of the responses 40-190 of each of its 4 QPs, the path injects one
// with a sequence 1,000,000 ahead: 604 frames its responder never sent. The
// responses' figures are the path's (nothing lost or duplicated, the bytes
// received those sent); b counts the 604 apart.
TEST(Forged, ReadResponsesTheResponderNeverSentAreCountedApart) {
  RingPath path("forgeread");
  ASSERT_TRUE(path.ok()) << path.error();
  Impairments imp;
  imp.inject = [](const rte_mbuf* m, rte_mempool* pool) -> std::vector<rte_mbuf*> {
    const uint8_t* d = rte_pktmbuf_mtod(m, const uint8_t*);
    const int s = proto::FindSignatureOffset(d, m->data_len);
    if (s < 0) return {};
    const uint32_t seq = proto::Load32(d + s + 6);
    if (seq < 40 || seq > 190) return {};
    return {
        Forge(m, pool, [](uint8_t* f, int at) { proto::Store32(f + at + 6, proto::Load32(f + at + 6) + 1'000'000); })};
  };
  auto res = path.RunPlan(R"(
duration: 300 ms
ports: [{name: a, respond: true}, {name: b}]
streams: [{name: rd, port: b, rx_port: a, rate: 200 Mbps, flows: 4,
           frame: {roce: {op: READ_REQUEST, message: 4096, pmtu: 1024, dest_qp: 0x300}}}]
)",
                          imp);
  ASSERT_TRUE(res.ok()) << res.status();
  ASSERT_EQ(res->streams.size(), 2u);
  const StreamResult& q = res->streams[0];
  const StreamResult& d = res->streams[1];
  ASSERT_EQ(d.name, "rd.responses");
  ASSERT_GT(q.tx.packets, 4u * 48);  // every QP past request 47 (responses 188-191)
  EXPECT_EQ(q.rx.packets, q.tx.packets);
  EXPECT_EQ(q.responder.delivered_packets, q.tx.packets);
  EXPECT_EQ(d.tx.packets, 4 * q.tx.packets);
  EXPECT_EQ(d.rx.packets, d.tx.packets);
  EXPECT_EQ(d.rx.bytes, d.tx.bytes);
  EXPECT_EQ(d.lost(), 0);
  EXPECT_EQ(d.analysis.duplicate, 0u);
  EXPECT_EQ(d.sequence_gap_packets(), 0u);
  EXPECT_EQ(res->ports[1].rx_invalid_packets, 4u * 151);
  EXPECT_EQ(res->ports[0].rx_invalid_packets, 0u);
}

// The audit's 300 12-byte BTH-only "CNPs" (no reserved bytes, no ICRC),
// which cut a DCQCN stream's rates 300 times, and 50 truncated ACKs (an
// AETH, no ICRC), put on the requester's return path to its own QPs while
// the trial runs: none reaches a reaction point or counts as feedback; the
// port counts the 350 apart. The responder's own ACKs still count.
TEST(Forged, FeedbackNotShapedAsTheSpecShapesItReachesNoReactionPoint) {
  RingPath path("forgefb");
  ASSERT_TRUE(path.ok()) << path.error();
  proto::Encap e;
  e.udp_dst = proto::roce::kUdpPort;
  uint8_t bth[proto::roce::kBthLen + proto::roce::kAethLen] = {};
  proto::roce::WriteBth(bth, proto::roce::Bth{.opcode = proto::roce::kOpcodeCnp, .becn = true, .dest_qp = 0x100});
  const std::vector<uint8_t> cnp =
      proto::BuildFrame(e, std::span<const uint8_t>(bth, proto::roce::kBthLen), 0, 0, proto::Trailer::kNone).bytes;
  proto::roce::WriteBth(bth, proto::roce::Bth{.opcode = 0x11, .dest_qp = 0x101, .psn = 5});
  proto::roce::WriteAeth(bth + proto::roce::kBthLen, proto::roce::Aeth{0, 1});
  const std::vector<uint8_t> ack = proto::BuildFrame(e, bth, 0, 0, proto::Trailer::kNone).bytes;
  rte_ring* const sink = path.sink();  // (before the trial: the path then expects frames of ours)
  std::thread hostile([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // into the trial's 400 ms
    for (int k = 0; k < 350; ++k) {
      rte_mbuf* m = FrameMbuf(path.tx()->pool(), k < 300 ? cnp : ack);
      if (m == nullptr) {
        ADD_FAILURE() << "no mbuf for frame " << k;
        return;
      }
      while (rte_ring_enqueue(sink, m) != 0) std::this_thread::yield();
    }
  });
  auto res = path.RunPlan(R"(
duration: 400 ms
ports: [{name: a}, {name: b, respond: true}]
streams: [{name: s, port: a, rx_port: b, rate: 40 kpps, flows: 2,
           frame: {roce: {op: WRITE, message: 1024, pmtu: 1024, dest_qp: 0x100, dcqcn: paper}}}]
)",
                          {});
  hostile.join();
  ASSERT_TRUE(res.ok()) << res.status();
  const StreamResult& s = res->streams[0];
  ASSERT_TRUE(s.dcqcn);
  EXPECT_EQ(s.rp.cnps, 0u);
  EXPECT_EQ(s.rp.cuts, 0u);
  EXPECT_EQ(s.analysis.cnp, 0u);
  ASSERT_GT(s.responder.acks_sent, 0u);
  EXPECT_EQ(s.analysis.ack, s.responder.acks_sent);  // the responder's, none of the forged
  const PortResult& a = res->ports[0];
  EXPECT_EQ(a.rx_cnp, 0u);
  EXPECT_EQ(a.rx_roce_ack, s.responder.acks_sent);
  EXPECT_EQ(a.rx_invalid_packets, 350u);
}

// `icrc: bad` RC WRITEs to a responding port: the device delivered them, so
// the stream counts them received; its responder, as a RoCE NIC, takes none
// (no ACK, nothing delivered: issue 26 found each acknowledged), counts them
// dropped, and the run says so in a warning.
TEST(Forged, DataWithABadIcrcIsNeverAcknowledged) {
  RingPath path("forgeicrc");
  ASSERT_TRUE(path.ok()) << path.error();
  auto res = path.RunPlan(R"(
duration: 10 s
ports: [{name: a}, {name: b, respond: true}]
streams: [{name: s, port: a, rx_port: b, rate: 100 kpps, count: 1000,
           frame: {roce: {op: WRITE, message: 1024, pmtu: 1024, icrc: bad, retransmit: none}}}]
)",
                          {});
  ASSERT_TRUE(res.ok()) << res.status();
  const StreamResult& s = res->streams[0];
  ASSERT_TRUE(s.answered);
  EXPECT_EQ(s.tx.packets, 1000u);
  EXPECT_EQ(s.rx.packets, 1000u);
  EXPECT_EQ(s.lost(), 0);
  EXPECT_EQ(s.responder.icrc_dropped, 1000u);
  EXPECT_EQ(s.responder.acks_sent + s.responder.naks_sent, 0u);
  EXPECT_EQ(s.responder.delivered_packets, 0u);
  EXPECT_EQ(s.analysis.ack, 0u);
  EXPECT_EQ(res->ports[1].rx_invalid_packets, 0u);
  EXPECT_EQ(res->ports[1].rx_icrc_checked, std::optional<bool>(true));  // a ring path: the frames crossed a mover
  EXPECT_EQ(res->ports[0].rx_icrc_checked, std::optional<bool>(true));  // its requesters' answers, across the ring
  bool warned = false;
  for (const std::string& w : res->warnings) warned = warned || w.find("with a bad ICRC") != std::string::npos;
  EXPECT_TRUE(warned);
}

}  // namespace
}  // namespace fg::engine
