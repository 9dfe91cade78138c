// config/ranks.h: the plan's `ranks:` section: N emulated accelerators
// behind the tester's ports, each a host with its own MAC and IP address,
// exchanging a collective's data over RC QPs (issue 28; the collectives
// themselves are lib/collective's schedules).
//
//   ranks:
//     count: 8
//     ports: [a, b]                 # default: every port of the plan
//     placement: block              # or round_robin
//     first_address: {a: 198.18.0.1, b: 198.19.0.1}
//     qps_per_pair: 2
//     message: 64 KiB               # the RDMA WRITE message size the data is cut into
//     pmtu: 1024
//
// docs/plan-reference.md "Ranks" documents every key with its default.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/net_addr.h"
#include "config/frame_spec.h"
#include "config/location.h"

namespace fg::config {

inline constexpr uint32_t kMaxRanks = 1024;
inline constexpr uint32_t kMaxQpsPerPair = 64;
// The default first addresses: entry k of `ranks.ports` starts at
// 198.18.0.1 + k x 4096 (198.18.0.1, 198.18.16.1, ...), inside RFC 2544's
// benchmarking range for up to 32 ports of 4,095 ranks.
inline constexpr uint32_t kDefaultRankBlock = 4096;

struct RanksSpec {
  uint32_t count = 0;
  std::vector<size_t> ports;  // indices into Plan::ports, in the order written
  enum class Placement : uint8_t { kBlock, kRoundRobin } placement = Placement::kBlock;
  std::vector<IpAddr> first_address;  // per entry of `ports`: its first rank's address
  uint32_t qps_per_pair = 1;
  // The RC QPs' frames: RoCEv2 WRITEs of `message` bytes (a transfer's last
  // message shorter), `pmtu` payload per packet, with the transport's
  // reliability (go-back-N), DCQCN, CM set-up and entropy as for streams.
  uint64_t message = 64 * 1024;
  uint32_t pmtu = 1024;
  bool connect_cm = false;
  std::optional<DcqcnSpec> dcqcn;
  bool go_back_n = true;
  int64_t retransmit_timeout_ns = 64'000'000;
  EntropySpec entropy;
  // Per plan port: the MAC its ranks send to, when the port has a gateway
  // (`ports[].gateway`, resolved before traffic: session/gateway.h); else a
  // frame goes to the destination rank's own MAC (one L2 segment).
  std::vector<std::optional<MacAddr>> next_hop;
  int line = 0;
  Location at;
  WrittenValues written;
};

// Where a rank lives and who it is.
struct Rank {
  uint32_t id = 0;
  size_t port = 0;             // index into Plan::ports
  uint32_t index_on_port = 0;  // its place among its port's ranks (its address's offset)
  IpAddr ip;
  MacAddr mac;
};

// Rank i's MAC: 02:fa:6e:00:HH:LL with HHLL = i (locally administered,
// unicast; "fa6e" as the test signature's magic).
MacAddr RankMac(uint32_t id);

// Every rank's port and address. block: the ranks split into contiguous
// runs, one per port in `ports` order (the first count % P ports one more);
// round_robin: rank i on port i % P.
std::vector<Rank> PlaceRanks(const RanksSpec& r);

// The frame of a QP from rank `from` to rank `to`: an RC WRITE with the
// ranks' message, pmtu, DCQCN, retransmission, CM and entropy, between the
// two ranks' addresses, from `from`'s MAC to `to`'s (or to its port's next hop).
FrameSpec RankQpFrame(const RanksSpec& r, const Rank& from, const Rank& to);
// The destination MAC of a frame rank `from` sends to rank `to`: its port's next hop, else `to`'s MAC.
MacAddr RankNextHop(const RanksSpec& r, const Rank& from, const Rank& to);

}  // namespace fg::config
