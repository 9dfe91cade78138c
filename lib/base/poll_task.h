// base/poll_task.h: the unit of work a data-path lcore runs.
//
// Like a testpmd forwarding engine: one Poll() does one burst of work and
// returns how many packets it handled, so idle polls can be counted. An lcore
// runs its tasks round-robin, which lets one core carry TX and RX of a
// loopback without either starving the other.
//
//   class MyTask : public fg::PollTask {
//     unsigned Poll() override { return DoOneBurst(); }
//     bool Done() const override { return false; }
//     void Finish() override {}   // on the task's lcore, after the last Poll
//   };
#pragma once

namespace fg {

class PollTask {
 public:
  virtual ~PollTask() = default;
  // One burst; the number of packets sent or received (0: idle).
  virtual unsigned Poll() = 0;
  // No more work will come (thread-safe: read by the control thread).
  virtual bool Done() const = 0;
  // Releases what the task still holds; runs on the task's own lcore.
  virtual void Finish() {}
};

}  // namespace fg
