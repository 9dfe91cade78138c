#include "config/internal/ranks_parse.h"

#include <algorithm>
#include <set>
#include <string>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/status.h"
#include "config/internal/frame_parse.h"

namespace fg::config {

namespace internal {
namespace {

// The last 32 bits of an address and the rest (IPv6's first 96 bits): ranks
// of one port take consecutive values of the former.
struct Span {
  std::string prefix;  // "" for IPv4
  uint64_t first = 0, end = 0;
};
Span SpanOf(const IpAddr& ip, uint32_t count) {
  Span s;
  const uint64_t low = IpLow32(ip);
  if (ip.ipv6) s.prefix.assign(ip.v6.bytes.begin(), ip.v6.bytes.begin() + 12);
  s.first = low;
  s.end = low + count;
  return s;
}

}  // namespace

absl::StatusOr<RanksSpec> ParseRanks(const Node& n, const std::vector<PortSpec>& ports) {
  FG_RETURN_IF_ERROR(n.CheckKeys({"count", "ports", "placement", "first_address", "qps_per_pair", "message", "pmtu",
                                  "connect", "dcqcn", "retransmit", "entropy"}));
  RanksSpec r;
  r.line = n.line();
  r.at = n.where();
  n.Record(r.written);
  FG_ASSIGN_OR_RETURN(Node count, n.Required("count"));
  FG_ASSIGN_OR_RETURN(int64_t c, count.Int(2, kMaxRanks));
  r.count = static_cast<uint32_t>(c);

  std::vector<std::string> names;
  for (const PortSpec& p : ports) names.push_back(p.name);
  if (auto list = n.Optional("ports")) {
    FG_ASSIGN_OR_RETURN(std::vector<Node> items, list->Items());
    if (items.empty()) return list->Error("ports: list is empty; name the ports the ranks live behind, or remove it");
    for (const Node& i : items) {
      FG_ASSIGN_OR_RETURN(std::string name, i.String());
      auto it = std::find(names.begin(), names.end(), name);
      if (it == names.end()) {
        return i.Error(absl::StrFormat("unknown port '%s'; ports in this plan: %s", name, absl::StrJoin(names, ", ")));
      }
      const size_t k = static_cast<size_t>(it - names.begin());
      if (std::find(r.ports.begin(), r.ports.end(), k) != r.ports.end()) {
        return i.Error(absl::StrFormat("port '%s' is listed twice", name));
      }
      r.ports.push_back(k);
    }
  } else {
    for (size_t k = 0; k < ports.size(); ++k) r.ports.push_back(k);
  }
  for (size_t k : r.ports) {
    if (ports[k].rx_queues == 0) {
      return n.At("ports").Error(absl::StrFormat(
          "port '%s' sends only (rx_queues: 0), but its ranks receive their peers' data there", ports[k].name));
    }
  }
  FG_RETURN_IF_ERROR(Opt(n, "placement", r.placement, [](const Node& x) -> absl::StatusOr<RanksSpec::Placement> {
    FG_ASSIGN_OR_RETURN(std::string v, x.OneOf({"block", "round_robin"}));
    return v == "block" ? RanksSpec::Placement::kBlock : RanksSpec::Placement::kRoundRobin;
  }));

  // first_address: every port of `ranks.ports`, or none (the defaults).
  if (auto fa = n.Optional("first_address")) {
    FG_RETURN_IF_ERROR(fa->ExpectMap());
    std::vector<std::string_view> allowed;
    for (size_t k : r.ports) allowed.push_back(ports[k].name);
    FG_RETURN_IF_ERROR(fa->CheckKeys(allowed));
    for (size_t k : r.ports) {
      const std::optional<Node> a = fa->Optional(ports[k].name);
      if (!a) {
        return fa->Error(absl::StrFormat(
            "no address for port '%s': give every port of ranks.ports its first rank's address, or none (the "
            "defaults 198.18.0.1, 198.18.16.1, ...)",
            ports[k].name));
      }
      FG_ASSIGN_OR_RETURN(std::string text, a->String());
      auto ip = ParseIp(text);
      if (!ip.ok()) return a->Error(std::string(ip.status().message()));
      if (!r.first_address.empty() && ip->ipv6 != r.first_address[0].ipv6) {
        return a->Error("the ranks' addresses are all IPv4 or all IPv6 (one collective, one family)");
      }
      r.first_address.push_back(*ip);
    }
  } else {
    if (r.ports.size() > 32) {
      return n.At("ports").Error("more than 32 ports: give first_address for each (the defaults cover 32)");
    }
    for (size_t k = 0; k < r.ports.size(); ++k) {
      r.first_address.push_back(IpPlus(IpAddr{.ipv6 = false, .v4 = Ipv4Addr{0xC6120001}, .v6 = {}},
                                       static_cast<uint32_t>(k) * kDefaultRankBlock));
    }
  }
  // No two ranks share an address, and no port's run of addresses wraps.
  {
    const std::vector<Rank> placed = PlaceRanks(r);
    std::vector<uint32_t> on_port(ports.size(), 0);
    for (const Rank& x : placed) on_port[x.port] = std::max(on_port[x.port], x.index_on_port + 1);
    std::vector<std::pair<Span, size_t>> spans;
    for (size_t k = 0; k < r.ports.size(); ++k) {
      const Span s = SpanOf(r.first_address[k], on_port[r.ports[k]]);
      const Node where = n.At("first_address").At(ports[r.ports[k]].name);
      if (s.end > (uint64_t{1} << 32)) {
        return where.Error(absl::StrFormat("%s + %d ranks passes the end of the address space",
                                           FormatIp(r.first_address[k]), on_port[r.ports[k]]));
      }
      for (const auto& [o, j] : spans) {
        if (o.prefix == s.prefix && s.first < o.end && o.first < s.end) {
          return where.Error(absl::StrFormat(
              "the ranks of port '%s' (%s, %d addresses) overlap those of port '%s' (%s, %d); each rank needs an "
              "address of its own",
              ports[r.ports[k]].name, FormatIp(r.first_address[k]), s.end - s.first, ports[r.ports[j]].name,
              FormatIp(r.first_address[j]), o.end - o.first));
        }
      }
      spans.emplace_back(s, k);
    }
  }

  FG_RETURN_IF_ERROR(Opt(n, "qps_per_pair", r.qps_per_pair, IntIn(1, kMaxQpsPerPair)));
  FG_RETURN_IF_ERROR(Opt(n, "message", r.message, BytesIn(64, uint64_t{1} << 31)));
  FG_RETURN_IF_ERROR(Opt(n, "pmtu", r.pmtu, IntIn(256, 4096)));
  if ((r.pmtu & (r.pmtu - 1)) != 0) {
    return n.At("pmtu").Error(absl::StrFormat("%d is not a path MTU; expected 256, 512, 1024, 2048 or 4096", r.pmtu));
  }
  if (auto cn = n.Optional("connect")) {
    FG_ASSIGN_OR_RETURN(std::string v, cn->OneOf({"cm", "none"}));
    r.connect_cm = v == "cm";
  }
  if (auto d = n.Optional("dcqcn")) {
    FG_ASSIGN_OR_RETURN(DcqcnSpec dc, ParseDcqcn(*d));
    r.dcqcn = dc;
  }
  if (auto rt = n.Optional("retransmit")) FG_RETURN_IF_ERROR(ParseRetransmit(*rt, r.go_back_n, r.retransmit_timeout_ns));
  if (auto en = n.Optional("entropy")) FG_RETURN_IF_ERROR(ParseEntropy(*en, r.entropy, proto::Encap{}.udp_src));

  // Every rank's packets fit its port: a full pmtu of payload after the
  // headers (what a FIRST packet of a WRITE carries: BTH, RETH, ICRC).
  for (size_t k : r.ports) {
    FrameSpec f = RankQpFrame(r, Rank{}, Rank{});
    f.encap.l3.ipv6 = r.first_address[0].ipv6;
    f.roce.message = r.pmtu * 2;  // a FIRST packet of pmtu bytes
    if (absl::Status st = CheckFrame(f, ports[k].mtu, ports[k].name); !st.ok()) {
      return n.At("pmtu").Error(absl::StrFormat("ranks.pmtu %d on port '%s': %s", r.pmtu, ports[k].name, st.message()));
    }
  }
  return r;
}

}  // namespace internal

}  // namespace fg::config
