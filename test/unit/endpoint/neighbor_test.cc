// endpoint/neighbor: a port's hosts answer ARP, ND and echo through the frame
// handler table, count what they took, and leave other frames to others.
#include "endpoint/neighbor.h"

#include <gtest/gtest.h>

#include <array>
#include <vector>

#include "proto/neighbor.h"

namespace fg::endpoint {
namespace {

const MacAddr kHost{{0x02, 0x00, 0x00, 0x00, 0x00, 0x01}};
const MacAddr kPeer{{0x02, 0xaa, 0x00, 0x00, 0x00, 0xfe}};
const Ipv4Addr kHost4{0xC6120001};  // 198.18.0.1
const Ipv4Addr kPeer4{0xC61200FE};
const Ipv6Addr kHost6{{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}};
const Ipv6Addr kPeer6{{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xfe}};

enum { kArpRequests, kArpReplies, kNdSolicitations, kNdAdvertisements, kEchoRequests, kEchoReplies, kUnanswered, kOther };

struct Fixture {
  PortHosts hosts;
  AnswerQueue queue{4};
  std::unique_ptr<FrameHandlers> handlers;
  explicit Fixture(AnswerSpec answer = {}) {
    hosts.Add(kHost4, kHost);
    hosts.Add(kHost6, kHost);
    PortContext c;
    c.port = 3;
    c.hosts = &hosts;
    c.answer = answer;
    c.answers = &queue;
    handlers = std::make_unique<FrameHandlers>(c);
  }
  Taken Take(const std::vector<uint8_t>& f) { return handlers->Take(RxFrame{f.data(), static_cast<uint32_t>(f.size()), 0}); }
  std::vector<uint64_t> Counts() const {
    std::vector<std::vector<uint64_t>> sums = EmptyHandlerCounts();
    handlers->AddCounts(sums);
    for (size_t k = 0; k < HandlerKinds().size(); ++k) {
      if (HandlerKinds()[k].name == "neighbors") return sums[k];
    }
    return {};
  }
};

std::vector<uint8_t> ArpFor(Ipv4Addr target) {
  std::vector<uint8_t> f(96);
  f.resize(proto::WriteArpRequest(kPeer, kPeer4, target, std::nullopt, f.data()));
  return f;
}
std::vector<uint8_t> NsFor(const Ipv6Addr& target) {
  std::vector<uint8_t> f(96);
  f.resize(proto::WriteNeighborSolicitation(kPeer, kPeer6, target, std::nullopt, f.data()));
  return f;
}

TEST(NeighborHandler, IsRegisteredUnderItsReportName) {
  size_t found = 0;
  for (const HandlerKind& k : HandlerKinds()) found += k.name == "neighbors";
  EXPECT_EQ(found, 1u);
}

TEST(NeighborHandler, AnswersItsHostsAndCountsEachKind) {
  Fixture fx;
  EXPECT_EQ(fx.Take(ArpFor(kHost4)), Taken::kYes);
  EXPECT_EQ(fx.Take(NsFor(kHost6)), Taken::kYes);
  ASSERT_EQ(fx.queue.size(), 2u);
  const proto::NeighborFrame arp =
      proto::ParseNeighbor(std::span<const uint8_t>(fx.queue.At(0).bytes, fx.queue.At(0).len));
  EXPECT_EQ(arp.kind, proto::NeighborFrame::Kind::kArpReply);
  EXPECT_EQ(proto::ResolvedBy(arp, kHost4), kHost);
  EXPECT_EQ(fx.queue.At(0).port, 3);
  const proto::NeighborFrame na =
      proto::ParseNeighbor(std::span<const uint8_t>(fx.queue.At(1).bytes, fx.queue.At(1).len));
  EXPECT_EQ(proto::ResolvedBy(na, kHost6), kHost);
  const std::vector<uint64_t> c = fx.Counts();
  EXPECT_EQ(c[kArpRequests], 1u);
  EXPECT_EQ(c[kArpReplies], 1u);
  EXPECT_EQ(c[kNdSolicitations], 1u);
  EXPECT_EQ(c[kNdAdvertisements], 1u);
  EXPECT_EQ(c[kUnanswered], 0u);
  EXPECT_EQ(c[kOther], 0u);
}

TEST(NeighborHandler, OtherAddressesAreCountedApartUnanswered) {
  Fixture fx;
  EXPECT_EQ(fx.Take(ArpFor(Ipv4Addr{0xC6120002})), Taken::kYes);
  EXPECT_EQ(fx.queue.size(), 0u);
  EXPECT_EQ(fx.Counts()[kOther], 1u);
  EXPECT_EQ(fx.Counts()[kArpRequests], 0u);
}

TEST(NeighborHandler, AnsweringOffOrAFullQueueLeavesRequestsUnanswered) {
  Fixture off(AnswerSpec{.arp = false, .nd = true, .echo = true});
  EXPECT_EQ(off.Take(ArpFor(kHost4)), Taken::kYes);
  EXPECT_EQ(off.queue.size(), 0u);
  EXPECT_EQ(off.Counts()[kArpRequests], 1u);
  EXPECT_EQ(off.Counts()[kUnanswered], 1u);
  Fixture full;
  for (int i = 0; i < 6; ++i) full.Take(ArpFor(kHost4));
  EXPECT_EQ(full.queue.size(), 4u);  // the queue's capacity
  EXPECT_EQ(full.Counts()[kArpReplies], 4u);
  EXPECT_EQ(full.Counts()[kUnanswered], 2u);
}

TEST(NeighborHandler, LeavesOtherFramesAndFlagsMalformedOnes) {
  Fixture fx;
  std::vector<uint8_t> udp(64, 0);
  udp[12] = 0x88;  // an EtherType none of these protocols use
  udp[13] = 0xB5;
  EXPECT_EQ(fx.Take(udp), Taken::kNo);
  std::vector<uint8_t> ns = NsFor(kHost6);
  ns[14 + 7] = 1;  // hop limit
  EXPECT_EQ(fx.Take(ns), Taken::kInvalid);
  EXPECT_EQ(fx.queue.size(), 0u);
}

TEST(NeighborHandler, AHostOfThePortsOwnMacIsAnsweredWithIt) {
  PortHosts hosts;
  const Ipv4Addr dst{0xC6130001};  // a stream's destination on this RX port
  hosts.Add(dst, kPortMac);
  AnswerQueue queue{4};
  PortContext c;
  c.hosts = &hosts;
  c.port_mac = MacAddr{{0x02, 0x11, 0x22, 0x33, 0x44, 0x55}};
  c.answers = &queue;
  FrameHandlers h(c);
  const std::vector<uint8_t> f = ArpFor(dst);
  EXPECT_EQ(h.Take(RxFrame{f.data(), static_cast<uint32_t>(f.size()), 0}), Taken::kYes);
  ASSERT_EQ(queue.size(), 1u);
  const proto::NeighborFrame arp = proto::ParseNeighbor(std::span<const uint8_t>(queue.At(0).bytes, queue.At(0).len));
  EXPECT_EQ(proto::ResolvedBy(arp, dst), c.port_mac);
  EXPECT_EQ(arp.eth.src, c.port_mac);
}

TEST(NeighborHandler, WithoutATxQueueNothingIsQueued) {
  PortHosts hosts;
  hosts.Add(kHost4, kHost);
  PortContext c;
  c.hosts = &hosts;
  c.answers = nullptr;
  FrameHandlers h(c);
  const std::vector<uint8_t> f = ArpFor(kHost4);
  EXPECT_EQ(h.Take(RxFrame{f.data(), static_cast<uint32_t>(f.size()), 0}), Taken::kYes);
  std::vector<std::vector<uint64_t>> sums = EmptyHandlerCounts();
  h.AddCounts(sums);
  EXPECT_EQ(sums[0][kUnanswered], 1u);
}

}  // namespace
}  // namespace fg::endpoint
