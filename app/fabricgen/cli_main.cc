// `fabricgen cli`: lib/cli's shell on a terminal (DPDK's rdline for line
// editing, completion and history) or over a script.
#include <cmdline_rdline.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <memory>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cli/shell.h"
#include "cliparse/cliparse.h"
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

// Exit status of a failed command: 2 for what the user typed or asked for
// (a command, argument, name, path or state: start twice), 1 otherwise.
int ExitOf(const absl::Status& s) {
  switch (s.code()) {
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kAlreadyExists:
    case absl::StatusCode::kPermissionDenied: return kExitInput;
    default: return ExitFor(s);
  }
}

// An ostream whose bytes reach `to` with control bytes escaped
// (cliparse::DisplayFilter): what the shell prints may hold what the user
// typed, or names from a plan.
class DisplayBuf : public std::streambuf {
 public:
  explicit DisplayBuf(std::ostream& to) : to_(to), filter_(/*keep_newlines=*/true) {}
  ~DisplayBuf() override {
    std::string rest;
    filter_.Finish(rest);
    to_ << rest << std::flush;
  }

 protected:
  int_type overflow(int_type c) override {
    if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
    const char ch = traits_type::to_char_type(c);
    xsputn(&ch, 1);
    return c;
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    std::string shown;
    filter_.Feed(std::string_view(s, static_cast<size_t>(n)), shown);
    to_ << shown;
    return n;
  }
  int sync() override {
    to_.flush();
    return 0;
  }

 private:
  std::ostream& to_;
  cliparse::DisplayFilter filter_;
};

// What a session reads the signals by (main.cc's handlers set them).
struct SessionSignals {
  std::atomic<bool>* interrupt;        // SIGINT: ends the current wait or test
  const std::atomic<int>* end_signal;  // the signal that ends the session (0: none)
  int ended() const { return end_signal != nullptr ? end_signal->load() : 0; }
  // Before each command: a Ctrl-C from before is spent, but an ending
  // signal still cuts what comes short (the handler sets end_signal before
  // interrupt, so one that lands between the two stores is not lost).
  void Arm() const {
    interrupt->store(false);
    if (ended() != 0) interrupt->store(true);
  }
};

// read(2) on `fd` that gives up (-1, EINTR) once an ending signal came: a
// session waiting for its next line is ended by it.
ssize_t ReadUnlessEnded(int fd, char* buf, size_t size, const SessionSignals& signals) {
  for (;;) {
    if (signals.ended() != 0) {
      errno = EINTR;
      return -1;
    }
    pollfd p{.fd = fd, .events = POLLIN, .revents = 0};
    const int ready = poll(&p, 1, 100);
    if (ready < 0 && errno != EINTR) return -1;
    if (ready <= 0) continue;
    const ssize_t n = read(fd, buf, size);
    if (n < 0 && errno == EINTR) continue;
    return n;
  }
}

// The end of a session with input left or not: a run going ends as `stop`
// ends it (its summary printed; `save` would have written its report).
void EndSession(cli::Shell& shell, std::ostream& out) {
  (void)shell.Execute("quit", out);
  out << std::flush;
}

// An ending signal: the session ends as at the end of its input; exit 1.
int EndedBySignal(cli::Shell& shell, std::ostream& out, int sig) {
  EndSession(shell, out);
  const char* abbrev = sigabbrev_np(sig);
  std::cerr << "fabricgen: " << (abbrev != nullptr ? absl::StrCat("SIG", abbrev) : absl::StrCat("signal ", sig))
            << ": the session ended (a run going was stopped as `stop` stops it)\n";
  return kExitRuntime;
}

// Commands from a file or a pipe, one per line (at most
// cliparse::kMaxLineBytes), stopping at the first that fails. At the end of
// the input, or on an ending signal, the session ends (EndSession).
int RunScript(cli::Shell& shell, int fd, const std::string& name, std::ostream& out, const SessionSignals& signals) {
  cliparse::LineReader reader(
      [fd, &signals](char* buf, size_t size) { return ReadUnlessEnded(fd, buf, size, signals); });
  const std::string shown_name = cliparse::ForDisplay(name);
  std::string line;
  int number = 0;
  while (!shell.done()) {
    if (const int sig = signals.ended(); sig != 0) return EndedBySignal(shell, out, sig);
    const cliparse::LineReader::Result r = reader.Next(line);
    if (r == cliparse::LineReader::Result::kEnd) break;
    ++number;
    if (r == cliparse::LineReader::Result::kTooLong) {
      std::cerr << absl::StrFormat("%s:%d: line longer than %d bytes\n", shown_name, number, cliparse::kMaxLineBytes);
      return kExitInput;
    }
    if (r == cliparse::LineReader::Result::kError) {
      if (const int sig = signals.ended(); sig != 0) return EndedBySignal(shell, out, sig);
      std::cerr << absl::StrFormat("%s:%d: cannot read: %s\n", shown_name, number, std::strerror(reader.error()));
      return kExitRuntime;
    }
    // Blank lines and comments are not echoed.
    const auto words = cliparse::SplitWords(line);
    if (words.ok() && words->empty()) continue;
    out << kPrompt << line << "\n";
    signals.Arm();
    const absl::Status s = shell.Execute(line, out);
    out << std::flush;
    if (!s.ok()) {
      std::cerr << absl::StrFormat("%s:%d: %s: %s\n", shown_name, number, cliparse::ForDisplay(line),
                                   cliparse::ForDisplay(std::string(s.message())));
      if (const int sig = signals.ended(); sig != 0) return EndedBySignal(shell, out, sig);
      return ExitOf(s);
    }
  }
  if (const int sig = signals.ended(); sig != 0) return EndedBySignal(shell, out, sig);
  EndSession(shell, out);  // the input ended (EOF): as `quit`
  return kExitOk;
}

int RunTerminal(cli::Shell& shell, std::ostream& out, const SessionSignals& signals) {
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
      const ssize_t n = ReadUnlessEnded(STDIN_FILENO, &c, 1, signals);
      if (n <= 0) {
        if (n < 0 && errno == EINTR && signals.ended() == 0) continue;
        eof = true;
        break;
      }
      const int r = rdline_char_in(rdl.get(), c);
      if (r == RDLINE_RES_EOF || r == RDLINE_RES_EXITED) eof = true;
    }
    if (eof) {
      out << "\n";
      if (const int sig = signals.ended(); sig != 0) return EndedBySignal(shell, out, sig);
      EndSession(shell, out);
      break;
    }
    if (t.line.find_first_not_of(" \t") != std::string::npos) rdline_add_history(rdl.get(), t.line.c_str());
    signals.Arm();
    const absl::Status s = shell.Execute(t.line, out);
    if (!s.ok())
      out << "error: " << cliparse::ForDisplay(std::string(s.message())) << "\n";  // at the keyboard: say it, go on
    out << std::flush;
    if (const int sig = signals.ended(); sig != 0) return EndedBySignal(shell, out, sig);
  }
  return kExitOk;
}

}  // namespace

int Cli(const CliArgs& args, std::atomic<bool>* interrupt, const std::atomic<int>* end_signal) {
  const SessionSignals signals{.interrupt = interrupt, .end_signal = end_signal};
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
  DisplayBuf display_buf(std::cout);
  std::ostream out(&display_buf);
  cli::Shell shell({.eal = args.eal, .drivers = &registry, .hub = &hub, .interrupt = interrupt});
  if (!args.plan.empty()) {
    const absl::Status s = shell.Execute("load " + cliparse::Quote(args.plan), out);
    if (!s.ok()) {
      out << std::flush;
      std::cerr << "fabricgen: " << cliparse::ForDisplay(std::string(s.message())) << "\n";
      return ExitOf(s);
    }
  }
  if (!args.script.empty() && args.script != "-") {
    const int fd = open(args.script.c_str(), O_RDONLY | O_CLOEXEC);
    struct stat st {};
    if (fd < 0 || fstat(fd, &st) != 0 || S_ISDIR(st.st_mode)) {
      std::cerr << absl::StrFormat("fabricgen: --script %s: %s\n", cliparse::ForDisplay(args.script),
                                   fd >= 0 ? "is a directory; give a file of commands" : std::strerror(errno));
      if (fd >= 0) close(fd);
      return kExitInput;
    }
    const int status = RunScript(shell, fd, args.script, out, signals);
    close(fd);
    return status;
  }
  // Stdin that is not a terminal (a pipe, a file, /dev/null when it was
  // closed) is read as a script.
  if (args.script == "-" || !isatty(STDIN_FILENO)) return RunScript(shell, STDIN_FILENO, "stdin", out, signals);
  return RunTerminal(shell, out, signals);
}

}  // namespace fg::app
