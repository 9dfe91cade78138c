// Fuzz target: PAUSE/PFC and link-bandwidth notification parsers, with
// round trips of what parses.
#include <cstddef>
#include <cstdint>
#include <span>

#include "proto/lbn.h"
#include "proto/pfc.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const uint8_t> b(data, size);
  if (auto m = fg::proto::ParseMacControl(b)) {
    uint8_t out[fg::proto::kMacControlFrameLen];
    if (m->opcode == fg::proto::kOpcodePfc) {
      fg::proto::WritePfc(out, m->src, *m);
      auto again = fg::proto::ParseMacControl(std::span<const uint8_t>(out, sizeof out));
      if (!again || again->class_enable != m->class_enable || again->quanta != m->quanta) __builtin_trap();
    }
  }
  fg::proto::lbn::Settings s;
  if (auto l = fg::proto::lbn::ParseMessage(b, s)) {
    uint8_t out[14 + fg::proto::lbn::kMessageLen];
    fg::proto::lbn::WriteMessage(out, fg::MacAddr{}, fg::MacAddr{}, *l, s);
    auto again = fg::proto::lbn::ParseMessage(std::span<const uint8_t>(out, sizeof out), s);
    if (!again || !(again->bitmap == l->bitmap) || again->msg != l->msg) __builtin_trap();
    for (int i = 0; i < fg::proto::lbn::kLeaves; ++i) {
      if (l->bitmap.Get(i) > 7) __builtin_trap();
    }
  }
  return 0;
}
