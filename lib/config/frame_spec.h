// config/frame_spec.h: what one stream puts on the wire, as the plan says it.
//
// A frame is plain UDP (the default), RoCEv2 (`roce:`), UET (`uet:`), a PFC or
// PAUSE frame (`pfc:`) or a link-bandwidth notification (`lbn:`). The
// encapsulation keys (addresses, VLAN, DSCP, UDP ports, entropy) apply to
// every IP kind. lib/stream turns a FrameSpec into packet templates.
//
//   frame:
//     l3: ipv6
//     roce: {op: WRITE, message: 1 MiB, pmtu: 4096, dest_qp: 0x12}
//     entropy: {mode: round_robin, values: 16}
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "proto/frame.h"
#include "proto/lbn.h"
#include "proto/roce.h"
#include "proto/uet.h"

namespace fg::config {

enum class FrameKind { kUdp, kRoce, kUet, kPfc, kPause, kLbn };
const char* FrameKindName(FrameKind k);

// DCQCN at the reaction point (the sender of a QP), as in roce.md: rates in
// bit/s, times in ns. Two presets, `paper` (Zhu et al., SIGCOMM 2015) and
// `connectx` (the firmware defaults, mlxconfig names in the comments), every
// parameter settable on top of one.
struct DcqcnSpec {
  std::string preset = "paper";
  double g = 1.0 / 256;                // alpha gain (connectx: 1 - dce_tcp_g / 1024)
  double initial_alpha = 1.0;          // initial_alpha_value / 1024
  int64_t alpha_period_ns = 55'000;    // K: alpha decays once per period without a CNP (dce_tcp_rtt)
  int64_t timer_ns = 55'000;           // T: a rate-increase event per period since the last cut (rpg_time_reset)
  uint64_t byte_counter = 10'000'000;  // B: a rate-increase event per B bytes sent (rpg_byte_reset x 64 B)
  uint32_t threshold = 5;              // F: events of each kind before additive / hyper increase (rpg_threshold)
  double rate_ai_bps = 40e6;           // additive increase step (rpg_ai_rate)
  double rate_hai_bps = 400e6;         // hyper increase step (rpg_hai_rate); the paper gives none: 10 x R_AI
  double min_rate_bps = 1e6;           // a cut never goes below (rpg_min_rate)
  int64_t rate_reduce_period_ns = 0;   // at most one cut per period (rate_reduce_monitor_period); 0: every CNP
  double min_dec_factor = 0.5;         // a cut keeps at least this share of the rate (rpg_min_dec_fac)
  // When alpha moves: false (the paper), at each CNP (it rises at once and its
  // decay period restarts); true (ConnectX's fixed point, roce.md), once per
  // alpha_period on a grid from the first CNP: at a period's end it rises if
  // the period saw a CNP, else it decays, and a cut uses alpha as it stands.
  bool alpha_per_period = false;
  // `scale_to`: the preset's dynamics slowed to a link of this rate (0:
  // none). The preset is for `preset_link_bps` (paper: its 40 GbE); scaled
  // by k = scale_to / preset_link, its rates are x k and its times / k, and
  // what is counted in bytes or events (byte_counter, threshold, g, alpha)
  // stays: every queue depth in bytes and every count of packets per timer
  // is the same as on the preset's link, only k times slower.
  double scale_to_bps = 0;
  double preset_link_bps = 40e9;
  static DcqcnSpec Paper() { return DcqcnSpec{}; }
  static DcqcnSpec ConnectX() {
    DcqcnSpec d;
    d.preset = "connectx";
    d.preset_link_bps = 100e9;  // the firmware's defaults, taken as a 100 GbE NIC's
    d.g = 5.0 / 1024;  // dce_tcp_g 1019
    d.initial_alpha = 1023.0 / 1024;
    d.alpha_period_ns = 1'000;
    d.timer_ns = 300'000;
    d.byte_counter = 32767ull * 64;
    d.threshold = 1;
    d.rate_ai_bps = 5e6;
    d.rate_hai_bps = 50e6;
    d.min_rate_bps = 1e6;
    d.rate_reduce_period_ns = 4'000;
    d.min_dec_factor = 0.5;
    d.alpha_per_period = true;  // alpha = (G/1024) alpha + (1024 - G) at the end of a period with a CNP
    return d;
  }
  // The preset's rates x k and times / k, k = bps / preset_link_bps (see scale_to_bps).
  void ScaleTo(double bps);
};

struct RoceSpec {
  enum class Op { kWrite, kWriteImm, kSend, kSendImm, kReadResponse, kReadRequest, kCnp, kAck, kNak };
  Op op = Op::kWrite;
  proto::roce::Transport transport = proto::roce::Transport::kRc;
  uint64_t message = 4096;  // bytes per message (DMA length)
  uint32_t pmtu = 1024;     // path MTU: 256, 512, 1024, 2048, 4096
  uint32_t dest_qp = 0x100;
  uint32_t start_psn = 0;
  uint16_t pkey = 0xFFFF;
  uint64_t va = 0x10000000;
  uint32_t rkey = 0x1000;
  uint32_t imm = 0;
  uint32_t qkey = 0x11111111;
  uint32_t src_qp = 0x1;
  proto::roce::NakCode nak_code = proto::roce::NakCode::kPsnSequenceError;
  uint8_t ack_credits = 31;
  enum class AckReq { kLast, kEvery, kNever } ack_req = AckReq::kLast;
  bool bad_icrc = false;
  // The reaction point per QP (`dcqcn`): each flow's rate follows the CNPs
  // addressed to it, from the stream's rate as its maximum.
  std::optional<DcqcnSpec> dcqcn;
  // `retransmit`: RC requester reliability when a responder answers the
  // stream (ports[].respond): go back to the PSN a NAK names, and to the
  // first unacknowledged one after `timeout` without progress.
  bool go_back_n = true;
  // `connect: cm`: before data flows, each QP is set up by CM MADs on QP 1
  // (REQ from the stream's port, REP from its responding rx_port, RTU).
  bool connect_cm = false;
  int64_t retransmit_timeout_ns = 64'000'000;  // ConnectX-like (local ACK timeout 14: 4.096 us x 2^14)
};

struct UetSpec {
  enum class Service { kRud, kRod, kRudi, kUud };
  enum class Packet { kRequest, kAck, kNack, kControl };
  Service service = Service::kRud;
  Packet packet = Packet::kRequest;
  bool cc = false;  // RUD_CC / ROD_CC request headers
  proto::uet::NextHdr ses = proto::uet::NextHdr::kReqStd;
  proto::uet::SesOpcode opcode = proto::uet::SesOpcode::kWrite;
  uint64_t message = 4096;
  uint32_t max_payload = 4096;  // SES payload bytes per packet
  uint16_t spdcid = 1;
  uint16_t dpdcid = 0;  // 0: the PDC is not set up yet: requests carry SYN + pdc_info (data before handshake)
  uint32_t start_psn = 0;
  uint32_t job_id = 1;
  uint16_t resource_index = 0;
  proto::uet::NackCode nack_code = proto::uet::NackCode::kTrimmed;
  proto::uet::CtlType ctl_type = proto::uet::CtlType::kNoop;
  bool native_ip = false;  // no UDP: entropy header, IP protocol profile.native_ip_protocol
  proto::uet::UetProfile profile;
};

struct PfcSpec {
  uint16_t class_enable = 0;
  uint16_t quanta[8] = {};
};

struct LbnSpec {
  proto::lbn::Settings settings;
  uint8_t msg = 0;
  uint8_t dev_range = 0;
  proto::lbn::Bitmap bitmap;
};

struct EntropySpec {
  // fixed: one value per flow (udp_src + flow index), like a NIC hashing a QP;
  // round_robin / random: every packet takes the next / a random one of K;
  // flowlet: a flow keeps its value until it pauses longer than `gap`, then
  // takes the next one (dynamic load balancing in the sender).
  enum class Mode { kFixed, kRoundRobin, kRandom, kFlowlet } mode = Mode::kFixed;
  uint32_t values = 1;  // K: the UDP source port (or UET entropy) spans base .. base + K - 1
  int64_t gap_ns = 0;   // flowlet gap
};

struct FrameSpec {
  FrameKind kind = FrameKind::kUdp;
  uint32_t size = 64;  // plain UDP only: Ethernet frame bytes including FCS
  proto::Encap encap;
  EntropySpec entropy;
  RoceSpec roce;
  UetSpec uet;
  PfcSpec pfc;
  LbnSpec lbn;
  // Address ranges: flow i of a stream takes the IP source and/or destination
  // address + i (IPv4: the whole address, wrapping; IPv6: its last 32 bits).
  bool vary_src_ip = false;
  bool vary_dst_ip = false;
};

}  // namespace fg::config
