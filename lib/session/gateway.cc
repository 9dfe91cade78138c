#include "session/gateway.h"

#include <array>
#include <chrono>
#include <thread>

#include "absl/strings/str_format.h"
#include "base/status.h"
#include "proto/neighbor.h"

namespace fg::session {

namespace {

// One port's gateway: the request from its first host of the family, again
// every kGatewayWaitNs, until an answer names its MAC.
absl::StatusOr<GatewayResolution> Resolve(const config::Plan& plan, size_t pi, port::Port& port,
                                          const endpoint::PortHosts& hosts) {
  const config::PortSpec& ps = plan.ports[pi];
  const config::Gateway& gw = *ps.gateway;
  GatewayResolution r;
  r.nd = gw.ipv6;
  r.address = gw.ipv6 ? FormatIpv6(gw.v6) : FormatIpv4(gw.v4);
  const std::string where =
      absl::StrFormat("%s: ports[%d] '%s': gateway %s", config::FormatLocation(plan.file, ps.at), pi, ps.name, r.address);
  std::array<uint8_t, 96> req{};
  size_t len = 0;
  if (gw.ipv6) {
    const auto from = hosts.first6();
    if (!from) return absl::InvalidArgumentError(where + ": the port sends from no IPv6 address to ask it from");
    len = proto::WriteNeighborSolicitation(from->second, from->first, gw.v6, std::nullopt, req.data());
  } else {
    const auto from = hosts.first4();
    if (!from) return absl::InvalidArgumentError(where + ": the port sends from no IPv4 address to ask it from");
    len = proto::WriteArpRequest(from->second, from->first, gw.v4, std::nullopt, req.data());
  }
  using Clock = std::chrono::steady_clock;
  const Clock::time_point t0 = Clock::now();
  std::optional<MacAddr> mac;
  for (int k = 0; k < kGatewayRequests && !mac; ++k) {
    FG_RETURN_IF_ERROR(port.SendControlFrame(std::span<const uint8_t>(req.data(), len)));
    ++r.requests;
    const Clock::time_point until = Clock::now() + std::chrono::nanoseconds(kGatewayWaitNs);
    while (!mac && Clock::now() < until) {
      const size_t n = port.ReceiveControlFrames([&](std::span<const uint8_t> f) {
        if (mac) return;
        const proto::NeighborFrame nf = proto::ParseNeighbor(f);
        mac = gw.ipv6 ? proto::ResolvedBy(nf, gw.v6) : proto::ResolvedBy(nf, gw.v4);
      });
      if (n == 0 && !mac) std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }
  if (!mac) {
    return absl::UnavailableError(absl::StrFormat("%s did not answer %d %s %d s apart", where, r.requests,
                                                  gw.ipv6 ? "neighbour solicitations" : "ARP requests",
                                                  kGatewayWaitNs / 1'000'000'000));
  }
  r.mac = *mac;
  r.elapsed_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count();
  return r;
}

}  // namespace

absl::StatusOr<std::vector<std::optional<GatewayResolution>>> ResolveGateways(
    const config::Plan& plan, const std::vector<port::Port*>& ports, const std::vector<endpoint::PortHosts>& hosts) {
  std::vector<std::optional<GatewayResolution>> out(plan.ports.size());
  for (size_t pi = 0; pi < plan.ports.size() && pi < ports.size(); ++pi) {
    if (!plan.ports[pi].gateway) continue;
    FG_ASSIGN_OR_RETURN(out[pi], Resolve(plan, pi, *ports[pi], hosts[pi]));
  }
  return out;
}

void ApplyGateways(config::Plan& plan, const std::vector<std::optional<GatewayResolution>>& gateways) {
  // The port's frames go to it (stream::WireFrame, the answers' next hop);
  // the streams' dst_mac stays their destination host's MAC.
  for (size_t pi = 0; pi < gateways.size() && pi < plan.ports.size(); ++pi) {
    plan.ports[pi].next_hop_mac = gateways[pi] ? std::optional<MacAddr>(gateways[pi]->mac) : std::nullopt;
  }
  // The ranks behind a port with a gateway send to it (config::RankNextHop).
  if (plan.ranks) {
    plan.ranks->next_hop.assign(plan.ports.size(), std::nullopt);
    for (size_t pi = 0; pi < gateways.size() && pi < plan.ports.size(); ++pi) {
      if (gateways[pi]) plan.ranks->next_hop[pi] = gateways[pi]->mac;
    }
  }
}

}  // namespace fg::session
