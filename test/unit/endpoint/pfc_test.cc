// endpoint/pfc: PFC and PAUSE frames counted as the draft defines them (pause
// events exclude X-ON; paused time cut short by the next frame), the gate a
// honouring port's TX reads, and the report's rows.
#include "endpoint/pfc.h"

#include <gtest/gtest.h>

#include <array>
#include <vector>

#include "endpoint/host.h"
#include "proto/pfc.h"

namespace fg::endpoint {
namespace {

const MacAddr kPeer{{0x02, 0xaa, 0x00, 0x00, 0x00, 0xfe}};
constexpr double k10G = 10e9;  // a quantum: 51.2 ns

std::vector<uint8_t> Pfc(uint16_t enable, std::array<uint16_t, 8> quanta) {
  std::vector<uint8_t> f(proto::kMacControlFrameLen);
  proto::WritePfc(f.data(), kPeer, {.class_enable = enable, .quanta = quanta, .src = kPeer});
  return f;
}
std::vector<uint8_t> Pause(uint16_t quanta) {
  std::vector<uint8_t> f(proto::kMacControlFrameLen);
  proto::WritePause(f.data(), kPeer, quanta);
  return f;
}

struct Port {
  PortHosts hosts;
  PfcGate gate;
  std::unique_ptr<FrameHandlers> handlers;
  explicit Port(bool honor, uint32_t storm_events = 3, uint64_t storm_window_ns = 1'000'000) {
    PortContext c;
    c.hosts = &hosts;
    c.line_bps = k10G;
    c.pfc_storm_events = storm_events;
    c.pfc_storm_window_ns = storm_window_ns;
    c.pfc_gate = honor ? &gate : nullptr;
    handlers = std::make_unique<FrameHandlers>(c);
  }
  Taken Take(const std::vector<uint8_t>& f, uint64_t rx_ns) {
    return handlers->Take(RxFrame{f.data(), static_cast<uint32_t>(f.size()), rx_ns});
  }
  std::vector<uint64_t> Counts() const {
    std::vector<std::vector<uint64_t>> sums = EmptyHandlerCounts();
    handlers->AddCounts(sums);
    for (size_t k = 0; k < HandlerKinds().size(); ++k) {
      if (HandlerKinds()[k].name == "pfc") return sums[k];
    }
    return {};
  }
  uint64_t Count(size_t slot, PfcCount c) const { return Counts()[slot * kPfcCountsPerSlot + c]; }
  // The slot's paused time as the report has it (a pause in force whole), or up to `until_ns`.
  uint64_t Paused(size_t slot, uint64_t until_ns = kWhole) const {
    return PausedNs(Counts().data() + slot * kPfcCountsPerSlot, until_ns);
  }
};

TEST(Pfc, EventsAreFramesWithNonZeroQuantaPerPriorityAndXonFramesAreApart) {
  Port p(false);
  // Priorities 3 and 5 paused by one frame: an event on each.
  EXPECT_EQ(p.Take(Pfc(0x28, {0, 0, 0, 1000, 0, 2000, 0, 0}), 1'000'000), Taken::kYes);
  // X-ON on 3 (enabled, zero quanta); priority 4's quanta without its enable bit are ignored.
  EXPECT_EQ(p.Take(Pfc(0x08, {0, 0, 0, 0, 500, 0, 0, 0}), 1'010'000), Taken::kYes);
  EXPECT_EQ(p.Count(3, kPauseEvents), 1u);
  EXPECT_EQ(p.Count(3, kXonFrames), 1u);
  EXPECT_EQ(p.Count(5, kPauseEvents), 1u);
  EXPECT_EQ(p.Count(5, kXonFrames), 0u);
  EXPECT_EQ(p.Count(4, kPauseEvents), 0u);
  EXPECT_EQ(p.Count(4, kXonFrames), 0u);
  // Paused time: 3 from its pause to the X-ON 10 us later (its 1000 quanta,
  // 51.2 us, cut short); 5 its whole 2000 quanta (102.4 us).
  EXPECT_EQ(p.Paused(3), 10'000u);
  EXPECT_EQ(p.Paused(5), 102'400u);
  // While 5's pause is in force, what has passed of it so far; the count of
  // ended pauses only grows (an X-ON moves time from the open pause to it).
  EXPECT_EQ(p.Paused(5, 1'050'000), 50'000u);
  EXPECT_EQ(p.Count(5, kEndedPausedNs), 0u);
  EXPECT_EQ(p.Count(3, kEndedPausedNs), 10'000u);
}

TEST(Pfc, ARefreshCutsThePauseItRenewsShortAndAnExpiredPauseCountsWhole) {
  Port p(false);
  const auto q = [](uint16_t n) { return Pfc(0x08, {0, 0, 0, n, 0, 0, 0, 0}); };
  p.Take(q(0xFFFF), 0);          // 3,355,392 ns of pause...
  p.Take(q(0xFFFF), 1'000'000);  // ...refreshed after 1 ms: 1 ms counted, a new 3.355 ms from here
  p.Take(q(100), 10'000'000);    // after the refreshed one expired (at 4,355,392): it counts whole
  EXPECT_EQ(p.Count(3, kPauseEvents), 3u);
  EXPECT_EQ(p.Paused(3), 1'000'000u + 3'355'392u + 5'120u);
}

TEST(Pfc, LinkPauseStopsEveryPriorityAndHasItsOwnRow) {
  Port p(true);
  EXPECT_EQ(p.Take(Pause(200), 5'000), Taken::kYes);  // 10,240 ns
  EXPECT_EQ(p.Count(kPfcLinkPause, kPauseEvents), 1u);
  EXPECT_EQ(p.Paused(kPfcLinkPause), 10'240u);
  for (size_t prio = 0; prio < kPfcPriorities; ++prio) EXPECT_EQ(p.gate.until_ns[prio].load(), 15'240u) << prio;
  p.Take(Pause(0), 6'000);  // X-ON: every priority resumes
  for (size_t prio = 0; prio < kPfcPriorities; ++prio) EXPECT_EQ(p.gate.until_ns[prio].load(), 0u) << prio;
  const std::vector<PfcFigures> rows = PfcFiguresOf(p.Counts(), 0, 1'000'000'000, kWhole, "here");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].priority, -1);
  EXPECT_EQ(rows[0].pause_events, 1u);
  EXPECT_EQ(rows[0].xon_frames, 1u);
  EXPECT_EQ(rows[0].paused_ns, 1'000u);
  EXPECT_DOUBLE_EQ(rows[0].events_per_s, 1.0);
  EXPECT_EQ(rows[0].observation_point, "here");
}

TEST(Pfc, TheGateFollowsEachPriorityOnAHonouringPortOnly) {
  Port honouring(true), not_honouring(false);
  for (Port* p : {&honouring, &not_honouring}) p->Take(Pfc(0x08, {0, 0, 0, 1000, 0, 0, 0, 0}), 2'000);
  EXPECT_EQ(honouring.gate.until_ns[3].load(), 2'000u + 51'200u);
  EXPECT_EQ(honouring.gate.until_ns[2].load(), 0u);
  EXPECT_EQ(not_honouring.gate.until_ns[3].load(), 0u);
  honouring.Take(Pfc(0x08, {}), 3'000);  // X-ON
  EXPECT_EQ(honouring.gate.until_ns[3].load(), 0u);
}

TEST(Pfc, AStormIsStormEventsIntervalsWithinTheWindow) {
  Port p(false, /*storm_events=*/3, /*storm_window_ns=*/1'000'000);  // 3 intervals in 1 ms: 3,000 events/s
  const auto ev = Pfc(0x01, {10, 0, 0, 0, 0, 0, 0, 0});
  // 0.6 ms apart: 3 intervals span 1.8 ms; then 0.1 ms apart: at 1.9 ms
  // the event 3 before is at 0.6 (1.3 ms), at 2.0 ms it is at 1.2 (0.8 ms).
  for (uint64_t t : {0u, 600'000u, 1'200'000u, 1'800'000u, 1'900'000u}) p.Take(ev, 10'000'000 + t);
  EXPECT_EQ(p.Count(0, kStormOnsetNs), 0u);
  p.Take(ev, 10'000'000 + 2'000'000);
  EXPECT_EQ(p.Count(0, kStormOnsetNs), 12'000'000u);
  p.Take(ev, 10'000'000 + 2'100'000);  // the onset stays the first
  EXPECT_EQ(p.Count(0, kStormOnsetNs), 12'000'000u);
  const std::vector<PfcFigures> rows = PfcFiguresOf(p.Counts(), 10'000'000, 4'000'000, kWhole, "x");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].priority, 0);
  EXPECT_EQ(rows[0].storm_onset_ns, 2'000'000);
  EXPECT_DOUBLE_EQ(rows[0].events_per_s, 7 / 4e-3);
}

TEST(Pfc, ALinkPauseAndAPriorityPauseHoldTheGateUntilTheLaterEnds) {
  Port p(true);
  p.Take(Pfc(0x08, {0, 0, 0, 1000, 0, 0, 0, 0}), 0);  // priority 3 until 51,200
  p.Take(Pause(100), 1'000);                          // every priority until 6,120
  EXPECT_EQ(p.gate.until_ns[3].load(), 51'200u);
  EXPECT_EQ(p.gate.until_ns[0].load(), 6'120u);
  p.Take(Pause(0), 2'000);  // the PAUSE's X-ON ends only its own pause
  EXPECT_EQ(p.gate.until_ns[3].load(), 51'200u);
  EXPECT_EQ(p.gate.until_ns[0].load(), 0u);
  p.Take(Pause(5000), 3'000);                          // until 259,000: longer than 3's
  p.Take(Pfc(0x08, {0, 0, 0, 0, 0, 0, 0, 0}), 4'000);  // 3's X-ON: the PAUSE still holds it
  EXPECT_EQ(p.gate.until_ns[3].load(), 259'000u);
}

TEST(Pfc, OtherMacControlIsCountedAndACutShortPfcFrameIsInvalid) {
  Port p(false);
  std::vector<uint8_t> other = Pfc(0x01, {});
  other[15] = 0x03;  // opcode 0x0103
  EXPECT_EQ(p.Take(other, 0), Taken::kYes);
  EXPECT_EQ(p.Counts()[kPfcOther], 1u);
  std::vector<uint8_t> cut = Pfc(0x01, {1, 0, 0, 0, 0, 0, 0, 0});
  cut.resize(20);
  EXPECT_EQ(p.Take(cut, 0), Taken::kInvalid);
  std::vector<uint8_t> ipv4(60, 0);
  ipv4[12] = 0x08;
  EXPECT_EQ(p.Take(ipv4, 0), Taken::kNo);
  EXPECT_EQ(p.Count(0, kPauseEvents), 0u);
}

TEST(Pfc, TheStormOnsetOfAPortIsItsQueuesEarliestNotTheirSum) {
  Port a(false, 1), b(false, 1);
  for (uint64_t t : {100u, 700u}) a.Take(Pfc(0x01, {5, 0, 0, 0, 0, 0, 0, 0}), t);  // a storm of 1 interval
  for (uint64_t t : {200u, 300u}) b.Take(Pfc(0x01, {5, 0, 0, 0, 0, 0, 0, 0}), t);
  std::vector<std::vector<uint64_t>> sums = EmptyHandlerCounts();
  a.handlers->AddCounts(sums);
  b.handlers->AddCounts(sums);
  for (size_t k = 0; k < HandlerKinds().size(); ++k) {
    if (HandlerKinds()[k].name != "pfc") continue;
    EXPECT_EQ(sums[k][kStormOnsetNs], 300u);
    EXPECT_EQ(sums[k][kPauseEvents], 4u);
  }
}

TEST(Pfc, APriorityIsTheVlanPcpElseTheDscpOverEight) {
  std::vector<uint8_t> v4(60, 0);
  v4[12] = 0x08;
  v4[14] = 0x45;
  v4[15] = 26 << 2 | 1;  // DSCP 26, ECT(1)
  EXPECT_EQ(proto::PriorityOf(v4), 3);
  std::vector<uint8_t> tagged(64, 0);
  tagged[12] = 0x81;
  tagged[14] = 5 << 5;  // PCP 5, VLAN 0
  tagged[16] = 0x08;
  tagged[18] = 0x45;
  tagged[19] = 26 << 2;
  EXPECT_EQ(proto::PriorityOf(tagged), 5);
  std::vector<uint8_t> v6(60, 0);
  v6[12] = 0x86;
  v6[13] = 0xdd;
  v6[14] = 0x60 | (46 << 2) >> 4;  // traffic class 46 << 2 (DSCP 46: priority 5)
  v6[15] = static_cast<uint8_t>(((46 << 2) & 0x0F) << 4);
  EXPECT_EQ(proto::PriorityOf(v6), 5);
}

}  // namespace
}  // namespace fg::endpoint
