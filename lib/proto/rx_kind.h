// proto/rx_kind.h: what a frame is to the analysis and the endpoints, one
// vocabulary from the classifier to the owner of the flow it names.
//
// ClassifyFeedback (proto/signature.h) says what a frame without a test
// signature is; the RX lcore hands the flow's owner a record of that kind
// (rx::Handoff; a signed test frame is kData); the owner's endpoint hears
// it as feedback (endpoint::Feedback); and what an endpoint sends back is
// queued with the kind its peer will classify it as (endpoint::Answer). No
// layer translates: a value means one thing everywhere.
//
//   if (fg::proto::ClassifyFeedback(f, n).kind == fg::proto::RxKind::kRoceAck) ...
#pragma once

#include <cstdint>

namespace fg::proto {

enum class RxKind : uint8_t {
  kData = 0,             // a test frame with its signature (never returned by ClassifyFeedback)
  kRoceCnp = 1,          // RoCEv2 congestion notification packet
  kRoceNak = 2,          // RoCEv2 ACK with a NAK syndrome (code: PSN sequence error, invalid request, ...)
  kUetNack = 3,          // UET PDS NACK
  kRoceAck = 4,          // RoCEv2 ACK
  kRoceReadRequest = 5,  // RoCEv2 RDMA READ request (no payload, so no signature)
  kNone = 6,             // none of these: nothing fabricgen acts on as feedback (an RNR NAK, a test frame)
  kInvalid = 7,          // shaped as one of these or as a signed frame, and not one (counted apart)
};

}  // namespace fg::proto
