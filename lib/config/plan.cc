#include "config/plan.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <tuple>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/status.h"
#include "config/internal/frame_parse.h"
#include "config/internal/ranks_parse.h"
#include "config/reader.h"

namespace fg::config {
namespace {

Location Where(const Node& n) { return n.where(); }

// The node at a dotted path under `n` ("frame.roce.retransmit"), when written.
std::optional<Node> Under(const Node& n, std::string_view path) {
  // Recursion, not a loop assigning to one Node: a YAML::Node's assignment
  // writes through to the node it refers to, which would rewrite the plan's tree.
  const size_t dot = path.find('.');
  std::optional<Node> next = n.Optional(path.substr(0, dot));
  if (!next || dot == std::string_view::npos) return next;
  return Under(*next, path.substr(dot + 1));
}

// "'text'" for a scalar as written; `otherwise` for a map or a list.
std::string AsWritten(const Node& n, std::string_view otherwise) {
  const std::string t = n.text();
  return t.empty() ? std::string(otherwise) : "'" + t + "'";
}

absl::StatusOr<PortSpec> ParsePort(const Node& n) {
  FG_RETURN_IF_ERROR(n.CheckKeys({"name", "device", "rx_queues", "tx_queues", "rx_desc", "tx_desc", "mtu", "mbufs",
                                  "link_speed", "timestamps", "tx_timestamps", "respond", "gateway", "answer", "pfc"}));
  PortSpec p;
  p.line = n.line();
  p.at = n.where();
  n.Record(p.written);
  FG_ASSIGN_OR_RETURN(Node name, n.Required("name"));
  FG_ASSIGN_OR_RETURN(p.name, name.String());
  if (p.name.empty()) return name.Error("port name must not be empty");
  FG_RETURN_IF_ERROR(Opt(n, "device", p.device, [](const Node& d) { return d.String(); }));
  if (p.device.empty())
    return n.At("device").Error("device must not be empty; use 'loopback' for the built-in loopback");
  for (auto [key, out, lo] : {std::tuple{"rx_queues", &p.rx_queues, 0}, std::tuple{"tx_queues", &p.tx_queues, 1}}) {
    if (auto q = n.Optional(key)) {  // rx_queues: 0 makes a TX-only port
      auto word = q->String();
      if (word.ok() && *word == "auto") continue;
      FG_ASSIGN_OR_RETURN(int64_t v, q->Int(lo, 64));
      *out = static_cast<uint16_t>(v);
    }
  }
  FG_RETURN_IF_ERROR(Opt(n, "rx_desc", p.rx_desc, IntIn(64, 32768)));
  FG_RETURN_IF_ERROR(Opt(n, "tx_desc", p.tx_desc, IntIn(64, 32768)));
  FG_RETURN_IF_ERROR(Opt(n, "mtu", p.mtu, [](const Node& m) { return m.Bytes(68, 9000); }));
  if (auto m = n.Optional("mbufs")) {
    auto s = m->String();
    if (!s.ok() || *s != "auto") {
      FG_ASSIGN_OR_RETURN(int64_t v, m->Int(1024, 16 * 1024 * 1024));
      p.mbufs = static_cast<uint32_t>(v);
    }
  }
  if (auto l = n.Optional("link_speed")) {
    auto word = l->String();
    if (!word.ok() || *word != "auto") {
      FG_ASSIGN_OR_RETURN(Rate r, l->RateValue());
      if (r.kind != Rate::Kind::kBpsL1 && r.kind != Rate::Kind::kBpsL2) {
        return l->Error("link_speed is a bit rate (e.g. 100 Gbps) or auto");
      }
      if (r.value < 1e6 || r.value > 1.6e12) return l->Error("link_speed must be between 1 Mbps and 1.6 Tbps");
      p.link_speed_mbps = static_cast<uint32_t>(std::llround(r.value / 1e6));
    }
  }
  if (auto t = n.Optional("timestamps")) {
    FG_ASSIGN_OR_RETURN(std::string v, t->OneOf({"auto", "software", "hardware"}));
    p.timestamps = v == "software"   ? PortSpec::Timestamps::kSoftware
                   : v == "hardware" ? PortSpec::Timestamps::kHardware
                                     : PortSpec::Timestamps::kAuto;
  }
  if (auto t = n.Optional("tx_timestamps")) {
    FG_ASSIGN_OR_RETURN(std::string v, t->OneOf({"software", "scheduled"}));
    p.tx_scheduled = v == "scheduled";
  }
  if (auto r = n.Optional("respond")) {
    if (r->ExpectMap().ok()) {
      FG_RETURN_IF_ERROR(r->CheckKeys({"ack_every", "cnp_interval", "cnp_dscp", "cnp_pcp"}));
      RespondSpec spec;
      FG_RETURN_IF_ERROR(Opt(*r, "ack_every", spec.ack_every, IntIn(1, 65536)));
      FG_RETURN_IF_ERROR(Opt(*r, "cnp_interval", spec.cnp_interval_ns, DurationIn()));
      if (spec.cnp_interval_ns < 0 || spec.cnp_interval_ns > 1'000'000'000) {
        return r->At("cnp_interval").Error("cnp_interval must be at most 1 s");
      }
      FG_RETURN_IF_ERROR(Opt(*r, "cnp_dscp", spec.cnp_dscp, IntIn(0, 63)));
      FG_RETURN_IF_ERROR(Opt(*r, "cnp_pcp", spec.cnp_pcp, IntIn(0, 7)));
      p.respond = spec;
    } else {
      auto on = r->Bool();
      if (!on.ok()) return r->Error("respond is true, false or a map {ack_every, cnp_interval, cnp_dscp, cnp_pcp}");
      if (*on) p.respond = RespondSpec{};
    }
    // A responder answers what the port receives: a TX-only port has nothing to answer.
    if (p.respond && p.rx_queues == 0) {
      return r->Error(absl::StrFormat("port '%s' responds, but rx_queues %s makes it send only: it would receive "
                                      "nothing to answer; remove rx_queues: 0, or respond",
                                      p.name, AsWritten(n.At("rx_queues"), "0")));
    }
  }
  if (auto g = n.Optional("gateway")) {
    FG_ASSIGN_OR_RETURN(std::string text, g->String());
    auto ip = ParseIp(text);
    if (!ip.ok()) return g->Error("gateway " + std::string(ip.status().message()));
    p.gateway = *ip;
    if (p.rx_queues == 0) {
      return g->Error(absl::StrFormat("port '%s' has a gateway, but rx_queues %s makes it send only: it would never "
                                      "hear the gateway's answer; remove rx_queues: 0, or the gateway",
                                      p.name, AsWritten(n.At("rx_queues"), "0")));
    }
  }
  if (auto a = n.Optional("answer")) {
    FG_RETURN_IF_ERROR(a->ExpectMap());
    FG_RETURN_IF_ERROR(a->CheckKeys({"arp", "nd", "echo"}));
    for (auto [key, out] : {std::pair{"arp", &p.answer.arp}, std::pair{"nd", &p.answer.nd},
                            std::pair{"echo", &p.answer.echo}}) {
      if (auto b = a->Optional(key)) {
        FG_ASSIGN_OR_RETURN(*out, b->Bool());
      }
    }
  }
  if (auto f = n.Optional("pfc")) {
    FG_RETURN_IF_ERROR(f->ExpectMap());
    FG_RETURN_IF_ERROR(f->CheckKeys({"honor", "storm"}));
    if (auto h = f->Optional("honor")) {
      FG_ASSIGN_OR_RETURN(p.pfc.honor, h->Bool());
    }
    if (auto st = f->Optional("storm")) {
      FG_RETURN_IF_ERROR(st->ExpectMap());
      FG_RETURN_IF_ERROR(st->CheckKeys({"window", "events_per_s"}));
      FG_RETURN_IF_ERROR(Opt(*st, "window", p.pfc.storm_window_ns, DurationIn()));
      if (p.pfc.storm_window_ns < 1'000 || p.pfc.storm_window_ns > 10'000'000'000) {
        return st->At("window").Error("storm window must be between 1 us and 10 s");
      }
      if (auto r = st->Optional("events_per_s")) {
        FG_ASSIGN_OR_RETURN(p.pfc.storm_events_per_s, r->Number(1, 1e9));
      }
      // The onset is found from the times of the last `events` events (a ring of them per priority).
      const double events = p.pfc.storm_events_per_s * static_cast<double>(p.pfc.storm_window_ns) / 1e9;
      if (events < 1 || events > 4096) {
        return st->Error(absl::StrFormat("storm: events_per_s x window is %.4g events; it must be 1 to 4096", events));
      }
    }
  }
  return p;
}

absl::StatusOr<size_t> PortIndex(const Plan& plan, const Node& n) {
  FG_ASSIGN_OR_RETURN(std::string name, n.String());
  for (size_t i = 0; i < plan.ports.size(); ++i) {
    if (plan.ports[i].name == name) return i;
  }
  std::vector<std::string> names;
  for (const auto& p : plan.ports) names.push_back(p.name);
  return n.Error(absl::StrFormat("unknown port '%s'; ports in this plan: %s", name, absl::StrJoin(names, ", ")));
}

absl::StatusOr<StreamSpec> ParseStream(const Plan& plan, const Node& n) {
  FG_RETURN_IF_ERROR(n.CheckKeys(
      {"name", "port", "rx_port", "frame", "rate", "burst", "flows", "vary", "count", "duration", "start",
       "verify_payload"}));
  StreamSpec s;
  s.line = n.line();
  s.at = n.where();
  n.Record(s.written);
  FG_ASSIGN_OR_RETURN(Node name, n.Required("name"));
  FG_ASSIGN_OR_RETURN(s.name, name.String());
  if (s.name.empty()) return name.Error("stream name must not be empty");
  if (auto p = n.Optional("port")) {
    FG_ASSIGN_OR_RETURN(s.port, PortIndex(plan, *p));
  }
  s.rx_port = s.port;
  if (auto p = n.Optional("rx_port")) {
    FG_ASSIGN_OR_RETURN(s.rx_port, PortIndex(plan, *p));
  }
  if (auto f = n.Optional("frame")) {
    const PortSpec& tx = plan.ports[s.port];
    FG_ASSIGN_OR_RETURN(s.frame, internal::ParseFrame(*f, tx.mtu, tx.name));
  }
  // Go-back-N resends on the ACKs and NAKs of a responder: without one at the
  // rx_port, `retransmit` would be ignored in silence.
  if (auto rt = Under(n, "frame.roce.retransmit"); rt && s.frame.roce.go_back_n && !plan.ports[s.rx_port].respond) {
    return rt->Error(absl::StrFormat(
        "retransmit %s needs a responder: the requester goes back on the ACKs and NAKs the stream's rx_port "
        "answers with, and port '%s' does not respond; give it respond: true, or remove retransmit",
        AsWritten(*rt, "(go-back-N)"), plan.ports[s.rx_port].name));
  }
  // DCQCN never cuts a QP below min_rate: above the port's line rate, it could
  // not be sent (checked again against the link the port reports, stream::Compile).
  if (const auto& d = s.frame.roce.dcqcn; d && plan.ports[s.port].link_speed_mbps != 0) {
    const double line = plan.ports[s.port].link_speed_mbps * 1e6;
    if (d->min_rate_bps > line) {
      const Node at = Under(n, "frame.roce.dcqcn.min_rate").value_or(n.At("frame"));
      return at.Error(absl::StrFormat("min_rate %s is above port '%s' line rate of %s (link_speed): a QP could never "
                                      "be cut below it",
                                      AsWritten(at, FormatBitRate(d->min_rate_bps)), plan.ports[s.port].name,
                                      FormatBitRate(line)));
    }
  }
  if (auto b = n.Optional("burst")) {
    if (n.Optional("rate")) return b->Error("a stream has either a rate or a burst schedule, not both");
    FG_RETURN_IF_ERROR(b->CheckKeys({"frames", "gap"}));
    FG_ASSIGN_OR_RETURN(Node frames, b->Required("frames"));
    FG_ASSIGN_OR_RETURN(int64_t f, frames.Int(1, 1 << 30));
    s.burst.frames = static_cast<uint32_t>(f);
    FG_ASSIGN_OR_RETURN(Node gap, b->Required("gap"));
    FG_ASSIGN_OR_RETURN(s.burst.gap_ns, gap.Duration());
    s.rate = Rate{Rate::Kind::kPercentLine, 100};  // inside a burst: line rate
    s.rate_at = Where(*b);
  }
  // `flows: N`, or `flows: {count: N, rates: [R, ...]}`: flow i at rates[i % len].
  std::optional<Node> flows_node = n.Optional("flows");
  if (flows_node && flows_node->ExpectMap().ok()) {
    FG_RETURN_IF_ERROR(flows_node->CheckKeys({"count", "rates"}));
    FG_ASSIGN_OR_RETURN(Node count, flows_node->Required("count"));
    FG_ASSIGN_OR_RETURN(int64_t c, count.Int(1, 1 << 24));
    s.flows = static_cast<uint32_t>(c);
    FG_ASSIGN_OR_RETURN(Node rates, flows_node->Required("rates"));
    if (n.Optional("rate")) {
      return rates.Error("a stream with per-flow rates has no stream rate: its rate is the sum of its flows'");
    }
    if (n.Optional("burst")) return rates.Error("a burst schedule sends its flows together: no per-flow rates");
    FG_ASSIGN_OR_RETURN(std::vector<Node> items, rates.Items());
    if (items.empty()) return rates.Error("rates: give at least one rate");
    std::vector<Rate> list;
    for (const Node& i : items) {
      FG_ASSIGN_OR_RETURN(Rate r, i.RateValue());
      if (r.kind == Rate::Kind::kMax) return i.Error("'max' is not a per-flow rate; give pps, bit/s or % of line");
      if (!list.empty() && r.kind != list.front().kind) {
        return i.Error("give every per-flow rate in the same unit (pps, bit/s L2, bit/s L1 or % of line)");
      }
      if (!(r.value > 0)) return i.Error("a per-flow rate must be > 0");
      list.push_back(r);
    }
    // The stream's rate is the sum of its flows'; each flow's share of it is
    // its rate's (the unit is common, so shares are ratios of the values).
    s.rate = Rate{list.front().kind, 0};
    s.flow_weights.resize(s.flows);
    for (uint32_t f = 0; f < s.flows; ++f) {
      s.flow_weights[f] = list[f % list.size()].value;
      s.rate.value += s.flow_weights[f];
    }
    s.rate_at = Where(rates);
    // Each rate is bounded (ParseRate); their sum over many flows is too.
    const bool pps = s.rate.kind == Rate::Kind::kPps;
    if ((pps && s.rate.value > kMaxPps) ||
        ((s.rate.kind == Rate::Kind::kBpsL1 || s.rate.kind == Rate::Kind::kBpsL2) && s.rate.value > kMaxBps)) {
      return rates.Error(absl::StrFormat(
          "the %d flows' rates add up to %s, above the largest stream rate, %s (no port sends faster)", s.flows,
          FormatRate(s.rate), pps ? FormatPacketRate(kMaxPps) : FormatBitRate(kMaxBps)));
    }
  } else if (!n.Optional("burst")) {
    FG_ASSIGN_OR_RETURN(Node rate, n.Required("rate"));
    FG_ASSIGN_OR_RETURN(s.rate, rate.RateValue());
    s.rate_at = Where(rate);
  }
  if (s.flow_weights.empty()) FG_RETURN_IF_ERROR(Opt(n, "flows", s.flows, IntIn(1, 1 << 24)));
  if (s.frame.roce.dcqcn) {
    // Each QP is paced on its own (its rate is what a CNP cuts), from the
    // stream's rate shared evenly (or its flows' own rates) as its maximum.
    const Node at = n.At("frame");
    if (s.burst.frames != 0) return at.Error("dcqcn paces each QP at its own rate: no burst schedule");
    if (s.rate.kind == Rate::Kind::kMax) {
      return at.Error("dcqcn cuts each QP's rate from a set one: give the stream a rate (its QPs share it) or "
                      "flows: {count, rates}, not rate: max");
    }
    if (s.flow_weights.empty()) s.flow_weights.assign(s.flows, 1.0);
  }
  if (auto v = n.Optional("vary")) {
    FG_ASSIGN_OR_RETURN(std::vector<Node> items, v->Items());
    for (const Node& item : items) {
      FG_ASSIGN_OR_RETURN(std::string f, item.OneOf({"src_ip", "dst_ip"}));
      (f == "src_ip" ? s.frame.vary_src_ip : s.frame.vary_dst_ip) = true;
    }
  }
  FG_RETURN_IF_ERROR(Opt(n, "verify_payload", s.verify_payload, [](const Node& x) { return x.Bool(); }));
  FG_RETURN_IF_ERROR(Opt(n, "count", s.count, IntIn(1, INT64_MAX)));
  FG_RETURN_IF_ERROR(Opt(n, "duration", s.duration_ns, DurationIn()));
  if (auto st = n.Optional("start")) {
    // 0 in any unit is the run's start; Duration() wants a positive one.
    auto word = st->String();
    const bool zero = word.ok() && !word->empty() && (*word)[0] == '0' &&
                      word->find_first_not_of("0. nsum") == std::string::npos;
    if (!zero) {
      FG_ASSIGN_OR_RETURN(s.start_ns, st->Duration());
    }
    const int64_t duration = s.duration_ns > 0 ? s.duration_ns : plan.duration_ns;
    if (s.start_ns >= duration) {
      return st->Error(absl::StrFormat("the stream starts at %s and ends at its duration, %s: it would send nothing",
                                       FormatDuration(s.start_ns), FormatDuration(duration)));
    }
  }
  return s;
}

// A test's `streams:` (names), all streams when absent.
absl::Status ParseTestStreams(const Plan& plan, const Node& n, TestSpec& t) {
  if (auto list = n.Optional("streams")) {
    FG_ASSIGN_OR_RETURN(std::vector<Node> items, list->Items());
    for (const Node& i : items) {
      FG_ASSIGN_OR_RETURN(std::string name, i.String());
      auto it =
          std::find_if(plan.streams.begin(), plan.streams.end(), [&](const StreamSpec& s) { return s.name == name; });
      if (it == plan.streams.end()) {
        std::vector<std::string> names;
        for (const auto& s : plan.streams) names.push_back(s.name);
        return i.Error(
            absl::StrFormat("unknown stream '%s'; streams in this plan: %s", name, absl::StrJoin(names, ", ")));
      }
      t.streams.push_back(static_cast<size_t>(it - plan.streams.begin()));
    }
  }
  if (t.streams.empty()) {
    for (size_t i = 0; i < plan.streams.size(); ++i) t.streams.push_back(i);
  }
  return absl::OkStatus();
}

// `warmup:` a duration, or none.
absl::Status ParseWarmup(const Node& n, TestSpec& t) {
  if (auto w = n.Optional("warmup")) {
    auto text = w->String();
    if (text.ok() && *text == "none") {
      t.warmup_ns = 0;
    } else {
      FG_ASSIGN_OR_RETURN(t.warmup_ns, w->Duration());
    }
  }
  return absl::OkStatus();
}

// One item of `tests:`: a map with one key, its kind, whose section the
// kind reads; what every kind has is read here.
absl::StatusOr<TestSpec> ParseTest(const Plan& plan, const Node& n, const TestKindParsers& kinds) {
  std::vector<std::string_view> keys;
  for (const TestKindParser* k : kinds) keys.push_back(k->key());
  if (keys.empty()) return n.Error("this program reads plans without tests (config::ParsePlan was given no test kinds; methods::LoadPlan gives it every kind)");
  FG_RETURN_IF_ERROR(n.CheckKeys(keys));
  // One item, one test: a second kind's section would be read by no one.
  const TestKindParser* first = nullptr;
  for (const TestKindParser* kind : kinds) {
    const std::optional<Node> section = n.Optional(kind->key());
    if (!section) continue;
    if (first != nullptr) {
      return section->Error(absl::StrFormat(
          "a test item is one test of one kind, and this one also has '%s'; give each test an item of its own "
          "(- %s: {...} and - %s: {...})",
          first->key(), first->key(), kind->key()));
    }
    first = kind;
  }
  for (const TestKindParser* kind : kinds) {
    const std::optional<Node> section = n.Optional(kind->key());
    if (!section) continue;
    std::vector<std::string_view> allowed = {"name", "streams", "warmup", "tester_limit_retries"};
    for (std::string_view k : kind->own_keys()) allowed.push_back(k);
    FG_RETURN_IF_ERROR(section->CheckKeys(allowed));
    TestSpec t;
    t.kind = std::string(kind->key());
    t.line = section->line();
    t.at = section->where();
    section->Record(t.written);
    t.name = t.kind;
    t.warmup_ns = kind->default_warmup_ns();
    FG_RETURN_IF_ERROR(Opt(*section, "name", t.name, [](const Node& x) { return x.String(); }));
    FG_RETURN_IF_ERROR(ParseTestStreams(plan, *section, t));
    if (t.streams.empty() && kind->needs_streams()) {
      return section->Error(absl::StrFormat(
          "a %s test sends the plan's streams, and this plan has none (its ranks exchange data in collective tests)",
          t.kind));
    }
    FG_RETURN_IF_ERROR(Opt(*section, "tester_limit_retries", t.tester_limit_retries, IntIn(0, 100)));
    FG_RETURN_IF_ERROR(ParseWarmup(*section, t));
    FG_ASSIGN_OR_RETURN(t.params, kind->Parse(plan, *section, t));
    return t;
  }
  std::string names;
  for (size_t i = 0; i < keys.size(); ++i) {
    names += (i == 0 ? "" : i + 1 == keys.size() ? " or " : ", ") + std::string(keys[i]);
  }
  return n.Error("a test names its kind: " + names);
}

absl::StatusOr<Plan> Parse(const std::string& file, const Node& root, const TestKindParsers& kinds) {
  FG_RETURN_IF_ERROR(root.CheckKeys({"version", "name", "dut", "host", "topology", "dut_counters", "eal", "duration",
                                     "drain", "placement", "report", "ports", "ranks", "streams", "tests", "lab"}));
  Plan plan;
  // The lab (tools/lab.py builds it and validates its contents) is the
  // tester's surroundings, not something fabricgen runs.
  if (auto lab = root.Optional("lab")) FG_RETURN_IF_ERROR(lab->ExpectMap());
  plan.file = file;
  if (auto v = root.Optional("version")) {
    FG_ASSIGN_OR_RETURN(int64_t version, v->Int(kPlanVersion, kPlanVersion));
    (void)version;
  }
  FG_RETURN_IF_ERROR(Opt(root, "name", plan.name, [](const Node& n) { return n.String(); }));
  FG_RETURN_IF_ERROR(Opt(root, "topology", plan.topology, [](const Node& n) { return n.String(); }));
  for (auto [key, out] : {std::pair{"dut", &plan.dut}, std::pair{"host", &plan.host}}) {
    if (auto m = root.Optional(key)) {
      FG_ASSIGN_OR_RETURN(*out, m->StringPairs());
    }
  }
  if (auto c = root.Optional("dut_counters")) {
    FG_ASSIGN_OR_RETURN(std::vector<Node> items, c->Items());
    if (items.empty()) return c->Error("dut_counters: give the command and its arguments, e.g. [lab.py, counters]");
    for (const Node& i : items) {
      FG_ASSIGN_OR_RETURN(std::string arg, i.String());
      plan.dut_counters.push_back(arg);
    }
  }
  if (auto e = root.Optional("eal")) {
    FG_ASSIGN_OR_RETURN(std::vector<Node> items, e->Items());
    for (const Node& i : items) {
      FG_ASSIGN_OR_RETURN(std::string arg, i.String());
      plan.eal.push_back(arg);
      plan.eal_at.push_back(Where(i));
    }
  }
  FG_RETURN_IF_ERROR(Opt(root, "duration", plan.duration_ns, DurationIn()));
  FG_RETURN_IF_ERROR(Opt(root, "drain", plan.drain_ns, DurationIn()));
  FG_RETURN_IF_ERROR(Opt(root, "placement", plan.placement, [](const Node& n) -> absl::StatusOr<PlacementPolicy> {
    FG_ASSIGN_OR_RETURN(std::string v, n.OneOf({"flow", "stream", "port"}));
    return v == "flow" ? PlacementPolicy::kFlow : v == "stream" ? PlacementPolicy::kStream : PlacementPolicy::kPort;
  }));
  if (auto r = root.Optional("report")) {
    FG_RETURN_IF_ERROR(r->CheckKeys({"per_flow"}));
    if (auto pf = r->Optional("per_flow")) {
      auto all = pf->String();
      if (all.ok() && *all == "all") {
        plan.per_flow = UINT32_MAX;
      } else {
        FG_ASSIGN_OR_RETURN(int64_t v, pf->Int(0, 1 << 24));
        plan.per_flow = static_cast<uint32_t>(v);
      }
    }
  }

  if (auto p = root.Optional("ports")) {
    FG_ASSIGN_OR_RETURN(std::vector<Node> items, p->Items());
    if (items.empty()) return p->Error("ports: list is empty; remove it to use the built-in loopback");
    std::set<std::string> names;
    for (const Node& i : items) {
      FG_ASSIGN_OR_RETURN(PortSpec port, ParsePort(i));
      if (!names.insert(port.name).second) {
        return i.Required("name")->Error(absl::StrFormat("port name '%s' is used twice", port.name));
      }
      plan.ports.push_back(std::move(port));
    }
  } else {
    PortSpec loop;
    loop.name = "loop0";
    plan.ports.push_back(loop);
  }

  if (auto r = root.Optional("ranks")) {
    FG_ASSIGN_OR_RETURN(RanksSpec ranks, internal::ParseRanks(*r, plan.ports));
    plan.ranks = std::move(ranks);
  }
  // A plan with ranks needs no streams (its collectives make the traffic).
  std::optional<Node> streams_node = root.Optional("streams");
  if (!streams_node && !plan.ranks) {
    return root.Error("a plan needs streams (what to send) or ranks (who exchanges a collective's data); it has neither");
  }
  const Node streams = streams_node ? *streams_node : root;
  std::vector<Node> items;
  if (streams_node) {
    FG_ASSIGN_OR_RETURN(items, streams.Items());
    if (items.empty()) return streams.Error("streams: list is empty; a plan needs at least one stream");
  }
  std::set<std::string> names;
  for (const Node& i : items) {
    FG_ASSIGN_OR_RETURN(StreamSpec s, ParseStream(plan, i));
    if (!names.insert(s.name).second) {
      return i.Required("name")->Error(absl::StrFormat("stream name '%s' is used twice", s.name));
    }
    plan.streams.push_back(std::move(s));
  }
  uint64_t flows = 0;
  for (const StreamSpec& s : plan.streams) flows += s.flows;
  if (flows > (1u << 24)) {
    return streams.Error(absl::StrFormat("%d flows in all; the signature's 24-bit flow id allows 16,777,216", flows));
  }
  if (auto tests = root.Optional("tests")) {
    FG_ASSIGN_OR_RETURN(std::vector<Node> list, tests->Items());
    for (size_t k = 0; k < list.size(); ++k) {
      FG_ASSIGN_OR_RETURN(TestSpec t, ParseTest(plan, list[k], kinds));
      // A test is named by at_throughput_of, the CLI's `run NAME` and the
      // report: two of one name could not be told apart.
      for (size_t j = 0; j < plan.tests.size(); ++j) {
        if (plan.tests[j].name != t.name) continue;
        const Node section = *list[k].Optional(t.kind);
        const std::optional<Node> name = section.Optional("name");
        return (name ? *name : section)
            .Error(absl::StrFormat("test name '%s'%s is used twice (tests[%d] at line %d has it); give each test a "
                                   "name of its own (name: ...)",
                                   t.name, name ? "" : " (the kind's key, a test's default name)", j,
                                   plan.tests[j].line));
      }
      plan.tests.push_back(std::move(t));
    }
  }
  if (plan.streams.empty() && plan.tests.empty()) {
    return root.At("ranks").Error(
        "a plan without streams runs only tests over its ranks (tests: [...]); it has no tests, so there is nothing "
        "to run");
  }
  return plan;
}

}  // namespace

absl::StatusOr<Plan> ParsePlan(const std::string& file, const std::string& text, const TestKindParsers& kinds) {
  FG_ASSIGN_OR_RETURN(Node root, LoadYamlString(&file, text));
  return Parse(file, root, kinds);
}

absl::StatusOr<Plan> LoadPlan(const std::string& file, const TestKindParsers& kinds) {
  FG_ASSIGN_OR_RETURN(Node root, LoadYamlFile(&file));
  return Parse(file, root, kinds);
}

absl::Status EarlierTest(const Plan& plan, const Node& n, std::string_view kind, std::string& out) {
  FG_ASSIGN_OR_RETURN(out, n.String());
  for (const TestSpec& x : plan.tests) {
    if (x.kind == kind && x.name == out) return absl::OkStatus();
  }
  return n.Error(absl::StrFormat("no earlier %s test named '%s'", kind, out));
}

}  // namespace fg::config
