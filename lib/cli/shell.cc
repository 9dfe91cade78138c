#include "cli/shell.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/status.h"
#include "base/units.h"
#include "engine/counters.h"
#include "methods/kinds.h"
#include "proto/pcap.h"
#include "report/atomic_file.h"
#include "session/run_report.h"
#include "session/test_runner.h"
#include "stream/rate_change.h"

namespace fg::cli {
namespace {

// In the shell a stream runs until `stop` (its count, if it has one, still ends it).
constexpr int64_t kUntilStopped = int64_t{365} * 24 * 3600 * 1'000'000'000;

const std::vector<std::string> kShowTopics = {"ports", "streams", "flows", "latency", "histogram", "runtime", "pfc"};

// A file the shell is about to write: its directory must exist and be
// writable, and the file, if there, must be a regular file (it is replaced).
absl::Status WritableFile(std::string_view verb, const std::string& path) {
  namespace fs = std::filesystem;
  const fs::path p(path);
  if (!p.has_filename()) return absl::InvalidArgumentError(absl::StrFormat("%s: %s names no file", verb, path));
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  std::error_code ec;
  const fs::file_status d = fs::status(dir, ec);
  if (!fs::is_directory(d)) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: cannot write %s: %s is %s", verb, path, dir.string(),
                                                      fs::exists(d) ? "not a directory" : "not there"));
  }
  if (access(dir.c_str(), W_OK | X_OK) != 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: cannot write in %s: %s", verb, dir.string(), std::strerror(errno)));
  }
  const fs::file_status f = fs::status(p, ec);
  if (fs::exists(f) && !fs::is_regular_file(f)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: %s is there and is not a regular file (only a regular file is replaced)", verb, path));
  }
  return absl::OkStatus();
}

std::string Ns(double ns) { return FormatDuration(static_cast<int64_t>(std::llround(ns))); }

}  // namespace

Shell::Shell(ShellOptions options) : o_(std::move(options)) {}

Shell::~Shell() {
  if (live_ != nullptr) {
    live_->Finish();
    if (o_.hub != nullptr) o_.hub->OnLive(nullptr);
  }
}

absl::Status Shell::Execute(std::string_view line, std::ostream& out) {
  FG_ASSIGN_OR_RETURN(Args a, cliparse::SplitWords(line));
  if (a.empty()) return absl::OkStatus();
  FG_ASSIGN_OR_RETURN(const cliparse::Command c, cliparse::ParseCommand(a));
  a[0] = c.name;
  const std::string& cmd = c.name;
  if (cmd == "help") return Help(a, out);
  if (cmd == "quit") {
    if (live_ != nullptr) EndRun(out);
    quit_ = true;
    return absl::OkStatus();
  }
  if (cmd == "load") return Load(a, out);
  FG_RETURN_IF_ERROR(NeedPlan());
  if (cmd == "ports") return Ports(out);
  if (cmd == "streams") return Streams(out);
  if (cmd == "start") return Start(a, out);
  if (cmd == "stop") return Stop(a, out);
  if (cmd == "pause") return Pause(a, true, out);
  if (cmd == "resume") return Pause(a, false, out);
  if (cmd == "rate") return c.flow ? SetFlowRate(a, *c.rate, *c.flow, out) : SetRate(a, *c.rate, out);
  if (cmd == "show") return Show(a, c.count, out);
  if (cmd == "clear") return Clear(out);
  if (cmd == "wait") return Wait(c.duration_ns, out);
  if (cmd == "run") return RunTest(a, out);
  if (cmd == "save") return Save(a, out);
  return Capture(a, c.count, out);
}

absl::Status Shell::NeedPlan() const {
  if (session_ == nullptr) return absl::FailedPreconditionError("no plan loaded: load PLAN.yaml first");
  return absl::OkStatus();
}

absl::Status Shell::Help(const Args& a, std::ostream& out) {
  for (const CommandHelp& c : Commands()) {
    if (a.size() > 1 && a[1] != c.name) continue;
    out << absl::StrFormat("  %-8s %-18s %s\n", c.name, c.args, c.text);
    if (a.size() > 1) return absl::OkStatus();
  }
  if (a.size() > 1) return absl::InvalidArgumentError(absl::StrFormat("help: no command '%s'", a[1]));
  out << cliparse::kHelpFooter;
  return absl::OkStatus();
}

absl::Status Shell::Load(const Args& a, std::ostream& out) {
  if (live_ != nullptr) return absl::FailedPreconditionError("load: traffic is running; stop it first");
  FG_ASSIGN_OR_RETURN(config::Plan plan, methods::LoadPlan(a[1]));
  if (session_ == nullptr) {
    FG_ASSIGN_OR_RETURN(session_, session::Session::Open(plan, o_.eal, *o_.drivers));
  } else {
    FG_RETURN_IF_ERROR(session_->Reload(plan));
  }
  FG_ASSIGN_OR_RETURN(streams_, session_->CompileStreams());
  for (stream::CompiledStream& s : streams_) s.duration_ns = kUntilStopped;
  tests_.clear();
  last_.reset();
  last_streams_.clear();
  last_ports_.clear();
  base_streams_.clear();
  base_ports_.clear();
  base_latency_.clear();
  if (o_.hub != nullptr) o_.hub->SetPlan(plan);
  out << absl::StrFormat("loaded %s: %d port(s), %d stream(s), %d test(s)\n", plan.file, plan.ports.size(),
                         plan.streams.size(), plan.tests.size());
  return absl::OkStatus();
}

absl::StatusOr<size_t> Shell::StreamIndex(const std::string& name) const {
  for (size_t i = 0; i < streams_.size(); ++i) {
    if (streams_[i].name == name) return i;
  }
  std::vector<std::string> names;
  for (const auto& s : streams_) names.push_back(s.name);
  return absl::NotFoundError(absl::StrFormat("no stream '%s' (streams: %s)", name, absl::StrJoin(names, ", ")));
}

absl::StatusOr<size_t> Shell::PortIndex(const std::string& name) const {
  const auto& ports = session_->plan().ports;
  std::vector<std::string> names;
  for (size_t i = 0; i < ports.size(); ++i) {
    if (ports[i].name == name) return i;
    names.push_back(ports[i].name);
  }
  return absl::NotFoundError(absl::StrFormat("no port '%s' (ports: %s)", name, absl::StrJoin(names, ", ")));
}

absl::Status Shell::NotDerived(size_t i, std::string_view verb) const {
  const stream::CompiledStream& s = streams_[i];
  if (!s.read_response()) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrFormat(
      "%s: stream %s is the responses of READ stream %s and follows it (sent as its requests come); name %s", verb,
      s.name, streams_[s.read_requests].name, streams_[s.read_requests].name));
}

absl::StatusOr<std::vector<size_t>> Shell::StreamList(const Args& a, size_t from, bool all_word) const {
  // The plan's streams: a derived one (a READ's responses) follows its own
  // and is never named; `all` leaves it to its READ.
  std::vector<size_t> out;
  if (all_word && a.size() == from + 1 && a[from] == "all") {
    for (size_t i = 0; i < streams_.size(); ++i) {
      if (!streams_[i].read_response()) out.push_back(i);
    }
    return out;
  }
  for (size_t k = from; k < a.size(); ++k) {
    FG_ASSIGN_OR_RETURN(size_t i, StreamIndex(a[k]));
    FG_RETURN_IF_ERROR(NotDerived(i, a[0]));
    out.push_back(i);
  }
  return out;
}

std::vector<engine::LiveRun::StreamLive> Shell::LiveStreams() const {
  std::vector<engine::LiveRun::StreamLive> c = live_ != nullptr ? live_->Streams() : last_streams_;
  c.resize(streams_.size());
  for (size_t i = 0; i < base_streams_.size() && i < c.size(); ++i) c[i] = c[i] - base_streams_[i];
  return c;
}

std::vector<engine::LiveRun::PortLive> Shell::LivePorts() const {
  std::vector<engine::LiveRun::PortLive> c = live_ != nullptr ? live_->Ports() : last_ports_;
  c.resize(session_->plan().ports.size());
  for (size_t i = 0; i < base_ports_.size() && i < c.size(); ++i) c[i] = c[i] - base_ports_[i];
  return c;
}

stats::LatencyHistogram Shell::StreamLatency(size_t i) const {
  stats::LatencyHistogram h;
  if (live_ != nullptr) {
    h = live_->Latency(i);
  } else if (last_ != nullptr && i < last_->streams.size()) {
    h = last_->streams[i].analysis.latency;
  }
  if (i < base_latency_.size()) h = h.Since(base_latency_[i]);
  return h;
}

namespace {

// The headings of a table's counters that have one (engine/counters.h), each
// right-aligned in `width`.
template <class Result, class Live>
std::string Headings(std::span<const engine::Counter<Result, Live>> table, int width) {
  std::string out;
  for (const auto& c : table) {
    if (!c.column.empty()) out += absl::StrFormat(" %*s", width, c.column);
  }
  return out;
}

// Those counters' values so far for one object.
template <class Result, class Live>
std::string Cells(std::span<const engine::Counter<Result, Live>> table, const Live& x, int width) {
  std::string out;
  for (const auto& c : table) {
    if (!c.column.empty()) out += absl::StrFormat(" %*s", width, engine::FormatCounterValue(engine::ReadLive(c, x)));
  }
  return out;
}

}  // namespace

absl::Status Shell::Ports(std::ostream& out) {
  const std::vector<port::Port*> ports = session_->ports();
  const std::vector<engine::LiveRun::PortLive> c = LivePorts();
  out << absl::StrFormat("%-10s %-14s %-14s%s\n", "port", "driver", "link", Headings(engine::PortCounters(), 14));
  for (size_t i = 0; i < ports.size(); ++i) {
    const port::Capabilities& cap = ports[i]->capabilities();
    out << absl::StrFormat("%-10s %-14s %-14s%s\n", ports[i]->name(), cap.driver, FormatBitRate(cap.line_bps()),
                           Cells(engine::PortCounters(), c[i], 14));
  }
  return absl::OkStatus();
}

absl::Status Shell::Streams(std::ostream& out) {
  const std::vector<engine::LiveRun::StreamLive> c = LiveStreams();
  const auto& ports = session_->plan().ports;
  out << absl::StrFormat("%-16s %-12s %14s %-8s%s\n", "stream", "ports", "rate", "state",
                         Headings(engine::StreamCounters(), 12));
  for (size_t i = 0; i < streams_.size(); ++i) {
    const stream::CompiledStream& s = streams_[i];
    std::string state = "idle";
    double pps = s.pps;
    if (live_ != nullptr) {
      const engine::LiveRun::StreamState st = live_->state(i);
      pps = st.pps;
      state = st.done ? "stopped" : st.paused ? "paused" : "running";
    } else if (last_ != nullptr) {
      state = "stopped";
    }
    out << absl::StrFormat("%-16s %-12s %14s %-8s%s\n", s.name, ports[s.tx_port].name + ">" + ports[s.rx_port].name,
                           std::isfinite(pps) ? FormatPacketRate(pps) : "max", state,
                           Cells(engine::StreamCounters(), c[i], 12));
  }
  if (live_ != nullptr) out << "lost: sent and not received once so far (frames in flight included)\n";
  // The tester's own limits: the ended run's, or TX falling behind so far.
  if (live_ == nullptr && last_ != nullptr) {
    out << session::TesterLimitLines(*last_);
  } else {
    for (size_t i = 0; i < streams_.size(); ++i) {
      if (c[i].tx.slots_skipped == 0) continue;
      out << absl::StrFormat(
          "warning: tester-limited: stream %s: %s TX slots skipped so far (its TX lcore fell more than 1 ms behind "
          "the set rate)\n",
          streams_[i].name, FormatCount(c[i].tx.slots_skipped));
    }
  }
  return absl::OkStatus();
}

absl::Status Shell::Start(const Args& a, std::ostream& out) {
  if (live_ != nullptr) return absl::FailedPreconditionError("start: traffic is already running (stop ends it)");
  FG_ASSIGN_OR_RETURN(const std::vector<size_t> named, StreamList(a, 1, false));
  engine::TrialOptions opt = methods::TrialOptionsOf(session_->plan());
  opt.sample_interval_ns = 0;
  FG_ASSIGN_OR_RETURN(live_, engine::LiveRun::Start(session_->eal(), session_->ports(), streams_, opt));
  // Streams not named start paused: the TX lcore applies it before its first
  // frame. A READ's responses follow their requests, started or paused.
  std::vector<std::string> names;
  for (size_t i = 0; i < streams_.size(); ++i) {
    if (streams_[i].read_response()) continue;
    if (!named.empty() && std::find(named.begin(), named.end(), i) == named.end()) {
      FG_RETURN_IF_ERROR(live_->SetPaused(i, true));
    } else {
      names.push_back(streams_[i].name);
    }
  }
  last_.reset();
  last_streams_.clear();
  last_ports_.clear();
  base_streams_.clear();
  base_ports_.clear();
  base_latency_.clear();
  started_utc_ = session::UtcNow();
  if (o_.hub != nullptr) {
    o_.hub->OnLive(live_.get());
    o_.hub->SetState("running");
  }
  out << absl::StrFormat("started %s (%s)\n", absl::StrJoin(names, ", "), absl::StrJoin(live_->placement(), "; "));
  return absl::OkStatus();
}

void Shell::EndRun(std::ostream& out) {
  last_ = std::make_unique<engine::TrialResult>(live_->Finish());
  last_streams_ = live_->Streams();
  last_ports_ = live_->Ports();
  if (o_.hub != nullptr) {
    o_.hub->OnLive(nullptr);
    o_.hub->SetState("idle");
  }
  live_.reset();
  last_kind_ = "run";
  out << session::RunSummary(*last_);
  // The summary shows the whole run; `show` goes on showing what it did since `clear`.
}

absl::Status Shell::Stop(const Args& a, std::ostream& out) {
  if (live_ == nullptr) return absl::FailedPreconditionError("stop: no traffic is running");
  if (a.size() == 1) {
    EndRun(out);
    return absl::OkStatus();
  }
  FG_ASSIGN_OR_RETURN(const std::vector<size_t> named, StreamList(a, 1, false));
  for (size_t i : named) FG_RETURN_IF_ERROR(live_->StopStream(i));
  std::vector<std::string> names;
  for (size_t i : named) names.push_back(streams_[i].name);
  out << absl::StrFormat("stopped %s (the run goes on; `stop` alone ends it)\n", absl::StrJoin(names, ", "));
  return absl::OkStatus();
}

absl::Status Shell::Pause(const Args& a, bool pause, std::ostream& out) {
  const char* verb = pause ? "pause" : "resume";
  if (live_ == nullptr) return absl::FailedPreconditionError(absl::StrFormat("%s: no traffic is running", verb));
  FG_ASSIGN_OR_RETURN(const std::vector<size_t> named, StreamList(a, 1, true));
  std::vector<std::string> names;
  for (size_t i : named) {
    FG_RETURN_IF_ERROR(live_->SetPaused(i, pause));
    names.push_back(streams_[i].name);
  }
  out << absl::StrFormat("%s %s\n", pause ? "paused" : "resumed", absl::StrJoin(names, ", "));
  return absl::OkStatus();
}

absl::Status Shell::SetRate(const Args& a, const Rate& rate, std::ostream& out) {
  FG_ASSIGN_OR_RETURN(const size_t i, StreamIndex(a[1]));
  stream::CompiledStream& s = streams_[i];
  FG_RETURN_IF_ERROR(NotDerived(i, "rate"));  // (the READ's rate is its data's: the responses')
  if (s.burst_frames != 0) return absl::FailedPreconditionError("rate: the stream has a burst schedule, not a rate");
  if (s.read_request()) {
    // A READ's rate is its data's: the responses', back from the responding port.
    stream::CompiledStream& d = streams_[s.read_responses];
    const double back = session_->ports()[d.tx_port]->capabilities().line_bps();
    const double data_pps = rate.ToPps(d.frame_size, back);
    FG_RETURN_IF_ERROR(CheckRate(static_cast<size_t>(s.read_responses), data_pps, back));
    const double was = (live_ != nullptr ? live_->state(i).pps : s.pps) * s.read_packets;
    stream::SetReadRate(streams_, i, data_pps);
    if (live_ != nullptr) FG_RETURN_IF_ERROR(live_->SetRate(i, s.pps));
    auto show = [](double v) { return std::isfinite(v) ? FormatPacketRate(v) : std::string("max"); };
    out << absl::StrFormat("%s: READ data %s of responses (was %s)%s, %s of requests\n", s.name, show(data_pps),
                           show(was),
                           std::isfinite(data_pps) ? absl::StrFormat(", %s L2", FormatBitRate(data_pps * d.frame_size * 8))
                                                   : "",
                           show(s.pps));
    return absl::OkStatus();
  }
  const double line = session_->ports()[s.tx_port]->capabilities().line_bps();
  const double pps = rate.ToPps(s.frame_size, line);
  FG_RETURN_IF_ERROR(CheckRate(i, pps, line));
  const double was = live_ != nullptr ? live_->state(i).pps : s.pps;
  s.pps = pps;
  if (live_ != nullptr) FG_RETURN_IF_ERROR(live_->SetRate(i, pps));
  auto show = [](double v) { return std::isfinite(v) ? FormatPacketRate(v) : std::string("max"); };
  out << absl::StrFormat("%s: %s (was %s)%s\n", s.name, show(pps), show(was),
                         std::isfinite(pps) ? absl::StrFormat(", %s L2", FormatBitRate(pps * s.frame_size * 8)) : "");
  return absl::OkStatus();
}

absl::Status Shell::SetFlowRate(const Args& a, const Rate& rate, size_t flow, std::ostream& out) {
  FG_ASSIGN_OR_RETURN(const size_t i, StreamIndex(a[1]));
  FG_RETURN_IF_ERROR(NotDerived(i, "rate"));
  stream::CompiledStream& s = streams_[i];
  if (s.flow_weight.empty()) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "rate: stream %s paces its flows together; give it flows: {count, rates} to set one flow's rate", s.name));
  }
  if (flow >= s.flows) {
    return absl::InvalidArgumentError(
        absl::StrFormat("rate: stream %s has flows 0..%d; there is no flow %d", s.name, s.flows - 1, flow));
  }
  const double line = session_->ports()[s.tx_port]->capabilities().line_bps();
  const double pps = rate.ToPps(s.frame_size, line);
  if (!std::isfinite(pps)) return absl::InvalidArgumentError("rate: 'max' is not a per-flow rate");
  if (!(pps >= kMinPps)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "rate: %g pps for flow %d of %s is below the TX minimum of %g pps", pps, flow, s.name, kMinPps));
  }
  double was = stream::FlowRate(s, flow);
  if (live_ != nullptr) {
    FG_ASSIGN_OR_RETURN(was, live_->FlowRate(i, static_cast<uint32_t>(flow)));
  }
  // The stream's rate is its flows' sum; the port's streams stay within its line rate.
  const double stream_pps = (live_ != nullptr ? live_->state(i).pps : s.pps) - was + pps;
  FG_RETURN_IF_ERROR(CheckRate(i, stream_pps, line));
  // The plan-side weights follow, so a later start sends what was set (the
  // other flows keep their rates).
  stream::SetFlowRate(s, flow, pps);
  std::string effect;
  if (live_ != nullptr) {
    FG_ASSIGN_OR_RETURN(const engine::LiveRun::FlowRateChange c,
                        live_->SetFlowRate(i, static_cast<uint32_t>(flow), pps));
    effect = absl::StrFormat(", in effect after %s", FormatDuration(c.ns));
    // Over 1 ms with the host holding up the lcore or this thread as long:
    // the tester's delay, said so (not the engine's reaction time).
    if (c.ns > 1'000'000 && c.held_up_ns > 1'000'000) {
      effect += absl::StrFormat(" (the host held up the owner lcore or the CLI for %s meanwhile)",
                                FormatDuration(c.held_up_ns));
    }
  }
  out << absl::StrFormat("%s flow %d: %s (was %s)%s; stream %s\n", s.name, flow, FormatPacketRate(pps),
                         FormatPacketRate(was), effect, FormatPacketRate(stream_pps));
  return absl::OkStatus();
}

absl::Status Shell::CheckRate(size_t i, double pps, double line_bps) const {
  auto current = [this](size_t j) -> std::optional<double> {
    if (live_ == nullptr) return streams_[j].pps;
    const engine::LiveRun::StreamState st = live_->state(j);
    if (st.done) return std::nullopt;
    return st.pps;
  };
  return stream::CheckRateChange(streams_, i, pps, line_bps, session_->plan().ports[streams_[i].tx_port].name,
                                 current);
}

absl::Status Shell::Show(const Args& a, size_t flows, std::ostream& out) {
  const std::string what = a.size() > 1 ? a[1] : "streams";
  if (what == "ports") return Ports(out);
  if (what == "streams") return Streams(out);
  if (what == "flows") {
    const size_t n = flows;
    if (live_ == nullptr) return absl::FailedPreconditionError("show flows: flows are read from a running run");
    FG_ASSIGN_OR_RETURN(const std::vector<rx::FlowView> flows, live_->TopFlows(n));
    // RX's view of each flow: it has no TX count to tell lost from, so
    // frames missing at sequence gaps (as sequence_gap_packets).
    out << absl::StrFormat("%-16s %8s %14s %10s %8s %8s %8s %14s %14s\n", "stream", "flow", "rx frames", "gap", "dup",
                           "reorder", "ce", "jitter", "last latency");
    for (const rx::FlowView& f : flows) {
      out << absl::StrFormat("%-16s %8d %14s %10d %8s %8s %8s %14s %14s\n", streams_[f.stream].name,
                             f.flow - streams_[f.stream].flow_id, FormatCount(f.received),
                             f.gap_packets(), FormatCount(f.duplicate),
                             FormatCount(f.reordered), FormatCount(f.ce), Ns(static_cast<double>(f.jitter_ns)),
                             Ns(static_cast<double>(f.latency_last_ns)));
    }
    return absl::OkStatus();
  }
  if (what == "pfc") {
    // PFC and PAUSE received per port and priority (endpoint/pfc.h), live or the last run's.
    const std::vector<port::Port*> ports = session_->ports();
    const std::vector<engine::LiveRun::PortLive> c = LivePorts();
    out << absl::StrFormat("%-10s %-9s %14s %14s %14s  %s\n", "port", "priority", "pause events", "X-ON frames",
                           "paused", "observation point");
    size_t rows = 0;
    for (size_t i = 0; i < ports.size() && i < c.size(); ++i) {
      for (size_t slot = 0; slot < endpoint::kPfcSlots; ++slot) {
        if (c[i].pfc_pause_events[slot] == 0 && c[i].pfc_xon_frames[slot] == 0) continue;
        ++rows;
        out << absl::StrFormat("%-10s %-9s %14s %14s %14s  fabricgen RX (the %s PMD passes them up)\n",
                               ports[i]->name(), slot == endpoint::kPfcLinkPause ? "pause" : std::to_string(slot),
                               FormatCount(c[i].pfc_pause_events[slot]), FormatCount(c[i].pfc_xon_frames[slot]),
                               FormatDuration(static_cast<int64_t>(c[i].pfc_paused_ns[slot])),
                               ports[i]->capabilities().driver);
      }
    }
    if (rows == 0) out << "no PFC or PAUSE frame received\n";
    return absl::OkStatus();
  }
  if (what == "runtime") {
    // VPP's show runtime: each worker lcore's loop (live while running, else the last run's).
    std::vector<engine::LcoreStats> lcores;
    if (live_ != nullptr) {
      lcores = live_->Runtime();
    } else if (last_) {
      lcores = last_->lcores;
    } else {
      return absl::FailedPreconditionError("show runtime: nothing has run yet");
    }
    out << absl::StrFormat("%-6s %9s%s %7s %10s %10s\n", "lcore", "flows", Headings(engine::LcoreCounters(), 12),
                           "busy", "tx cyc/fr", "rx cyc/fr");
    for (const engine::LcoreStats& l : lcores) {
      out << absl::StrFormat("%-6d %9s%s %6.1f%% %10.1f %10.1f\n", l.lcore, FormatCount(l.flows),
                             Cells(engine::LcoreCounters(), l, 12),
                             l.polls ? 100.0 * static_cast<double>(l.busy_polls) / static_cast<double>(l.polls) : 0.0,
                             l.tx_cycles_per_packet(), l.rx_cycles_per_packet());
    }
    if (live_ != nullptr) out << live_->placement_policy() << "\n";
    return absl::OkStatus();
  }
  if (what == "latency" || what == "histogram") {
    std::vector<size_t> which;
    if (a.size() > 2) {
      FG_ASSIGN_OR_RETURN(size_t i, StreamIndex(a[2]));
      which.push_back(i);
    } else if (what == "histogram") {
      return absl::InvalidArgumentError("show histogram: name a stream");
    } else {
      for (size_t i = 0; i < streams_.size(); ++i) which.push_back(i);
    }
    if (what == "latency") {
      out << absl::StrFormat("%-16s %12s %12s %12s %12s %12s %12s %12s\n", "stream", "samples", "min", "P50", "P99",
                             "P99.9", "max", "mean");
      for (size_t i : which) {
        const stats::LatencyHistogram h = StreamLatency(i);
        out << absl::StrFormat("%-16s %12s %12s %12s %12s %12s %12s %12s\n", streams_[i].name, FormatCount(h.count()),
                               Ns(static_cast<double>(h.min())), Ns(h.Percentile(50)), Ns(h.Percentile(99)),
                               Ns(h.Percentile(99.9)), Ns(static_cast<double>(h.max())), Ns(h.mean()));
      }
      return absl::OkStatus();
    }
    // A text histogram: 20 rows from min to max on a log scale, bars scaled to the fullest row.
    const stats::LatencyHistogram h = StreamLatency(which[0]);
    if (h.count() == 0) {
      out << streams_[which[0]].name << ": no latency samples yet\n";
      return absl::OkStatus();
    }
    const stats::LogRows rows = stats::ToLogRows(h, 20);
    const uint64_t peak = *std::max_element(rows.counts.begin(), rows.counts.end());
    out << absl::StrFormat("%s: %s samples, latency from %s to %s\n", streams_[which[0]].name, FormatCount(h.count()),
                           Ns(rows.lo_ns), Ns(rows.hi_ns));
    for (size_t r = 0; r < rows.counts.size(); ++r) {
      const int bar = peak == 0 ? 0
                                : static_cast<int>(std::llround(50.0 * static_cast<double>(rows.counts[r]) /
                                                                static_cast<double>(peak)));
      out << absl::StrFormat("  >= %12s %12s |%s\n", Ns(rows.from_ns[r]), FormatCount(rows.counts[r]),
                             std::string(bar, '#'));
    }
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrFormat("show: no topic '%s' (%s)", what, absl::StrJoin(kShowTopics, ", ")));
}

absl::Status Shell::Wait(int64_t ns, std::ostream& out) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::nanoseconds(ns);
  while (std::chrono::steady_clock::now() < end) {
    if (o_.interrupt != nullptr && o_.interrupt->load()) {
      out << "wait: interrupted\n";
      break;
    }
    std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(std::chrono::milliseconds(20),
                                                                              end - std::chrono::steady_clock::now()));
  }
  return absl::OkStatus();
}

absl::Status Shell::Clear(std::ostream& out) {
  base_streams_.clear();
  base_ports_.clear();
  base_latency_.clear();
  base_streams_ = LiveStreams();
  base_ports_ = LivePorts();
  for (size_t i = 0; i < streams_.size(); ++i) base_latency_.push_back(StreamLatency(i));
  out << "counters cleared (shown from now on; the run's own totals and report are unchanged)\n";
  return absl::OkStatus();
}

absl::Status Shell::RunTest(const Args& a, std::ostream& out) {
  if (live_ != nullptr) return absl::FailedPreconditionError("run: traffic is running; stop it first");
  const config::Plan& plan = session_->plan();
  size_t index = plan.tests.size();
  std::vector<std::string> names;
  for (size_t i = 0; i < plan.tests.size(); ++i) {
    if (plan.tests[i].name == a[1] || absl::StrCat(i + 1) == a[1]) index = i;
    names.push_back(plan.tests[i].name);
  }
  if (index == plan.tests.size()) {
    return absl::NotFoundError(absl::StrFormat("run: no test '%s' (tests: %s)", a[1],
                                               names.empty() ? "none in this plan" : absl::StrJoin(names, ", ")));
  }
  // E.g. a latency test at_throughput_of a test not run yet in this session.
  const absl::Status ready = methods::FindTestKind(plan.tests[index].kind)->Ready(plan, plan.tests[index], tests_);
  if (!ready.ok()) return absl::FailedPreconditionError(absl::StrFormat("run: %s", ready.message()));
  FG_ASSIGN_OR_RETURN(const std::vector<stream::CompiledStream> streams, session_->CompileStreams());
  out << session::TestHeadline(plan, index) << "\n";
  const auto t0 = std::chrono::steady_clock::now();
  methods::MethodOptions opt;
  opt.trial = methods::TrialOptionsOf(plan);
  opt.interrupt = o_.interrupt;
  opt.on_trial = [&](const methods::TrialRecord& t) {
    out << session::TrialLine(plan.tests[index].name, t,
                              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count())
        << std::flush;
    if (o_.hub != nullptr) o_.hub->SetTrial(t.index + 1, t.load, t.last_iteration_ns, t.last_busbw_bps);
  };
  if (o_.hub != nullptr) {
    opt.on_live = [this](const engine::LiveRun* r) { o_.hub->OnLive(r); };
    o_.hub->SetState("test");
    o_.hub->SetTest(plan.tests[index].name, plan.tests[index].kind);
  }
  if (tests_.empty()) started_utc_ = session::UtcNow();
  auto r = session::RunPlanTest(*session_, streams, index, opt, tests_, &out);
  if (o_.hub != nullptr) {
    o_.hub->TestDone();
    o_.hub->SetState("idle");
  }
  if (!r.ok()) return r.status();
  out << session::TestsSummary(*r);
  tests_.insert(tests_.end(), r->begin(), r->end());
  last_kind_ = "tests";
  return absl::OkStatus();
}

absl::Status Shell::Save(const Args& a, std::ostream& out) {
  std::string json;
  if (last_kind_ == "tests") {
    json = session::TestsReportJson(*session_, tests_, started_utc_, false);
  } else if (last_ != nullptr) {
    json = session::RunReportJson(*session_, *last_, started_utc_);
  } else {
    return absl::FailedPreconditionError("save: nothing to save yet (start and stop a run, or run a test)");
  }
  std::string dir = a.size() == 2 ? a[1] : "results/cli-" + session::UtcNow();
  std::replace(dir.begin(), dir.end(), ':', '-');
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return absl::InvalidArgumentError(absl::StrFormat("save: cannot create %s: %s", dir, ec.message()));
  const std::string path = dir + "/report.json";
  FG_RETURN_IF_ERROR(WritableFile("save", path));
  FG_RETURN_IF_ERROR(report::WriteFileAtomically(path, json));
  out << "saved " << path << "\n";
  return absl::OkStatus();
}

absl::Status Shell::Capture(const Args& a, size_t n, std::ostream& out) {
  FG_ASSIGN_OR_RETURN(const size_t port, PortIndex(a[1]));
  if (live_ == nullptr) return absl::FailedPreconditionError("capture: start traffic first (frames are taken live)");
  FG_RETURN_IF_ERROR(WritableFile("capture", a[3]));  // before the frames are taken
  FG_ASSIGN_OR_RETURN(const std::vector<engine::CapturedFrame> frames, live_->Capture(port, n, 10'000'000'000));
  FG_ASSIGN_OR_RETURN(proto::PcapWriter w, proto::PcapWriter::Open(a[3]));
  size_t cut = 0;
  for (const engine::CapturedFrame& f : frames) {
    FG_RETURN_IF_ERROR(w.Write(f.bytes, f.rx_ns, f.wire_len));
    cut += f.bytes.size() < f.wire_len;
  }
  FG_RETURN_IF_ERROR(w.Close());
  out << absl::StrFormat("captured %d frame(s) on %s to %s%s%s\n", frames.size(), a[1], a[3],
                         frames.size() < n ? absl::StrFormat(" (asked for %d; no more arrived within 10 s)", n) : "",
                         cut ? absl::StrFormat("; %d cut short (pcap keeps their length)", cut) : "");
  return absl::OkStatus();
}

std::vector<std::string> Shell::Complete(std::string_view before) const {
  std::vector<std::string> words =
      absl::StrSplit(absl::string_view(before.data(), before.size()), absl::ByAnyChar(" \t"), absl::SkipEmpty());
  const bool fresh = before.empty() || before.back() == ' ' || before.back() == '\t';
  const std::string partial = fresh || words.empty() ? "" : words.back();
  const size_t position = fresh ? words.size() : words.size() - 1;  // index of the word being completed
  std::vector<std::string> pool;
  // The streams a command may name: start, stop, pause, resume and rate
  // leave a READ's responses to their READ; show names them like any other.
  auto streams = [&](bool derived) {
    for (const auto& s : streams_) {
      if (derived || !s.read_response()) pool.push_back(s.name);
    }
  };
  if (position == 0) {
    for (const CommandHelp& c : Commands()) pool.push_back(c.name);
  } else {
    const std::string cmd = words[0];
    if (cmd == "start" || cmd == "stop" || cmd == "pause" || cmd == "resume") {
      streams(false);
      if (cmd == "pause" || cmd == "resume") pool.push_back("all");
    } else if (cmd == "rate" && position == 1) {
      streams(false);
    } else if (cmd == "show" && position == 1) {
      pool = kShowTopics;
    } else if (cmd == "show" && position == 2 && words.size() > 1 &&
               (words[1] == "latency" || words[1] == "histogram")) {
      streams(true);
    } else if (cmd == "help" && position == 1) {
      for (const CommandHelp& c : Commands()) pool.push_back(c.name);
    } else if (cmd == "run" && position == 1 && session_ != nullptr) {
      for (const auto& t : session_->plan().tests) pool.push_back(t.name);
    } else if (cmd == "capture" && position == 1 && session_ != nullptr) {
      for (const auto& p : session_->plan().ports) pool.push_back(p.name);
    }
  }
  std::vector<std::string> out;
  for (const std::string& w : pool) {
    if (w.rfind(partial, 0) == 0) out.push_back(w);
  }
  return out;
}

}  // namespace fg::cli
