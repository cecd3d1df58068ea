// Launches the ranks of one `lmzoo train` run as torchrun does: one process per rank with RANK, WORLD_SIZE,
// LOCAL_RANK, MASTER_ADDR and MASTER_PORT set, on a free local port; waits for all and collects their output.
#pragma once
#include <netinet/in.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "tests/cli_helpers.h"

extern char** environ;

namespace lmzoo::test {

// A TCP port nothing listens on now (the kernel's pick for port 0).
inline int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

// Starts `/bin/sh -c "exec COMMAND"` with stdout/stderr into files; returns its pid (0 on failure).
inline pid_t spawn_shell(const std::string& command, const std::string& out_file, const std::string& err_file) {
  const std::string line = "exec " + command + " >" + out_file + " 2>" + err_file + " </dev/null";
  const char* argv[] = {"/bin/sh", "-c", line.c_str(), nullptr};
  pid_t pid = 0;
  return posix_spawn(&pid, "/bin/sh", nullptr, nullptr, const_cast<char**>(argv), environ) == 0 ? pid : 0;
}

// Waits for pid; its exit code, or -signal when a signal ended it.
inline int wait_exit_code(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
}

struct Ranks {
  std::vector<pid_t> pids;
  std::vector<std::string> out_files, err_files;
  std::chrono::steady_clock::time_point started;
};

struct RanksResult {
  std::vector<int> exit_codes;
  std::vector<std::string> out, err;
  double seconds = 0;
};

// Starts ranks 0 .. world-1 (or only those in `which`, when given) of `lmzoo ARGS_OF(rank)`; each rank's
// environment also gets ENV_OF(rank) ("NAME=value ..."), and OMP_NUM_THREADS=1.
inline Ranks start_ranks(int world, const std::function<std::string(int)>& args_of, const TempDir& dir,
                         const std::function<std::string(int)>& env_of = {}, std::vector<int> which = {},
                         const std::string& binary = LMZOO_BINARY) {
  if (which.empty()) {
    for (int r = 0; r < world; ++r) which.push_back(r);
  }
  const int port = free_port();
  Ranks ranks;
  ranks.started = std::chrono::steady_clock::now();
  for (int r : which) {
    const std::string env = "env RANK=" + std::to_string(r) + " WORLD_SIZE=" + std::to_string(world) +
                            " LOCAL_RANK=" + std::to_string(r) + " MASTER_ADDR=127.0.0.1 MASTER_PORT=" +
                            std::to_string(port) + " OMP_NUM_THREADS=1 " + (env_of ? env_of(r) : "") + " ";
    ranks.out_files.push_back(dir / ("rank" + std::to_string(r) + ".out"));
    ranks.err_files.push_back(dir / ("rank" + std::to_string(r) + ".err"));
    ranks.pids.push_back(spawn_shell(env + binary + " " + args_of(r), ranks.out_files.back(), ranks.err_files.back()));
  }
  return ranks;
}

inline RanksResult wait_ranks(const Ranks& ranks) {
  RanksResult result;
  for (size_t i = 0; i < ranks.pids.size(); ++i) {
    result.exit_codes.push_back(ranks.pids[i] ? wait_exit_code(ranks.pids[i]) : -1);
    result.out.push_back(read_text(ranks.out_files[i]));
    result.err.push_back(read_text(ranks.err_files[i]));
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - ranks.started).count();
  return result;
}

// Runs `lmzoo ARGS` with ENV ("NAME=value ...") added to its environment.
inline CliResult run_cli_env(const std::string& env, const std::string& args) {
  TempDir tmp;
  const pid_t pid = spawn_shell("env " + env + " " + LMZOO_BINARY + " " + args, tmp / "out", tmp / "err");
  CliResult r;
  r.exit_code = pid ? wait_exit_code(pid) : -1;
  r.out = read_text(tmp.path / "out");
  r.err = read_text(tmp.path / "err");
  return r;
}

inline RanksResult run_ranks(int world, const std::function<std::string(int)>& args_of, const TempDir& dir,
                             const std::function<std::string(int)>& env_of = {}, std::vector<int> which = {},
                             const std::string& binary = LMZOO_BINARY) {
  return wait_ranks(start_ranks(world, args_of, dir, env_of, std::move(which), binary));
}

}  // namespace lmzoo::test
