#include "engine/memory.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>

#include "endpoint/dcqcn.h"
#include "endpoint/rc_requester.h"
#include "endpoint/responder.h"
#include "engine/engine.h"
#include "rx/flow_table.h"
#include "rx/rx.h"
#include "stats/flow_analysis.h"
#include "stream/program.h"
#include "tx/tx.h"

namespace fg::engine {
namespace {

// Sizes of records private to their rooms (their headers say them):
// TxTask::State::FlowSent (two counters), a responder's Qp (one cache line per QP), a
// FlowPacer flow (its 32-byte Hot record, its rate, segment start, due and
// skipped counts, its FIFO entry), a feedback or READ sink's target (a task
// pointer and two indices).
constexpr uint64_t kFlowSentBytes = 16;
constexpr uint64_t kResponderQpBytes = 64;
constexpr uint64_t kPacerBytes = 32 + 8 + 8 + 8 + 8 + 4;
constexpr uint64_t kSinkTargetBytes = 16;
// absl::flat_hash_map: a slot and a control byte per entry, at a load
// between 7/16 and 7/8 of its capacity: at worst 16/7 slots per entry.
constexpr uint64_t HashEntryBytes(uint64_t slot) { return (slot + 1) * 16 / 7 + 1; }
// Per-flow rates are held as doubles in the plan, its copy in the session,
// the compiled stream, the test's runner, the trial's copy and the engine's:
// six copies.
constexpr uint64_t kWeightCopies = 6;

// Points one flow's rate timeline reserves: three per 100 us window of the
// run, at least 4, at most its share of the shard's kRateTimelinePoints.
uint64_t TimelinePoints(const StreamFootprint& s, uint32_t workers) {
  const uint64_t points = 3 * static_cast<uint64_t>(std::max<int64_t>(s.duration_ns, 0) / tx::kRateTimelineNs) + 4;
  const uint64_t per_shard = std::max<uint64_t>(1, (s.flows + workers - 1) / std::max<uint32_t>(workers, 1));
  return std::max<uint64_t>(4, std::min<uint64_t>(points, tx::kRateTimelinePoints / per_shard));
}

}  // namespace

uint64_t BytesPerFlow(const StreamFootprint& s, bool report, uint32_t rx_ports) {
  uint64_t b = 0;
  // Placement (engine/placement.h): owner and slot per flow id, the owner's list.
  b += 3 * sizeof(uint32_t);
  // RX: the owner's FlowState and OwnedFlow, its sender's progress (a target
  // and a flag per slot: which frames were sent); each receiving port's
  // dispatch by flow id.
  b += sizeof(stats::FlowState) + sizeof(rx::OwnedFlow) + kSinkTargetBytes + 1;
  b += uint64_t{std::max<uint32_t>(rx_ports, 1)} * sizeof(rx::PortDispatch::Target);
  if (s.verify_payload) b += uint64_t{std::max<uint32_t>(rx_ports, 1)} * sizeof(uint32_t);  // group_of
  // TX: the flow's cursor, its fixed fields, its index in the shard, its sent counts.
  b += sizeof(stream::Cursor) + sizeof(stream::FlowVars) + sizeof(uint32_t) + kFlowSentBytes;
  // Feedback found by QP / PDC at each port it reaches.
  if (s.keyed) b += uint64_t{std::max<uint32_t>(s.key_ports, 1)} * HashEntryBytes(sizeof(uint64_t) + 8);
  // The responder (on every owner of the flow, whichever stream it is: it
  // keeps a QP per owned slot) and its ACK program's fixed fields.
  if (s.answered) b += kResponderQpBytes + sizeof(stream::FlowVars) + sizeof(endpoint::Responder::Flow) + 4;
  if (s.go_back_n) b += sizeof(endpoint::GoBackN::Qp) + 1 + kSinkTargetBytes + 1;
  if (s.per_flow_pacing) b += kPacerBytes + 2 * sizeof(double) + kWeightCopies * sizeof(double);
  if (s.dcqcn) b += sizeof(endpoint::DcqcnQp) + sizeof(std::vector<tx::RatePoint>) + 1 + kSinkTargetBytes;
  if (s.read_requests) b += HashEntryBytes(sizeof(uint32_t) + 8) + sizeof(uint32_t) + kSinkTargetBytes;
  if (s.cm) b += 16;
  // The report (engine/flows.cc): every flow's FlowReport and FlowResult, and
  // its TX counts, before the worst are kept.
  if (report) b += sizeof(FlowReport) + sizeof(rx::FlowResult) + 3 * sizeof(uint64_t);
  return b;
}

uint64_t TrialStateBytes(const TrialFootprint& t) {
  const bool report = t.per_flow_report != 0;
  uint64_t bytes = 0, flows = 0;
  for (const StreamFootprint& s : t.streams) {
    flows += s.flows;
    bytes += s.flows * BytesPerFlow(s, report, t.rx_ports);
    if (s.dcqcn) {
      // Its timeline's reserved points, and their copy in the report.
      const uint64_t points = TimelinePoints(s, t.workers);
      bytes += s.flows * points * sizeof(tx::RatePoint) * (report ? 2 : 1);
    }
  }
  // Per-flow latency distributions: kept by a table of at most
  // kPerFlowLatencyFlows flows, one per worker.
  if (report) {
    const uint64_t tables = std::max<uint32_t>(t.workers, 1);
    bytes += std::min<uint64_t>(flows, uint64_t{rx::kPerFlowLatencyFlows} * tables) * sizeof(stats::FlowLatency);
  }
  return bytes;
}

uint64_t MemAvailableBytes() {
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("MemAvailable:", 0) != 0) continue;
    std::istringstream f(line.substr(13));
    uint64_t kib = 0;
    std::string unit;
    if (f >> kib >> unit && unit == "kB") return kib * 1024;
    return 0;
  }
  return 0;
}

}  // namespace fg::engine
