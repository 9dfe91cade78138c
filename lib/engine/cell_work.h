// engine/cell_work.h: a collective cell on the workers (issue 28): each
// worker's ranks (their barriers), the QPs they send on, and the arrivals
// its responder sees (inside lib/engine).
//
// A rank lives on the worker that owns its QPs (placement: rank % W). The
// responder of a QP (on the same worker: the QP's owner holds its RX) tells
// the CellWork when the QP's expected PSN passes a segment's end
// (endpoint::ArrivalSink); the CellWork sends the receiving rank's worker a
// DataArrived event (its Mailbox; the same worker: at once), and that
// worker's barrier for the rank releases the rank's next step to its QPs
// (TxTask::ReleaseCell). Iterations are separated by a global barrier:
// worker 0 starts iteration i + 1 when every worker has finished i (all its
// ranks' last steps arrived), and records iteration i's time from the
// first frame any rank sent to the last arrival any rank saw, both stamped
// by the lcores (TX time of the first frame, RX time of the packet that
// completed the last segment).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "base/tsc.h"
#include "collective/barrier.h"
#include "endpoint/event.h"
#include "endpoint/responder.h"
#include "engine/engine.h"
#include "stream/cell_streams.h"
#include "tx/tx.h"

namespace fg::engine {

// What the workers of one cell share (set up before the launch).
struct CellShared {
  uint32_t iterations = 0;            // to run, warm-up included
  uint64_t start_tsc = 0;             // the run's start: the first iteration starts then
  int64_t straggler_rank = -1;        // a rank whose sends of every step start late (-1: none)
  uint64_t straggler_ns = 0;          // by this much
  // Each iteration's compute (every rank idle) and how long after its start
  // the communication starts (compute less the overlap), TSC ticks.
  uint64_t compute_ticks = 0, lead_ticks = 0;
  uint64_t timeout_ticks = 0;         // an iteration not done this long after its start failed
  uint32_t nworkers = 0;
  std::atomic<uint32_t> go{0};        // the iteration started (1-based; 0: none), worker 0 writes
  std::atomic<bool> finished{false};  // every iteration recorded, or one failed: the QPs stop
  struct alignas(64) Worker {
    std::atomic<uint32_t> done{0};  // the last iteration all its ranks finished
    std::atomic<uint64_t> first_tx_ns{0}, last_rx_ns{0};  // its part of it (published before `done`)
  };
  std::unique_ptr<Worker[]> workers;
  std::vector<CellIteration> recorded;  // worker 0 writes; others read after the lcores stop
  std::atomic<uint32_t> recorded_count{0};
};

class CellWork : public endpoint::ArrivalSink {
 public:
  // `self`: this worker's index; `rank_worker[r]`: rank r's worker;
  // `boxes[w]`: worker w's mailbox for this cell.
  CellWork(const stream::CellStreams& cs, CellShared& shared, uint32_t self, std::vector<uint32_t> rank_worker,
           std::vector<endpoint::Mailbox*> boxes, TscClock clock);
  // Set-up: QP `qp` of this worker's ranks, sent by shard `shard` flow
  // `flow` of `task`, received into `slot` of this worker's FlowTable.
  void AddQp(uint32_t qp, tx::TxTask* task, uint32_t shard, uint32_t flow, uint32_t slot);
  void SetResponder(endpoint::Responder* r) { responder_ = r; }
  // On the lcore, every loop: events in, the iteration's start and end.
  // Returns the work done (events, a start), 0 when idle.
  unsigned Poll();
  // The responder: a QP's segment has arrived.
  void OnReached(uint32_t slot, uint64_t rx_ns) override;
  // The (task, shard) pairs this worker sends the cell on.
  const std::vector<std::pair<tx::TxTask*, uint32_t>>& shards() const { return shards_; }

 private:
  struct QpRef {
    uint32_t qp = 0;
    tx::TxTask* task = nullptr;
    uint32_t shard = 0, flow = 0, slot = 0;
    uint32_t released = 0;  // segments released this iteration
    uint32_t arrived = 0;   // segments arrived this iteration
  };
  struct RankRef {
    uint32_t rank = 0;
    collective::Barrier barrier;
  };
  void Start(uint32_t iteration);
  // The rank's QPs: every segment of a step up to its barrier's (the
  // straggler's: `straggler_ns` later, by a timer).
  void Release(RankRef& r);
  void ReleaseUpTo(RankRef& r, uint32_t step);
  void Arrived(uint32_t local_rank, uint32_t step, uint64_t at_ns);
  void RankDone();  // a rank here finished the iteration (the last one: the worker's part published)
  void Coordinate();  // worker 0: the iteration's end, the next one's start
  uint32_t Psn(const QpRef& q, uint32_t segment) const;  // the PSN after segment `segment` this iteration
  const stream::CellStreams& cs_;
  CellShared& shared_;
  uint32_t self_;
  std::vector<uint32_t> rank_worker_;
  std::vector<int32_t> local_rank_;  // by rank: its index in ranks_, -1 elsewhere
  std::vector<RankRef> ranks_;
  std::vector<QpRef> qps_;
  std::vector<int32_t> qp_of_slot_;  // by FlowTable slot: index into qps_, -1 none
  std::vector<int32_t> local_qp_;    // by cell QP: index into qps_, -1 elsewhere
  std::vector<std::pair<tx::TxTask*, uint32_t>> shards_;  // the (task, shard) pairs this cell sends on
  std::vector<endpoint::Mailbox*> boxes_;
  std::vector<std::pair<uint32_t, endpoint::Event>> waiting_;  // (worker, event) its ring had no room for
  endpoint::Responder* responder_ = nullptr;
  endpoint::Timers timers_;  // the straggler's delayed releases (endpoint: its local index, tag: the step)
  TscClock clock_;
  uint32_t psn_start_ = 0;
  uint32_t iteration_ = 0;  // under way here (1-based; 0: none)
  uint32_t ranks_left_ = 0;
  uint64_t last_rx_ns_ = 0;
  uint64_t go_tsc_ = 0;  // worker 0: when the iteration under way started
  uint64_t compute_tsc_ = 0;  // worker 0: when the next iteration's compute began
  bool computing_ = false;    // worker 0: the next iteration is in its compute, not started yet
};

}  // namespace fg::engine

namespace fg::engine {

// One cell of a trial (LiveRun::SetUpCells): what its workers share, their
// mailboxes and their parts.
struct CellRun {
  std::shared_ptr<const stream::CellStreams> cs;
  std::vector<size_t> streams;  // its streams' positions in the trial
  CellShared shared;
  std::vector<std::unique_ptr<endpoint::Mailbox>> boxes;  // per worker
  std::vector<std::unique_ptr<CellWork>> work;            // per worker
};

}  // namespace fg::engine
