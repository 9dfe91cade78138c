// report/atomic_file.h: write a file so that readers see all of it or none.
//
// The text goes to a temporary file in the same directory, is flushed to
// disk, and is renamed over the target: a crash or an error mid-write leaves
// no half-written report behind.
//
//   absl::Status s = fg::report::WriteFileAtomically("out/report.json", text);
#pragma once

#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace fg::report {

// Creates the parent directory if needed.
absl::Status WriteFileAtomically(const std::string& path, std::string_view contents);

}  // namespace fg::report
