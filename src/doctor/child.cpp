#include "doctor/child.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>

extern char** environ;

namespace steadyocr::doctor {

namespace {
constexpr size_t kMaxCapture = size_t{1} << 20;

void drain(int fd, std::string* into, bool* open) {
  char buf[65536];
  ssize_t n = ::read(fd, buf, sizeof(buf));
  if (n > 0) {
    if (into->size() < kMaxCapture) into->append(buf, static_cast<size_t>(std::min<ssize_t>(n, kMaxCapture)));
  } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
    *open = false;
  }
}
}  // namespace

std::string self_executable() {
  char buf[4096];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return "";
  buf[n] = 0;
  return buf;
}

std::string last_output_line(const std::string& out) {
  size_t end = out.find_last_not_of("\n ");
  if (end == std::string::npos) return "";
  size_t start = out.rfind('\n', end);
  start = start == std::string::npos ? 0 : start + 1;
  return out.substr(start, end + 1 - start);
}

ChildResult run_child(const std::vector<std::string>& argv, int timeout_ms,
                      const std::vector<std::pair<std::string, std::string>>& extra_env) {
  ChildResult r;
  auto t0 = std::chrono::steady_clock::now();
  if (argv.empty()) {
    r.start_error = "empty command";
    return r;
  }
  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string kv = *e;
    size_t eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (const auto& [k, v] : extra_env) env[k] = v;
  std::vector<std::string> env_strings;
  for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp, args;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (auto& s : argv_copy) args.push_back(s.data());
  args.push_back(nullptr);

  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) {
    r.start_error = std::string("pipe: ") + std::strerror(errno);
    return r;
  }
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    r.start_error = std::string("pipe: ") + std::strerror(errno);
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    return r;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], STDERR_FILENO);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, argv[0].c_str(), &actions, &attr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (rc != 0) {
    r.start_error = "cannot start " + argv[0] + ": " + std::strerror(rc);
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    return r;
  }
  r.started = true;
  auto deadline = t0 + std::chrono::milliseconds(timeout_ms);
  bool out_open = true, err_open = true;
  while (out_open || err_open) {
    auto now = std::chrono::steady_clock::now();
    if (now >= deadline) {
      r.timed_out = true;
      break;
    }
    int wait_ms = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count());
    struct pollfd fds[2];
    int nfds = 0;
    if (out_open) fds[nfds++] = {out_pipe[0], POLLIN, 0};
    if (err_open) fds[nfds++] = {err_pipe[0], POLLIN, 0};
    int p = ::poll(fds, nfds, std::min(wait_ms, 1000));
    if (p < 0 && errno != EINTR) break;
    for (int i = 0; i < nfds; ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      if (fds[i].fd == out_pipe[0]) drain(out_pipe[0], &r.out, &out_open);
      if (fds[i].fd == err_pipe[0]) drain(err_pipe[0], &r.err, &err_open);
    }
  }
  // Pipes closed: the child is exiting, but a process stuck in driver teardown must not hang us either.
  int status = 0;
  bool reaped = false;
  while (!r.timed_out) {
    pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid || (w < 0 && errno != EINTR)) {
      reaped = w == pid;
      break;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      r.timed_out = true;
      break;
    }
    ::usleep(10000);
  }
  if (!reaped) {
    ::kill(-pid, SIGKILL);  // the child's own process group: it and anything it started
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  ::close(out_pipe[0]);
  ::close(err_pipe[0]);
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  r.elapsed_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace steadyocr::doctor
