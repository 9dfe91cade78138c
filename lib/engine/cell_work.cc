#include "engine/cell_work.h"

#include <algorithm>

#include "proto/roce.h"

namespace fg::engine {

CellWork::CellWork(const stream::CellStreams& cs, CellShared& shared, uint32_t self, std::vector<uint32_t> rank_worker,
                   std::vector<endpoint::Mailbox*> boxes, TscClock clock)
    : cs_(cs),
      shared_(shared),
      self_(self),
      rank_worker_(std::move(rank_worker)),
      local_rank_(rank_worker_.size(), -1),
      local_qp_(cs.cell.qps().size(), -1),
      boxes_(std::move(boxes)),
      clock_(clock) {
  for (uint32_t r = 0; r < rank_worker_.size(); ++r) {
    if (rank_worker_[r] != self_) continue;
    local_rank_[r] = static_cast<int32_t>(ranks_.size());
    ranks_.push_back(RankRef{r, collective::Barrier(cs.cell, r)});
  }
  psn_start_ = cs.frames.ProgramFor(0, cs.cell.message_lengths().front()).psn_start();
}

void CellWork::AddQp(uint32_t qp, tx::TxTask* task, uint32_t shard, uint32_t flow, uint32_t slot) {
  local_qp_[qp] = static_cast<int32_t>(qps_.size());
  qps_.push_back(QpRef{qp, task, shard, flow, slot, 0, 0});
  if (qp_of_slot_.size() <= slot) qp_of_slot_.resize(slot + 1, -1);
  qp_of_slot_[slot] = static_cast<int32_t>(qps_.size() - 1);
  if (std::find(shards_.begin(), shards_.end(), std::make_pair(task, shard)) == shards_.end()) {
    shards_.emplace_back(task, shard);
  }
}

uint32_t CellWork::Psn(const QpRef& q, uint32_t segment) const {
  const collective::Qp& c = cs_.cell.qps()[q.qp];
  const collective::Segment& s = c.segments[segment];
  const uint64_t end = uint64_t{iteration_ - 1} * c.packets + s.first_packet + s.packets;
  return static_cast<uint32_t>((psn_start_ + end) & proto::roce::kPsnMask);
}

// Iteration `iteration` starts here: every QP watched for its first
// segment's end, every rank's first step released.
void CellWork::Start(uint32_t iteration) {
  iteration_ = iteration;
  last_rx_ns_ = 0;
  for (auto& [task, shard] : shards_) task->TakeCellFirstTx(shard);  // from this iteration's first frame on
  for (QpRef& q : qps_) {
    q.released = 0;
    q.arrived = 0;
    responder_->Watch(q.slot, Psn(q, 0));
  }
  ranks_left_ = static_cast<uint32_t>(ranks_.size()) + 1;  // (+1: held until every rank is started)
  for (RankRef& r : ranks_) {
    r.barrier.Start();
    if (r.barrier.done()) {
      RankDone();  // a rank with nothing to receive (no schedule has one today)
    } else {
      Release(r);
    }
  }
  RankDone();
}

void CellWork::Release(RankRef& r) {
  if (static_cast<int64_t>(r.rank) == shared_.straggler_rank) [[unlikely]] {
    timers_.Arm(clock_.ToNs(ReadTsc()) + shared_.straggler_ns, static_cast<uint32_t>(local_rank_[r.rank]),
                r.barrier.step());
    return;
  }
  ReleaseUpTo(r, r.barrier.step());
}

void CellWork::ReleaseUpTo(RankRef& r, uint32_t step) {
  const auto [first, end] = cs_.cell.QpsFrom(r.rank);
  for (uint32_t qp = first; qp < end; ++qp) {
    QpRef& q = qps_[static_cast<size_t>(local_qp_[qp])];
    const collective::Qp& c = cs_.cell.qps()[qp];
    const uint32_t before = q.released;
    while (q.released < c.segments.size() && c.segments[q.released].step <= step) ++q.released;
    if (q.released == before) continue;
    const collective::Segment& s = c.segments[q.released - 1];
    q.task->ReleaseCell(q.shard, q.flow,
                        static_cast<uint32_t>(uint64_t{iteration_ - 1} * c.packets + s.first_packet + s.packets));
  }
}

void CellWork::OnReached(uint32_t slot, uint64_t rx_ns) {
  QpRef& q = qps_[static_cast<size_t>(qp_of_slot_[slot])];
  const collective::Qp& c = cs_.cell.qps()[q.qp];
  const collective::Segment& s = c.segments[q.arrived];
  if (++q.arrived < c.segments.size()) responder_->Watch(slot, Psn(q, q.arrived));
  const uint32_t owner = rank_worker_[c.to];
  if (owner == self_) {
    Arrived(static_cast<uint32_t>(local_rank_[c.to]), s.step, rx_ns);
    return;
  }
  const endpoint::Event e = endpoint::Event::DataArrivedAt(c.to, c.from, {s.step, s.bytes, iteration_}, rx_ns);
  if (!waiting_.empty() || !boxes_[owner]->From(self_).Push(e)) {
    waiting_.emplace_back(owner, e);  // kept in order; sent when the ring has room
  }
}

void CellWork::Arrived(uint32_t local_rank, uint32_t step, uint64_t at_ns) {
  RankRef& r = ranks_[local_rank];
  // Every arrival, not only the one that completes a rank: arrivals are not
  // handled in receive order (rings drained one sender at a time, steps that
  // came early), and the iteration ends at the latest.
  last_rx_ns_ = std::max(last_rx_ns_, at_ns);
  if (!r.barrier.Arrived(step)) return;
  if (!r.barrier.done()) {
    Release(r);
    return;
  }
  RankDone();
}

void CellWork::RankDone() {
  if (--ranks_left_ != 0) return;
  // Every rank here is done: this worker's part of the iteration.
  uint64_t first = 0;
  for (auto& [task, shard] : shards_) {
    const uint64_t t = task->TakeCellFirstTx(shard);
    if (t != 0 && (first == 0 || t < first)) first = t;
  }
  CellShared::Worker& w = shared_.workers[self_];
  w.first_tx_ns.store(first, std::memory_order_relaxed);
  w.last_rx_ns.store(last_rx_ns_, std::memory_order_relaxed);
  w.done.store(iteration_, std::memory_order_release);
}

void CellWork::Coordinate() {
  const uint32_t go = shared_.go.load(std::memory_order_relaxed);
  const uint64_t now = ReadTsc();
  if (go == 0 && !computing_) {
    if (now < shared_.start_tsc) return;
    compute_tsc_ = now;
    computing_ = true;
  }
  if (computing_) {
    // The next iteration's compute: every rank idle; its communication starts lead_ticks in.
    if (now - compute_tsc_ < shared_.lead_ticks) return;
    computing_ = false;
    go_tsc_ = now;
    shared_.go.store(go + 1, std::memory_order_release);
    return;
  }
  if (shared_.recorded_count.load(std::memory_order_relaxed) == go) return;  // finished
  CellIteration it;
  bool all = true;
  for (uint32_t w = 0; w < shared_.nworkers && all; ++w) {
    all = shared_.workers[w].done.load(std::memory_order_acquire) == go;
  }
  if (all) {
    it.completed = true;
    for (uint32_t w = 0; w < shared_.nworkers; ++w) {
      const uint64_t f = shared_.workers[w].first_tx_ns.load(std::memory_order_relaxed);
      const uint64_t l = shared_.workers[w].last_rx_ns.load(std::memory_order_relaxed);
      if (f != 0 && (it.first_tx_ns == 0 || f < it.first_tx_ns)) it.first_tx_ns = f;
      it.last_rx_ns = std::max(it.last_rx_ns, l);
    }
  } else if (now - go_tsc_ <= shared_.timeout_ticks) {
    return;
  }
  it.compute_start_ns = clock_.ToNs(compute_tsc_);
  shared_.recorded.push_back(it);
  shared_.recorded_count.store(go, std::memory_order_release);
  if (!it.completed || go == shared_.iterations) {
    shared_.finished.store(true, std::memory_order_release);
    return;
  }
  // The next iteration's compute starts now (its communication lead_ticks later).
  compute_tsc_ = now;
  computing_ = true;
}

unsigned CellWork::Poll() {
  unsigned work = 0;
  if (!waiting_.empty()) {
    size_t k = 0;
    while (k < waiting_.size() && boxes_[waiting_[k].first]->From(self_).Push(waiting_[k].second)) ++k;
    waiting_.erase(waiting_.begin(), waiting_.begin() + static_cast<ptrdiff_t>(k));
    work += static_cast<unsigned>(k);
  }
  if (self_ == 0 && !shared_.finished.load(std::memory_order_relaxed)) Coordinate();
  if (const uint32_t go = shared_.go.load(std::memory_order_acquire); go != iteration_ && go != 0 &&
                                                                     !shared_.finished.load(std::memory_order_relaxed)) {
    Start(go);
    ++work;
  }
  work += static_cast<unsigned>(boxes_[self_]->Drain([&](const endpoint::Event& e) {
    // An arrival of the next iteration from a worker that started it before
    // this one looked at `go` (it can only be that one: no worker starts
    // i + 1 before every worker has finished i): start it first.
    if (e.data_arrived.iteration != iteration_) Start(e.data_arrived.iteration);
    Arrived(static_cast<uint32_t>(local_rank_[e.to]), e.data_arrived.step, e.at_ns);
  }));
  if (timers_.armed() != 0) [[unlikely]] {
    work += static_cast<unsigned>(timers_.Expire(clock_.ToNs(ReadTsc()), [&](const endpoint::Timer& t) {
      ReleaseUpTo(ranks_[t.endpoint], t.tag);
    }));
  }
  return work;
}

}  // namespace fg::engine
