// engine/cell_run.cc: LiveRun's collective cells (engine/cell_work.h), set
// up before the lcores start: each rank's barrier on the worker that owns
// its QPs, each worker's QPs of the cell, the responders' arrivals routed
// to them, and the cell's end to its TX shards.
#include <algorithm>

#include "absl/strings/str_format.h"
#include "engine/cell_work.h"
#include "engine/engine.h"
#include "engine/worker.h"

namespace fg::engine {

namespace {

// A worker's responder reports every watched QP here; the slot names the cell.
struct ArrivalsByCell : endpoint::ArrivalSink {
  std::vector<CellWork*> by_slot;
  void OnReached(uint32_t slot, uint64_t rx_ns) override { by_slot[slot]->OnReached(slot, rx_ns); }
};

}  // namespace

void MarkTesterHoldups(std::vector<CellIteration>& iterations, const std::vector<LcoreWork>& work) {
  // Iterations and each lcore's hold-ups both come in time order: one
  // sweep per lcore (`next`: its first hold-up that may still reach an
  // iteration), not every hold-up for every iteration.
  std::vector<size_t> next(work.size(), 0);
  for (CellIteration& it : iterations) {
    if (it.last_rx_ns == 0) continue;  // not completed: failed anyway
    const uint64_t from = it.compute_start_ns == 0   ? it.first_tx_ns
                          : it.first_tx_ns == 0      ? it.compute_start_ns
                                                     : std::min(it.compute_start_ns, it.first_tx_ns);
    const uint64_t to = it.last_rx_ns;
    for (size_t wi = 0; wi < work.size(); ++wi) {
      const LcoreWork& w = work[wi];
      const size_t placed = std::min<uint64_t>(w.holdup_logged, LcoreWork::kHoldupLog);
      size_t& k0 = next[wi];
      while (k0 < placed && w.clock.ToNs(w.holdup_log[k0].to_tsc) <= from) ++k0;
      for (size_t k = k0; k < placed && w.clock.ToNs(w.holdup_log[k].from_tsc) < to; ++k) {
        const uint64_t a = std::max(from, w.clock.ToNs(w.holdup_log[k].from_tsc));
        const uint64_t b = std::min(to, w.clock.ToNs(w.holdup_log[k].to_tsc));
        if (a < b) it.tester_holdup_ns += b - a;
      }
      // Hold-ups past the log: any iteration after its last placed one may hold them.
      if (w.holdup_logged > placed && (placed == 0 || to > w.clock.ToNs(w.holdup_log[placed - 1].from_tsc))) {
        it.tester_held = true;
      }
    }
    // A hold-up stretches the iteration by at most its length: held when
    // that could be more than 1 % of the iteration's time.
    it.tester_held = it.tester_held || it.tester_holdup_ns * 100 > to - from;
  }
}

absl::Status LiveRun::SetUpCells() {
  const uint32_t nw = static_cast<uint32_t>(work_.size());
  const Placement& pl = placement_;
  for (size_t i = 0; i < streams_.size(); ++i) {
    const stream::CompiledStream& s = streams_[i];
    if (s.cell == nullptr) continue;
    auto it = std::find_if(cells_.begin(), cells_.end(), [&](const auto& c) { return c->cs == s.cell; });
    if (it == cells_.end()) {
      cells_.push_back(std::make_unique<CellRun>());
      cells_.back()->cs = s.cell;
      it = cells_.end() - 1;
    }
    (*it)->streams.push_back(i);
  }
  if (cells_.empty()) return absl::OkStatus();
  std::vector<std::unique_ptr<ArrivalsByCell>> sinks(nw);
  for (auto& cr : cells_) {
    const stream::CellStreams& cs = *cr->cs;
    const uint32_t nranks = cs.cell.schedule().ranks();
    // Each rank on the worker that owns its QPs (placement: flow_home).
    std::vector<uint32_t> rank_worker(nranks, kNoOwner);
    for (uint32_t qp = 0; qp < cs.cell.qps().size(); ++qp) {
      const uint32_t from = cs.cell.qps()[qp].from;
      const uint32_t owner = pl.owner[cs.frames.flow_id(qp)];
      if (rank_worker[from] != kNoOwner && rank_worker[from] != owner) {
        return absl::InternalError(absl::StrFormat("rank %u's QPs are on workers %u and %u", from, rank_worker[from], owner));
      }
      rank_worker[from] = owner;
    }
    for (uint32_t r = 0; r < nranks; ++r) {
      if (rank_worker[r] == kNoOwner) return absl::InternalError(absl::StrFormat("rank %u sends on no QP", r));
    }
    CellShared& sh = cr->shared;
    const stream::CellPlay& play = cs.play;
    sh.iterations = play.iterations;
    sh.timeout_ticks = clock_.FromNs(static_cast<uint64_t>(play.timeout_ns));
    sh.nworkers = nw;
    sh.straggler_rank = play.straggler_rank;
    sh.straggler_ns = static_cast<uint64_t>(play.straggler_delay_ns);
    sh.compute_ticks = clock_.FromNs(static_cast<uint64_t>(play.compute_ns));
    sh.lead_ticks = clock_.FromNs(static_cast<uint64_t>(static_cast<double>(play.compute_ns) * (1 - play.overlap)));
    sh.workers = std::make_unique<CellShared::Worker[]>(nw);
    sh.recorded.reserve(sh.iterations);
    std::vector<endpoint::Mailbox*> boxes;
    for (uint32_t w = 0; w < nw; ++w) {
      // 4,096 events a ring (160 KiB): more wait, in order, in the sender's CellWork.
      cr->boxes.push_back(std::make_unique<endpoint::Mailbox>(nw, 4096));
      boxes.push_back(cr->boxes.back().get());
    }
    for (uint32_t w = 0; w < nw; ++w) {
      cr->work.push_back(std::make_unique<CellWork>(cs, sh, w, rank_worker, boxes, clock_));
      CellWork& cw = *cr->work.back();
      for (tx::TxTask* t : work_[w].tx) {
        for (size_t k = 0; k < t->num_streams(); ++k) {
          const stream::CompiledStream& s = t->stream(k);
          if (s.cell != cr->cs) continue;
          t->SetCellFinished(k, &sh.finished);
          const std::vector<uint32_t>& fl = t->flows(k);
          for (uint32_t f = 0; f < fl.size(); ++f) {
            const uint32_t g = s.flow_id + fl[f];
            cw.AddQp(cs.frames.qp_at(s.cell_first + fl[f]), t, static_cast<uint32_t>(k), f, pl.slot[g]);
            if (sinks[w] == nullptr) {
              sinks[w] = std::make_unique<ArrivalsByCell>();
              sinks[w]->by_slot.assign(tables_[w]->size(), nullptr);
            }
            sinks[w]->by_slot[pl.slot[g]] = &cw;
          }
        }
      }
      if (sinks[w] != nullptr && work_[w].responder == nullptr) {
        return absl::InternalError(absl::StrFormat("worker %u sends a cell's QPs and has no responder", w));
      }
      cw.SetResponder(work_[w].responder);
      work_[w].cells.push_back(&cw);
    }
  }
  for (uint32_t w = 0; w < nw; ++w) {
    if (sinks[w] == nullptr) continue;
    work_[w].responder->SetArrivalSink(sinks[w].get());
    arrival_sinks_.push_back(std::move(sinks[w]));
  }
  return absl::OkStatus();
}

}  // namespace fg::engine
