#include "config/plan.h"

#include <algorithm>
#include <set>
#include <tuple>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/status.h"
#include "config/internal/frame_parse.h"
#include "config/internal/reader.h"

namespace fg::config {
namespace {

using internal::DurationIn;
using internal::IntIn;
using internal::Node;
using internal::Opt;

Location Where(const Node& n) { return Location{n.line(), n.column()}; }

absl::StatusOr<PortSpec> ParsePort(const Node& n) {
  FG_RETURN_IF_ERROR(n.CheckKeys({"name", "device", "rx_queues", "tx_queues", "rx_desc", "tx_desc", "mtu", "mbufs",
                                  "timestamps", "tx_timestamps"}));
  PortSpec p;
  p.line = n.line();
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
      {"name", "port", "rx_port", "frame", "rate", "burst", "flows", "vary", "count", "duration", "verify_payload"}));
  StreamSpec s;
  s.line = n.line();
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
  } else if (!n.Optional("burst")) {
    FG_ASSIGN_OR_RETURN(Node rate, n.Required("rate"));
    FG_ASSIGN_OR_RETURN(s.rate, rate.RateValue());
    s.rate_at = Where(rate);
  }
  if (s.flow_weights.empty()) FG_RETURN_IF_ERROR(Opt(n, "flows", s.flows, IntIn(1, 1 << 24)));
  if (auto v = n.Optional("vary")) {
    FG_ASSIGN_OR_RETURN(std::vector<internal::Node> items, v->Items());
    for (const internal::Node& item : items) {
      FG_ASSIGN_OR_RETURN(std::string f, item.OneOf({"src_ip", "dst_ip"}));
      (f == "src_ip" ? s.frame.vary_src_ip : s.frame.vary_dst_ip) = true;
    }
  }
  FG_RETURN_IF_ERROR(Opt(n, "verify_payload", s.verify_payload, [](const Node& x) { return x.Bool(); }));
  FG_RETURN_IF_ERROR(Opt(n, "count", s.count, IntIn(1, INT64_MAX)));
  FG_RETURN_IF_ERROR(Opt(n, "duration", s.duration_ns, DurationIn()));
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

// What every test has: its kind, line, name (default `kind_name`) and streams.
absl::StatusOr<TestSpec> TestHead(const Plan& plan, const Node& n, TestSpec::Kind kind, const char* kind_name) {
  TestSpec t;
  t.kind = kind;
  t.line = n.line();
  t.name = kind_name;
  FG_RETURN_IF_ERROR(Opt(n, "name", t.name, [](const Node& x) { return x.String(); }));
  FG_RETURN_IF_ERROR(ParseTestStreams(plan, n, t));
  FG_RETURN_IF_ERROR(Opt(n, "tester_limit_retries", t.tester_limit_retries, IntIn(0, 100)));
  return t;
}

// The name at `key`, which must be an earlier test of `kind`.
absl::Status EarlierTest(const Plan& plan, const Node& n, TestSpec::Kind kind, const char* what, std::string& out) {
  FG_ASSIGN_OR_RETURN(out, n.String());
  for (const TestSpec& x : plan.tests) {
    if (x.kind == kind && x.name == out) return absl::OkStatus();
  }
  return n.Error(absl::StrFormat("no earlier %s test named '%s'", what, out));
}

absl::StatusOr<TestSpec> ParseThroughput(const Plan& plan, const Node& n) {
  FG_RETURN_IF_ERROR(n.CheckKeys({"name", "streams", "search", "min", "max", "precision", "loss_tolerance",
                                  "trial_duration", "initial_duration", "goals", "warmup", "message_sizes", "qps",
                                  "directions", "repetitions", "tester_limit_retries"}));
  FG_ASSIGN_OR_RETURN(TestSpec t, TestHead(plan, n, TestSpec::Kind::kThroughput, "throughput"));
  if (auto list = n.Optional("message_sizes")) {
    FG_ASSIGN_OR_RETURN(std::vector<Node> items, list->Items());
    for (const Node& i : items) {
      FG_ASSIGN_OR_RETURN(uint64_t b, i.Bytes(1, uint64_t{1} << 31));
      t.message_sizes.push_back(b);
      t.message_sizes_at.push_back(Where(i));
    }
  }
  if (auto list = n.Optional("qps")) {
    FG_ASSIGN_OR_RETURN(std::vector<Node> items, list->Items());
    for (const Node& i : items) {
      FG_ASSIGN_OR_RETURN(int64_t q, i.Int(1, 1 << 24));
      t.qps.push_back(static_cast<uint32_t>(q));
      t.qps_at.push_back(Where(i));
    }
  }
  if (auto list = n.Optional("directions")) {
    FG_ASSIGN_OR_RETURN(std::vector<Node> items, list->Items());
    for (const Node& i : items) {
      FG_ASSIGN_OR_RETURN(std::string d, i.OneOf({"uni", "bi"}));
      t.bidirectional.push_back(d == "bi");
      t.directions_at.push_back(Where(i));
      // `bi` sends each stream back from its rx_port: a stream received on
      // its own port has no way back, and its cell would run one way only.
      for (size_t k : t.streams) {
        const StreamSpec& s = plan.streams[k];
        if (d == "bi" && s.rx_port == s.port) {
          return i.Error(absl::StrFormat(
              "'bi' also runs each stream back from its rx_port to its port, but stream '%s' is received on its "
              "own port '%s'; give it an rx_port of its own, leave it out of this test's streams, or use uni",
              s.name, plan.ports[s.port].name));
        }
      }
    }
  }
  if (auto s = n.Optional("search")) {
    FG_ASSIGN_OR_RETURN(std::string v, s->OneOf({"binary", "multi_goal"}));
    t.search = v == "binary" ? TestSpec::Search::kBinary : TestSpec::Search::kMultiGoal;
  }
  auto pct = [](double lo, double hi) { return [lo, hi](const Node& x) { return x.Percent(lo, hi); }; };
  FG_RETURN_IF_ERROR(Opt(n, "min", t.min_load, pct(0.0001, 100)));
  FG_RETURN_IF_ERROR(Opt(n, "max", t.max_load, pct(0.0001, 100)));
  if (t.min_load > t.max_load) return n.At("min").Error("min must not be above max");
  FG_RETURN_IF_ERROR(Opt(n, "precision", t.precision, pct(0.0001, 100)));
  FG_RETURN_IF_ERROR(Opt(n, "loss_tolerance", t.loss_tolerance, pct(0, 99.9)));
  FG_RETURN_IF_ERROR(Opt(n, "repetitions", t.search_repetitions, IntIn(1, 1000)));
  FG_RETURN_IF_ERROR(Opt(n, "trial_duration", t.trial_duration_ns, DurationIn()));
  FG_RETURN_IF_ERROR(Opt(n, "initial_duration", t.initial_duration_ns, DurationIn()));
  FG_RETURN_IF_ERROR(ParseWarmup(n, t));
  if (t.trial_duration_ns <= 0) return n.At("trial_duration").Error("trial_duration must be greater than zero");
  if (!n.Optional("initial_duration")) {
    t.initial_duration_ns = std::min(t.initial_duration_ns, t.trial_duration_ns);  // default: 1 s or shorter
  } else if (t.initial_duration_ns > t.trial_duration_ns) {
    return n.At("initial_duration").Error("initial_duration must be at most trial_duration");
  }
  if (auto g = n.Optional("goals")) {
    if (t.search != TestSpec::Search::kMultiGoal) return g->Error("goals belong to search: multi_goal");
    FG_ASSIGN_OR_RETURN(std::vector<Node> items, g->Items());
    for (const Node& i : items) {
      FG_RETURN_IF_ERROR(i.CheckKeys({"name", "loss", "final_duration", "width", "exceed_ratio", "duration_sum"}));
      GoalSpec goal;
      FG_ASSIGN_OR_RETURN(Node name, i.Required("name"));
      FG_ASSIGN_OR_RETURN(goal.name, name.String());
      FG_ASSIGN_OR_RETURN(Node loss, i.Required("loss"));
      FG_ASSIGN_OR_RETURN(goal.loss_ratio, loss.Percent(0, 99.9));
      FG_RETURN_IF_ERROR(Opt(i, "final_duration", goal.final_duration_ns, DurationIn()));
      FG_RETURN_IF_ERROR(Opt(i, "width", goal.width, pct(0.0001, 50)));
      FG_RETURN_IF_ERROR(Opt(i, "exceed_ratio", goal.exceed_ratio, pct(0, 99)));
      FG_RETURN_IF_ERROR(Opt(i, "duration_sum", goal.duration_sum_ns, DurationIn()));
      t.goals.push_back(goal);
    }
    if (t.goals.empty()) return g->Error("goals: list is empty");
  } else if (t.search == TestSpec::Search::kMultiGoal) {
    t.goals = {GoalSpec{.name = "NDR", .loss_ratio = 0}, GoalSpec{.name = "PDR", .loss_ratio = 0.005}};
  }
  for (GoalSpec& goal : t.goals) {
    if (goal.final_duration_ns == 0) goal.final_duration_ns = t.trial_duration_ns;
  }
  return t;
}

absl::StatusOr<TestSpec> ParseLatency(const Plan& plan, const Node& n) {
  FG_RETURN_IF_ERROR(n.CheckKeys({"name", "streams", "load", "runs", "trial_duration", "warmup", "compare_to",
                                  "at_throughput_of", "tester_limit_retries"}));
  FG_ASSIGN_OR_RETURN(TestSpec t, TestHead(plan, n, TestSpec::Kind::kLatency, "latency"));
  t.trial_duration_ns = 120'000'000'000;  // RFC 2544 26.2
  FG_RETURN_IF_ERROR(Opt(n, "load", t.load, [](const Node& x) { return x.Percent(0.0001, 100); }));
  FG_RETURN_IF_ERROR(Opt(n, "runs", t.runs, IntIn(1, 10000)));
  if (auto a = n.Optional("at_throughput_of")) {
    if (n.Optional("load")) return a->Error("a latency test has either a load or at_throughput_of, not both");
    FG_RETURN_IF_ERROR(EarlierTest(plan, *a, TestSpec::Kind::kThroughput, "throughput", t.load_from));
  }
  if (auto c = n.Optional("compare_to")) {
    FG_RETURN_IF_ERROR(EarlierTest(plan, *c, TestSpec::Kind::kLatency, "latency", t.compare_to));
  }
  FG_RETURN_IF_ERROR(Opt(n, "trial_duration", t.trial_duration_ns, DurationIn()));
  FG_RETURN_IF_ERROR(ParseWarmup(n, t));
  return t;
}

absl::StatusOr<TestSpec> ParseBurst(const Plan& plan, const Node& n) {
  FG_RETURN_IF_ERROR(n.CheckKeys({"name", "streams", "min_frames", "max_frames", "repetitions", "gap", "warmup",
                                  "incast", "tester_limit_retries"}));
  FG_ASSIGN_OR_RETURN(TestSpec t, TestHead(plan, n, TestSpec::Kind::kBurst, "burst"));
  t.warmup_ns = 0;
  FG_RETURN_IF_ERROR(Opt(n, "min_frames", t.min_frames, IntIn(1, 1 << 24)));
  FG_RETURN_IF_ERROR(Opt(n, "max_frames", t.max_frames, IntIn(1, 1 << 24)));
  if (t.min_frames > t.max_frames) return n.At("min_frames").Error("min_frames must not be above max_frames");
  FG_RETURN_IF_ERROR(Opt(n, "repetitions", t.repetitions, IntIn(1, 100000)));
  FG_RETURN_IF_ERROR(Opt(n, "gap", t.gap_ns, DurationIn()));
  if (auto list = n.Optional("incast")) {
    FG_ASSIGN_OR_RETURN(std::vector<Node> items, list->Items());
    for (const Node& i : items) {
      FG_ASSIGN_OR_RETURN(int64_t k, i.Int(1, static_cast<int64_t>(t.streams.size())));
      t.incast.push_back(static_cast<int>(k));
    }
  }
  FG_RETURN_IF_ERROR(ParseWarmup(n, t));
  return t;
}

absl::StatusOr<TestSpec> ParseLoadBalance(const Plan& plan, const Node& n) {
  FG_RETURN_IF_ERROR(
      n.CheckKeys({"name", "streams", "links", "load", "runs", "trial_duration", "warmup", "tester_limit_retries"}));
  FG_ASSIGN_OR_RETURN(TestSpec t, TestHead(plan, n, TestSpec::Kind::kLoadBalance, "load_balance"));
  if (plan.dut_counters.empty()) {
    return n.Error("a load_balance test reads the DUT's link counters: give the plan `dut_counters` (a command)");
  }
  FG_ASSIGN_OR_RETURN(Node links, n.Required("links"));
  FG_ASSIGN_OR_RETURN(std::vector<Node> items, links.Items());
  if (items.size() < 2) return links.Error("links: name at least two parallel links (the DUT's counter names)");
  std::set<std::string> seen;
  for (const Node& i : items) {
    FG_ASSIGN_OR_RETURN(std::string link, i.String());
    if (!seen.insert(link).second) return i.Error(absl::StrFormat("link '%s' is listed twice", link));
    t.links.push_back(link);
  }
  t.runs = 1;
  t.trial_duration_ns = 10'000'000'000;
  FG_RETURN_IF_ERROR(Opt(n, "load", t.load, [](const Node& x) { return x.Percent(0.0001, 100); }));
  FG_RETURN_IF_ERROR(Opt(n, "runs", t.runs, IntIn(1, 10000)));
  FG_RETURN_IF_ERROR(Opt(n, "trial_duration", t.trial_duration_ns, DurationIn()));
  FG_RETURN_IF_ERROR(ParseWarmup(n, t));
  return t;
}

absl::StatusOr<TestSpec> ParseTest(const Plan& plan, const Node& n) {
  FG_RETURN_IF_ERROR(n.CheckKeys({"throughput", "latency", "burst", "load_balance"}));
  if (auto t = n.Optional("throughput")) return ParseThroughput(plan, *t);
  if (auto t = n.Optional("latency")) return ParseLatency(plan, *t);
  if (auto t = n.Optional("burst")) return ParseBurst(plan, *t);
  if (auto t = n.Optional("load_balance")) return ParseLoadBalance(plan, *t);
  return n.Error("a test names its kind: throughput, latency, burst or load_balance");
}

absl::StatusOr<Plan> Parse(const std::string& file, const Node& root) {
  FG_RETURN_IF_ERROR(root.CheckKeys({"version", "name", "dut", "host", "topology", "dut_counters", "eal", "duration",
                                     "drain", "placement", "report", "ports", "streams", "tests", "lab"}));
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
  FG_RETURN_IF_ERROR(
      Opt(root, "placement", plan.placement, [](const Node& n) { return n.OneOf({"flow", "stream", "port"}); }));
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

  FG_ASSIGN_OR_RETURN(Node streams, root.Required("streams"));
  FG_ASSIGN_OR_RETURN(std::vector<Node> items, streams.Items());
  if (items.empty()) return streams.Error("streams: list is empty; a plan needs at least one stream");
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
    for (const Node& i : list) {
      FG_ASSIGN_OR_RETURN(TestSpec t, ParseTest(plan, i));
      plan.tests.push_back(std::move(t));
    }
  }
  return plan;
}

}  // namespace

std::string FormatLocation(const std::string& file, const Location& at) {
  if (at.line <= 0) return file;
  return absl::StrFormat("%s:%d:%d", file, at.line, at.column);
}

absl::StatusOr<Plan> ParsePlan(const std::string& file, const std::string& text) {
  FG_ASSIGN_OR_RETURN(Node root, internal::LoadYamlString(&file, text));
  return Parse(file, root);
}

absl::StatusOr<Plan> LoadPlan(const std::string& file) {
  FG_ASSIGN_OR_RETURN(Node root, internal::LoadYamlFile(&file));
  return Parse(file, root);
}

}  // namespace fg::config
