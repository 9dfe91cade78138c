#include "methods/memory.h"

#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include "absl/strings/str_format.h"
#include "base/units.h"
#include "engine/memory.h"
#include "methods/dcqcn_convergence.h"
#include "methods/throughput.h"

namespace fg::methods {
namespace {

using config::Plan;
using config::StreamSpec;

// One trial's streams as footprints, each with the plan key its flow count
// comes from and the port it is received on.
struct Trial {
  std::string name;
  std::vector<engine::StreamFootprint> streams;
  std::vector<std::string> keys;  // per footprint: the key that sets its flows
  std::vector<size_t> rx_ports;   // per footprint
  uint32_t per_flow = 0;
};

// "plan.yaml:7:35: streams[0].flows '16777216'".
std::string StreamKey(const Plan& plan, size_t i) {
  const StreamSpec& s = plan.streams[i];
  const config::Written* w = s.written.Find("flows");
  std::string text = s.written.Text("flows");
  if (text.empty()) text = s.written.Text("flows.count");
  return absl::StrFormat("%s: streams[%d].flows%s", config::FormatLocation(plan.file, w ? w->at : s.at), i,
                         text.empty() ? "" : " '" + text + "'");
}

// "plan.yaml:9:40: tests[1].throughput.qps[0] '4096'": a test's entry at `path`.
std::string TestKey(const Plan& plan, size_t t, std::string_view path, std::string_view otherwise) {
  const config::TestSpec& test = plan.tests[t];
  const config::Written* w = test.written.Find(path);
  const std::string text = test.written.Text(path);
  return absl::StrFormat("%s: tests[%d].%s.%s%s", config::FormatLocation(plan.file, w ? w->at : test.at), t,
                         test.kind, path, text.empty() ? std::string(otherwise) : " '" + text + "'");
}

// Stream `s` (or its way back, `reverse`: from its rx_port to its port) with
// `flows` flows into the trial, and an answered READ's responses after it.
// `dcqcn`: a reaction point per flow; `paced`: each flow paced on its own.
void Add(const Plan& plan, const StreamSpec& s, uint64_t flows, int64_t duration_ns, bool reverse, bool dcqcn,
         bool paced, const std::string& key, Trial& trial) {
  using Op = config::RoceSpec::Op;
  const size_t tx = reverse ? s.rx_port : s.port;
  const size_t rx = reverse ? s.port : s.rx_port;
  const bool roce = s.frame.kind == config::FrameKind::kRoce;
  const Op op = s.frame.roce.op;
  const bool roce_data = roce && op != Op::kCnp && op != Op::kAck && op != Op::kNak;
  const bool responds = plan.ports[rx].respond.has_value();
  engine::StreamFootprint f;
  f.flows = flows;
  f.keyed = roce_data || (s.frame.kind == config::FrameKind::kUet && s.frame.uet.packet == config::UetSpec::Packet::kRequest);
  f.key_ports = tx == rx ? 1 : 2;
  f.answered = roce_data && responds;
  f.go_back_n = f.answered && s.frame.roce.transport == proto::roce::Transport::kRc && s.frame.roce.go_back_n &&
                (op == Op::kWrite || op == Op::kWriteImm || op == Op::kSend || op == Op::kSendImm);
  f.dcqcn = roce && dcqcn;
  f.per_flow_pacing = paced || f.dcqcn;
  f.duration_ns = duration_ns;
  f.read_requests = roce && op == Op::kReadRequest && responds;
  f.cm = roce && s.frame.roce.connect_cm;
  f.verify_payload = s.verify_payload;
  trial.streams.push_back(f);
  trial.keys.push_back(key);
  trial.rx_ports.push_back(rx);
  if (f.read_requests) {  // its responses: as many flows, signed, back from the responder
    engine::StreamFootprint r;
    r.flows = flows;
    r.keyed = true;
    r.key_ports = f.key_ports;
    r.duration_ns = duration_ns;
    r.verify_payload = s.verify_payload;
    trial.streams.push_back(r);
    trial.keys.push_back(key);
    trial.rx_ports.push_back(tx);
  }
}

int64_t DurationOf(const Plan& plan, const StreamSpec& s) { return s.duration_ns > 0 ? s.duration_ns : plan.duration_ns; }

// Every trial whose flows the plan sets: its streams as planned, each cell
// of a throughput matrix that changes them, each m of a dcqcn_convergence test.
std::vector<Trial> Trials(const Plan& plan) {
  std::vector<Trial> out;
  Trial all;
  all.name = "the plan's streams";
  all.per_flow = plan.per_flow;
  for (size_t i = 0; i < plan.streams.size(); ++i) {
    const StreamSpec& s = plan.streams[i];
    Add(plan, s, s.flows, DurationOf(plan, s), false, s.frame.roce.dcqcn.has_value(), !s.flow_weights.empty(),
        StreamKey(plan, i), all);
  }
  out.push_back(std::move(all));
  for (size_t t = 0; t < plan.tests.size(); ++t) {
    const config::TestSpec& test = plan.tests[t];
    if (const auto* tp = dynamic_cast<const ThroughputParams*>(test.params.get())) {
      const bool bi = std::find(tp->bidirectional.begin(), tp->bidirectional.end(), true) != tp->bidirectional.end();
      if (tp->qps.empty() && !bi) continue;  // its streams as planned
      int64_t duration = tp->trial_duration_ns;
      for (const GoalSpec& g : tp->goals) duration = std::max(duration, g.final_duration_ns);
      const size_t cells = std::max<size_t>(1, tp->qps.size());
      for (size_t k = 0; k < cells; ++k) {
        Trial cell;
        const uint32_t q = tp->qps.empty() ? 0 : tp->qps[k];
        cell.name = absl::StrFormat("test %s, %s", test.name,
                                    q != 0 ? absl::StrFormat("cell 'qps=%d%s'", q, bi ? ", bi" : "")
                                           : std::string("cell 'bi'"));
        cell.per_flow = plan.per_flow;
        for (size_t i : test.streams) {
          const StreamSpec& s = plan.streams[i];
          const std::string key =
              q != 0 ? TestKey(plan, t, absl::StrFormat("qps[%d]", k), "") : StreamKey(plan, i);
          const bool dcqcn = s.frame.roce.dcqcn.has_value();
          const bool paced = !s.flow_weights.empty();
          Add(plan, s, q != 0 ? q : s.flows, duration, false, dcqcn, paced, key, cell);
          if (bi && s.rx_port != s.port) Add(plan, s, q != 0 ? q : s.flows, duration, true, dcqcn, paced, key, cell);
        }
        out.push_back(std::move(cell));
      }
    } else if (const auto* dp = dynamic_cast<const DcqcnConvergenceParams*>(test.params.get())) {
      if (test.streams.empty()) continue;
      const StreamSpec& s = plan.streams[test.streams[0]];
      const bool dcqcn = std::any_of(dp->parameter_sets.begin(), dp->parameter_sets.end(),
                                     [](const auto& set) { return set.has_value(); });
      for (size_t k = 0; k < dp->m.size(); ++k) {
        Trial trial;
        trial.name = absl::StrFormat("test %s, m %d (2 x %d QPs)", test.name, dp->m[k], dp->m[k]);
        trial.per_flow = dp->m[k];  // every QP reported, with its rate timeline
        const std::string key = test.written.Find("m") != nullptr
                                    ? TestKey(plan, t, absl::StrFormat("m[%d]", k), "")
                                    : TestKey(plan, t, "m", absl::StrFormat(" (default %d)", dp->m[k]));
        // Two groups of m QPs, each QP paced on its own (its reaction point's rate).
        for (int group = 0; group < 2; ++group) {
          Add(plan, s, dp->m[k], dp->trial_duration_ns, false, dcqcn, true, key, trial);
        }
        out.push_back(std::move(trial));
      }
    }
  }
  return out;
}

}  // namespace

MemoryEstimate EstimateMemory(const config::Plan& plan, uint32_t workers) {
  MemoryEstimate best;
  for (const Trial& t : Trials(plan)) {
    engine::TrialFootprint f;
    f.streams = t.streams;
    f.per_flow_report = t.per_flow;
    f.workers = std::max<uint32_t>(workers, 1);
    f.rx_ports = static_cast<uint32_t>(std::max<size_t>(1, std::set<size_t>(t.rx_ports.begin(), t.rx_ports.end()).size()));
    const uint64_t bytes = engine::TrialStateBytes(f);
    if (bytes <= best.bytes && !best.trial.empty()) continue;
    best = MemoryEstimate{};
    best.bytes = bytes;
    best.trial = t.name;
    // The key whose flows cost the most in it.
    std::map<std::string, std::pair<uint64_t, uint64_t>> by_key;  // key -> (bytes, flows)
    for (size_t i = 0; i < t.streams.size(); ++i) {
      const engine::StreamFootprint& s = t.streams[i];
      best.flows += s.flows;
      auto& [b, n] = by_key[t.keys[i]];
      b += s.flows * engine::BytesPerFlow(s, t.per_flow != 0, f.rx_ports);
      n += s.flows;
    }
    uint64_t most = 0;
    for (const auto& [key, v] : by_key) {
      if (v.first < most && !best.key.empty()) continue;
      most = v.first;
      best.key = key;
      best.key_flows = v.second;
      best.bytes_per_flow = v.second > 0 ? v.first / v.second : 0;
    }
  }
  return best;
}

absl::Status CheckMemory(const MemoryEstimate& need, uint64_t other_bytes, uint64_t available_bytes) {
  if (available_bytes == 0 || need.bytes + other_bytes <= available_bytes) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrFormat(
      "%s: %s flows need ~%s of per-flow state (~%d B each; %s flows, ~%s, in %s)%s: more than the %s this "
      "machine has available (MemAvailable in /proc/meminfo); lower it",
      need.key, FormatCount(need.key_flows), FormatMemory(need.key_flows * need.bytes_per_flow), need.bytes_per_flow,
      FormatCount(need.flows), FormatMemory(need.bytes), need.trial,
      other_bytes > 0 ? absl::StrFormat(", and the mbuf pools and EAL ~%s", FormatMemory(other_bytes))
                      : std::string(),
      FormatMemory(available_bytes)));
}

std::string FormatMemory(uint64_t bytes) {
  if (bytes >= (uint64_t{1} << 30)) return absl::StrFormat("%.2f GiB", static_cast<double>(bytes) / (1u << 30));
  if (bytes >= (uint64_t{1} << 20)) return absl::StrFormat("%.1f MiB", static_cast<double>(bytes) / (1u << 20));
  return absl::StrFormat("%d KiB", (bytes + 1023) / 1024);
}

}  // namespace fg::methods
