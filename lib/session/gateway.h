// session/gateway.h: each port's gateway (`ports[].gateway`) resolved by ARP
// or neighbour solicitation before traffic starts.
//
// Against a routed switch a stream's frames go to the next hop's MAC. For a
// port with a gateway, the control thread asks for it from the port's first
// host of the gateway's family (endpoint/host.h), up to kGatewayRequests
// times kGatewayWaitNs apart, while no lcore polls the port; the answer's MAC
// becomes the destination MAC of every stream the port sends whose plan does
// not write `dst_mac`, and of the answers (ACK, NAK, CNP, READ responses, CM
// REP) the port sends as a responder. A gateway that does not answer fails the run with one
// line naming the port and the address.
//
//   FG_ASSIGN_OR_RETURN(auto gw, fg::session::ResolveGateways(plan, ports, hosts));
//   fg::session::ApplyGateways(plan, gw);
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "base/net_addr.h"
#include "config/plan.h"
#include "endpoint/host.h"
#include "port/port.h"

namespace fg::session {

inline constexpr int kGatewayRequests = 3;
inline constexpr int64_t kGatewayWaitNs = 1'000'000'000;

struct GatewayResolution {
  std::string address;    // as the plan's gateway, formatted
  MacAddr mac;            // its answer
  bool nd = false;        // resolved by neighbour solicitation (IPv6), else ARP
  int requests = 0;       // requests sent until it answered
  int64_t elapsed_ns = 0; // the first request to the answer
};

// Per plan port: its gateway's resolution, or nullopt without a gateway.
absl::StatusOr<std::vector<std::optional<GatewayResolution>>> ResolveGateways(
    const config::Plan& plan, const std::vector<port::Port*>& ports, const std::vector<endpoint::PortHosts>& hosts);

// Each resolved gateway's MAC as its port's next hop (ports[].next_hop_mac:
// the destination MAC of its streams that do not write one, and of the
// answers it sends as a responder), and of the ranks behind the port.
void ApplyGateways(config::Plan& plan, const std::vector<std::optional<GatewayResolution>>& gateways);

}  // namespace fg::session
