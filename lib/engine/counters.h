// engine/counters.h: every counter of a stream, port, flow and lcore,
// declared once.
//
// A declaration names the counter's report.json key, its Prometheus metric
// (if served), its unit, its help text, its console heading (if it is a
// column of `show` and the run summary) and how to read it: from the result
// of a run (StreamResult, PortResult, FlowReport, LcoreStats) and, where the
// object is counted live, from the live view (LiveRun::StreamLive,
// PortLive; an lcore's LcoreStats is the same type live and after the run).
// report.json, the console summary, the CLI's `show` and /metrics iterate
// these tables instead of naming counters themselves; docs/metrics.md is
// checked against them (test/unit/engine/counters_test.cc). They are read at
// collection and report time only, never on the data path.
//
// Figures that are not plain counters (rates, ratios, percentiles, tester
// limits) are written by their consumers.
//
//   for (const fg::engine::StreamCounter& c : fg::engine::StreamCounters()) {
//     const fg::engine::CounterValue v = c.read(result.streams[0]);   // nullopt: not counted for it
//     if (c.read_live != nullptr) printf("%s %ld\n", c.metric.data(), c.read_live(live[0]));
//   }
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

#include "engine/engine.h"

namespace fg::engine {

// A counter's value; nullopt where the object has no such figure (the RX
// counts of a stream without a signature, payload errors not checked, the
// due count of an unpaced stream). report.json writes null for it.
using CounterValue = std::optional<int64_t>;

// How /metrics serves it: a counter only grows (over the process, across
// runs); a gauge may go down (lost: frames in flight come and go).
enum class MetricKind { kCounter, kGauge };

template <class Result, class Live>
struct Counter {
  std::string_view key = {};     // report.json key (unique within the object)
  std::string_view metric = {};  // Prometheus family ("": not served); counters end in _total
  // What /metrics multiplies the value by: Prometheus wants base units, so a
  // figure kept in ns is served in seconds (1e-9) under a `_seconds` name.
  double metric_scale = 1;
  MetricKind kind = MetricKind::kCounter;
  std::string_view unit = {};    // frames, bytes (frames with FCS), ... (docs/metrics.md's unit column)
  std::string_view help = {};    // one sentence: the metric's HELP
  std::string_view column = {};  // console heading ("": not in the console tables)
  CounterValue (*read)(const Result&) = nullptr;  // after the run: use Read()
  // Stream counters only: a figure of what RX saw, which a stream whose
  // frames carry no signature (its RX port counts them as frames without
  // one) or whose RX port has no RX queues does not have.
  bool rx_figure = false;
  // While the run goes on (nullptr: not counted live; lcores read `read`):
  // use ReadLive().
  int64_t (*read_live)(const Live&) = nullptr;
  // Stream counters only: live, a figure of the RX port's responder (none
  // when it does not respond), or of the requesters' go-back-N (none when
  // they do not retransmit).
  bool responder_figure = false;
  bool retransmit_figure = false;
  // Stream counters only: also served summed over the streams each port
  // receives, under this name ("": not).
  std::string_view rx_port_metric = {};
};

using StreamCounter = Counter<StreamResult, LiveRun::StreamLive>;
using PortCounter = Counter<PortResult, LiveRun::PortLive>;
using FlowCounter = Counter<FlowReport, FlowReport>;   // per_flow: after the run only
using LcoreCounter = Counter<LcoreStats, LcoreStats>;  // read serves live and final alike

std::span<const StreamCounter> StreamCounters();
std::span<const PortCounter> PortCounters();
std::span<const FlowCounter> FlowCounters();
std::span<const LcoreCounter> LcoreCounters();

// What `c` counted of `x` after the run.
template <class Result, class Live>
CounterValue Read(const Counter<Result, Live>& c, const Result& x) {
  if constexpr (requires { x.signed_frames; }) {
    if (c.rx_figure && !(x.signed_frames && x.received)) return std::nullopt;
  }
  return c.read(x);
}

// What `c` has counted of `x` so far; nullopt: not counted live (or an RX
// figure of a stream that has none).
template <class Result, class Live>
CounterValue ReadLive(const Counter<Result, Live>& c, const Live& x) {
  if constexpr (std::is_same_v<Result, Live>) {
    if (c.read_live == nullptr) return c.read != nullptr ? c.read(x) : std::nullopt;
  }
  if constexpr (requires { x.rx_counted; }) {
    if (c.rx_figure && !x.rx_counted) return std::nullopt;
    if (c.responder_figure && !x.answered) return std::nullopt;
    if (c.retransmit_figure && !x.retransmits) return std::nullopt;
  }
  if (c.read_live == nullptr) return std::nullopt;
  return c.read_live(x);
}

// A value for the console: 1,234,567, -12, or "-" for none.
std::string FormatCounterValue(CounterValue v);

// The position of `key` in a table (the table's size when it has none), for
// the few consumers that need one counter by name (rates of tx/rx packets).
template <class Result, class Live>
size_t CounterIndex(std::span<const Counter<Result, Live>> table, std::string_view key) {
  for (size_t i = 0; i < table.size(); ++i) {
    if (table[i].key == key) return i;
  }
  return table.size();
}

}  // namespace fg::engine
