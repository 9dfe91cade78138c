// stream/stream.h: plan streams compiled into what the data path executes.
//
// Compilation resolves everything the hot loops must not compute: the
// per-packet Program (templates and stamping offsets), the rate in packets
// per second (bit rates and "% of line rate" use the mean frame size of a
// message; a % needs the port's link speed), the packet bound and the flow id
// the signature carries. TX and RX lcores only read it.
//
//   std::vector<double> line_bps = {10e9};   // per plan port, L1
//   auto streams = fg::stream::Compile(plan, line_bps);
//   for (const auto& s : *streams) printf("%s: %.0f pps\n", s.name.c_str(), s.pps);
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "config/plan.h"
#include "stream/answers.h"
#include "proto/frame.h"
#include "stream/program.h"

namespace fg::stream {

struct CellStreams;  // stream/cell_streams.h

struct CompiledStream {
  uint32_t index = 0;  // position in the plan
  std::string name;
  uint32_t flow_id = 0;  // first flow id (the signature carries flow_id .. flow_id + flows - 1)
  uint32_t flows = 1;
  bool verify_payload = false;
  bool bad_icrc = false;  // frame.roce.icrc: bad (every packet's ICRC wrong: a negative test)
  Program program;
  double frame_size = 0;        // mean bytes per frame on the wire, FCS included
  double pps = 0;               // resolved rate (with a burst schedule: the average)
  uint32_t burst_frames = 0;    // > 0: bursts of this many frames at line rate...
  int64_t burst_period_ns = 0;  // ...starting every period (burst time + gap)
  double burst_frame_ns = 0;    // one frame's time on the wire at line rate
  uint64_t count = 0;           // 0: bounded by duration only
  int64_t duration_ns = 0;      // > 0 always (plan duration when the stream has none)
  int64_t start_ns = 0;         // first frame this long after the run's start (it still ends at duration_ns)
  size_t tx_port = 0, rx_port = 0;  // the TX queue is the owner lcore's own (engine/placement.h)
  // Per-flow rates (`flows: {count, rates}`): flow i's share of `pps` is
  // flow_weight[i] / sum(flow_weight) (so a test setting `pps` scales every
  // flow). Empty: the flows share `pps` evenly, taking turns.
  std::vector<double> flow_weight;
  // Received on a port with `respond`: what its responder answers (null: not
  // answered, or not RoCEv2 data).
  std::shared_ptr<const Answers> answers;
  // `frame.roce.dcqcn`: each flow's reaction point (its rate, from its
  // per-flow one as the maximum, follows the CNPs it receives).
  std::optional<config::DcqcnSpec> dcqcn;
  // A collective cell's QPs with DCQCN (ranks.dcqcn): each QP's maximum, its
  // rank's port line rate (L1, bit/s), where it starts; unpaced until a CNP
  // cuts it (tx/cell_sender.cc). 0: 100 Gbit/s.
  double cell_qp_max_bps = 0;
  // RC requester: go back after this long without an acknowledgement moving
  // (with answers->strict: a responder, roce.retransmit: go_back_n).
  int64_t retransmit_timeout_ns = 0;
  // `frame.roce.connect: cm`: its QPs are set up by CM MADs before data
  // (engine/connect): the frames' addresses (requester to responder, and
  // back) and the path MTU the REQ names.
  bool connect_cm = false;
  proto::Encap cm_encap;
  proto::Encap cm_back_encap;  // the REP's: from the responding host to the RX port's next hop (as its answers)
  uint32_t pmtu = 0;
  uint16_t cm_pkey = 0xFFFF;
  // READ (`roce.op: READ_REQUEST` received on a responding port): one plan
  // stream is two compiled ones. The requests (this stream, tx_port to
  // rx_port: valid READ requests without a signature, which the responder
  // matches by QP and PSN) and their responses, which Compile appends after
  // every plan stream as "<name>.responses": READ_RESPONSE FIRST / MIDDLE /
  // LAST (or ONLY) at the path MTU, signed, sent back by the responder on
  // the requests' owner lcore as each request arrives, and analysed at the
  // requester's port like any stream. Each names the other's position in
  // the vector (-1: not part of a READ). The plan's rate is the READ data's
  // (the responses'): the requests go at it over read_packets.
  int32_t read_responses = -1;  // on the requests
  int32_t read_requests = -1;   // on the responses
  uint32_t read_packets = 0;    // on both: response packets per request (the message over the path MTU)
  // A collective cell's QPs from ranks on tx_port to ranks on rx_port
  // (stream/cell_streams.h): flow f is the cell's QP at position
  // cell_first + f; sent as the ranks' barriers release it. Null: a plan stream.
  std::shared_ptr<const CellStreams> cell;
  uint32_t cell_first = 0;
  // Flows with the same home share one owner lcore, home % workers (a
  // rank's QPs: its barrier and its sends on one lcore); empty: the
  // placement policy decides.
  std::vector<uint32_t> flow_home;
  bool read_request() const { return read_responses >= 0; }
  bool read_response() const { return read_requests >= 0; }
  // The fraction of the stream's rate that `flows` (indices, empty: all)
  // carry: their count's share, or with per-flow rates their rates' share.
  double FlowShare(const std::vector<uint32_t>& some) const;
};

// `line_bps[i]` is the L1 line rate of plan port i (0 when unknown).
absl::StatusOr<std::vector<CompiledStream>> Compile(const config::Plan& plan, const std::vector<double>& line_bps);

// Stream s's frame as its TX port sends it: to the port's next hop
// (ports[].next_hop_mac, its resolved gateway) unless the stream writes its
// own dst_mac. s.frame's dst_mac stays the destination host's MAC (the one
// a responding RX port answers ARP/ND for and sends its answers from).
config::FrameSpec WireFrame(const config::Plan& plan, const config::StreamSpec& s);
// The MACs of a responding RX port's answers to stream s (ACK, NAK, CNP,
// READ responses, CM REP): with a gateway on that port, from the data's
// destination host MAC to the gateway; without, the stream's own MACs as
// written, unswapped: the plan's dst_mac is then taken as the next hop on
// both sides (a routed fabric whose leaves share one gateway MAC, as the
// lab's; back-to-back ports). Swapping them sent the answers to the
// requester's MAC, which a router's port drops (lab-transport failed so).
AnswerMacs AnswerMacsOf(const config::Plan& plan, const config::StreamSpec& s);

// Where an error about stream `i`'s `field` ("frame", "flows", "rate") is
// reported: by default "plan.yaml:12:31: streams[0].flows", the place the
// plan writes the field (for a default, the nearest key written around it:
// config/location.h). A test matrix names its entry instead.
using StreamWhere = std::function<std::string(size_t i, std::string_view field)>;

// What Compile checks without a port's line rate, so it can run before EAL
// starts: every stream's frame against its TX port's MTU (as the parser does,
// for plans changed since: a matrix cell), its Program, one key per flow, and
// a rate in pps or bit/s of at least kMinPps.
absl::Status CheckStreams(const config::Plan& plan, const StreamWhere& where = nullptr);

// Once ports are open: the rates set on each TX port (`rate: max` and burst
// streams aside; a % of line counts as that share) add up to at most its line
// rate. `streams` are Compile's, `line_bps` its argument.
absl::Status CheckPortLoads(const config::Plan& plan, const std::vector<CompiledStream>& streams,
                            const std::vector<double>& line_bps);

}  // namespace fg::stream
