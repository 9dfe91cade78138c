// Fuzz target: the CLI's script lines, words and commands (lib/cliparse),
// without a session. The input is a script: its lines are read as
// `fabricgen cli --script` reads them, split into words and parsed as
// commands. Checked: nothing crashes; no line beyond the bound is returned;
// Quote gives back the same words; every error is InvalidArgument with a
// message; what ForDisplay prints has no control byte, is valid UTF-8, and
// escaping it again changes nothing; the filter fed in two pieces prints
// what ForDisplay prints.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "cliparse/cliparse.h"

namespace {

using fg::cliparse::ForDisplay;

void Check(bool ok) {
  if (!ok) __builtin_trap();
}

bool Displayable(std::string_view s, bool newlines) {
  for (size_t i = 0; i < s.size(); ++i) {
    const auto b = static_cast<unsigned char>(s[i]);
    if ((b < 0x20 && !(newlines && (b == '\n' || b == '\t'))) || b == 0x7F) return false;
    if (b == 0xC2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) <= 0x9F) return false;  // C1
  }
  return ForDisplay(s, newlines) == s;  // nothing left to escape: valid UTF-8
}

void Line(const std::string& line) {
  const std::string shown = ForDisplay(line);
  Check(Displayable(shown, false));
  auto words = fg::cliparse::SplitWords(line);
  if (!words.ok()) {
    Check(words.status().code() == absl::StatusCode::kInvalidArgument && !words.status().message().empty());
    return;
  }
  std::string again;
  for (const std::string& w : *words) again += fg::cliparse::Quote(w) + " ";
  auto back = fg::cliparse::SplitWords(again);
  Check(back.ok() && *back == *words);
  if (words->empty()) return;
  auto cmd = fg::cliparse::ParseCommand(*words);
  if (!cmd.ok()) {
    Check(cmd.status().code() == absl::StatusCode::kInvalidArgument && !cmd.status().message().empty());
    Check(Displayable(ForDisplay(std::string(cmd.status().message())), false));
    return;
  }
  Check(!cmd->name.empty() && cmd->args.size() + 1 == words->size());
  if (cmd->name == "rate") Check(cmd->rate.has_value());
  if (cmd->name == "wait") Check(cmd->duration_ns >= 0);
  if (cmd->name == "capture") Check(cmd->count >= 1 && cmd->count <= 100'000);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 3 * fg::cliparse::kMaxLineBytes) return 0;
  const std::string text(reinterpret_cast<const char*>(data), size);
  // The first byte picks how many bytes each read hands out (1..256), so
  // lines cross read boundaries every way.
  const size_t chunk = size == 0 ? 1 : 1 + data[0];
  size_t at = 0;
  fg::cliparse::LineReader reader([&](char* buf, size_t room) -> ssize_t {
    const size_t n = std::min({chunk, room, text.size() - at});
    std::memcpy(buf, text.data() + at, n);
    at += n;
    return static_cast<ssize_t>(n);
  });
  std::string line;
  for (;;) {
    const fg::cliparse::LineReader::Result r = reader.Next(line);
    if (r != fg::cliparse::LineReader::Result::kLine) break;
    Check(line.size() <= fg::cliparse::kMaxLineBytes);
    Line(line);
  }
  // The streaming filter, fed in two pieces, prints what ForDisplay prints.
  const size_t cut = size == 0 ? 0 : data[size - 1] % (size + 1);
  fg::cliparse::DisplayFilter f(true);
  std::string out;
  f.Feed(std::string_view(text).substr(0, cut), out);
  f.Feed(std::string_view(text).substr(cut), out);
  f.Finish(out);
  Check(out == ForDisplay(text, true) && Displayable(out, true));
  return 0;
}
