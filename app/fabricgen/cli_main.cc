// `fabricgen cli`: lib/cli's shell on a terminal (DPDK's rdline for line
// editing, completion and history) or over a script.
#include <cmdline_rdline.h>
#include <poll.h>
#include <termios.h>
#include <unistd.h>

#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cli/shell.h"
#include "commands.h"
#include "metrics/server.h"

namespace fg::app {
namespace {

constexpr char kPrompt[] = "fabricgen> ";

// The terminal in raw mode while the shell reads a line, restored on exit.
class RawTerminal {
 public:
  RawTerminal() {
    if (tcgetattr(STDIN_FILENO, &saved_) != 0) return;
    termios raw = saved_;
    raw.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO);  // Ctrl-C still raises SIGINT
    raw.c_cc[VMIN] = 1;
    raw.c_cc[VTIME] = 0;
    ok_ = tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0;
  }
  ~RawTerminal() {
    if (ok_) tcsetattr(STDIN_FILENO, TCSANOW, &saved_);
  }

 private:
  termios saved_{};
  bool ok_ = false;
};

struct Terminal {
  cli::Shell* shell = nullptr;
  std::string line;
  bool validated = false;
};

int WriteChar(rdline*, char c) { return static_cast<int>(write(STDOUT_FILENO, &c, 1)); }

void Validate(rdline* rdl, const char* buf, unsigned int) {
  auto& t = *static_cast<Terminal*>(rdline_get_opaque(rdl));
  t.line = buf;
  while (!t.line.empty() && (t.line.back() == '\n' || t.line.back() == '\r')) t.line.pop_back();
  t.validated = true;
}

// rdline's protocol: return 2 with the characters to add, or 1 per choice to
// list (called until it returns 0); *state carries the position.
int CompleteWord(rdline* rdl, const char* buf, char* dst, unsigned int size, int* state) {
  auto& t = *static_cast<Terminal*>(rdline_get_opaque(rdl));
  const std::string before(buf);
  const std::vector<std::string> c = t.shell->Complete(before);
  const size_t word_start = before.find_last_of(" \t") == std::string::npos ? 0 : before.find_last_of(" \t") + 1;
  const std::string partial = before.substr(word_start);
  if (*state == 0) {
    if (c.empty()) return 0;
    std::string common = c[0];
    for (const std::string& w : c) {
      size_t k = 0;
      while (k < common.size() && k < w.size() && common[k] == w[k]) ++k;
      common.resize(k);
    }
    if (c.size() == 1) common += " ";
    if (common.size() > partial.size()) {
      snprintf(dst, size, "%s", common.substr(partial.size()).c_str());
      return 2;
    }
    *state = 1;
  }
  if (*state < 1) *state = 1;  // '?' (help key) lists straight away
  const size_t i = static_cast<size_t>(*state - 1);
  if (i >= c.size()) return 0;
  snprintf(dst, size, "%s", c[i].c_str());
  ++*state;
  return 1;
}

// Exit status of a failed command: 2 for what the user typed (a name that
// is not there included), 1 otherwise.
int ExitOf(const absl::Status& s) { return s.code() == absl::StatusCode::kNotFound ? kExitInput : ExitFor(s); }

int RunScript(cli::Shell& shell, std::istream& in, const std::string& name, std::atomic<bool>* interrupt) {
  std::string line;
  int number = 0;
  while (!shell.done() && std::getline(in, line)) {
    ++number;
    if (line.find_first_not_of(" \t\r") == std::string::npos || line[line.find_first_not_of(" \t")] == '#') continue;
    std::cout << kPrompt << line << "\n";
    interrupt->store(false);
    const absl::Status s = shell.Execute(line, std::cout);
    std::cout << std::flush;
    if (!s.ok()) {
      std::cerr << absl::StrFormat("%s:%d: %s: %s\n", name, number, line, s.message());
      return ExitOf(s);
    }
  }
  return kExitOk;
}

int RunTerminal(cli::Shell& shell, std::atomic<bool>* interrupt) {
  Terminal t;
  t.shell = &shell;
  std::unique_ptr<rdline, decltype(&rdline_free)> rdl(rdline_new(&WriteChar, &Validate, &CompleteWord, &t),
                                                      &rdline_free);
  if (!rdl) {
    std::cerr << "fabricgen: cannot start the line editor\n";
    return kExitRuntime;
  }
  RawTerminal raw;
  std::cout << "fabricgen cli: `help` lists the commands; Tab completes; Ctrl-D or quit leaves\n" << std::flush;
  while (!shell.done()) {
    rdline_newline(rdl.get(), kPrompt);
    t.validated = false;
    bool eof = false;
    while (!t.validated && !eof) {
      char c = 0;
      const ssize_t n = read(STDIN_FILENO, &c, 1);
      if (n <= 0) {
        if (n < 0 && errno == EINTR) continue;
        eof = true;
        break;
      }
      const int r = rdline_char_in(rdl.get(), c);
      if (r == RDLINE_RES_EOF || r == RDLINE_RES_EXITED) eof = true;
    }
    if (eof) {
      std::cout << "\n";
      (void)shell.Execute("quit", std::cout);
      break;
    }
    if (t.line.find_first_not_of(" \t") != std::string::npos) rdline_add_history(rdl.get(), t.line.c_str());
    interrupt->store(false);
    const absl::Status s = shell.Execute(t.line, std::cout);
    if (!s.ok()) std::cout << "error: " << s.message() << "\n";  // at the keyboard: say it, and go on
    std::cout << std::flush;
  }
  return kExitOk;
}

}  // namespace

int Cli(const CliArgs& args, std::atomic<bool>* interrupt) {
  const port::DriverRegistry registry = Drivers();
  metrics::Hub hub;
  std::unique_ptr<metrics::Server> server;
  if (!args.metrics.empty()) {
    auto s = metrics::Server::Start(args.metrics, [&hub] { return hub.Collect(); });
    if (!s.ok()) {
      std::cerr << "fabricgen: " << s.status().message() << "\n";
      return kExitInput;
    }
    server = std::move(*s);
    std::cout << "metrics: " << server->url() << "\n" << std::flush;
  }
  cli::Shell shell({.eal = args.eal, .drivers = &registry, .hub = &hub, .interrupt = interrupt});
  if (!args.plan.empty()) {
    const absl::Status s = shell.Execute("load " + args.plan, std::cout);
    if (!s.ok()) {
      std::cerr << "fabricgen: " << s.message() << "\n";
      return ExitOf(s);
    }
  }
  if (!args.script.empty() && args.script != "-") {
    std::ifstream in(args.script);
    if (!in) {
      std::cerr << "fabricgen: cannot read script " << args.script << "\n";
      return kExitInput;
    }
    return RunScript(shell, in, args.script, interrupt);
  }
  if (args.script == "-" || !isatty(STDIN_FILENO)) return RunScript(shell, std::cin, "stdin", interrupt);
  return RunTerminal(shell, interrupt);
}

}  // namespace fg::app
