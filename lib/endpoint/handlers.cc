// endpoint/handlers.cc: the kinds of frame handlers, one line each, in the
// order a frame without a test signature is offered to them
// (endpoint/frame_handler.h; docs/architecture.md "Adding an endpoint").
#include <vector>

#include "endpoint/frame_handler.h"
#include "endpoint/neighbor.h"
#include "endpoint/pfc.h"

namespace fg::endpoint {

std::span<const HandlerKind> HandlerKinds() {
  static const std::vector<HandlerKind> kKinds = {
      NeighborKind(),  // ARP, ND and echo for the port's hosts (endpoint/neighbor.h)
      PfcKind(),       // PFC and PAUSE received, and honoured where the port does (endpoint/pfc.h)
  };
  return kKinds;
}

}  // namespace fg::endpoint
