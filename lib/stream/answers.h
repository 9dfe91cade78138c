// stream/answers.h: what a responding port answers a stream's RoCEv2 data
// with (endpoint/responder.h has the state machine that sends it).
//
// Three Programs built from the data frame's own spec (IP addresses swapped,
// from the destination host's MAC to the RX port's next hop, the flow's key
// as destination QP): ACK, NAK (PSN sequence error) and CNP (the
// port's CNP DSCP and priority, not ECN-capable), stamped like any frame
// (PSN, MSN, the flow's constants, incremental ICRC), and what the responder
// needs to know of the data: its PSN start and step, packets per message,
// AckReq and transport.
//
//   auto a = fg::stream::Answers::Compile("s", 0, program, frame, fg::config::RespondSpec{}, /*port=*/1,
//                                         {frame.encap.dst_mac, frame.encap.src_mac});
//   // (*a)->ack.Emit(buf, cursor, 0, (*a)->ack.Flow(0, flow_index)): the ACK of that flow
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "config/plan.h"
#include "stream/program.h"

namespace fg::stream {

// The largest answer frame (CNP over IPv6 with a VLAN tag: 98 B) with the 32
// bytes Program::Emit may write past it.
inline constexpr uint32_t kMaxAnswerBuffer = 184;

// The source and destination MACs of a responding port's answers.
struct AnswerMacs {
  MacAddr src, dst;
};

// Flows whose fixed fields are not counted from flow 0's (a collective's QPs
// between ranks, cell_streams.h): each answer's fields and MACs by flow index.
class AnswerAddresses {
 public:
  virtual ~AnswerAddresses() = default;
  // Flow `index`'s fixed fields under `answer` (the ACK, NAK or CNP program).
  virtual FlowVars Vars(const Program& answer, uint32_t index) const = 0;
  // Writes flow `index`'s answer MACs (its data's, swapped) into `frame`.
  virtual void WriteMacs(uint8_t* frame, uint32_t index) const = 0;
};

// What a responding stream is answered with, compiled once per stream.
struct Answers {
  config::RespondSpec spec;
  uint16_t port = 0;           // where answers go out: the stream's RX port
  bool reliable = false;       // RC: ACKs and NAKs; UC, UD: CNPs only
  uint32_t first_flow_id = 0;  // the stream's (flow index = global flow id - this)
  uint32_t psn_start = 0, psn_step = 1, msg_packets = 1;
  config::RoceSpec::AckReq ack_req = config::RoceSpec::AckReq::kLast;
  // Not 0: a QP's packets unacknowledged this long (ns) are acknowledged
  // then, whatever ack_every says (endpoint/responder.h). A collective's
  // QPs (cell_streams.cc); a plan's streams keep ack_every and AckReq only.
  uint64_t ack_delay_ns = 0;
  // The requester goes back (roce.retransmit: go_back_n): after NAKing a gap
  // the responder drops what comes until the expected PSN does (RC). Else it
  // resynchronises on the packet that revealed the gap.
  bool strict = false;
  uint32_t payload[3] = {};  // payload bytes per packet kind (only; or first, middle, last)
  // READ requests: each is executed (its responses sent, stream.h) rather
  // than acknowledged; `read_bytes` of data each (the message).
  bool read = false;
  uint64_t read_bytes = 0;
  Program ack, nak, cnp;
  // Null: flow `index`'s answers are Program::Flow(0, index) of the template's MACs.
  std::shared_ptr<const AnswerAddresses> addresses;
  FlowVars Vars(const Program& answer, uint32_t index) const {
    return addresses != nullptr ? addresses->Vars(answer, index) : answer.Flow(0, index);
  }

  // Null when the stream is not answered (not RoCEv2 data: UDP, UET, or a
  // stream of CNPs, ACKs or NAKs itself).
  // `data_program`: the stream's own Program (its PSNs and messages).
  // `macs`: the answers' MACs (stream::AnswerMacsOf).
  static absl::StatusOr<std::unique_ptr<Answers>> Compile(const std::string& stream, uint32_t first_flow_id,
                                                          const Program& data_program, const config::FrameSpec& data,
                                                          const config::RespondSpec& spec, uint16_t port,
                                                          const AnswerMacs& macs);
  // The answer frames' spec for a data frame: IP addresses swapped, MACs
  // `macs`, op ACK, NAK (PSN sequence error), READ response or CNP (spec's
  // DSCP and PCP, not ECN-capable).
  static config::FrameSpec AnswerFrame(const config::FrameSpec& data, config::RoceSpec::Op op,
                                       const config::RespondSpec& spec, const AnswerMacs& macs);
};

}  // namespace fg::stream
