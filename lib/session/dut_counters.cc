#include "session/dut_counters.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <array>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

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

absl::StatusOr<std::map<std::string, methods::LinkCounters>> ReadDutCounters(const std::vector<std::string>& argv) {
  const std::string what = "dut_counters (" + absl::StrJoin(argv, " ") + ")";
  std::array<int, 2> pipe_fds;
  if (pipe(pipe_fds.data()) != 0) return absl::InternalError(what + ": pipe: " + std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, pipe_fds[0]);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(pipe_fds[1]);
  if (rc != 0) {
    close(pipe_fds[0]);
    return absl::FailedPreconditionError(absl::StrFormat("%s: cannot run: %s", what, std::strerror(rc)));
  }
  std::string text;
  char buf[4096];
  for (;;) {
    const ssize_t n = read(pipe_fds[0], buf, sizeof(buf));
    if (n > 0) {
      text.append(buf, static_cast<size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  close(pipe_fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
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
