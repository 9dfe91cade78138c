// endpoint/pfc.h: the PFC (802.1Qbb) and PAUSE (802.3x) frames a port
// receives, counted as the draft defines them (a frame handler:
// endpoint/frame_handler.h).
//
// On every RX queue of every port, a MAC control frame (EtherType 0x8808)
// is taken here, never counted as test traffic, unknown, loss or a tester
// limit. Per priority (and for link-level PAUSE, which stops them all):
//   - pause events: frames with non-zero quanta for the priority (the
//     draft's "PFC pause event"); a PFC frame pausing three priorities is
//     one event on each;
//   - X-ON frames: zero quanta on an enabled priority; they only end a pause;
//   - paused time: each event's quanta x 512 bit times at the port's line
//     rate, cut short by the priority's next frame (a refresh or an X-ON)
//     when it comes first, so overlapping refreshes are not counted twice
//     (counted as the pauses already ended, and the one in force apart: a
//     count that only grows);
//   - storm onset: the receive time of the first event that ends
//     N = `storm_events_per_s` x `storm_window` intervals between the
//     priority's events within one window (ports[].pfc.storm): the rate of
//     events over that window reached events_per_s.
// Where the port honours PFC (`ports[].pfc.honor`), each event also sets the
// priority's gate (PfcGate) that its streams' TX checks, and an X-ON clears it.
//
// Counts (PfcKind's, report.json ports[].pfc through PfcFiguresOf): per
// slot (priorities 0-7, then 8: link-level PAUSE) pause_events, xon_frames,
// ended_paused_ns (of the pauses already ended or cut short), open_from_ns
// and open_until_ns (the pause in force; 0: none) and storm_onset_ns
// (receive times, ns of the run's clock; 0: none), then mac_control_other
// (opcodes other than PAUSE and PFC).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/counter.h"
#include "endpoint/frame_handler.h"
#include "proto/pfc.h"

namespace fg::endpoint {

inline constexpr size_t kPfcPriorities = 8;
inline constexpr size_t kPfcSlots = 9;      // priorities 0-7, and link-level PAUSE
inline constexpr size_t kPfcLinkPause = 8;  // the slot of 802.3x PAUSE
enum PfcCount : size_t {
  kPauseEvents,
  kXonFrames,
  kEndedPausedNs,
  kOpenFromNs,
  kOpenUntilNs,
  kStormOnsetNs,
  kPfcCountsPerSlot
};
inline constexpr size_t kPfcOther = kPfcSlots * kPfcCountsPerSlot;  // mac_control_other
inline constexpr size_t kPfcCounts = kPfcOther + 1;

// A port's pause state for its streams' TX (ports[].pfc.honor): per
// priority, until when (ns of the run's clock) it is paused, by PFC on it or
// by a link-level PAUSE, whichever ends later; 0: not paused. Written by the
// port's RX lcores, read by the TX lcores that own its streams.
struct PfcGate {
  std::array<std::atomic<uint64_t>, kPfcPriorities> until_ns{};
};

// The pure counting of one RX queue's MAC control frames (no DPDK, no
// threads): PfcHandler's arithmetic, tested on its own.
class PfcCounter {
 public:
  // `line_bps`: the port's line rate (a quantum is 512 bit times of it);
  // a storm is `storm_events` intervals between events within `storm_window_ns`.
  PfcCounter(double line_bps, uint64_t storm_window_ns, uint32_t storm_events);
  // One parsed frame received at `rx_ns`; `gate` (may be null) follows it.
  void OnFrame(const proto::MacControl& m, uint64_t rx_ns, PfcGate* gate);
  void OnOther() { counts_[kPfcOther].Add(1); }
  // Any thread: the counts in the order above.
  void ReadCounts(std::span<uint64_t> out) const;

 private:
  struct Slot {
    uint64_t closed_ns = 0;                 // paused time of pauses already ended or cut short
    uint64_t open_start = 0, open_end = 0;  // the pause in force (open_end 0: none)
    std::vector<uint64_t> recent;           // the last storm_events + 1 events' times (a ring)
    size_t next = 0, filled = 0;
  };
  void Event(size_t slot, uint16_t quanta, uint64_t rx_ns);
  void Gate(PfcGate* gate, size_t priority) const;
  double ns_per_quantum_;
  uint64_t storm_window_ns_;
  std::array<Slot, kPfcSlots> slots_;
  std::array<Counter, kPfcCounts> counts_{};
};

HandlerKind PfcKind();

// One row of report.json ports[].pfc.
struct PfcFigures {
  int priority = 0;  // -1: link-level PAUSE (802.3x, every priority)
  uint64_t pause_events = 0, xon_frames = 0, paused_ns = 0;
  double events_per_s = 0;      // pause events over the run's duration
  int64_t storm_onset_ns = -1;  // since the run's start; -1: no storm
  std::string observation_point;
};

// The rows of the slots that saw a frame, from PfcKind's counts of a port
// over a run of `duration_ns` that started at `start_ns` (the run's clock);
// a pause in force counts up to `until_ns` (the end of its quanta at most:
// kWhole when nothing more will come, a run's end; now, while it goes on).
inline constexpr uint64_t kWhole = ~uint64_t{0};
std::vector<PfcFigures> PfcFiguresOf(std::span<const uint64_t> counts, uint64_t start_ns, uint64_t duration_ns,
                                     uint64_t until_ns, const std::string& observation_point);
// A slot's paused time (PfcFigures::paused_ns) from its counts, up to `until_ns`.
uint64_t PausedNs(const uint64_t* slot_counts, uint64_t until_ns);

}  // namespace fg::endpoint
