#include "stream/cell_streams.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_format.h"
#include "base/net_addr.h"

namespace fg::stream {

namespace {

// The answers of one group's QPs: addressed from the receiving rank to the
// sending one, MACs swapped.
class PairAddresses : public AnswerAddresses {
 public:
  PairAddresses(std::shared_ptr<const CellStreams> cs, uint32_t first) : cs_(std::move(cs)), first_(first) {}
  FlowVars Vars(const Program& answer, uint32_t index) const override {
    const uint32_t qp = cs_->frames.qp_at(first_ + index);
    const collective::Qp& q = cs_->cell.qps()[qp];
    return answer.FlowWith(cs_->frames.flow_id(qp), cs_->frames.key(qp), first_ + index,
                           IpLow32(cs_->frames.rank(q.to).ip), IpLow32(cs_->frames.rank(q.from).ip));
  }
  void WriteMacs(uint8_t* frame, uint32_t index) const override {
    const uint32_t qp = cs_->frames.qp_at(first_ + index);
    const MacAddr& to = cs_->frames.answer_dst_mac(qp);  // the data's sender (or the responding port's next hop)
    const MacAddr& from = cs_->frames.rank(cs_->cell.qps()[qp].to).mac;
    std::copy(to.bytes.begin(), to.bytes.end(), frame);
    std::copy(from.bytes.begin(), from.bytes.end(), frame + 6);
  }

 private:
  std::shared_ptr<const CellStreams> cs_;
  uint32_t first_;
};

}  // namespace

absl::StatusOr<std::shared_ptr<const CellStreams>> CellStreams::Make(const config::RanksSpec& ranks,
                                                                     const std::vector<config::Rank>& placed,
                                                                     collective::Cell cell, uint32_t first_flow_id,
                                                                     const CellPlay& play) {
  // A QP's packets of every iteration are numbered by its 32-bit sequence
  // (and the responder's PSNs, go-back-N's comparisons): kept below 2^31.
  uint64_t most = 0;
  for (const collective::Qp& q : cell.qps()) most = std::max(most, q.packets);
  if (most * play.iterations >= (uint64_t{1} << 31)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%u iterations of %u packets on a QP pass the 2^31 packets one QP numbers in a run: fewer iterations, a "
        "smaller size or more qps_per_pair",
        play.iterations, most));
  }
  std::shared_ptr<CellStreams> cs(new CellStreams(std::move(cell)));
  cs->ranks = ranks;
  cs->first_flow_id = first_flow_id;
  cs->play = play;
  auto frames = CellFrames::Compile(ranks, placed, cs->cell, first_flow_id);
  if (!frames.ok()) return frames.status();
  cs->frames = std::move(*frames);
  return std::shared_ptr<const CellStreams>(std::move(cs));
}

absl::StatusOr<std::vector<CompiledStream>> CellStreams::Streams(const std::shared_ptr<const CellStreams>& cs,
                                                                 uint32_t first_index, const std::string& name,
                                                                 int64_t duration_ns) {
  std::vector<CompiledStream> out;
  const uint64_t longest = cs->cell.message_lengths().back();
  for (const CellFrames::Pair& pr : cs->frames.pairs()) {
    const uint32_t qp0 = cs->frames.qp_at(pr.first);
    const collective::Qp& q0 = cs->cell.qps()[qp0];
    CompiledStream s;
    s.index = first_index + static_cast<uint32_t>(out.size());
    s.name = absl::StrFormat("%s %u->%u", name, pr.from_port, pr.to_port);
    s.flow_id = cs->first_flow_id + pr.first;
    s.flows = pr.count;
    s.program = cs->frames.ProgramFor(qp0, longest);
    s.frame_size = s.program.mean_frame_size();
    // Unpaced: what the barriers release, as fast as the port takes it.
    s.pps = std::numeric_limits<double>::infinity();
    s.duration_ns = duration_ns;
    s.tx_port = pr.from_port;
    s.rx_port = pr.to_port;
    s.retransmit_timeout_ns = cs->ranks.retransmit_timeout_ns;
    s.pmtu = cs->ranks.pmtu;
    s.cell = cs;
    s.cell_first = pr.first;
    s.flow_home.resize(pr.count);
    for (uint32_t f = 0; f < pr.count; ++f) s.flow_home[f] = cs->cell.qps()[cs->frames.qp_at(pr.first + f)].from;
    // Answered as RC by the receiving rank's port, to the ranks' own addresses.
    config::FrameSpec data = config::RankQpFrame(cs->ranks, cs->frames.rank(q0.from), cs->frames.rank(q0.to));
    data.roce.message = longest;
    data.roce.dest_qp = cs->frames.key(qp0);
    data.vary_src_ip = true;
    data.vary_dst_ip = true;
    // An ACK on each message's last packet (AckReq) and at least every 64
    // packets a QP's responder accepts, coalesced per RX burst; and, as a
    // NIC's coalescing timer, for a QP whose oldest unacknowledged packet is
    // a quarter of the requester's timeout old (ack_delay_ns). A QP of
    // 65,280 (AllToAll over 256 ranks on one port) sends 8 of a turn and
    // waits half a second for the next: with only ack_every 16 its 64 ms
    // timer went back (3.66 million frames sent again, none lost).
    // ACKing every 8 packets instead cost the loopback's collective 22 % of
    // its rate (bench-collective.yaml, one worker: 21.7 Mpps at 8, 27.7 at
    // 64; the ACK's emission, TX, RX and feedback about 75 ns each).
    config::RespondSpec respond;
    respond.ack_every = 64;
    // (Each QP's answer MACs are its own: PairAddresses::WriteMacs.)
    auto answers = Answers::Compile(s.name, s.flow_id, s.program, data, respond, static_cast<uint16_t>(pr.to_port),
                                    {cs->frames.rank(cs->cell.qps()[qp0].to).mac, cs->frames.answer_dst_mac(qp0)});
    if (!answers.ok()) return answers.status();
    (*answers)->addresses = std::make_shared<PairAddresses>(cs, pr.first);
    (*answers)->ack_delay_ns = cs->ranks.retransmit_timeout_ns / 4;
    s.answers = std::shared_ptr<const Answers>(std::move(*answers));
    // ranks.connect: cm: every QP set up by CM before the first iteration,
    // each MAD between its own two ranks (CmEncap).
    s.connect_cm = cs->ranks.connect_cm;
    s.dcqcn = cs->ranks.dcqcn;  // each QP a reaction point (its maximum: cell_qp_max_bps)
    s.cm_encap = data.encap;
    s.cm_pkey = data.roce.pkey;
    out.push_back(std::move(s));
  }
  return out;
}

proto::Encap CellStreams::CmEncap(uint32_t position, bool back) const {
  const collective::Qp& q = cell.qps()[frames.qp_at(position)];
  const config::Rank& from = frames.rank(q.from);
  const config::Rank& to = frames.rank(q.to);
  return back ? config::RankQpFrame(ranks, to, from).encap : config::RankQpFrame(ranks, from, to).encap;
}

}  // namespace fg::stream
