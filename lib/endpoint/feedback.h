// endpoint/feedback.h: where the owner of a flow hears the feedback to it.
//
// The RX analysis (rx::FlowTable) matches each CNP, ACK, NAK or NACK to the
// flow it names and, on that flow's owner lcore, hands it to the flow's
// sender through this interface: the engine connects it to the TX task that
// holds the flow's rate and cursor, which hands it to the flow's RC
// requester (endpoint/rc_requester.h: go-back-N, DCQCN's reaction point).
// One virtual call per feedback frame; data frames never come here.
//
//   struct Mine : fg::endpoint::FeedbackSink {
//     void OnFeedback(uint32_t slot, const fg::endpoint::Feedback& f) override { ... }
//   };
#pragma once

#include <cstdint>

#include "proto/rx_kind.h"

namespace fg::endpoint {

struct Feedback {
  proto::RxKind kind = proto::RxKind::kRoceCnp;  // kRoceCnp, kRoceNak, kRoceAck or kUetNack
  uint8_t code = 0;    // NAK: the syndrome's code (0: PSN sequence error)
  uint32_t psn = 0;    // ACK, NAK: the PSN it names
  uint32_t msn = 0;    // ACK, NAK: the responder's MSN
  uint64_t rx_ns = 0;  // when it was received (TX timebase ns)
};

class FeedbackSink {
 public:
  virtual ~FeedbackSink() = default;
  // On the owner lcore: feedback for the flow in `slot` of its FlowTable.
  virtual void OnFeedback(uint32_t slot, const Feedback& f) = 0;
};

}  // namespace fg::endpoint
