// session/run_report.h: report.json and the console summary of `fabricgen run`.
//
// report.json (schema_version 2) holds, per port and per stream, what was
// sent and received with the unit in every key (packets, bytes FCS included,
// _ns, _pps, _bps_l1/_l2), the PMD's own counters beside ours, the EAL and
// memory choices, where each task ran, and whether the run completed.
//
//   std::string json = fg::session::RunReportJson(*session, result, started_utc);
//   FG_RETURN_IF_ERROR(fg::report::WriteFileAtomically(dir + "/report.json", json));
//   std::cout << fg::session::RunSummary(result);
#pragma once

#include <string>

#include "engine/engine.h"
#include "report/json.h"
#include "session/session.h"

namespace fg::session {

inline constexpr int kRunReportSchemaVersion = 2;  // 2: sequence_gap_packets counts every frame missing at a gap (1: net of late fills)

std::string RunReportJson(Session& session, const engine::TrialResult& result, const std::string& started_utc);
// Parts every report shares: "tool", "plan", "started_utc"; and inside
// "environment", the EAL arguments, memory choice and TSC rate.
void WriteReportHeader(report::JsonWriter& w, Session& session, const std::string& started_utc);
void WriteEalFields(report::JsonWriter& w, Session& session);
// "tester_limits": [{kind, count, detail[, longest_ns, cpu_wait_ns, steal_ns]}, ...] (those three: rx_stall,
// pacing_stall; the last two null when unreadable)
void WriteTesterLimits(report::JsonWriter& w, const std::vector<engine::TesterLimit>& limits);
// "qp_setup": {method, count, p50_ns, p99_ns, max_ns, elapsed_ns, setup_rate_per_s, mads_resent} or null.
void WriteQpSetup(report::JsonWriter& w, const std::optional<engine::QpSetup>& setup);
// A stream's per_flow list, and the top-level lcores list (show runtime).
void WritePerFlow(report::JsonWriter& w, const engine::StreamResult& s);
void WriteLcores(report::JsonWriter& w, const engine::TrialResult& r);
// `verbose`: each tester limit with its full detail (else one line per stream).
std::string RunSummary(const engine::TrialResult& result, bool verbose = false);
// The summary's warning lines when the tester was the limit ("" when it kept up): a header, then one line per
// stream of at most 160 characters (BriefLimits); with `verbose`, each limit's detail as report.json has it.
std::string TesterLimitLines(const engine::TrialResult& result, bool verbose = false);
// "pacing_stall 12 slots, tx_shortfall 40 frames; longest hold-up 3.2 ms": kinds past `width` characters end
// in ", +N more" (the hold-up always shown).
std::string BriefLimits(const std::vector<engine::TesterLimit>& limits, size_t width);
// The time now in UTC, ISO 8601 to the second: "YYYY-MM-DDThh:mm:ssZ"
std::string UtcNow();

}  // namespace fg::session
