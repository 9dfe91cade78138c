// cli/shell.h: fabricgen's command shell, in the manner of testpmd and
// Pktgen-DPDK: load a plan, start/stop/pause streams, change rates live,
// watch counters, latency and the worst flows, run a plan test, capture
// frames, save a report.
//
// The shell executes one command line at a time and writes to a stream; the
// terminal (line editing, completion, history) and the script runner live in
// app/fabricgen/cli_main.cc. A command that fails returns its error; nothing
// is printed for it here, so the caller can name the script line.
//
//   fg::cli::Shell shell({.drivers = &registry});
//   absl::Status s = shell.Execute("load configs/quickstart.yaml", std::cout);
//   s = shell.Execute("start", std::cout);
#pragma once

#include <atomic>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "cliparse/cliparse.h"
#include "engine/engine.h"
#include "metrics/hub.h"
#include "port/driver_registry.h"
#include "session/session.h"
#include "session/test_report.h"

namespace fg::cli {

struct ShellOptions {
  std::vector<std::string> eal;                   // after the plan's eal: list
  const port::DriverRegistry* drivers = nullptr;  // required
  metrics::Hub* hub = nullptr;                    // optional: live metrics
  const std::atomic<bool>* interrupt = nullptr;   // Ctrl-C: ends a running test's trial
};

using CommandHelp = cliparse::CommandHelp;

class Shell {
 public:
  explicit Shell(ShellOptions options);
  ~Shell();  // ends a live run

  // One line (cliparse.h: words, quotes, comments). Errors that are the
  // user's (a wrong command, argument, name, path or state: start twice)
  // are InvalidArgument, NotFound or FailedPrecondition; any other code is a
  // runtime failure.
  absl::Status Execute(std::string_view line, std::ostream& out);
  bool done() const { return quit_; }  // after quit/exit

  // The words that may complete the last (partial) word of `before_cursor`.
  std::vector<std::string> Complete(std::string_view before_cursor) const;
  static const std::vector<CommandHelp>& Commands() { return cliparse::Commands(); }

 private:
  using Args = std::vector<std::string>;
  absl::Status Load(const Args& a, std::ostream& out);
  absl::Status Ports(std::ostream& out);
  absl::Status Streams(std::ostream& out);
  absl::Status Start(const Args& a, std::ostream& out);
  absl::Status Stop(const Args& a, std::ostream& out);
  absl::Status Pause(const Args& a, bool pause, std::ostream& out);
  absl::Status SetRate(const Args& a, const Rate& rate, std::ostream& out);
  absl::Status SetFlowRate(const Args& a, const Rate& rate, size_t flow, std::ostream& out);
  absl::Status Show(const Args& a, size_t flows, std::ostream& out);
  absl::Status Clear(std::ostream& out);
  absl::Status Wait(int64_t ns, std::ostream& out);
  absl::Status RunTest(const Args& a, std::ostream& out);
  absl::Status Save(const Args& a, std::ostream& out);
  absl::Status Capture(const Args& a, size_t frames, std::ostream& out);
  absl::Status Help(const Args& a, std::ostream& out);

  absl::Status NeedPlan() const;
  // Stream i at `pps`: at least the TX minimum, and the streams of its TX
  // port together within the port's line rate (L1), as for the plan.
  absl::Status CheckRate(size_t i, double pps, double line_bps) const;
  absl::StatusOr<size_t> StreamIndex(const std::string& name) const;
  // The one rule for derived streams (a READ's responses, "NAME.responses"):
  // they follow the stream they derive from, so start, stop, pause, resume
  // and rate refuse them by name (naming that stream instead), and `all` or
  // no names leave them to it. FailedPrecondition for stream i if derived.
  absl::Status NotDerived(size_t i, std::string_view verb) const;
  // Streams a..: named (a derived one refused), or `all` (with `all_word`).
  absl::StatusOr<std::vector<size_t>> StreamList(const Args& a, size_t from, bool all_word) const;
  absl::StatusOr<size_t> PortIndex(const std::string& name) const;
  // Counters now (live) or of the last run, less the `clear` baseline.
  // Counters of the run (or of the last one) since `clear`.
  std::vector<engine::LiveRun::StreamLive> LiveStreams() const;
  std::vector<engine::LiveRun::PortLive> LivePorts() const;
  stats::LatencyHistogram StreamLatency(size_t i) const;
  void EndRun(std::ostream& out);

  ShellOptions o_;
  std::unique_ptr<session::Session> session_;
  std::vector<stream::CompiledStream> streams_;  // as the next `start` will send them
  std::unique_ptr<engine::LiveRun> live_;
  std::unique_ptr<engine::TrialResult> last_;  // the last run, after stop
  // Its live counters as they stood at the end (final: its lcores had stopped).
  std::vector<engine::LiveRun::StreamLive> last_streams_;
  std::vector<engine::LiveRun::PortLive> last_ports_;
  std::vector<session::TestOutcome> tests_;  // tests run in this session
  std::string last_kind_;                    // "run" or "tests": what save writes
  std::string started_utc_;
  // `clear`: what the counters said then.
  std::vector<engine::LiveRun::StreamLive> base_streams_;
  std::vector<engine::LiveRun::PortLive> base_ports_;
  std::vector<stats::LatencyHistogram> base_latency_;
  bool quit_ = false;
};

}  // namespace fg::cli
