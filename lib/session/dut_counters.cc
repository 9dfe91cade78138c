#include "session/dut_counters.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <thread>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/units.h"

extern char** environ;

namespace fg::session {

absl::StatusOr<std::map<std::string, methods::LinkCounters>> ParseDutCounters(const std::string& json) {
  YAML::Node root;
  try {
    root = YAML::Load(json);  // JSON is YAML
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrFormat("not JSON: %s", e.what()));
  }
  if (!root.IsMap()) return absl::InvalidArgumentError("expected a JSON object of links");
  std::map<std::string, methods::LinkCounters> out;
  for (const auto& link : root) {
    const std::string name = link.first.as<std::string>();
    methods::LinkCounters c;
    for (auto [key, field] : {std::pair{"tx_packets", &c.tx_packets}, std::pair{"tx_bytes", &c.tx_bytes}}) {
      const YAML::Node v = link.second[key];
      try {
        if (!v) throw YAML::Exception(YAML::Mark::null_mark(), "missing");
        *field = v.as<uint64_t>();
      } catch (const YAML::Exception&) {
        return absl::InvalidArgumentError(absl::StrFormat("link '%s': %s is missing or not a count", name, key));
      }
    }
    out[name] = c;
  }
  return out;
}

absl::StatusOr<std::map<std::string, methods::LinkCounters>> ReadDutCounters(const std::vector<std::string>& argv,
                                                                             int64_t timeout_ns) {
  const std::string what = "dut_counters (" + absl::StrJoin(argv, " ") + ")";
  if (argv.empty()) return absl::InvalidArgumentError("dut_counters: no command given");
  std::array<int, 2> pipe_fds;
  if (pipe2(pipe_fds.data(), O_CLOEXEC) != 0) return absl::InternalError(what + ": pipe: " + std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  // stdin: nothing (it may be the CLI's script); stdout: the pipe.
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
  // Its own process group (killed whole on a timeout), no signal blocked, and
  // SIGPIPE back to its default (fabricgen ignores it; an ignored signal
  // would stay so across exec).
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, args[0], &actions, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  close(pipe_fds[1]);
  if (rc != 0) {
    close(pipe_fds[0]);
    return absl::FailedPreconditionError(absl::StrFormat("%s: cannot run: %s", what, std::strerror(rc)));
  }
  // Its output up to the end of the pipe, then its exit, within the timeout
  // (a command may close its stdout and go on, or leave something running
  // with the pipe open).
  using Clock = std::chrono::steady_clock;
  const Clock::time_point deadline = Clock::now() + std::chrono::nanoseconds(timeout_ns);
  std::string text;
  char buf[4096];
  bool eof = false;
  int read_error = 0;
  while (!eof && read_error == 0) {
    const int64_t left_ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left_ms <= 0) break;
    pollfd p{.fd = pipe_fds[0], .events = POLLIN, .revents = 0};
    const int ready = poll(&p, 1, static_cast<int>(std::min<int64_t>(left_ms, 100)));
    if (ready < 0 && errno != EINTR) read_error = errno;
    if (ready <= 0) continue;
    const ssize_t n = read(pipe_fds[0], buf, sizeof(buf));
    if (n > 0) {
      text.append(buf, static_cast<size_t>(n));
    } else if (n == 0) {
      eof = true;
    } else if (errno != EINTR) {
      read_error = errno;
    }
  }
  close(pipe_fds[0]);
  int status = 0;
  bool exited = false;
  while (eof && !exited && Clock::now() < deadline) {
    const pid_t w = waitpid(pid, &status, WNOHANG);
    if (w < 0 && errno != EINTR) break;
    exited = w == pid;
    if (!exited) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (!exited) {
    kill(-pid, SIGKILL);  // the command and whatever it started (its process group)
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  if (read_error != 0) {
    return absl::InternalError(absl::StrFormat("%s: cannot read its output: %s", what, std::strerror(read_error)));
  }
  if (!exited) {
    return absl::DeadlineExceededError(absl::StrFormat(
        "%s: no answer within %s (the dut_counters timeout); its process group was killed: the DUT's counters are "
        "missing",
        what, FormatDuration(timeout_ns)));
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return absl::FailedPreconditionError(absl::StrFormat("%s: exited with status %d (its stderr is above)", what,
                                                         WIFEXITED(status) ? WEXITSTATUS(status) : -1));
  }
  auto parsed = ParseDutCounters(text);
  if (!parsed.ok()) return absl::InvalidArgumentError(what + ": " + std::string(parsed.status().message()));
  return parsed;
}

}  // namespace fg::session
