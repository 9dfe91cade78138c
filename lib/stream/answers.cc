#include "stream/answers.h"

#include <utility>

#include "absl/strings/str_format.h"
#include "proto/roce.h"

namespace fg::stream {

config::FrameSpec Answers::AnswerFrame(const config::FrameSpec& data, config::RoceSpec::Op op,
                                       const config::RespondSpec& spec, const AnswerMacs& macs) {
  config::FrameSpec a = data;
  a.encap.src_mac = macs.src;
  a.encap.dst_mac = macs.dst;
  a.kind = config::FrameKind::kRoce;
  a.roce.op = op;
  a.roce.nak_code = proto::roce::NakCode::kPsnSequenceError;
  a.roce.ack_credits = 31;
  a.roce.bad_icrc = false;
  std::swap(a.encap.l3.src4, a.encap.l3.dst4);
  std::swap(a.encap.l3.src6, a.encap.l3.dst6);
  std::swap(a.vary_src_ip, a.vary_dst_ip);
  // The responder QP's source port: the flow's own, as a NIC hashing a QP.
  a.entropy = config::EntropySpec{};
  a.encap.udp_dst = proto::roce::kUdpPort;
  a.encap.udp_checksum = false;
  a.encap.l3.ecn = 0;  // answers are not ECN-capable: a CE mark is the data's
  a.roce.dcqcn.reset();
  if (op == config::RoceSpec::Op::kCnp) {
    a.roce.start_psn = 0;  // a CNP's PSN is 0 (roce.md)
    a.encap.l3.dscp = spec.cnp_dscp;
    if (a.encap.vlan) a.encap.vlan->pcp = spec.cnp_pcp;
  }
  return a;
}

absl::StatusOr<std::unique_ptr<Answers>> Answers::Compile(const std::string& stream, uint32_t first_flow_id,
                                                          const Program& data_program, const config::FrameSpec& data,
                                                          const config::RespondSpec& spec, uint16_t port,
                                                          const AnswerMacs& macs) {
  using Op = config::RoceSpec::Op;
  if (data.kind != config::FrameKind::kRoce || data.roce.op == Op::kCnp || data.roce.op == Op::kAck ||
      data.roce.op == Op::kNak) {
    return nullptr;
  }
  auto p = std::make_unique<Answers>();
  p->spec = spec;
  p->port = port;
  // RC SEND and WRITE are acknowledged; READ responses never are, and a
  // READ request is answered by its responses (the responder executes it).
  p->reliable = data.roce.transport == proto::roce::Transport::kRc && data.roce.op != Op::kReadResponse &&
                data.roce.op != Op::kReadRequest;
  p->first_flow_id = first_flow_id;
  p->psn_start = data_program.psn_start();
  p->psn_step = data_program.psn_step();
  p->msg_packets = data_program.packets_per_message();
  p->ack_req = data.roce.ack_req;
  p->strict = p->reliable && data.roce.go_back_n;
  p->read = data.roce.op == Op::kReadRequest && data.roce.transport == proto::roce::Transport::kRc;
  p->read_bytes = data.roce.message;
  for (size_t k = 0; k < data_program.kinds().size() && k < 3; ++k) {
    p->payload[k] = data_program.kinds()[k].t.payload_len;
  }
  for (auto [op, out] : {std::pair{Op::kAck, &p->ack}, std::pair{Op::kNak, &p->nak}, std::pair{Op::kCnp, &p->cnp}}) {
    auto prog = Program::Compile(AnswerFrame(data, op, spec, macs), 0);
    if (!prog.ok()) return prog.status();
    if (prog->buffer_len() > kMaxAnswerBuffer) {
      return absl::InternalError(absl::StrFormat("stream %s: an answer frame of %d B does not fit the answer slot",
                                                 stream, prog->max_frame_len()));
    }
    *out = *std::move(prog);
  }
  return p;
}

}  // namespace fg::stream
