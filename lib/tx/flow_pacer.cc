#include "tx/flow_pacer.h"

#include <algorithm>
#include <cmath>

namespace fg::tx {

namespace {
// As TxTask's pacer: intervals above 2^57 fp (the plan's minimum rate is far
// below that) are clamped, so n * interval never overflows.
constexpr double kMaxIntervalFp = static_cast<double>(uint64_t{1} << 57);
}  // namespace

uint64_t FlowPacer::IntervalFp(double pps, uint64_t hz) {
  const double fp = static_cast<double>(hz) * (1 << kFpShift) / pps + 0.5;
  return fp >= kMaxIntervalFp ? static_cast<uint64_t>(kMaxIntervalFp) : std::max<uint64_t>(1, static_cast<uint64_t>(fp));
}

FlowPacer::FlowPacer(const std::vector<double>& pps, uint64_t tsc_hz)
    : hz_(tsc_hz),
      ms_fp_((tsc_hz / 1000) << kFpShift),
      pps_(pps),
      hot_(pps.size()),
      seg_start_(pps.size()),
      due_closed_(pps.size(), 0),
      skipped_(pps.size(), 0),
      head_(kWheelSlots, kNil),
      ready_(pps.size()) {
  const uint32_t n = flows();
  for (uint32_t f = 0; f < n; ++f) {
    hot_[f].iv = IntervalFp(pps_[f], hz_);
    // Staggered: flow f first sends f/n of its interval after the start, so
    // equal flows do not all fall due in the same slot.
    hot_[f].next = seg_start_[f] = static_cast<uint64_t>(static_cast<double>(hot_[f].iv) * f / n);
    Insert(f);
  }
}

void FlowPacer::Insert(uint32_t f) {
  const uint32_t s = static_cast<uint32_t>((hot_[f].next >> kSlotFpBits) & (kWheelSlots - 1));
  hot_[f].prev = kNil;
  hot_[f].link = head_[s];
  if (head_[s] != kNil) hot_[head_[s]].prev = f;
  head_[s] = f;
  hot_[f].where = s;
  ++in_wheel_;
}

void FlowPacer::Unlink(uint32_t f) {
  const uint32_t s = hot_[f].where;
  if (s == kNil || s == kInReady) return;
  if (hot_[f].prev != kNil) {
    hot_[hot_[f].prev].link = hot_[f].link;
  } else {
    head_[s] = hot_[f].link;
  }
  if (hot_[f].link != kNil) hot_[hot_[f].link].prev = hot_[f].prev;
  hot_[f].where = kNil;
  --in_wheel_;
}

// Inline: Next pushes a flow still behind after each of its frames.
[[gnu::always_inline]] inline void FlowPacer::PushReady(uint32_t f) {
  uint32_t at = ready_head_ + ready_size_;  // ready_size_ < flows(): one wrap at most, no division
  if (at >= flows()) at -= flows();
  ready_[at] = f;
  ++ready_size_;
  hot_[f].where = kInReady;
}

// Measured cost: ~60 instructions a frame with 8 flows all behind their
// rates (tools/count_instructions.sh build closed), sweeping no wheel slot
// when no flow waits in the wheel (the sweep of empty slots per poll used to
// grow with the time between polls). Timed by build/test/bench/pacer_bench,
// not counted (under callgrind valgrind's slow clock makes the sweep
// dominate): BM_FlowPacerAllBehind/4096 ~20 ns a poll of 32 frames, /65536
// ~23 ns, since a flow that gave up slots goes back to the FIFO's tail and
// not through the wheel (the sweep chased wheel links in L2). In TX, 4,096
// own-rate flows all behind cost ~0.96x one flow's cycles a frame
// (tools/bench_flow_rates.sh build 5 5). docs/benchmarks.md "Issue 13,
// stage 4", "stage 5" and "Per-flow rates: a flow that gave up slots goes
// straight back to the FIFO".
unsigned FlowPacer::Next(uint64_t now_fp, unsigned n, uint32_t* out, uint64_t* skipped, uint64_t* stalls, Run* runs,
                         unsigned* nruns) {
  if (nruns != nullptr) *nruns = 0;
  if (paused_) return 0;
  const uint64_t cur = now_fp >> kSlotFpBits;
  // Sweep the wheel up to now: due flows to the FIFO, the others (a later
  // turn of the wheel, or later in the current slot) back in. The current
  // slot is swept again on every poll until time moves past it; after a
  // hold-up longer than the wheel, every list is swept once. With every
  // flow due (all behind their rates: none in the wheel) nothing is swept.
  for (uint32_t steps = 0; in_wheel_ != 0 && wheel_pos_ <= cur && steps < kWheelSlots; ++steps) {
    const uint32_t s = static_cast<uint32_t>(wheel_pos_ & (kWheelSlots - 1));
    uint32_t f = head_[s];
    head_[s] = kNil;
    while (f != kNil) {
      const uint32_t nx = hot_[f].link;
      --in_wheel_;  // out of this slot: to the FIFO, or back in (Insert counts it again)
      if (hot_[f].next <= now_fp) {
        PushReady(f);
      } else {
        Insert(f);
      }
      f = nx;
    }
    if (wheel_pos_ == cur) break;
    ++wheel_pos_;
  }
  if (wheel_pos_ < cur) wheel_pos_ = cur;
  unsigned k = 0;
  const uint32_t nf = flows();
  while (k < n && ready_size_ != 0) {
    const uint32_t f = ready_[ready_head_];
    if (ready_size_ > 4) {  // the flow four places on: its record while this one is sent
      const uint32_t ahead = ready_head_ + 4 < nf ? ready_head_ + 4 : ready_head_ + 4 - nf;
      __builtin_prefetch(&hot_[ready_[ahead]], 1);
    }
    ready_head_ = ready_head_ + 1 == nf ? 0 : ready_head_ + 1;
    --ready_size_;
    // Not due yet: put back early (a flow that gave up slots, below), and
    // the FIFO drained before its time.
    if (hot_[f].next > now_fp) [[unlikely]] {
      Insert(f);
      continue;
    }
    Hot& h = hot_[f];
    const uint64_t behind = now_fp - h.next;
    const bool gave_up = behind > ms_fp_ && behind >= kMaxRun * h.iv;
    if (gave_up) {
      // Far behind: the slots missed before the last run's worth are given up
      // (as the stream pacer keeps one burst); the run goes now.
      const uint64_t skip = behind / h.iv - (kMaxRun - 1);
      *skipped += skip;
      skipped_[f] += skip;
      ++*stalls;
      longest_stall_fp_ = std::max(longest_stall_fp_, behind);
      h.next += skip * h.iv;
    }
    // This frame, and the flow's later slots that have passed too, up to a
    // run of kMaxRun: a flow behind catches up in one turn, its state in L1
    // for the whole run, instead of one frame per trip round the FIFO.
    const unsigned run_start = k, run_end = k + std::min(kMaxRun, n - k);
    uint64_t t = h.next;
    do {
      ++k;
      t += h.iv;
    } while (k < run_end && t <= now_fp);
    h.next = t;
    if (out != nullptr) {
      for (unsigned i = run_start; i < k; ++i) out[i] = f;
    }
    if (runs != nullptr) runs[(*nruns)++] = Run{f, k - run_start};
    // A flow that gave up slots waited over 1 ms in a FIFO of other flows
    // behind: it goes straight to the FIFO's tail (its place in the round),
    // not through the wheel, whose sweep would chase its list links back
    // out of L2 a few microseconds later. Popped before its time (a FIFO
    // that emptied meanwhile), it goes to the wheel then: never sent early.
    if (h.next <= now_fp || (gave_up && ready_size_ >= kMaxRun)) {
      PushReady(f);
    } else {
      Insert(f);
    }
  }
  return k;
}

void FlowPacer::CloseSegment(uint32_t f) {
  due_closed_[f] += (hot_[f].next - seg_start_[f]) / hot_[f].iv;
}

void FlowPacer::SetRate(uint32_t f, double pps, uint64_t now_fp) {
  if (!paused_) CloseSegment(f);
  pps_[f] = pps;
  hot_[f].iv = IntervalFp(pps, hz_);
  if (paused_) return;  // Resume starts its segment
  seg_start_[f] = hot_[f].next = now_fp;
  if (hot_[f].where != kInReady) {
    Unlink(f);
    PushReady(f);
  }
}

void FlowPacer::Retime(uint32_t f, double pps, uint64_t now_fp) {
  const bool in_fifo = hot_[f].where == kInReady;
  if (paused_ || (in_fifo && hot_[f].next <= now_fp)) {
    SetRate(f, pps, now_fp);  // paused: Resume restarts it; due already: it goes now either way
    return;
  }
  CloseSegment(f);  // the old rate's slots before its next one
  const uint64_t last = hot_[f].next >= hot_[f].iv ? hot_[f].next - hot_[f].iv : 0;
  pps_[f] = pps;
  hot_[f].iv = IntervalFp(pps, hz_);
  const uint64_t next = std::max(now_fp, last + hot_[f].iv);
  seg_start_[f] = hot_[f].next = next;
  if (in_fifo) return;  // back in the FIFO early (Next): it waits its turn there, sent at `next` at the earliest
  Unlink(f);
  if (next <= now_fp) {
    PushReady(f);
  } else {
    Insert(f);
  }
}

void FlowPacer::Restart(uint64_t now_fp) {
  // Every flow starts a new segment, staggered over its interval as at the
  // start (no burst of every flow at once); the FIFO is emptied, so every
  // flow waits in the wheel for its own time.
  ready_size_ = 0;
  const uint32_t n = flows();
  for (uint32_t f = 0; f < n; ++f) {
    seg_start_[f] = hot_[f].next = now_fp + static_cast<uint64_t>(static_cast<double>(hot_[f].iv) * f / n);
    if (hot_[f].where != kInReady) Unlink(f);
    Insert(f);
  }
  wheel_pos_ = std::min(wheel_pos_, now_fp >> kSlotFpBits);
}

void FlowPacer::Scale(double factor, uint64_t now_fp) {
  if (factor == 1) return;
  if (!paused_) {
    for (uint32_t f = 0; f < flows(); ++f) CloseSegment(f);
  }
  for (uint32_t f = 0; f < flows(); ++f) {
    pps_[f] *= factor;
    hot_[f].iv = IntervalFp(pps_[f], hz_);
  }
  if (!paused_) Restart(now_fp);  // paused: Resume restarts them
}

void FlowPacer::Pause(uint64_t now_fp) {
  (void)now_fp;
  if (paused_) return;
  for (uint32_t f = 0; f < flows(); ++f) CloseSegment(f);
  paused_ = true;
}

void FlowPacer::Resume(uint64_t now_fp) {
  if (!paused_) return;
  paused_ = false;
  Restart(now_fp);
}

uint64_t FlowPacer::Due(uint64_t t_fp, std::vector<uint64_t>* per_flow) const {
  uint64_t sum = 0;
  if (per_flow != nullptr) per_flow->assign(flows(), 0);
  for (uint32_t f = 0; f < flows(); ++f) {
    uint64_t d = due_closed_[f];
    if (!paused_ && t_fp > seg_start_[f]) d += (t_fp - seg_start_[f] + hot_[f].iv - 1) / hot_[f].iv;
    sum += d;
    if (per_flow != nullptr) (*per_flow)[f] = d;
  }
  return sum;
}

}  // namespace fg::tx
