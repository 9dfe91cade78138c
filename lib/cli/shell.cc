#include "cli/shell.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/status.h"
#include "base/units.h"
#include "proto/pcap.h"
#include "report/atomic_file.h"
#include "session/run_report.h"
#include "session/test_runner.h"

namespace fg::cli {
namespace {

// In the shell a stream runs until `stop` (its count, if it has one, still ends it).
constexpr int64_t kUntilStopped = int64_t{365} * 24 * 3600 * 1'000'000'000;

const std::vector<std::string> kShowTopics = {"ports", "streams", "flows", "latency", "histogram"};

std::string Ns(double ns) { return FormatDuration(static_cast<int64_t>(std::llround(ns))); }

// Optimal string alignment distance: insertions, deletions, substitutions
// and swaps of adjacent characters.
size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

}  // namespace

const std::vector<CommandHelp>& Shell::Commands() {
  static const std::vector<CommandHelp> kCommands = {
      {"load", "PLAN.yaml", "load a plan (its ports open the first time; later plans must use the same ports)"},
      {"ports", "", "the ports: driver, link speed, frames and bytes sent and received"},
      {"streams", "", "the streams: ports, rate, state (idle, running, paused, stopped), frames sent and received"},
      {"start", "[STREAM...]",
       "start traffic: every stream, or those named (the others start paused); streams run "
       "until stop"},
      {"stop", "[STREAM...]", "stop the named streams; without names, end the run (drain, final figures)"},
      {"pause", "STREAM...|all", "pause streams (nothing sent; the sequence goes on where it stopped)"},
      {"resume", "STREAM...|all", "resume paused streams at their rate"},
      {"rate", "STREAM RATE", "set a stream's rate, live when running: 20 kpps, 1.5 Gbps, 40%, max"},
      {"show", "[ports|streams|flows [N]|latency [STREAM]|histogram STREAM]",
       "counters (live while running), the N worst flows (default 10), latency percentiles, a text histogram"},
      {"clear", "", "counters and latency shown from now on start at zero (the run goes on)"},
      {"wait", "DURATION", "let traffic run (scripts): wait 2 s, wait 500 ms; Ctrl-C ends the wait"},
      {"run", "TEST", "run one of the plan's tests (name or number) and print its summary"},
      {"save", "[DIR]", "write report.json of the last run or of the tests run so far (default results/cli-UTC)"},
      {"capture", "PORT N FILE", "write the next N frames PORT receives to a pcap file (traffic must be running)"},
      {"help", "[COMMAND]", "this list, or one command"},
      {"quit", "", "end the run if one is going, and leave (also: exit, Ctrl-D)"},
  };
  return kCommands;
}

Shell::Shell(ShellOptions options) : o_(std::move(options)) {}

Shell::~Shell() {
  if (live_ != nullptr) {
    live_->Finish();
    if (o_.hub != nullptr) o_.hub->OnLive(nullptr);
  }
}

absl::Status Shell::Execute(std::string_view line, std::ostream& out) {
  const size_t hash = line.find('#');
  if (hash != std::string_view::npos) line = line.substr(0, hash);
  Args a = absl::StrSplit(absl::string_view(line.data(), line.size()), absl::ByAnyChar(" \t\r\n"), absl::SkipEmpty());
  if (a.empty()) return absl::OkStatus();
  const std::string cmd = absl::AsciiStrToLower(a[0]);
  if (cmd == "help" || cmd == "?") return Help(a, out);
  if (cmd == "quit" || cmd == "exit") {
    if (live_ != nullptr) EndRun(out);
    quit_ = true;
    return absl::OkStatus();
  }
  if (cmd == "load") return Load(a, out);
  bool known = false;
  for (const CommandHelp& c : Commands()) known = known || cmd == c.name;
  if (!known) {
    // Suggest the commands within two edits (a swap of neighbours counts one).
    std::vector<std::string> near;
    for (const CommandHelp& c : Commands()) {
      if (EditDistance(cmd, c.name) <= 2) near.push_back(c.name);
    }
    return absl::InvalidArgumentError(
        absl::StrFormat("unknown command '%s'%s; `help` lists them", a[0],
                        near.empty() ? "" : " (did you mean " + absl::StrJoin(near, " or ") + "?)"));
  }
  FG_RETURN_IF_ERROR(NeedPlan());
  if (cmd == "ports") return Ports(out);
  if (cmd == "streams") return Streams(out);
  if (cmd == "start") return Start(a, out);
  if (cmd == "stop") return Stop(a, out);
  if (cmd == "pause") return Pause(a, true, out);
  if (cmd == "resume") return Pause(a, false, out);
  if (cmd == "rate") return SetRate(a, out);
  if (cmd == "show") return Show(a, out);
  if (cmd == "clear") return Clear(out);
  if (cmd == "wait") return Wait(a, out);
  if (cmd == "run") return RunTest(a, out);
  if (cmd == "save") return Save(a, out);
  return Capture(a, out);
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
  out << "Rates: pps/kpps/Mpps, bps/kbps/Mbps/Gbps (add L1 to count preamble and gap), % of line, max. "
         "Tab completes commands, streams, ports and tests; arrows recall history.\n";
  return absl::OkStatus();
}

absl::Status Shell::Load(const Args& a, std::ostream& out) {
  if (a.size() != 2) return absl::InvalidArgumentError("load: give one plan file (load PLAN.yaml)");
  if (live_ != nullptr) return absl::FailedPreconditionError("load: traffic is running; stop it first");
  FG_ASSIGN_OR_RETURN(config::Plan plan, config::LoadPlan(a[1]));
  if (session_ == nullptr) {
    FG_ASSIGN_OR_RETURN(session_, session::Session::Open(plan, o_.eal, *o_.drivers));
  } else {
    FG_RETURN_IF_ERROR(session_->Reload(plan));
  }
  FG_ASSIGN_OR_RETURN(streams_, session_->CompileStreams());
  for (stream::CompiledStream& s : streams_) s.duration_ns = kUntilStopped;
  tests_.clear();
  last_.reset();
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

absl::StatusOr<std::vector<size_t>> Shell::StreamList(const Args& a, size_t from, bool all_word) const {
  std::vector<size_t> out;
  if (all_word && a.size() == from + 1 && a[from] == "all") {
    for (size_t i = 0; i < streams_.size(); ++i) out.push_back(i);
    return out;
  }
  for (size_t k = from; k < a.size(); ++k) {
    FG_ASSIGN_OR_RETURN(size_t i, StreamIndex(a[k]));
    out.push_back(i);
  }
  return out;
}

std::vector<engine::LiveRun::StreamLive> Shell::StreamCounters() const {
  std::vector<engine::LiveRun::StreamLive> c(streams_.size());
  if (live_ != nullptr) {
    c = live_->Streams();
  } else if (last_ != nullptr) {
    for (size_t i = 0; i < last_->streams.size() && i < c.size(); ++i) {
      const engine::StreamResult& r = last_->streams[i];
      c[i] = {r.tx.packets,
              r.tx.bytes,
              r.rx.packets,
              r.rx.bytes,
              static_cast<uint64_t>(std::max<int64_t>(0, r.lost())) + r.analysis.reordered,
              r.analysis.duplicate,
              r.analysis.reordered,
              r.analysis.ce};
    }
  }
  for (size_t i = 0; i < base_streams_.size() && i < c.size(); ++i) c[i] = c[i] - base_streams_[i];
  return c;
}

std::vector<engine::LiveRun::PortLive> Shell::PortCounters() const {
  std::vector<engine::LiveRun::PortLive> c(session_->plan().ports.size());
  if (live_ != nullptr) {
    c = live_->Ports();
  } else if (last_ != nullptr) {
    for (size_t i = 0; i < last_->ports.size() && i < c.size(); ++i) {
      const engine::PortResult& r = last_->ports[i];
      c[i] = {r.tx_packets, r.tx_bytes, r.rx_packets, r.rx_bytes, r.rx_unknown_packets};
    }
  }
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

absl::Status Shell::Ports(std::ostream& out) {
  const std::vector<port::Port*> ports = session_->ports();
  const std::vector<engine::LiveRun::PortLive> c = PortCounters();
  out << absl::StrFormat("%-10s %-14s %-14s %14s %16s %16s %14s\n", "port", "driver", "link", "tx frames", "rx frames",
                         "rx bytes", "no signature");
  for (size_t i = 0; i < ports.size(); ++i) {
    const port::Capabilities& cap = ports[i]->capabilities();
    out << absl::StrFormat("%-10s %-14s %-14s %14s %16s %16s %14s\n", ports[i]->name(), cap.driver,
                           FormatBitRate(cap.line_bps()), FormatCount(c[i].tx_packets), FormatCount(c[i].rx_packets),
                           FormatCount(c[i].rx_bytes), FormatCount(c[i].rx_unknown_packets));
  }
  return absl::OkStatus();
}

absl::Status Shell::Streams(std::ostream& out) {
  const std::vector<engine::LiveRun::StreamLive> c = StreamCounters();
  const auto& ports = session_->plan().ports;
  out << absl::StrFormat("%-16s %-12s %14s %-8s %14s %14s %10s %8s %8s\n", "stream", "ports", "rate", "state",
                         "tx frames", "rx frames", "lost", "dup", "ooo");
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
    out << absl::StrFormat(
        "%-16s %-12s %14s %-8s %14s %14s %10d %8s %8s\n", s.name, ports[s.tx_port].name + ">" + ports[s.rx_port].name,
        std::isfinite(pps) ? FormatPacketRate(pps) : "max", state, FormatCount(c[i].tx_packets),
        FormatCount(c[i].rx_packets), c[i].lost(), FormatCount(c[i].duplicate), FormatCount(c[i].reordered));
  }
  return absl::OkStatus();
}

absl::Status Shell::Start(const Args& a, std::ostream& out) {
  if (live_ != nullptr) return absl::FailedPreconditionError("start: traffic is already running (stop ends it)");
  FG_ASSIGN_OR_RETURN(const std::vector<size_t> named, StreamList(a, 1, false));
  engine::TrialOptions opt;
  opt.drain_ns = session_->plan().drain_ns;
  opt.sample_interval_ns = 0;
  FG_ASSIGN_OR_RETURN(live_, engine::LiveRun::Start(session_->eal(), session_->ports(), streams_, opt));
  // Streams not named start paused: the TX lcore applies it before its first frame.
  std::vector<std::string> names;
  for (size_t i = 0; i < streams_.size(); ++i) {
    if (!named.empty() && std::find(named.begin(), named.end(), i) == named.end()) {
      FG_RETURN_IF_ERROR(live_->SetPaused(i, true));
    } else {
      names.push_back(streams_[i].name);
    }
  }
  last_.reset();
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
  if (a.size() < 2) return absl::InvalidArgumentError(absl::StrFormat("%s: name streams, or all", verb));
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

absl::Status Shell::SetRate(const Args& a, std::ostream& out) {
  if (a.size() < 3) return absl::InvalidArgumentError("rate: give a stream and a rate (rate STREAM 20 kpps)");
  FG_ASSIGN_OR_RETURN(const size_t i, StreamIndex(a[1]));
  const std::string text = absl::StrJoin(a.begin() + 2, a.end(), " ");
  auto rate = ParseRate(text);
  if (!rate.ok()) return absl::InvalidArgumentError(absl::StrFormat("rate: %s", rate.status().message()));
  stream::CompiledStream& s = streams_[i];
  if (s.burst_frames != 0) return absl::FailedPreconditionError("rate: the stream has a burst schedule, not a rate");
  const double line = session_->ports()[s.tx_port]->capabilities().line_bps();
  const double pps = rate->ToPps(s.frame_size, line);
  const double was = live_ != nullptr ? live_->state(i).pps : s.pps;
  s.pps = pps;
  if (live_ != nullptr) FG_RETURN_IF_ERROR(live_->SetRate(i, pps));
  auto show = [](double v) { return std::isfinite(v) ? FormatPacketRate(v) : std::string("max"); };
  out << absl::StrFormat("%s: %s (was %s)%s\n", s.name, show(pps), show(was),
                         std::isfinite(pps) ? absl::StrFormat(", %s L2", FormatBitRate(pps * s.frame_size * 8)) : "");
  return absl::OkStatus();
}

absl::Status Shell::Show(const Args& a, std::ostream& out) {
  const std::string what = a.size() > 1 ? a[1] : "streams";
  if (what == "ports") return Ports(out);
  if (what == "streams") return Streams(out);
  if (what == "flows") {
    size_t n = 10;
    if (a.size() > 2 && (!absl::SimpleAtoi(a[2], &n) || n == 0 || n > 1000)) {
      return absl::InvalidArgumentError(absl::StrFormat("show flows: N is 1..1000, got '%s'", a[2]));
    }
    if (live_ == nullptr) return absl::FailedPreconditionError("show flows: flows are read from a running run");
    FG_ASSIGN_OR_RETURN(const std::vector<rx::FlowView> flows, live_->TopFlows(n));
    out << absl::StrFormat("%-16s %8s %14s %10s %8s %8s %8s %14s %14s\n", "stream", "flow", "rx frames", "lost", "dup",
                           "ooo", "ce", "jitter", "last latency");
    for (const rx::FlowView& f : flows) {
      out << absl::StrFormat("%-16s %8d %14s %10d %8s %8s %8s %14s %14s\n", streams_[f.group].name,
                             f.flow - streams_[f.group].flow_id, FormatCount(f.received), f.lost,
                             FormatCount(f.duplicate), FormatCount(f.reordered), FormatCount(f.ce),
                             Ns(static_cast<double>(f.jitter_ns)), Ns(static_cast<double>(f.latency_last_ns)));
    }
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
    const double lo = std::max<double>(1, static_cast<double>(h.min()));
    const double hi = std::max(lo * 1.0001, static_cast<double>(h.max()) + 1);
    constexpr int kRows = 20;
    std::vector<uint64_t> rows(kRows, 0);
    for (size_t b = 0; b < h.counts().size(); ++b) {
      if (h.counts()[b] == 0) continue;
      const double mid = static_cast<double>(stats::LatencyHistogram::BucketLow(b)) +
                         static_cast<double>(stats::LatencyHistogram::BucketWidth(b)) / 2;
      const int r =
          std::clamp(static_cast<int>(std::log(std::max(mid, lo) / lo) / std::log(hi / lo) * kRows), 0, kRows - 1);
      rows[r] += h.counts()[b];
    }
    const uint64_t peak = *std::max_element(rows.begin(), rows.end());
    out << absl::StrFormat("%s: %s samples, latency from %s to %s\n", streams_[which[0]].name, FormatCount(h.count()),
                           Ns(lo), Ns(hi));
    for (int r = 0; r < kRows; ++r) {
      const double from = lo * std::pow(hi / lo, static_cast<double>(r) / kRows);
      const int bar =
          peak == 0 ? 0
                    : static_cast<int>(std::llround(50.0 * static_cast<double>(rows[r]) / static_cast<double>(peak)));
      out << absl::StrFormat("  >= %12s %12s |%s\n", Ns(from), FormatCount(rows[r]), std::string(bar, '#'));
    }
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrFormat("show: no topic '%s' (%s)", what, absl::StrJoin(kShowTopics, ", ")));
}

absl::Status Shell::Wait(const Args& a, std::ostream& out) {
  if (a.size() < 2) return absl::InvalidArgumentError("wait: give a duration (wait 2 s)");
  auto ns = ParseDuration(absl::StrJoin(a.begin() + 1, a.end(), " "));
  if (!ns.ok()) return absl::InvalidArgumentError(absl::StrFormat("wait: %s", ns.status().message()));
  const auto end = std::chrono::steady_clock::now() + std::chrono::nanoseconds(*ns);
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
  base_streams_ = StreamCounters();
  base_ports_ = PortCounters();
  for (size_t i = 0; i < streams_.size(); ++i) base_latency_.push_back(StreamLatency(i));
  out << "counters cleared (shown from now on; the run's own totals and report are unchanged)\n";
  return absl::OkStatus();
}

absl::Status Shell::RunTest(const Args& a, std::ostream& out) {
  if (a.size() != 2) return absl::InvalidArgumentError("run: name one of the plan's tests (or its number)");
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
  FG_ASSIGN_OR_RETURN(const std::vector<stream::CompiledStream> streams, session_->CompileStreams());
  out << session::TestHeadline(plan, index) << "\n";
  const auto t0 = std::chrono::steady_clock::now();
  methods::MethodOptions opt;
  opt.drain_ns = plan.drain_ns;
  opt.interrupt = o_.interrupt;
  opt.on_trial = [&](const methods::TrialRecord& t) {
    out << session::TrialLine(plan.tests[index].name, t,
                              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count())
        << std::flush;
    if (o_.hub != nullptr) o_.hub->SetTrial(t.index + 1, t.load);
  };
  if (o_.hub != nullptr) {
    opt.on_live = [this](const engine::LiveRun* r) { o_.hub->OnLive(r); };
    o_.hub->SetState("test");
    o_.hub->SetTest(plan.tests[index].name, session::TestKindName(plan.tests[index].kind));
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
  if (a.size() > 2) return absl::InvalidArgumentError("save: at most one directory");
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
  if (ec) return absl::PermissionDeniedError(absl::StrFormat("save: cannot create %s: %s", dir, ec.message()));
  const std::string path = dir + "/report.json";
  FG_RETURN_IF_ERROR(report::WriteFileAtomically(path, json));
  out << "saved " << path << "\n";
  return absl::OkStatus();
}

absl::Status Shell::Capture(const Args& a, std::ostream& out) {
  if (a.size() != 4) return absl::InvalidArgumentError("capture: give PORT N FILE (capture b 100 rx.pcap)");
  FG_ASSIGN_OR_RETURN(const size_t port, PortIndex(a[1]));
  size_t n = 0;
  if (!absl::SimpleAtoi(a[2], &n) || n == 0 || n > 100'000) {
    return absl::InvalidArgumentError(absl::StrFormat("capture: N is 1..100000 frames, got '%s'", a[2]));
  }
  if (live_ == nullptr) return absl::FailedPreconditionError("capture: start traffic first (frames are taken live)");
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
  auto streams = [&] {
    for (const auto& s : streams_) pool.push_back(s.name);
  };
  if (position == 0) {
    for (const CommandHelp& c : Commands()) pool.push_back(c.name);
  } else {
    const std::string cmd = words[0];
    if (cmd == "start" || cmd == "stop" || cmd == "pause" || cmd == "resume") {
      streams();
      if (cmd == "pause" || cmd == "resume") pool.push_back("all");
    } else if (cmd == "rate" && position == 1) {
      streams();
    } else if (cmd == "show" && position == 1) {
      pool = kShowTopics;
    } else if (cmd == "show" && position == 2 && words.size() > 1 &&
               (words[1] == "latency" || words[1] == "histogram")) {
      streams();
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
