// report/atomic_file.h: write a file so that readers see all of it or none.
//
// The bytes go to a temporary file beside the target, are flushed to disk,
// and the temporary file is renamed over the target: a crash or an error
// mid-write leaves no half-written file, and a failure (or a writer dropped
// before Commit) removes the temporary file. Every file fabricgen writes
// (report.json, craft's and the CLI's captures, the CLI's `save`) goes
// through here.
//
// Only a regular file is ever replaced. A target that exists and is anything
// else (a directory, a device such as /dev/full, a FIFO, a socket) is refused
// before anything is created; a symbolic link is followed, and the regular
// file it names is the one replaced (the link stays).
//
//   absl::Status s = fg::report::WriteFileAtomically("out/report.json", text);
//
//   auto f = fg::report::AtomicFile::Create("out/capture.pcap");
//   if (!f.ok()) return f.status();
//   FG_RETURN_IF_ERROR(f->Write(header));
//   FG_RETURN_IF_ERROR(f->Commit());  // without it, ~AtomicFile removes the temporary file
#pragma once

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace fg::report {

class AtomicFile {
 public:
  // Checks the target (see above; InvalidArgument when it may not be
  // replaced), creates its parent directory if needed and opens the
  // temporary file "<target>.tmp-<pid>".
  static absl::StatusOr<AtomicFile> Create(const std::string& path);
  AtomicFile(AtomicFile&& o) noexcept;
  AtomicFile& operator=(AtomicFile&& o) noexcept;
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  ~AtomicFile();  // not committed: the temporary file is removed

  absl::Status Write(std::string_view bytes);
  // Flushes, closes and renames the temporary file over the target. On any
  // error the temporary file is removed and the target is left as it was.
  absl::Status Commit();
  // The file that Commit replaces (a symbolic link resolved).
  const std::string& target() const { return target_; }

 private:
  AtomicFile() = default;
  void Abandon();

  int fd_ = -1;
  std::string target_, tmp_;
};

// Creates the parent directory if needed.
absl::Status WriteFileAtomically(const std::string& path, std::string_view contents);

// For an output directory given before a run: creates it (and its parents)
// and checks a file can be created in it, so a run never ends with nowhere to
// write its results. InvalidArgument when it cannot be used, the message
// beginning with `dir`: an empty name, a dangling symbolic link on its way
// (named as such), a file, a place that cannot be written.
absl::Status PrepareOutputDirectory(const std::string& dir);

}  // namespace fg::report
