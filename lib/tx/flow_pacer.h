// tx/flow_pacer.h: per-flow send times for the flows one TX task owns.
//
// Each flow has its own rate, hence its own interval and next send time.
// Flows not yet due wait in a timer wheel (4096 slots of 1024 TSC ticks,
// doubly linked so a flow moves at once when its rate changes); flows due
// wait in a FIFO and take turns, so flows that are all
// behind (rates summing above what the port takes) share it evenly. A flow
// whose later slots have passed too sends them in the same turn, up to
// kMaxRun frames back to back (a catch-up run: the flow's state is touched
// once for the run). A turn costs a FIFO pop and a wheel insert: no heap, no
// division. A flow that had to give up slots (the lcore cannot keep up with
// the rates: every flow waits its round in the FIFO) goes straight back to
// the FIFO's tail after its run, even if its next slot is a little ahead;
// popped before that slot, it goes to the wheel then, so no frame is ever
// sent before its time.
//
// Times are TSC ticks since the run's start << kFpShift (as TxTask's
// pacer), so intervals keep 1/4096 tick of precision. Every flow's due count
// (what its rate called for: TxCounters::due) is kept exactly across rate
// changes and pauses, as segments: a change closes the flow's segment at the
// slots it has passed.
//
//   fg::tx::FlowPacer p({1000, 2000}, tsc_hz);        // flow 0 at 1 kpps, flow 1 at 2 kpps
//   uint32_t flows[32];
//   unsigned n = p.Next(now_fp, 32, flows, &skipped, &stalls);   // a flow per frame
//   FlowPacer::Run runs[32];                                     // or (flow, count) per turn
//   n = p.Next(now_fp, 32, nullptr, &skipped, &stalls, runs, &nruns);
//   p.SetRate(1, 500, now_fp);                        // from the owner lcore
#pragma once

#include <cstdint>
#include <vector>

namespace fg::tx {

class FlowPacer {
 public:
  static constexpr int kFpShift = 12;
  static constexpr int kSlotTickBits = 10;  // a wheel slot: 1024 TSC ticks
  static constexpr int kSlotFpBits = kFpShift + kSlotTickBits;
  static constexpr uint32_t kWheelSlots = 4096;
  static constexpr uint32_t kNil = UINT32_MAX;
  // The most frames of one flow in a row when it is behind (a catch-up run):
  // a burst's worth, the one burst the stream pacer keeps after a hold-up.
  static constexpr unsigned kMaxRun = 32;
  // A turn's frames: `count` frames of `flow`, adjacent in Next's `out`.
  struct Run {
    uint32_t flow;
    uint32_t count;
  };

  // `pps[f]` > 0 and finite for every flow; first sends staggered over one interval.
  FlowPacer(const std::vector<double>& pps, uint64_t tsc_hz);

  uint32_t flows() const { return static_cast<uint32_t>(hot_.size()); }
  double rate(uint32_t f) const { return pps_[f]; }

  // Up to `n` frames due at `now_fp`, a flow per frame, into `out`: a turn of
  // the FIFO gives a flow one frame, or up to kMaxRun in a row (adjacent in
  // `out`) when that many of its slots have passed. A flow more than 1 ms
  // and kMaxRun intervals behind gives up the slots it missed before its
  // last kMaxRun (added to `*skipped`, one `*stalls` per such flow): those
  // it sends now, as the stream pacer sends one burst after a hold-up;
  // the most such a flow was behind is `longest_stall_fp()`.
  // With `runs`, the turns too, in order (`*nruns` of them, at most n): what
  // TX takes (`out` may then be null), filling and counting run by run.
  unsigned Next(uint64_t now_fp, unsigned n, uint32_t* out, uint64_t* skipped, uint64_t* stalls,
                Run* runs = nullptr, unsigned* nruns = nullptr);

  // A new rate for flow f from now (no catch-up on the old one): its next
  // frame goes now (a live change takes effect at once).
  void SetRate(uint32_t f, double pps, uint64_t now_fp);
  // A new rate for flow f that keeps its phase: the next frame one new
  // interval after its last (or now, if that has passed). For rates that
  // change often (DCQCN: every timer event), where SetRate's frame at once
  // would add a frame to each change.
  void Retime(uint32_t f, double pps, uint64_t now_fp);
  // Every flow's rate times `factor` (a stream's rate set as a whole); the
  // flows restart staggered over their new intervals, as at the start.
  void Scale(double factor, uint64_t now_fp);
  void Pause(uint64_t now_fp);
  void Resume(uint64_t now_fp);
  bool paused() const { return paused_; }
  // The most a flow was behind when it gave up slots (0: never), in the
  // pacer's fixed point: how long the lcore was away at its worst.
  uint64_t longest_stall_fp() const { return longest_stall_fp_; }
  // Slots flow f gave up that way (the stream's `*skipped`, flow by flow).
  uint64_t skipped(uint32_t f) const { return skipped_[f]; }

  // Frames the rates called for up to `t_fp` (every slot due before it),
  // summed over the flows; with `per_flow`, flow by flow too.
  uint64_t Due(uint64_t t_fp, std::vector<uint64_t>* per_flow = nullptr) const;
  // The earliest next send time of any flow (for a scheduled TX stamp); 0 when none waits.
  uint64_t next_fp(uint32_t f) const { return hot_[f].next; }

 private:
  static uint64_t IntervalFp(double pps, uint64_t hz);
  void Insert(uint32_t f);  // into the wheel at hot_[f].next
  void Unlink(uint32_t f);  // out of the wheel (if there)
  void PushReady(uint32_t f);
  void CloseSegment(uint32_t f);  // at the slots passed
  void Restart(uint64_t now_fp);  // every flow a new segment from now, staggered
  uint64_t hz_;
  uint64_t ms_fp_;
  std::vector<double> pps_;
  // What every frame of a flow touches, in one 32-byte record (two flows a
  // cache line): its next send time and interval, its wheel links and where
  // it is (slot index, kInReady or kNil: neither).
  struct Hot {
    uint64_t next = 0, iv = 0;
    uint32_t prev = kNil, link = kNil, where = kNil, unused = 0;
  };
  std::vector<Hot> hot_;
  std::vector<uint64_t> seg_start_, due_closed_;  // rate changes and Due only
  std::vector<uint64_t> skipped_;                 // per flow, slots given up (hold-ups only)
  std::vector<uint32_t> head_;                    // wheel: per slot a list head
  static constexpr uint32_t kInReady = kWheelSlots;
  uint64_t wheel_pos_ = 0;  // next slot number to sweep
  uint32_t in_wheel_ = 0;   // flows in the wheel (the rest are in the FIFO or nowhere)
  std::vector<uint32_t> ready_;
  uint32_t ready_head_ = 0, ready_size_ = 0;
  bool paused_ = false;
  uint64_t longest_stall_fp_ = 0;
};

}  // namespace fg::tx
