// Fuzz target: plan parsing (YAML through validation) never crashes, never
// throws, and every error names the file.
#include <cstddef>
#include <cstdint>
#include <string>

#include "config/plan.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 16384) return 0;
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto plan = fg::config::ParsePlan("fuzz.yaml", text);
  if (!plan.ok() && std::string(plan.status().message()).rfind("fuzz.yaml", 0) != 0) __builtin_trap();
  return 0;
}
