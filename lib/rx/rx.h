// rx/rx.h: the RX lcore task: receive, find the signature, count per stream.
//
// One RxTask serves one (port, queue). Each frame is parsed only as far as
// the signature (proto::FindSignatureOffset); its flow id selects the stream
// slot through a flat table built before the run. Frames without a
// signature, or with a flow id this run did not send, are counted apart as
// "unknown" so every received frame is accounted for.
//
//   std::vector<uint32_t> flow_to_slot = {0, 1};   // flow id -> stream slot
//   fg::rx::RxTask task(port.id(), 0, flow_to_slot, /*num_slots=*/2);
//   while (running) task.Poll();                   // on the lcore
//   fg::rx::RxCounters c = task.counters(1);
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "base/poll_task.h"

namespace fg::rx {

inline constexpr unsigned kRxBurst = 32;
inline constexpr uint32_t kNoSlot = UINT32_MAX;

struct RxCounters {
  uint64_t packets = 0;
  uint64_t bytes = 0;  // frame bytes, FCS included
};

class RxTask : public PollTask {
 public:
  // flow_to_slot[flow_id] is the counter slot of that flow (kNoSlot: not ours).
  RxTask(uint16_t port_id, uint16_t queue, std::vector<uint32_t> flow_to_slot, uint32_t num_slots);
  ~RxTask() override;

  unsigned Poll() override;
  bool Done() const override { return false; }  // RX runs until the engine stops it

  RxCounters counters(uint32_t slot) const;
  RxCounters unknown() const;  // frames without a (known) signature

 private:
  struct Slot;
  uint16_t port_id_, queue_;
  std::vector<uint32_t> flow_to_slot_;
  std::unique_ptr<Slot[]> slots_;  // num_slots_ + 1; the last one is "unknown"
  uint32_t num_slots_;
};

}  // namespace fg::rx
