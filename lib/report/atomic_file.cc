#include "report/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_format.h"

namespace fg::report {

absl::Status WriteFileAtomically(const std::string& path, std::string_view contents) {
  std::filesystem::path target(path);
  std::error_code ec;
  if (target.has_parent_path()) {
    std::filesystem::create_directories(target.parent_path(), ec);
    if (ec) return absl::InternalError(absl::StrFormat("%s: cannot create directory: %s", path, ec.message()));
  }
  const std::string tmp = absl::StrFormat("%s.tmp-%d", path, getpid());
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return absl::InternalError(absl::StrFormat("%s: cannot create: %s", tmp, std::strerror(errno)));
  size_t done = 0;
  while (done < contents.size()) {
    ssize_t n = write(fd, contents.data() + done, contents.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int err = errno;
      close(fd);
      unlink(tmp.c_str());
      return absl::InternalError(absl::StrFormat("%s: write failed: %s", tmp, std::strerror(err)));
    }
    done += static_cast<size_t>(n);
  }
  const int synced = fsync(fd);
  const int sync_err = errno;
  const int closed = close(fd);
  if (synced != 0 || closed != 0) {
    int err = synced != 0 ? sync_err : errno;
    unlink(tmp.c_str());
    return absl::InternalError(absl::StrFormat("%s: flush failed: %s", tmp, std::strerror(err)));
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    unlink(tmp.c_str());
    return absl::InternalError(absl::StrFormat("%s: rename failed: %s", path, std::strerror(err)));
  }
  return absl::OkStatus();
}

}  // namespace fg::report
