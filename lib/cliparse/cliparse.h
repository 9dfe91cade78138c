// cliparse/cliparse.h: the words and commands of `fabricgen cli`, with no
// DPDK and no session: what the shell (lib/cli), its unit tests and the
// fuzz target (test/fuzz/cli_fuzz.cc) share.
//
// A line is split into words at spaces and tabs. "..." quotes a word (or a
// part of one: a"b c" is the word `ab c`); inside quotes, \" is a quote and
// \\ a backslash, any other backslash is kept as it is; outside quotes a
// backslash is an ordinary character. A comment starts at a # that begins a
// word outside quotes (`save /tmp/run#2` keeps its #; `stop  # done` ends at
// the #). Lines are at most kMaxLineBytes long.
//
//   auto words = fg::cliparse::SplitWords(R"(save "/tmp/my results#2")");  // {"save", "/tmp/my results#2"}
//   auto cmd = fg::cliparse::ParseCommand(*words);   // cmd->name == "save", cmd->args == {"/tmp/my ..."}
//   std::cerr << fg::cliparse::ForDisplay("a\x1b[2Jb");  // a\x1b[2Jb, escaped: the terminal is not cleared
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "base/units.h"

namespace fg::cliparse {

inline constexpr size_t kMaxLineBytes = 4096;  // a script line, without its newline

// The words of a line (quotes removed, comment dropped). Errors: an
// unterminated quote, naming its column (1-based).
absl::StatusOr<std::vector<std::string>> SplitWords(std::string_view line);

// `word` as SplitWords reads it back: as is when it needs no quotes, else
// "..." with \ and " escaped. SplitWords(Quote(a) + " " + Quote(b)) == {a, b}.
std::string Quote(std::string_view word);

// Text safe to print on a terminal: control bytes (C0, DEL, C1 in UTF-8) and
// bytes that are not UTF-8 are written as \xNN; valid UTF-8 is kept. With
// `keep_newlines`, \n and \t pass (multi-line output); else they are escaped too.
std::string ForDisplay(std::string_view text, bool keep_newlines = false);

// The same as a filter over a stream of bytes that may arrive in pieces
// (an ostream's buffer): Feed appends the displayable form of what is
// complete; Finish flushes an incomplete UTF-8 sequence (escaped).
class DisplayFilter {
 public:
  explicit DisplayFilter(bool keep_newlines) : keep_newlines_(keep_newlines) {}
  void Feed(std::string_view bytes, std::string& out);
  void Finish(std::string& out);

 private:
  void Flush(std::string& out);  // the pending bytes, escaped
  bool keep_newlines_;
  std::string pending_;  // a UTF-8 sequence begun
  size_t need_ = 0;      // its length
};

struct CommandHelp {
  const char* name;
  const char* args;
  const char* text;
  int min_args;
  int max_args;  // -1: any number
};
// Every command, in the order `help` lists them.
const std::vector<CommandHelp>& Commands();
// What `help` prints after the list: units, quoting and comments, keys.
extern const char kHelpFooter[];

// A command line checked against its command's arguments, values parsed.
struct Command {
  std::string name;               // canonical: `?` is help, `exit` is quit
  std::vector<std::string> args;  // the words after the command
  std::optional<Rate> rate;       // rate STREAM RATE
  std::optional<size_t> flow;     // rate STREAM RATE flow N
  int64_t duration_ns = 0;        // wait DURATION
  size_t count = 0;               // show flows [N] (default 10), capture PORT N FILE
};

// Errors (InvalidArgument) are what the user typed wrong: an unknown
// command (with those within two edits), a wrong number of arguments, a
// value out of range. An empty `words` is not a command (InvalidArgument).
absl::StatusOr<Command> ParseCommand(const std::vector<std::string>& words);

// Script lines from a file or a pipe, never holding more than one line
// (kMaxLineBytes) and one read's worth: a line without its \n (and a \r
// before it); a last line without \n counts.
class LineReader {
 public:
  using Read = std::function<ssize_t(char* buf, size_t size)>;  // read(2)'s contract
  enum class Result { kLine, kEnd, kTooLong, kError };
  explicit LineReader(Read read) : read_(std::move(read)) {}
  static LineReader FromFd(int fd);  // read(2), EINTR retried; the fd stays the caller's
  // kTooLong: the line is longer than kMaxLineBytes (`line` holds a part of
  // it); kError: read failed (error()). Neither may be followed by Next().
  Result Next(std::string& line);
  int error() const { return error_; }

 private:
  Read read_;
  char buf_[4096];
  size_t begin_ = 0, end_ = 0;
  bool eof_ = false;
  int error_ = 0;
};

// Optimal string alignment distance (insertions, deletions, substitutions,
// swaps of neighbours).
size_t EditDistance(std::string_view a, std::string_view b);

}  // namespace fg::cliparse
