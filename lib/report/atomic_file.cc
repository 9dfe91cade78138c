#include "report/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <utility>

#include "absl/strings/str_format.h"

namespace fg::report {
namespace {

const char* KindOf(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

absl::Status Errno(const std::string& what, int err) {
  return absl::InternalError(absl::StrFormat("%s: %s", what, std::strerror(err)));
}

// The file a write to `path` replaces: `path` itself when it is absent or a
// regular file, the regular file a symbolic link leads to; anything else is
// refused, so a rename never replaces a device, a FIFO or a directory.
absl::StatusOr<std::string> ReplaceableTarget(const std::string& path) {
  if (path.empty()) return absl::InvalidArgumentError("no file name given");
  if (path.back() == '/') {
    return absl::InvalidArgumentError(absl::StrFormat("%s: names a directory; give a file name", path));
  }
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return path;  // a new file
    return Errno(path, errno);
  }
  std::string target = path;
  if (S_ISLNK(st.st_mode)) {
    char* real = realpath(path.c_str(), nullptr);
    if (real == nullptr) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: a symbolic link that leads nowhere (%s); only a regular file is replaced: give a file name", path,
          std::strerror(errno)));
    }
    target = real;
    std::free(real);
    if (stat(target.c_str(), &st) != 0) return Errno(target, errno);
    if (!S_ISREG(st.st_mode)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: a symbolic link to %s (%s), not a regular file; only a regular file is replaced: give a file name", path,
          KindOf(st.st_mode), target));
    }
    return target;
  }
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: is %s, not a regular file; only a regular file is replaced: give a file name", path, KindOf(st.st_mode)));
  }
  return target;
}

}  // namespace

absl::StatusOr<AtomicFile> AtomicFile::Create(const std::string& path) {
  auto target = ReplaceableTarget(path);
  if (!target.ok()) return target.status();
  const std::filesystem::path t(*target);
  if (t.has_parent_path()) {
    std::error_code ec;
    std::filesystem::create_directories(t.parent_path(), ec);
    if (ec) return absl::InternalError(absl::StrFormat("%s: cannot create directory: %s", path, ec.message()));
  }
  AtomicFile f;
  f.target_ = *target;
  f.tmp_ = absl::StrFormat("%s.tmp-%d", *target, getpid());
  f.fd_ = open(f.tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (f.fd_ < 0) return Errno(absl::StrFormat("%s: cannot create", f.tmp_), errno);
  return f;
}

AtomicFile::AtomicFile(AtomicFile&& o) noexcept { *this = std::move(o); }

AtomicFile& AtomicFile::operator=(AtomicFile&& o) noexcept {
  std::swap(fd_, o.fd_);
  std::swap(target_, o.target_);
  std::swap(tmp_, o.tmp_);
  return *this;
}

AtomicFile::~AtomicFile() { Abandon(); }

void AtomicFile::Abandon() {
  if (fd_ < 0) return;
  close(fd_);
  fd_ = -1;
  unlink(tmp_.c_str());
}

absl::Status AtomicFile::Write(std::string_view bytes) {
  if (fd_ < 0) return absl::FailedPreconditionError(absl::StrFormat("%s: already closed", tmp_));
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = write(fd_, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : EIO;
      Abandon();
      return Errno(absl::StrFormat("%s: write failed", tmp_), err);
    }
    done += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

absl::Status AtomicFile::Commit() {
  if (fd_ < 0) return absl::FailedPreconditionError(absl::StrFormat("%s: already closed", tmp_));
  const int synced = fsync(fd_);
  const int sync_err = errno;
  const int closed = close(fd_);
  const int close_err = errno;
  fd_ = -1;
  if (synced != 0 || closed != 0) {
    unlink(tmp_.c_str());
    return Errno(absl::StrFormat("%s: flush failed", tmp_), synced != 0 ? sync_err : close_err);
  }
  if (rename(tmp_.c_str(), target_.c_str()) != 0) {
    const int err = errno;
    unlink(tmp_.c_str());
    return Errno(absl::StrFormat("%s: rename failed", target_), err);
  }
  return absl::OkStatus();
}

absl::Status WriteFileAtomically(const std::string& path, std::string_view contents) {
  auto f = AtomicFile::Create(path);
  if (!f.ok()) return f.status();
  if (auto s = f->Write(contents); !s.ok()) return s;
  return f->Commit();
}

absl::Status PrepareOutputDirectory(const std::string& dir) {
  namespace fs = std::filesystem;
  if (dir.empty()) {
    return absl::InvalidArgumentError("'': an empty name names no directory; give the directory to write in");
  }
  // A symbolic link on the way that leads nowhere: creating the directory
  // would fail with only "File exists" (mkdir does not follow it).
  const fs::path whole = fs::path(dir).has_filename() ? fs::path(dir) : fs::path(dir).parent_path();
  fs::path so_far;
  for (const fs::path& part : fs::path(dir)) {
    if (part.empty()) continue;  // the end of a trailing '/'
    so_far /= part;
    std::error_code lec, sec, rec;
    if (!fs::is_symlink(fs::symlink_status(so_far, lec))) continue;
    const fs::file_status target = fs::status(so_far, sec);
    if (fs::exists(target)) continue;
    const fs::path to = fs::read_symlink(so_far, rec);
    const std::string where =
        so_far == whole ? std::string("it") : absl::StrFormat("%s, on its way,", so_far.string());
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: %s is a dangling symbolic link (to %s, which %s); give a directory, or create the one it leads to", dir,
        where, rec ? std::string("?") : to.string(),
        target.type() == fs::file_type::not_found ? std::string("does not exist")
                                                  : absl::StrFormat("cannot be reached: %s", sec.message())));
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: cannot create the output directory: %s", dir, ec.message()));
  }
  if (!std::filesystem::is_directory(dir, ec)) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: exists and is not a directory", dir));
  }
  std::string probe = (std::filesystem::path(dir) / ".fabricgen-probe-XXXXXX").string();
  const int fd = mkstemp(probe.data());
  if (fd < 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: cannot write in the output directory: %s", dir, std::strerror(errno)));
  }
  close(fd);
  unlink(probe.c_str());
  return absl::OkStatus();
}

}  // namespace fg::report
