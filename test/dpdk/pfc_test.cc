// PFC received on a port (endpoint/pfc.h) through the engine: counted per
// priority exactly as sent, and on a port that honours it (ports[].pfc.honor)
// the paused priority's stream holds for the pause, owing nothing for it,
// while another priority's keeps its rate. Frames are put on the TX port's
// return path (RingPath::sink) while the trial runs.
#include "endpoint/pfc.h"

#include <gtest/gtest.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "engine/engine.h"
#include "proto/pfc.h"
#include "ring_path.h"

namespace fg::engine {
namespace {

using fg::testing::FrameMbuf;
using fg::testing::RingPath;

constexpr int64_t kQuantumNs10G = 0xFFFF * 512 / 10;  // 65535 quanta at 10 Gbit/s: 3,355,392 ns (ring ports' speed)

std::vector<uint8_t> PfcFrame(uint16_t enable, uint16_t quanta3) {
  std::vector<uint8_t> f(proto::kMacControlFrameLen);
  std::array<uint16_t, 8> q{};
  q[3] = quanta3;
  proto::WritePfc(f.data(), MacAddr{{0x02, 0, 0, 0, 0, 0x5c}}, {.class_enable = enable, .quanta = q, .src = {}});
  return f;
}

// PFC frames put on port a's return path while a trial runs: each with its
// delay after the previous (the first's after the trial's first frame).
struct Pushed {
  std::vector<std::pair<std::chrono::microseconds, std::vector<uint8_t>>> frames;
};

absl::StatusOr<TrialResult> RunWithPfc(bool honor, const Pushed& push) {
  RingPath path(honor ? "pfchon" : "pfcoff");
  if (!path.ok()) return absl::InternalError(path.error());
  rte_ring* const sink = path.sink();
  std::thread pusher([&] {
    // The delays count from the trial's first frame (its set-up takes a while).
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (path.tx()->stats().tx_packets == 0 && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    for (const auto& [after, bytes] : push.frames) {
      std::this_thread::sleep_for(after);
      rte_mbuf* m = FrameMbuf(path.tx()->pool(), bytes);
      if (m == nullptr) {
        ADD_FAILURE() << "no mbuf for a PFC frame";
        return;
      }
      while (rte_ring_enqueue(sink, m) != 0) std::this_thread::yield();
    }
  });
  auto res = path.RunPlan(std::string(R"(
duration: 1 s
ports: [{name: a, pfc: {honor: )") +
                              (honor ? "true" : "false") + R"(}}, {name: b}]
streams:
  - {name: p3, port: a, rx_port: b, rate: 100 kpps, frame: {dscp: 26}}
  - {name: p0, port: a, rx_port: b, rate: 100 kpps, frame: {dscp: 0}}
)",
                          {});
  pusher.join();
  return res;
}

// Port a's PFC rows (ports[].pfc) from its counts.
std::vector<endpoint::PfcFigures> Rows(const TrialResult& r) {
  const auto kinds = endpoint::HandlerKinds();
  for (size_t k = 0; k < kinds.size(); ++k) {
    if (kinds[k].name == "pfc")
      return endpoint::PfcFiguresOf(r.ports[0].handled[k], 0, 1'000'000'000, endpoint::kWhole, "ring");
  }
  return {};
}

// The limits a host's hold-up makes (never a shortfall of the pause's own).
void ExpectOnlyHostHoldUps(const StreamResult& s) {
  for (const TesterLimit& l : s.tester_limits) {
    EXPECT_TRUE(l.kind == kPacingStall || l.kind == kRxStall || (l.kind == kTxShortfall && s.tx.slots_skipped > 0))
        << s.name << ": " << l.kind << " " << l.detail;
  }
}

// 200 pauses of 65,535 quanta 1 ms apart (each refreshing the last), from
// 300 ms into the trial: priority 3 is paused for ~200 ms + 3.36 ms.
Pushed Refreshed() {
  Pushed p;
  for (int i = 0; i < 200; ++i)
    p.frames.push_back({std::chrono::microseconds(i == 0 ? 300'000 : 1'000), PfcFrame(0x08, 0xFFFF)});
  return p;
}

TEST(Pfc, AHonouringPortHoldsOnlyThePausedPriorityAndOwesNothingForIt) {
  auto res = RunWithPfc(true, Refreshed());
  ASSERT_TRUE(res.ok()) << res.status();
  const std::vector<endpoint::PfcFigures> rows = Rows(*res);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].priority, 3);
  EXPECT_EQ(rows[0].pause_events, 200u);  // exact: every frame put on the path
  EXPECT_EQ(rows[0].xon_frames, 0u);
  // Paused from the first frame to the last one's expiry (a gap of the
  // pusher's over 3.36 ms, a host's hold-up, lets the pause expire: shorter).
  EXPECT_GT(rows[0].paused_ns, 150'000'000u);
  EXPECT_LT(rows[0].paused_ns, 260'000'000u);
  const StreamResult& p3 = res->streams[0];
  const StreamResult& p0 = res->streams[1];
  // The paused stream held as long as its port was paused (its RX and TX
  // poll in one loop: each end moves by at most a turn of it).
  EXPECT_NEAR(static_cast<double>(p3.tx.pfc_paused_ns), static_cast<double>(rows[0].paused_ns),
              rows[0].paused_ns * 0.02 + 200'000);
  // It owes nothing for the pause: what it was due is its rate over the
  // rest, all sent (but for slots a hold-up of the host made it skip: a
  // tester limit the run names, pacing_stall, never the pause's).
  const double unpaused_s = 1.0 - static_cast<double>(p3.tx.pfc_paused_ns) / 1e9;
  EXPECT_NEAR(static_cast<double>(p3.tx.due), 100e3 * unpaused_s, 100e3 * 0.01);
  EXPECT_NEAR(static_cast<double>(p3.tx.due), static_cast<double>(p3.tx.packets + p3.tx.slots_skipped), 64);
  ExpectOnlyHostHoldUps(p3);
  // The other priority kept its rate, and nothing was lost.
  EXPECT_EQ(p0.tx.pfc_paused_ns, 0u);
  EXPECT_NEAR(static_cast<double>(p0.tx.packets + p0.tx.slots_skipped), 100e3, 100);
  for (const StreamResult* s : {&p3, &p0}) {
    EXPECT_EQ(stats::LostPackets(s->tx.packets, s->analysis.received, s->analysis.duplicate), 0) << s->name;
  }
}

TEST(Pfc, XonEndsAPauseAtOnceAndIsNotAnEvent) {
  Pushed push;  // 100 times: a pause of 3.36 ms, ended by X-ON 500 us later; 2 ms apart
  for (int i = 0; i < 100; ++i) {
    push.frames.push_back({std::chrono::microseconds(i == 0 ? 300'000 : 1'500), PfcFrame(0x08, 0xFFFF)});
    push.frames.push_back({std::chrono::microseconds(500), PfcFrame(0x08, 0)});
  }
  auto res = RunWithPfc(true, push);
  ASSERT_TRUE(res.ok()) << res.status();
  const std::vector<endpoint::PfcFigures> rows = Rows(*res);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].pause_events, 100u);
  EXPECT_EQ(rows[0].xon_frames, 100u);
  // ~100 x 0.5 ms: each cut short by its X-ON, far below 100 x 3.36 ms.
  EXPECT_LT(rows[0].paused_ns, 100u * kQuantumNs10G / 2);
  EXPECT_GT(rows[0].paused_ns, 100u * 400'000);
  const StreamResult& p3 = res->streams[0];
  EXPECT_NEAR(static_cast<double>(p3.tx.pfc_paused_ns), static_cast<double>(rows[0].paused_ns),
              rows[0].paused_ns * 0.05 + 500'000);
  ExpectOnlyHostHoldUps(p3);
}

TEST(Pfc, APortThatDoesNotHonourCountsThePausesAndKeepsSending) {
  auto res = RunWithPfc(false, Refreshed());
  ASSERT_TRUE(res.ok()) << res.status();
  const std::vector<endpoint::PfcFigures> rows = Rows(*res);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].pause_events, 200u);
  EXPECT_GT(rows[0].paused_ns, 150'000'000u);
  for (const StreamResult& s : res->streams) {
    EXPECT_EQ(s.tx.pfc_paused_ns, 0u) << s.name;
    EXPECT_NEAR(static_cast<double>(s.tx.packets + s.tx.slots_skipped), 100e3, 100) << s.name;
  }
}

}  // namespace
}  // namespace fg::engine
