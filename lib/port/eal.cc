#include "port/eal.h"

#include <fcntl.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace fg::port {
namespace {

// `fd` moved above 0..2 (where a closed stdout or stderr would put it).
int AboveStdio(int fd) {
  if (fd < 0 || fd > 2) return fd;
  const int moved = fcntl(fd, F_DUPFD_CLOEXEC, 3);
  close(fd);
  return moved;
}

// What rte_eal_init writes to stdout and stderr, held back while it runs: on
// an argument error DPDK prints its whole usage text, of which the caller
// wants one line. Otherwise the text is passed on as it came.
class HeldOutput {
 public:
  HeldOutput() {
    std::fflush(stdout);
    std::fflush(stderr);
    // A stream that cannot be both saved and held (closed, no memfd) is left
    // as it is: its text then simply goes out unfiltered.
    for (int i = 0; i < 2; ++i) {
      saved_[i] = AboveStdio(dup(i + 1));
      held_[i] = saved_[i] < 0 ? -1 : AboveStdio(memfd_create("fabricgen-eal-output", MFD_CLOEXEC));
      if (held_[i] < 0 || dup2(held_[i], i + 1) < 0) Close(i);
    }
  }
  // Restores stdout and stderr; returns what each got.
  std::pair<std::string, std::string> Release() {
    std::fflush(stdout);
    std::fflush(stderr);
    std::string text[2];
    for (int i = 0; i < 2; ++i) {
      if (saved_[i] >= 0) dup2(saved_[i], i + 1);
      if (held_[i] >= 0) {
        lseek(held_[i], 0, SEEK_SET);
        char buf[4096];
        ssize_t n;
        while ((n = read(held_[i], buf, sizeof buf)) > 0) text[i].append(buf, static_cast<size_t>(n));
      }
    }
    for (int i = 0; i < 2; ++i) Close(i);
    return {text[0], text[1]};
  }
  ~HeldOutput() {
    for (int i = 0; i < 2; ++i) {
      if (saved_[i] >= 0) dup2(saved_[i], i + 1);
      Close(i);
    }
  }

 private:
  void Close(int i) {
    if (saved_[i] >= 0) close(saved_[i]);
    if (held_[i] >= 0) close(held_[i]);
    saved_[i] = held_[i] = -1;
  }
  int saved_[2] = {-1, -1};
  int held_[2] = {-1, -1};
};

void PassOn(const std::string& text, std::FILE* f) {
  std::fwrite(text.data(), 1, text.size(), f);
  std::fflush(f);
}

// DPDK's reasons for refusing its arguments: the lines before its usage text
// ("fabricgen: unrecognized option '--bogus'", "EAL: invalid core list
// syntax"), without prefixes, repeats and the generic closing alert.
std::string ArgumentReason(const std::string& out, const std::string& err) {
  std::vector<std::string> reasons;
  for (const std::string* text : {&err, &out}) {
    for (absl::string_view line : absl::StrSplit(*text, '\n')) {
      line = absl::StripAsciiWhitespace(line);
      if (absl::StartsWith(line, "Usage:")) break;
      if (line.empty() || absl::StrContains(line, "Invalid 'command line' arguments")) continue;
      absl::ConsumePrefix(&line, "fabricgen: ");
      absl::ConsumePrefix(&line, "EAL: ");
      if (std::find(reasons.begin(), reasons.end(), line) == reasons.end()) reasons.emplace_back(line);
    }
  }
  return reasons.empty() ? "invalid arguments" : absl::StrJoin(reasons, "; ");
}

// The devices the arguments name (--vdev, -a / --allow), by name (what
// comes before the first comma).
std::vector<std::string> NamedDevices(const std::vector<std::string>& argv) {
  std::vector<std::string> names;
  for (size_t i = 1; i < argv.size(); ++i) {
    absl::string_view a = argv[i];
    std::string device;
    if (absl::ConsumePrefix(&a, "--vdev=") || absl::ConsumePrefix(&a, "--allow=")) {
      device = std::string(a);
    } else if ((a == "--vdev" || a == "-a" || a == "--allow") && i + 1 < argv.size()) {
      device = argv[++i];
    } else {
      continue;
    }
    device = device.substr(0, device.find(','));
    if (!device.empty()) names.push_back(device);
  }
  return names;
}

// A device no driver claims: EAL cannot parse its name ("EAL: failed to
// parse device \"net_bogus0\"", "EAL: Unable to parse device
// 'net_bogus0,x=1'") and its start fails. The first such device, or "".
std::string UnknownDevice(const std::vector<std::string>& argv, const std::string& out, const std::string& err) {
  for (const std::string& name : NamedDevices(argv)) {
    for (const std::string* text : {&err, &out}) {
      for (absl::string_view line : absl::StrSplit(*text, '\n')) {
        if (!absl::StrContains(line, "parse device")) continue;
        if (absl::StrContains(line, "\"" + name + "\"") || absl::StrContains(line, "'" + name + "'") ||
            absl::StrContains(line, "'" + name + ",")) {
          return name;
        }
      }
    }
  }
  return "";
}

// EAL makes its runtime directory (/var/run/dpdk/<file-prefix>, or under
// $XDG_RUNTIME_DIR or /tmp) as it parses its arguments, before most of what
// can fail: a start that fails leaves it for nobody to remove. Only called
// for a prefix private to this process.
void RemoveRuntimeDirOfFailedStart() {
  const char* dir = rte_eal_get_runtime_dir();
  if (dir == nullptr || dir[0] == '\0') return;  // not made yet
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);  // best effort
}

}  // namespace

absl::StatusOr<std::unique_ptr<Eal>> Eal::Start(const std::vector<std::string>& argv, bool own_runtime_dir) {
  // rte_eal_init may permute argv: give it copies it can keep.
  std::vector<std::string> storage = argv;
  std::vector<char*> cargv;
  for (std::string& s : storage) cargv.push_back(s.data());
  cargv.push_back(nullptr);
  HeldOutput held;
  const int ret = rte_eal_init(static_cast<int>(storage.size()), cargv.data());
  const int err = rte_errno;
  auto [out, errs] = held.Release();
  if (ret < 0 && own_runtime_dir) RemoveRuntimeDirOfFailedStart();
  // DPDK's sign of an argument error: its usage text, or the alert after it.
  const bool arguments = absl::StrContains(out, "Usage:") || absl::StrContains(errs, "Usage:") ||
                         absl::StrContains(errs, "Invalid 'command line' arguments");
  if (ret < 0 && arguments) {
    return absl::InvalidArgumentError(
        absl::StrFormat("EAL arguments refused: %s (EAL arguments: %s)", ArgumentReason(out, errs),
                        absl::StrJoin(argv.begin() + (argv.empty() ? 0 : 1), argv.end(), " ")));
  }
  if (ret < 0) {
    // One line instead of EAL's (Session names the port).
    if (const std::string device = UnknownDevice(argv, out, errs); !device.empty()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "device '%s': no DPDK driver knows it (a virtual device's name begins with its driver's: net_af_packet0, "
          "net_pcap0, net_null0; a PCI device is its address: 0000:03:00.0)",
          device));
    }
  }
  PassOn(out, stdout);
  PassOn(errs, stderr);
  if (ret < 0) {
    return absl::InternalError(absl::StrFormat("DPDK EAL initialisation failed (%s) with arguments: %s",
                                               rte_strerror(err), absl::StrJoin(argv, " ")));
  }
  std::unique_ptr<Eal> eal(new Eal());
  eal->argv_ = argv;
  eal->tsc_hz_ = rte_get_tsc_hz();
  eal->main_lcore_ = rte_get_main_lcore();
  unsigned lcore;
  RTE_LCORE_FOREACH_WORKER(lcore) { eal->workers_.push_back(lcore); }
  for (const std::string& a : argv) {
    if (a == "--no-huge") eal->no_huge_ = true;
  }
  if (own_runtime_dir) eal->runtime_dir_ = rte_eal_get_runtime_dir();
  return eal;
}

Eal::~Eal() {
  rte_eal_cleanup();
  if (!runtime_dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(runtime_dir_, ec);  // best effort: only our private prefix
  }
}

}  // namespace fg::port
