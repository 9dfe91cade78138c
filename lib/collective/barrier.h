// collective/barrier.h: one rank's way through an iteration of a cell: its
// step k+1 starts only when every QP segment it receives in step k has
// arrived (step 0 at once), as in a real job, so a late or lost packet
// stretches exactly the steps that wait for it.
//
// Arrivals may come early (a predecessor several steps ahead of this rank in
// a ring): each step's count is kept until the barrier reaches it. Plain
// state of one rank, driven by its owner lcore (or a test); no clock, no I/O.
//
//   fg::collective::Barrier b(cell, /*rank=*/3);
//   b.Start();                          // step 0 released: send its segments
//   if (auto next = b.Arrived(/*step=*/0)) ... // *next: the step now released (steps() once done)
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "collective/cell.h"

namespace fg::collective {

class Barrier {
 public:
  Barrier(const Cell& cell, uint32_t rank);

  // A new iteration: nothing arrived, step 0 released.
  void Start();
  // One segment of step k has arrived (complete, in order). Returns the new
  // step() when the arrival completed the step the barrier waited for: every
  // step after the previous step() up to it (below steps()) is now released,
  // k+1 and, when their arrivals all came early, the ones after it; steps():
  // the rank's last step is complete (its iteration is done). nullopt: the
  // barrier still waits.
  std::optional<uint32_t> Arrived(uint32_t k);

  // The step whose sends are released and whose arrivals the barrier waits
  // for; steps() once the rank is done.
  uint32_t step() const { return step_; }
  bool done() const { return step_ == steps_; }
  uint32_t steps() const { return steps_; }
  // Arrivals of step k so far, and due.
  uint32_t arrived(uint32_t k) const { return arrived_[k]; }
  uint32_t due(uint32_t k) const { return due_[k]; }
  // More arrivals for a step than due: a duplicate delivery (a bug upstream,
  // or a forged frame); counted, never moves the barrier twice.
  uint64_t excess() const { return excess_; }

 private:
  uint32_t steps_;
  uint32_t step_ = 0;
  uint64_t excess_ = 0;
  std::vector<uint32_t> due_, arrived_;
};

}  // namespace fg::collective
