#include "cliparse/cliparse.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace fg::cliparse {
namespace {

bool Space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

void Escape(unsigned char b, std::string& out) {
  static constexpr char kHex[] = "0123456789abcdef";
  const char e[] = {'\\', 'x', kHex[b >> 4], kHex[b & 15]};
  out.append(e, sizeof e);
}

// The length of the UTF-8 sequence `lead` begins (0: not a lead byte), and
// whether `b` may be its byte number `i` (1-based; no overlong forms, no
// surrogates, nothing above U+10FFFF).
size_t SequenceLength(unsigned char lead) {
  if (lead >= 0xC2 && lead <= 0xDF) return 2;
  if (lead >= 0xE0 && lead <= 0xEF) return 3;
  if (lead >= 0xF0 && lead <= 0xF4) return 4;
  return 0;
}
bool Continues(unsigned char lead, size_t i, unsigned char b) {
  if (b < 0x80 || b > 0xBF) return false;
  if (i != 1) return true;
  if (lead == 0xE0) return b >= 0xA0;
  if (lead == 0xED) return b <= 0x9F;
  if (lead == 0xF0) return b >= 0x90;
  if (lead == 0xF4) return b <= 0x8F;
  return true;
}

// Arguments of each command (Commands() below): the usage shown when they
// do not fit.
absl::Status WrongArgs(const CommandHelp& c, size_t given) {
  if (c.max_args == 0) return absl::InvalidArgumentError(absl::StrFormat("%s takes no arguments", c.name));
  return absl::InvalidArgumentError(absl::StrFormat("%s: expected %s %s (got %d argument%s); `help %s` says more",
                                                    c.name, c.name, c.args, given, given == 1 ? "" : "s", c.name));
}

absl::StatusOr<size_t> CountIn(const std::string& what, const std::string& word, size_t lo, size_t hi) {
  size_t n = 0;
  if (!absl::SimpleAtoi(word, &n) || n < lo || n > hi) {
    return absl::InvalidArgumentError(absl::StrFormat("%s is %d..%d, got '%s'", what, lo, hi, word));
  }
  return n;
}

}  // namespace

absl::StatusOr<std::vector<std::string>> SplitWords(std::string_view line) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false, quoted = false;
  size_t quote_at = 0;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '\\' && i + 1 < line.size() && (line[i + 1] == '"' || line[i + 1] == '\\')) {
        word += line[++i];
      } else if (c == '"') {
        quoted = false;
      } else {
        word += c;
      }
      continue;
    }
    if (Space(c)) {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
      continue;
    }
    if (!in_word && c == '#') break;  // a comment: # at the start of a word
    in_word = true;
    if (c == '"') {
      quoted = true;
      quote_at = i;
    } else {
      word += c;
    }
  }
  if (quoted) {
    return absl::InvalidArgumentError(
        absl::StrFormat("unterminated quote (the \" at column %d has no closing \")", quote_at + 1));
  }
  if (in_word) words.push_back(std::move(word));
  return words;
}

std::string Quote(std::string_view word) {
  const bool plain = !word.empty() && word[0] != '#' &&
                     std::none_of(word.begin(), word.end(), [](char c) { return Space(c) || c == '"'; });
  if (plain) return std::string(word);
  std::string out = "\"";
  for (char c : word) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

void DisplayFilter::Flush(std::string& out) {
  for (char c : pending_) Escape(static_cast<unsigned char>(c), out);
  pending_.clear();
  need_ = 0;
}

void DisplayFilter::Feed(std::string_view bytes, std::string& out) {
  for (char ch : bytes) {
    const auto b = static_cast<unsigned char>(ch);
    if (!pending_.empty()) {
      const auto lead = static_cast<unsigned char>(pending_[0]);
      if (Continues(lead, pending_.size(), b)) {
        pending_ += ch;
        if (pending_.size() < need_) continue;
        // U+0080..U+009F (C1 controls, CSI among them) are escaped like C0.
        if (lead == 0xC2 && b <= 0x9F) {
          Flush(out);
        } else {
          out += pending_;
          pending_.clear();
          need_ = 0;
        }
        continue;
      }
      Flush(out);  // a broken sequence; `b` starts afresh
    }
    if (b < 0x80) {
      const bool control = b < 0x20 || b == 0x7F;
      if (control && !(keep_newlines_ && (b == '\n' || b == '\t'))) {
        Escape(b, out);
      } else {
        out += ch;
      }
    } else if (const size_t n = SequenceLength(b); n != 0) {
      pending_ = ch;
      need_ = n;
    } else {
      Escape(b, out);
    }
  }
}

void DisplayFilter::Finish(std::string& out) { Flush(out); }

std::string ForDisplay(std::string_view text, bool keep_newlines) {
  std::string out;
  out.reserve(text.size());
  DisplayFilter f(keep_newlines);
  f.Feed(text, out);
  f.Finish(out);
  return out;
}

const std::vector<CommandHelp>& Commands() {
  static const std::vector<CommandHelp> kCommands = {
      {"load", "PLAN.yaml", "load a plan (its ports open the first time; later plans must use the same ports)", 1, 1},
      {"ports", "", "the ports: driver, link speed, frames and bytes sent and received", 0, 0},
      {"streams", "", "the streams: ports, rate, state (idle, running, paused, stopped), frames sent and received", 0,
       0},
      {"start", "[STREAM...]",
       "start traffic: every stream, or those named (the others start paused); streams run until stop; a READ's "
       "responses (STREAM.responses) follow their READ",
       0, -1},
      {"stop", "[STREAM...]", "stop the named streams; without names, end the run (drain, final figures)", 0, -1},
      {"pause", "STREAM...|all",
       "pause streams (nothing sent; the sequence goes on where it stopped); all: the plan's streams, a READ's "
       "responses following their READ",
       1, -1},
      {"resume", "STREAM...|all", "resume paused streams at their rate", 1, -1},
      {"rate", "STREAM RATE [flow N]",
       "set a stream's rate, live when running: 20 kpps, 1.5 Gbps, 40%, max; with `flow N`, the rate of that one "
       "flow of a stream with per-flow rates (flows: {count, rates}); the streams of a port together stay within its "
       "line rate, and a rate is at least 0.001 pps",
       2, 6},
      {"show", "[ports|streams|flows [N]|latency [STREAM]|histogram STREAM|runtime|pfc]",
       "counters (live while running), the N worst flows (default 10), latency percentiles, a text histogram, "
       "the worker lcores' loops (polls, frames, TSC cycles per frame, handoffs), PFC and PAUSE received per port and "
       "priority",
       0, 2},
      {"clear", "", "counters and latency shown from now on start at zero (the run goes on)", 0, 0},
      {"wait", "DURATION",
       "let traffic run (scripts): wait 2 s, wait 500 ms; Ctrl-C ends the wait, SIGTERM the session", 1, 2},
      {"run", "TEST", "run one of the plan's tests (name or number) and print its summary", 1, 1},
      {"save", "[DIR]", "write report.json of the last run or of the tests run so far (default results/cli-UTC)", 0, 1},
      {"capture", "PORT N FILE", "write the next N frames PORT receives to a pcap file (traffic must be running)", 3,
       3},
      {"help", "[COMMAND]", "this list, or one command", 0, 1},
      {"quit", "",
       "end the run if one is going (as stop), and leave (also: exit, Ctrl-D, the end of a script, SIGTERM)", 0, 0},
  };
  return kCommands;
}

const char kHelpFooter[] =
    "Rates: pps/kpps/Mpps, bps/kbps/Mbps/Gbps (add L1 to count preamble and gap), % of line, max.\n"
    "Words are separated by spaces; \"...\" quotes one (inside, \\\" is a quote and \\\\ a backslash). A # that "
    "begins a word outside quotes starts a comment (a # inside a word or in quotes is kept). Lines are at most "
    "4096 bytes.\n"
    "Tab completes commands, streams, ports and tests; arrows recall history.\n"
    "A READ's responses (STREAM.responses) are a stream derived from the READ: they go as its requests come, so "
    "start, stop, pause, resume and rate name the READ (naming the responses is refused), and `all`, or start "
    "without names, leave them to it; show names them like any stream.\n";

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

absl::StatusOr<Command> ParseCommand(const std::vector<std::string>& words) {
  if (words.empty()) return absl::InvalidArgumentError("no command");
  Command c;
  c.name = absl::AsciiStrToLower(words[0]);
  if (c.name == "?") c.name = "help";
  if (c.name == "exit") c.name = "quit";
  const auto& table = Commands();
  const auto it = std::find_if(table.begin(), table.end(), [&](const CommandHelp& h) { return c.name == h.name; });
  if (it == table.end()) {
    // Suggest the commands within two edits (a swap of neighbours counts one);
    // a long word is nothing like any of them.
    std::vector<std::string> near;
    for (const CommandHelp& h : table) {
      if (c.name.size() <= 16 && EditDistance(c.name, h.name) <= 2) near.push_back(h.name);
    }
    return absl::InvalidArgumentError(
        absl::StrFormat("unknown command '%s'%s; `help` lists them", words[0],
                        near.empty() ? "" : " (did you mean " + absl::StrJoin(near, " or ") + "?)"));
  }
  c.args.assign(words.begin() + 1, words.end());
  const size_t n = c.args.size();
  if (n < static_cast<size_t>(it->min_args) || (it->max_args >= 0 && n > static_cast<size_t>(it->max_args))) {
    return WrongArgs(*it, n);
  }
  if (c.name == "rate") {
    auto end = c.args.end();
    for (auto w = c.args.begin() + 2; w != c.args.end(); ++w) {
      if (absl::AsciiStrToLower(*w) != "flow") continue;
      if (w + 2 != c.args.end()) return absl::InvalidArgumentError("rate: `flow` is followed by one flow number");
      absl::StatusOr<size_t> f = CountIn("rate: flow", *(w + 1), 0, (1u << 24) - 1);
      if (!f.ok()) return f.status();
      c.flow = *f;
      end = w;
      break;
    }
    if (end == c.args.begin() + 1) return absl::InvalidArgumentError("rate: give the rate before `flow`");
    const std::string text = absl::StrJoin(c.args.begin() + 1, end, " ");
    auto rate = ParseRate(text);
    if (!rate.ok()) return absl::InvalidArgumentError(absl::StrFormat("rate: %s", rate.status().message()));
    c.rate = *rate;
  } else if (c.name == "wait") {
    auto ns = ParseDuration(absl::StrJoin(c.args, " "));
    if (!ns.ok()) return absl::InvalidArgumentError(absl::StrFormat("wait: %s", ns.status().message()));
    c.duration_ns = *ns;
  } else if (c.name == "show" && !c.args.empty() && c.args[0] == "flows") {
    c.count = 10;
    if (n == 2) {
      absl::StatusOr<size_t> k = CountIn("show flows: N", c.args[1], 1, 1000);
      if (!k.ok()) return k.status();
      c.count = *k;
    }
  } else if (c.name == "capture") {
    absl::StatusOr<size_t> k = CountIn("capture: N", c.args[1], 1, 100'000);
    if (!k.ok()) return k.status();
    c.count = *k;
  }
  return c;
}

LineReader LineReader::FromFd(int fd) {
  return LineReader([fd](char* buf, size_t size) {
    ssize_t n;
    do {
      n = read(fd, buf, size);
    } while (n < 0 && errno == EINTR);
    return n;
  });
}

LineReader::Result LineReader::Next(std::string& line) {
  line.clear();
  auto done = [&line] {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    return line.size() > kMaxLineBytes ? Result::kTooLong : Result::kLine;
  };
  for (;;) {
    const char* nl = static_cast<const char*>(memchr(buf_ + begin_, '\n', end_ - begin_));
    if (nl != nullptr) {
      const size_t i = static_cast<size_t>(nl - buf_);
      line.append(buf_ + begin_, i - begin_);
      begin_ = i + 1;
      return done();
    }
    line.append(buf_ + begin_, end_ - begin_);
    begin_ = end_ = 0;
    // Never more than the longest line (and its \r) is held.
    if (line.size() > kMaxLineBytes + 1) return Result::kTooLong;
    if (eof_) return line.empty() ? Result::kEnd : done();
    const ssize_t got = read_(buf_, sizeof buf_);
    if (got < 0) {
      error_ = errno;
      return Result::kError;
    }
    if (got == 0) eof_ = true;
    end_ = static_cast<size_t>(got);
  }
}

}  // namespace fg::cliparse
