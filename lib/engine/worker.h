// engine/worker.h: one worker lcore's loop and what it runs (inside lib/engine).
//
// A worker runs its TX tasks (one per port it sends on), its RX queues, the
// handoff rings from the other workers (records for the flows it owns), and
// control requests, over and over until told to stop; its counters are
// VPP's `show runtime` (LiveRun::Runtime, report.json lcores).
//
//   rte_eal_remote_launch(fg::engine::LcoreMain, &work, lcore);
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "base/counter.h"
#include "base/tsc.h"
#include "rx/rx.h"
#include "tx/tx.h"

namespace fg::engine {

enum Phase : int { kRun = 0, kDrain = 1, kStop = 2 };

struct LcoreWork {
  uint32_t index = 0;  // worker index (flow owner id)
  unsigned lcore = 0;
  std::vector<tx::TxTask*> tx;
  std::vector<rx::RxTask*> rx;
  rx::FlowTable* table = nullptr;
  std::vector<rx::HandoffRing*> in;  // from every other worker
  std::vector<std::string> names;
  std::atomic<int> phase{kRun};
  // Written by the lcore only, read by anyone (show runtime).
  alignas(64) Counter polls, busy_polls, tx_packets, rx_packets, tx_cycles, rx_cycles, handoff_in,
      handoff_max_polls, handoff_max_ns;
  TscClock clock;
};

int LcoreMain(void* arg);

}  // namespace fg::engine
