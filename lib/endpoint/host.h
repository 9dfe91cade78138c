// endpoint/host.h: the hosts of a port: every address fabricgen sends from
// there, with the MAC it sends from.
//
// A host is an identity on a port. Every stream's source address is a host
// of the stream's TX port (each flow's, when the flows vary their source);
// its destination (each flow's) is a host of its RX port: on a responding
// port (`respond`), the address its answers come from, with the stream's
// destination MAC; on another RX port, with the port's own MAC (kPortMac
// here: the handler answers with the port's). The
// port answers ARP, neighbour solicitation and echo for these addresses
// (endpoint/neighbor.h), so a routed switch can resolve them the ordinary
// way. Read-only once built: the RX lcores of the port share one.
//
//   std::vector<fg::endpoint::PortHosts> hosts = fg::endpoint::HostsOfPlan(plan);
//   if (const fg::MacAddr* mac = hosts[0].Find(fg::Ipv4Addr{0xC6120001})) ...
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "base/net_addr.h"
#include "config/plan.h"


namespace fg::endpoint {

// A host's MAC that stands for its port's own (a stream's destination on an
// RX port that does not respond): all zeros, never a sender's.
inline constexpr MacAddr kPortMac{};

// What a port answers for its hosts (`ports[].answer`).
using AnswerSpec = config::AnswerSpec;

class PortHosts {
 public:
  // A repeated address keeps its first MAC.
  void Add(Ipv4Addr ip, const MacAddr& mac) { v4_.try_emplace(ip.value, mac); }
  void Add(const Ipv6Addr& ip, const MacAddr& mac) { v6_.try_emplace(ip.bytes, mac); }
  // The MAC of the host with this address; nullptr: none of this port's.
  const MacAddr* Find(Ipv4Addr ip) const {
    auto it = v4_.find(ip.value);
    return it == v4_.end() ? nullptr : &it->second;
  }
  const MacAddr* Find(const Ipv6Addr& ip) const {
    auto it = v6_.find(ip.bytes);
    return it == v6_.end() ? nullptr : &it->second;
  }
  size_t ipv4_count() const { return v4_.size(); }
  size_t ipv6_count() const { return v6_.size(); }
  bool empty() const { return v4_.empty() && v6_.empty(); }
  // The port's first host of each family in the plan's order (the sender
  // of its gateway's resolution); nullopt: none.
  std::optional<std::pair<Ipv4Addr, MacAddr>> first4() const { return first4_; }
  std::optional<std::pair<Ipv6Addr, MacAddr>> first6() const { return first6_; }
  void NoteFirst(Ipv4Addr ip, const MacAddr& mac) {
    if (!first4_) first4_ = {ip, mac};
  }
  void NoteFirst(const Ipv6Addr& ip, const MacAddr& mac) {
    if (!first6_) first6_ = {ip, mac};
  }

 private:
  absl::flat_hash_map<uint32_t, MacAddr> v4_;
  absl::flat_hash_map<std::array<uint8_t, 16>, MacAddr> v6_;
  std::optional<std::pair<Ipv4Addr, MacAddr>> first4_;
  std::optional<std::pair<Ipv6Addr, MacAddr>> first6_;
};

// The hosts of each of the plan's ports (by port index), from its streams.
std::vector<PortHosts> HostsOfPlan(const config::Plan& plan);

}  // namespace fg::endpoint
