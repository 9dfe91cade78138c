#include "endpoint/neighbor.h"

#include <array>

#include "base/counter.h"
#include "proto/neighbor.h"

namespace fg::endpoint {

namespace {

using NK = proto::NeighborFrame::Kind;

enum Count : size_t {
  kArpRequests,
  kArpReplies,
  kNdSolicitations,
  kNdAdvertisements,
  kEchoRequests,
  kEchoReplies,
  kUnanswered,
  kOther,
  kCounts
};

constexpr std::array<CountSpec, kCounts> kCountSpecs = {{
    {"arp_requests", "ARP requests received for the port's IPv4 hosts (frames)"},
    {"arp_replies", "ARP replies the port queued to send for them (frames)"},
    {"nd_solicitations", "neighbour solicitations received for the port's IPv6 hosts (frames)"},
    {"nd_advertisements", "neighbour advertisements the port queued to send for them (frames)"},
    {"echo_requests", "ICMP and ICMPv6 echo requests received for the port's hosts (frames)"},
    {"echo_replies", "echo replies the port queued to send for them (frames)"},
    {"unanswered",
     "requests for the port's hosts left unanswered: answering turned off (ports[].answer), an echo longer than "
     "the answer buffer (184 B), or no room to queue the answer (frames)"},
    {"other",
     "ARP, ICMP and ICMPv6 frames for no host of the port or of another kind: requests for other addresses, "
     "replies, router and multicast listener messages (frames)"},
}};

class NeighborHandler final : public FrameHandler {
 public:
  explicit NeighborHandler(const PortContext& c) : c_(c) {}

  Taken Take(const RxFrame& f) override {
    const std::span<const uint8_t> frame(f.data, f.len);
    const proto::NeighborFrame n = proto::ParseNeighbor(frame);
    switch (n.kind) {
      case NK::kNone:
        return Taken::kNo;
      case NK::kInvalid:
        return Taken::kInvalid;
      case NK::kArpRequest:
        if (const MacAddr* mac = c_.hosts->Find(n.dst4)) {
          counts_[kArpRequests].Add(1);
          Reply(c_.answer.arp, kArpReplies, [&](uint8_t* out, size_t cap) {
            return proto::WriteArpReply(n, MacOf(*mac), out, cap);
          });
          return Taken::kYes;
        }
        break;
      case NK::kNeighborSolicitation:
        if (const MacAddr* mac = c_.hosts->Find(n.target6)) {
          counts_[kNdSolicitations].Add(1);
          Reply(c_.answer.nd, kNdAdvertisements, [&](uint8_t* out, size_t cap) {
            return proto::WriteNeighborAdvertisement(n, MacOf(*mac), out, cap);
          });
          return Taken::kYes;
        }
        break;
      case NK::kEchoRequest:
        if (const MacAddr* mac = n.ipv6 ? c_.hosts->Find(n.dst6) : c_.hosts->Find(n.dst4)) {
          counts_[kEchoRequests].Add(1);
          Reply(c_.answer.echo, kEchoReplies, [&](uint8_t* out, size_t cap) {
            return proto::WriteEchoReply(frame, n, MacOf(*mac), out, cap);
          });
          return Taken::kYes;
        }
        break;
      default:
        break;
    }
    counts_[kOther].Add(1);
    return Taken::kYes;
  }

  // A host's MAC; kPortMac: the port's own.
  const MacAddr& MacOf(const MacAddr& mac) const { return mac == kPortMac ? c_.port_mac : mac; }

  void ReadCounts(std::span<uint64_t> out) const override {
    for (size_t i = 0; i < kCounts && i < out.size(); ++i) out[i] = counts_[i].Read();
  }

 private:
  // Queues the answer `write` builds (its length; 0: too long for the
  // buffer) and counts it under `sent`, or counts the request unanswered.
  template <class Write>
  void Reply(bool on, Count sent, Write write) {
    endpoint::Answer* a = on && c_.answers != nullptr ? c_.answers->Reserve() : nullptr;
    const size_t len = a != nullptr ? write(a->bytes, Answer::kMaxBytes) : 0;
    if (len == 0) {
      counts_[kUnanswered].Add(1);
      return;
    }
    a->port = c_.port;
    a->len = static_cast<uint16_t>(len);
    a->stream = 0;
    a->kind = proto::RxKind::kNone;  // (not an RC answer: the hosts' own queue)
    c_.answers->Commit();
    counts_[sent].Add(1);
  }

  PortContext c_;
  std::array<Counter, kCounts> counts_;
};

// Every port has one: a port without hosts answers nothing and counts its
// neighbours' frames apart all the same.
std::unique_ptr<FrameHandler> Make(const PortContext& c) { return std::make_unique<NeighborHandler>(c); }

}  // namespace

HandlerKind NeighborKind() { return HandlerKind{"neighbors", kCountSpecs, &Make}; }

}  // namespace fg::endpoint
