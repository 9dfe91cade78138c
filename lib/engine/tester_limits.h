// engine/tester_limits.h: where the tester itself fell behind in a trial.
//
// A figure is the device's only when the tester kept up. After every trial
// the engine compares what each observation point saw and lists, per stream
// and per port, each way the tester was the limit:
//
//   tx_shortfall   TX sent fewer frames than the set rate and count called
//                  for (TxCounters::due vs packets), beyond 0.1 % or one burst
//   pacing_stall   the TX lcore fell more than 1 ms (and a burst) behind and
//                  skipped slots, or released bursts more than 1 ms late
//   tx_error       mbuf pool empty, the PMD's oerrors, or frames the PMD took
//                  that the kernel interface never sent (af_packet)
//   rx_drop        the PMD's imissed / rx_nombuf, or what the tester's own
//                  packet socket dropped (af_packet: PACKET_STATISTICS
//                  tp_drops, which DPDK 22.11 does not count); frames the
//                  kernel dropped before the socket are not the tester's (a
//                  run warning)
//   rx_stall       an RX lcore came back more than 1 ms after its last poll
//                  and found frames waiting: their latency includes the
//                  tester's own delay (counts stay exact)
//   host_backlog_drop  the host kernel's input backlog dropped frames while a
//                  kernel-backed port was in use (/proc/net/softnet_stat)
//
// Not the tester's (run warnings instead): a shortfall while the TX port
// received PAUSE/PFC frames (the device's flow control), ierrors (the link's).
//
// A stream carries its own TX limits and those of its ports (TX port: tx_error;
// RX port: rx_drop, rx_stall, host_backlog_drop); its loss figures then include the
// tester's losses and are not the device's. docs/architecture.md has the table.
//
//   engine::AssessTesterLimits(result);          // RunTrial/Finish do this
//   if (result.tester_limited()) for (auto& l : result.streams[0].tester_limits) ...
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fg::engine {

struct TesterLimit {
  std::string kind;    // one of the k* names below
  uint64_t count = 0;  // frames (slots for pacing_stall, events for a pool running empty)
  std::string detail;  // what was seen, with the numbers of each observation point
  // rx_stall and pacing_stall: the longest single hold-up (how long the lcore
  // was away, at its worst); 0 for the other kinds. A figure timed across a
  // hold-up (a loss's duration, a latency) may be off by up to this much.
  uint64_t longest_ns = 0;
  // rx_stall and pacing_stall: where the trial's lcore time went, as the
  // kernel counts it: the lcores' threads' waits for their CPUs while it ran
  // another task there (schedstat run_delay) and the hypervisor's steal of
  // their CPUs (/proc/stat), ns over the trial; -1: unreadable, or another
  // kind. A stall the kernel saw no time for was the whole VM's (or firmware's).
  int64_t cpu_wait_ns = -1;
  int64_t steal_ns = -1;
};

inline constexpr char kTxShortfall[] = "tx_shortfall";
inline constexpr char kPacingStall[] = "pacing_stall";
inline constexpr char kTxError[] = "tx_error";
inline constexpr char kRxDrop[] = "rx_drop";
inline constexpr char kRxStall[] = "rx_stall";
inline constexpr char kHostBacklogDrop[] = "host_backlog_drop";
inline constexpr char kAnswerDrop[] = "answer_drop";
inline constexpr char kDrainShort[] = "drain_short";

// "tx_shortfall 6,198 (sent 8,802 of 15,000 ...); rx_drop 82 (...)"
std::string DescribeLimits(const std::vector<TesterLimit>& limits);

}  // namespace fg::engine
