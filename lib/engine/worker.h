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
#include "endpoint/answer_queue.h"
#include "endpoint/responder.h"
#include "rx/rx.h"
#include "tx/tx.h"

struct rte_mempool;

namespace fg::engine {

enum Phase : int { kRun = 0, kDrain = 1, kStop = 2 };

// Where a worker sends answers (endpoint/answer_queue.h) of one plan port: its
// own TX queue there; what it sent.
struct AnswerPort {
  uint16_t port_id = 0, queue = 0;
  rte_mempool* pool = nullptr;
  bool has_queue = false;  // the port has a TX queue for this worker
  Counter packets, bytes;  // frames without FCS, + 4 B each
  Counter alloc_failures;  // polls the pool had no mbuf for an answer
};

struct LcoreStats;  // engine.h
class CellWork;     // cell_work.h

struct LcoreWork {
  uint32_t index = 0;  // worker index (flow owner id)
  unsigned lcore = 0;
  std::vector<tx::TxTask*> tx;
  std::vector<rx::RxTask*> rx;
  rx::FlowTable* table = nullptr;
  std::vector<rx::HandoffRing*> in;  // from every other worker
  // The answers of the responder on this worker's flows (null: none), sent
  // on its TX queue of each answer's port, in the run and in the drain.
  endpoint::AnswerQueue* answers = nullptr;
  endpoint::Responder* responder = nullptr;  // this worker's (null: none)
  std::vector<AnswerPort> answer_ports;  // per plan port
  // The answers of the hosts on its RX queues' ports (ARP, ND, echo:
  // endpoint/neighbor.h; null: no RX queue), sent the same way, counted
  // apart from the test's frames in host_answer_ports.
  endpoint::AnswerQueue* host_answers = nullptr;
  std::vector<AnswerPort> host_answer_ports;  // per plan port
  int tag_off = -1;  // TX template tag: cleared in every answer mbuf
  // Collective cells' ranks on this worker (engine/cell_work.h): polled every loop.
  std::vector<CellWork*> cells;
  std::vector<std::string> names;
  std::atomic<int> phase{kRun};
  // The lcore's thread and its run delay when it started (ThreadRunDelayNs),
  // set by the lcore before its first poll: the time the kernel kept it from
  // its CPU in the run is the growth of that (LiveRun::Runtime).
  std::atomic<int> tid{0};
  int nice = 0;  // the lcore thread's nice value, set at its start (0: left as it is); PlaceOnCpus picks it
  int cpu = -1;                  // the CPU its lcore runs on (PlaceOnCpus)
  int64_t steal_start_ns = -1;   // that CPU's steal (ns) at the launch, -1 unknown
  std::atomic<int64_t> run_delay_start_ns{-1};
  // Written by the lcore only, read by anyone (show runtime).
  alignas(64) Counter polls, busy_polls, tx_packets, rx_packets, tx_cycles, rx_cycles, handoff_in,
      handoff_max_polls, handoff_max_ns;
  // Turns of the loop that came more than 1 ms after the one before (the
  // lcore held up by the host, or by its own work): how many, their TSC
  // ticks in all, the longest. Whether or not they cost a slot or a sample.
  Counter holdups, holdup_ticks, holdup_max_ticks;
  // Turns 0.1 to 1 ms after the one before: the lcore away in slices too
  // short for a hold-up (how many, their ticks in all). A TX shortfall with
  // no hold-up is explained by these or by its TX path (tester_limits.cc).
  Counter short_holdups, short_holdup_ticks;
  // The first kHoldupLog hold-ups, each from the turn before it to the turn
  // after (TSC): what a collective's iterations overlapped (written by the
  // lcore, read once it has stopped). `holdup_logged` may pass kHoldupLog:
  // those after are counted, not placed.
  struct HoldupSpan {
    uint64_t from_tsc = 0, to_tsc = 0;
  };
  static constexpr size_t kHoldupLog = 1024;
  std::vector<HoldupSpan> holdup_log = std::vector<HoldupSpan>(kHoldupLog);
  uint64_t holdup_logged = 0;
  TscClock clock;
};

int LcoreMain(void* arg);

// Sets each iteration's tester_holdup_ns and tester_held from the workers'
// hold-up logs (engine/cell_run.cc), once the lcores have stopped.
struct CellIteration;  // engine.h
void MarkTesterHoldups(std::vector<CellIteration>& iterations, const std::vector<LcoreWork>& work);

// Before the launch: each worker's CPU and that CPU's steal so far, and its
// nice value: -20 (the most CPU weight a normal task gets) only on a CPU of
// its own; beside the main lcore (the run's control) or another lcore it
// would take their time instead of a stranger's. With `kernel_io` (a port
// whose frames pass through the kernel: af_packet) 0: the kernel's network
// work that lands on the worker's CPU (softirqs run by ksoftirqd, a tbf's
// timer) is then part of the tester's own I/O, and a worker at -20 starved
// it: collective iterations in the lab stretched by 16-99 ms with no
// hold-up of the worker's (2 of 2 runs of lab-collective; at 0, 3 of 3 clean).
void PlaceOnCpus(std::vector<LcoreWork>& work, bool kernel_io);
// The worker's counters so far (any thread may read them), with its CPU, its
// thread's waits for it (guest_wait_ns) and the hypervisor's steal of it
// (host_steal_ns) since the launch; `steal` is HostStealNs() now.
LcoreStats ReadLcoreStats(const LcoreWork& w, const std::vector<int64_t>& steal);

}  // namespace fg::engine
