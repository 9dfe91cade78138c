// config/internal/frame_parse.h: the `frame:` map of a stream.
#pragma once

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "config/frame_spec.h"
#include "config/reader.h"

namespace fg::config::internal {

// The largest plain UDP frame, FCS included (a 9000 B MTU + Ethernet, 802.1Q
// and FCS).
inline constexpr uint32_t kMaxFrameSize = 9022;

// What is wrong with a frame read in full: the key it is about ("size",
// "roce", "uet") and what to change.
struct FrameFault {
  const char* key;
  std::string message;
};
std::optional<FrameFault> FindFault(const FrameSpec& f, uint32_t port_mtu, const std::string& port_name);

// `port_mtu` is the L3 MTU of the stream's TX port: every frame must fit it.
absl::StatusOr<FrameSpec> ParseFrame(const Node& n, uint32_t port_mtu, const std::string& port_name);

}  // namespace fg::config::internal
