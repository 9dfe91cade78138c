// Fuzz target: a plan through everything that runs before EAL starts: parsing
// (YAML through validation), the pre-EAL check of its streams and of every
// test matrix cell (methods::PrecheckPlan), stream compilation against a
// nominal line rate, and the first frames of every stream and cell through
// Program::Emit (what TX and craft write). Nothing crashes or throws, and
// every error names the file.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "config/plan.h"
#include "methods/kinds.h"
#include "methods/matrix.h"
#include "methods/throughput.h"
#include "stream/stream.h"

namespace {

constexpr double kNominalLineBps = 100e9;
constexpr size_t kMaxCells = 64;           // a matrix of more is skipped (each cell copies the plan)
constexpr uint32_t kPacketsPerStream = 8;  // enough to reach a message's middle and last packets

bool NamesTheFile(const absl::Status& s) { return std::string(s.message()).rfind("fuzz.yaml", 0) == 0; }

// Compiles `plan` and emits its streams' first packets, flows taking turns.
void CompileAndEmit(const fg::config::Plan& plan) {
  auto streams = fg::stream::Compile(plan, std::vector<double>(plan.ports.size(), kNominalLineBps));
  if (!streams.ok()) {
    if (!NamesTheFile(streams.status())) __builtin_trap();
    return;
  }
  for (const fg::stream::CompiledStream& s : *streams) {
    std::vector<uint8_t> buf(s.program.buffer_len());
    const uint32_t flows = std::min<uint32_t>(s.flows, 4);
    std::vector<fg::stream::Cursor> cursors(flows, s.program.Start());
    for (uint32_t k = 0; k < kPacketsPerStream; ++k) {
      const uint32_t f = k % flows;
      const uint32_t len = s.program.Emit(buf.data(), cursors[f], k * 1000, s.program.Flow(s.flow_id, f));
      if (len > s.program.max_frame_len()) __builtin_trap();
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 16384) return 0;
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto plan = fg::methods::ParsePlan("fuzz.yaml", text);
  if (!plan.ok()) {
    if (!NamesTheFile(plan.status())) __builtin_trap();
    return 0;
  }
  if (auto s = fg::methods::PrecheckPlan(*plan); !s.ok()) {
    if (!NamesTheFile(s)) __builtin_trap();
    return 0;
  }
  CompileAndEmit(*plan);
  for (const fg::config::TestSpec& t : plan->tests) {
    if (t.kind != fg::methods::ThroughputKind().key()) continue;
    const auto& m = t.As<fg::methods::ThroughputParams>();
    const size_t cells = std::max<size_t>(1, m.message_sizes.size()) * std::max<size_t>(1, m.qps.size()) *
                         std::max<size_t>(1, m.bidirectional.size());
    if (cells > kMaxCells) continue;
    for (const fg::methods::MatrixCell& c : fg::methods::ExpandMatrix(*plan, t)) CompileAndEmit(c.plan);
  }
  return 0;
}
