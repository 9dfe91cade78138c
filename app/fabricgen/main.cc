// fabricgen: argument parsing and dispatch only; the work lives in lib/.
#include <fcntl.h>
#include <unistd.h>

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

// The one process-wide flag: set by SIGINT/SIGTERM, polled by the run.
std::atomic<bool> g_interrupt{false};

void OnSignal(int) { g_interrupt.store(true); }

constexpr char kUsage[] = R"(usage: fabricgen <command> [arguments] [-- EAL arguments]

commands:
  run PLAN.yaml [--out DIR] [--quiet] [--metrics [ADDR:]PORT]
                      run the plan's streams and write DIR/report.json
                      (default DIR: results/<plan>-<UTC time>); --metrics
                      serves Prometheus metrics meanwhile (PORT alone binds
                      127.0.0.1)
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
                      first that fails (exit status 2 or 1, naming the line)
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
    // Ctrl-C or SIGTERM abandons the capture: its temporary file is removed.
    struct sigaction sa {};
    sa.sa_handler = OnSignal;
    sa.sa_flags = SA_RESETHAND;
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
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
    // Ctrl-C ends a running test's trial (the session goes on); the handler
    // stays, so the terminal session is not killed by it.
    struct sigaction sa {};
    sa.sa_handler = OnSignal;
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
    return fg::app::Cli(cli, &g_interrupt);
  }
  if (cmd == "run") {
    fg::app::RunArgs run;
    run.eal = eal;
    for (size_t i = 1; i < args.size(); ++i) {
      if (args[i] == "--out") {
        if (i + 1 >= args.size()) return Usage("--out needs a directory");
        run.out_dir = args[++i];
      } else if (args[i] == "--quiet" || args[i] == "-q") {
        run.quiet = true;
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
    // First Ctrl-C: stop traffic and still write the report. A second one
    // (handler reset) ends the process at once.
    struct sigaction sa {};
    sa.sa_handler = OnSignal;
    sa.sa_flags = SA_RESETHAND;
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
    return fg::app::Run(run, &g_interrupt);
  }
  return Usage("unknown command '" + cmd + "'");
}
