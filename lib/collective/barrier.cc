#include "collective/barrier.h"

#include <algorithm>

namespace fg::collective {

Barrier::Barrier(const Cell& cell, uint32_t rank)
    : steps_(cell.schedule().steps()), due_(steps_), arrived_(steps_, 0) {
  for (uint32_t k = 0; k < steps_; ++k) due_[k] = cell.ArrivalsDue(rank, k);
}

void Barrier::Start() {
  step_ = 0;
  std::fill(arrived_.begin(), arrived_.end(), 0);
  // A step with nothing to receive (none in the schedules today) is passed at once.
  while (step_ < steps_ && due_[step_] == 0) ++step_;
}

std::optional<uint32_t> Barrier::Arrived(uint32_t k) {
  if (k >= steps_ || arrived_[k] == due_[k]) {
    ++excess_;
    return std::nullopt;
  }
  ++arrived_[k];
  if (k != step_ || arrived_[k] < due_[k]) return std::nullopt;
  // Step k complete: release the next, and any after it whose arrivals are all in already.
  do {
    ++step_;
  } while (step_ < steps_ && arrived_[step_] == due_[step_]);
  return step_;
}

}  // namespace fg::collective
