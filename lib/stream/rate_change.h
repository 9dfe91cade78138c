// stream/rate_change.h: the rules for changing a compiled stream's rate
// between or during runs (the CLI's `rate`), beside the plan's own checks
// (CheckStreams, CheckPortLoads): a port's streams stay within its line rate,
// a READ's rate is its data's, and setting one flow's rate moves that flow's
// weight and the stream's sum while the other flows keep theirs.
//
//   auto now = [&](size_t j) -> std::optional<double> { return streams[j].pps; };
//   FG_RETURN_IF_ERROR(fg::stream::CheckRateChange(streams, i, pps, line_bps, "p0", now));
//   fg::stream::SetFlowRate(streams[i], 3, 1000);   // flow 3 at 1 kpps, the others as they were
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "stream/stream.h"

namespace fg::stream {

// The rate stream j sends at now: its set pps, or while a run goes on its
// live rate; nullopt: it has stopped (sends no more).
using CurrentRate = std::function<std::optional<double>(size_t j)>;

// Whether stream i at `pps` keeps its TX port (named `port` in the error)
// within `line_bps` (L1, AboveLineRate) with the port's other paced streams
// at their current rates (burst schedules and `max` streams take what is
// left). Below kMinPps is refused; `max` (infinite) and an unknown line rate
// (0) pass.
absl::Status CheckRateChange(const std::vector<CompiledStream>& streams, size_t i, double pps, double line_bps,
                             std::string_view port, const CurrentRate& current);

// A READ request stream i's rate is its data's: the responses' stream goes
// at `data_pps`, the requests at data_pps / read_packets. Returns the
// requests' rate.
double SetReadRate(std::vector<CompiledStream>& streams, size_t i, double data_pps);

// Flow `flow`'s part of a weighted stream's set rate (pps x its weight over
// the weights' sum).
double FlowRate(const CompiledStream& s, size_t flow);

// Sets flow `flow` of a weighted stream to `pps`, every other flow keeping
// its rate: the flow's weight becomes pps over the rate per unit of weight,
// and the stream's rate (their sum) moves by the flow's change.
void SetFlowRate(CompiledStream& s, size_t flow, double pps);

}  // namespace fg::stream
