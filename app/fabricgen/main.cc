// fabricgen: argument parsing and dispatch only; the work lives in lib/.
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "commands.h"
#include "stream/craft.h"

namespace {

// The process-wide state the signal handlers set, polled by the command:
// `g_interrupt` by any signal that ends a run (in the CLI, SIGINT: it ends
// the current wait or test), `g_end_signal` by one that ends a CLI session
// (every catchable ending signal but SIGINT; 0: none yet).
std::atomic<bool> g_interrupt{false};
std::atomic<int> g_end_signal{0};

void OnInterrupt(int) { g_interrupt.store(true); }
void OnEnd(int sig) {
  g_end_signal.store(sig);  // first: the CLI, seeing the interrupt, finds why
  g_interrupt.store(true);
}

// Each signal whose default action ends the process (signal(7): Term, and
// SIGXCPU) goes through the command's own ending instead: the run stops, its
// report is written marked incomplete, EAL's runtime directory is removed. A
// second signal is no different from the first (the report is still
// written). A signal the parent left ignored (nohup's SIGHUP) stays ignored,
// SIGINT and SIGTERM excepted; SIGQUIT (Ctrl-\) keeps its default: it ends
// the process at once, without a report.
void CatchEndingSignals(void (*on_sigint)(int)) {
  std::vector<int> ending = {SIGHUP, SIGUSR1, SIGUSR2, SIGALRM, SIGVTALRM, SIGPROF, SIGIO, SIGXCPU};
#ifdef SIGPWR
  ending.push_back(SIGPWR);
#endif
#ifdef SIGSTKFLT
  ending.push_back(SIGSTKFLT);
#endif
  for (int s = SIGRTMIN; s <= SIGRTMAX; ++s) ending.push_back(s);
  struct sigaction sa {};
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;  // the waits that must end (poll, sleeps) check the flags themselves
  sa.sa_handler = OnEnd;
  for (int sig : ending) {
    struct sigaction now {};
    if (sigaction(sig, nullptr, &now) != 0 || (now.sa_flags & SA_SIGINFO) != 0 || now.sa_handler != SIG_DFL) continue;
    sigaction(sig, &sa, nullptr);
  }
  sigaction(SIGTERM, &sa, nullptr);
  sa.sa_handler = on_sigint;
  sigaction(SIGINT, &sa, nullptr);
}

constexpr char kUsage[] = R"(usage: fabricgen <command> [arguments] [-- EAL arguments]

commands:
  run PLAN.yaml [--out DIR] [--quiet] [--verbose] [--metrics [ADDR:]PORT]
                      run the plan's streams and write DIR/report.json
                      (default DIR: results/<plan>-<UTC time>); --metrics
                      serves Prometheus metrics meanwhile (PORT alone binds
                      127.0.0.1); --verbose prints each tester limit with
                      its detail (else one line per stream); a signal
                      (Ctrl-C, SIGTERM, SIGHUP, ...) stops it and the
                      report is written, marked incomplete
  craft PLAN.yaml --pcap FILE [--count N]
                      write the frames the plan's streams would send to a
                      pcap file, through the TX code, every flow in turn
                      (N packets per stream, 1..1000000; default: one
                      message per flow); needs no NIC and no DPDK setup
  ports [PLAN.yaml]   list ports and their capabilities (the plan's ports,
                      or every port EAL finds plus the built-in loopback)
  cli [PLAN.yaml] [--script FILE|-] [--metrics [ADDR:]PORT]
                      an interactive session (help lists its commands), or
                      the same commands from FILE / stdin, stopping at the
                      first that fails (exit status 2 or 1, naming the line);
                      at the end of the script, or on SIGTERM (exit 1), a
                      running run ends as with stop; Ctrl-C ends a wait or test
  version             print the fabricgen and DPDK versions
  help                this text

EAL arguments come from the plan's eal: list, then from after `--`.
Exit status: 0 completed, 1 runtime failure or interrupted, 2 invalid input.
)";

// A closed stdin, stdout or stderr gets /dev/null before anything opens a
// file: else EAL's interrupt pipe (or a report) would take fd 0..2, and the
// CLI would read its commands from that pipe, or a message land in a file.
void OpenStandardFds() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    const int got = open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
    if (got >= 0 && got != fd) {
      dup2(got, fd);
      close(got);
    }
  }
}

int Usage(const std::string& error) {
  std::cerr << "fabricgen: " << error << "\n\n" << kUsage;
  return fg::app::kExitInput;
}

}  // namespace

int main(int argc, char** argv) {
  OpenStandardFds();
  // A reader that went away (`fabricgen run plan | head -2`) must not end a
  // run: writes to it fail (EPIPE) and the output streams stop writing.
  std::signal(SIGPIPE, SIG_IGN);
  std::vector<std::string> args, eal;
  bool after_dashes = false;
  for (int i = 1; i < argc; ++i) {
    if (!after_dashes && std::strcmp(argv[i], "--") == 0) {
      after_dashes = true;
    } else {
      (after_dashes ? eal : args).push_back(argv[i]);
    }
  }
  if (args.empty()) return Usage("no command given");
  const std::string cmd = args[0];
  if (cmd == "help" || cmd == "--help" || cmd == "-h") {
    std::cout << kUsage;
    return fg::app::kExitOk;
  }
  if (cmd == "version" || cmd == "--version") return fg::app::Version();
  if (cmd == "ports") {
    if (args.size() > 2) return Usage("ports takes at most one plan file");
    CatchEndingSignals(OnEnd);  // it ends on its own, soon: EAL's runtime directory is removed
    return fg::app::Ports(args.size() == 2 ? args[1] : "", eal);
  }
  if (cmd == "craft") {
    std::string plan, pcap;
    uint64_t count = 0;
    for (size_t i = 1; i < args.size(); ++i) {
      if (args[i] == "--pcap" && i + 1 < args.size()) {
        pcap = args[++i];
      } else if (args[i] == "--count" && i + 1 < args.size()) {
        // Digits only (strtoull would take "-1" as 2^64 - 1), 1..the maximum.
        const std::string& n = args[++i];
        const bool digits = !n.empty() && n.size() <= 19 && n.find_first_not_of("0123456789") == std::string::npos;
        count = digits ? std::stoull(n) : 0;
        if (count == 0 || count > fg::stream::kMaxCraftPackets) {
          return Usage("--count needs packets per stream from 1 to " + std::to_string(fg::stream::kMaxCraftPackets) +
                       ", got '" + n + "'");
        }
      } else if (args[i].rfind("-", 0) == 0) {
        return Usage("unknown option for craft: " + args[i]);
      } else if (plan.empty()) {
        plan = args[i];
      } else {
        return Usage("craft takes one plan file; extra argument: " + args[i]);
      }
    }
    if (plan.empty() || pcap.empty()) return Usage("craft needs a plan file and --pcap FILE");
    // Ctrl-C, SIGTERM or another ending signal abandons the capture: its temporary file is removed.
    CatchEndingSignals(OnEnd);
    return fg::app::Craft(plan, pcap, count, &g_interrupt);
  }
  if (cmd == "cli") {
    fg::app::CliArgs cli;
    cli.eal = eal;
    for (size_t i = 1; i < args.size(); ++i) {
      if (args[i] == "--script") {
        if (i + 1 >= args.size()) return Usage("--script needs a file (or - for stdin)");
        cli.script = args[++i];
      } else if (args[i] == "--metrics") {
        if (i + 1 >= args.size()) return Usage("--metrics needs [ADDR:]PORT");
        cli.metrics = args[++i];
      } else if (args[i].rfind("-", 0) == 0) {
        return Usage("unknown option for cli: " + args[i]);
      } else if (cli.plan.empty()) {
        cli.plan = args[i];
      } else {
        return Usage("cli takes at most one plan file; extra argument: " + args[i]);
      }
    }
    // Ctrl-C ends a wait or a running test's trial (the session goes on);
    // SIGTERM and the other ending signals end the session, a run going
    // ending as with `stop`.
    CatchEndingSignals(OnInterrupt);
    return fg::app::Cli(cli, &g_interrupt, &g_end_signal);
  }
  if (cmd == "run") {
    fg::app::RunArgs run;
    run.eal = eal;
    for (size_t i = 1; i < args.size(); ++i) {
      if (args[i] == "--out") {
        if (i + 1 >= args.size()) return Usage("--out needs a directory");
        run.out_dir = args[++i];  // "" is refused with the directory's other checks, not taken as the default
      } else if (args[i] == "--quiet" || args[i] == "-q") {
        run.quiet = true;
      } else if (args[i] == "--verbose" || args[i] == "-v") {
        run.verbose = true;
      } else if (args[i] == "--metrics") {
        if (i + 1 >= args.size()) return Usage("--metrics needs [ADDR:]PORT");
        run.metrics = args[++i];
      } else if (args[i].rfind("-", 0) == 0) {
        return Usage("unknown option for run: " + args[i]);
      } else if (run.plan.empty()) {
        run.plan = args[i];
      } else {
        return Usage("run takes one plan file; extra argument: " + args[i]);
      }
    }
    if (run.plan.empty()) return Usage("run needs a plan file");
    // Any ending signal, at any time (a second one too): traffic stops and
    // the report is still written, marked incomplete.
    CatchEndingSignals(OnEnd);
    return fg::app::Run(run, &g_interrupt);
  }
  return Usage("unknown command '" + cmd + "'");
}
