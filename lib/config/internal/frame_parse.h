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
// "roce", "roce.message", "uet.max_payload"...) and what to change.
struct FrameFault {
  const char* key;
  std::string message;
};
// The sizes as the plan writes them (empty: not written, or a frame changed
// since, e.g. a matrix cell's), so a fault quotes the text the user wrote.
struct FrameText {
  std::string size, roce_message, uet_message, uet_max_payload;
};
std::optional<FrameFault> FindFault(const FrameSpec& f, uint32_t port_mtu, const std::string& port_name,
                                    const FrameText& text = {});

// `retransmit:` go_back_n, none or {timeout: D} (go-back-N with that timeout).
absl::Status ParseRetransmit(const Node& rt, bool& go_back_n, int64_t& timeout_ns);
// `entropy:` {mode, values, gap}; `udp_src` is the first value (the source port).
absl::Status ParseEntropy(const Node& en, EntropySpec& e, uint16_t udp_src);

// `port_mtu` is the L3 MTU of the stream's TX port: every frame must fit it.
absl::StatusOr<FrameSpec> ParseFrame(const Node& n, uint32_t port_mtu, const std::string& port_name);

}  // namespace fg::config::internal
