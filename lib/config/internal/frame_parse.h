// config/internal/frame_parse.h: the `frame:` map of a stream.
#pragma once

#include "absl/status/statusor.h"
#include "config/frame_spec.h"
#include "config/internal/reader.h"

namespace fg::config::internal {

// `port_mtu` is the L3 MTU of the stream's TX port: every frame must fit it.
absl::StatusOr<FrameSpec> ParseFrame(const Node& n, uint32_t port_mtu, const std::string& port_name);

}  // namespace fg::config::internal
