// A `steadyocr serve` child process for the server tests: started on a loopback port it picks (--port 0, read back
// from the line it prints), waited for until ready, stopped with SIGTERM (SIGKILL when it does not exit).
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/proc_children.h"
#include "server/request_parse.h"
#include "test_util.h"

namespace steadyocr::testing {

inline std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

class ServerProcess {
 public:
  // Starts `steadyocr serve --port 0 --models M ARGS` (ENV: extra environment "K=V" entries).
  explicit ServerProcess(const std::vector<std::string>& args, const std::vector<std::string>& env = {}) {
    log_ = ::testing::TempDir() + "/serve_" + std::to_string(::getpid()) + "_" + std::to_string(counter()++) + ".log";
    int out[2];
    if (::pipe(out) != 0) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(out[1], STDOUT_FILENO);
      FILE* err = std::fopen(log_.c_str(), "w");
      if (err) ::dup2(fileno(err), STDERR_FILENO);
      ::close(out[0]);
      for (const auto& e : env) ::putenv(const_cast<char*>(e.c_str()));
      std::vector<std::string> argv = {
          std::string(STEADYOCR_BINARY_DIR) + "/steadyocr", "serve", "--port", "0", "--models", models_dir()};
      argv.insert(argv.end(), args.begin(), args.end());
      std::vector<char*> c;
      for (auto& a : argv) c.push_back(a.data());
      c.push_back(nullptr);
      ::execv(c[0], c.data());
      ::_exit(127);
    }
    ::close(out[1]);
    stdout_ = ::fdopen(out[0], "r");
    // The first line names the address.
    char line[512];
    while (stdout_ && std::fgets(line, sizeof(line), stdout_)) {
      std::string l = line;
      output_ += l;
      auto at = l.find("listening on http://");
      if (at != std::string::npos) {
        std::string addr = l.substr(at + 20);
        port_ = std::stoi(addr.substr(addr.rfind(':') + 1));
        break;
      }
    }
  }
  ~ServerProcess() { stop(); }

  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  bool started() const { return port_ > 0; }
  // What it wrote to stderr (the JSON log).
  std::string log() const { return read_file(log_); }
  // Its stdout so far (reads what is available up to the serving line).
  const std::string& output() const { return output_; }

  httplib::Client client(int timeout_s = 60) const {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(timeout_s, 0);
    c.set_write_timeout(timeout_s, 0);
    c.set_connection_timeout(5, 0);
    return c;
  }

  // Waits until /readyz answers 200 (false after timeout_s).
  bool wait_ready(int timeout_s = 180) {
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
    while (std::chrono::steady_clock::now() < until) {
      auto c = client(5);
      if (auto r = c.Get("/readyz"); r && r->status == 200) return true;
      if (exited()) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }

  // Sends `sig`; waits up to timeout_s for the exit; the exit status (-1: still running, -2: killed by a signal).
  int signal_and_wait(int sig, double timeout_s) {
    if (pid_ <= 0) return exit_code_;
    ::kill(pid_, sig);
    return wait_exit(timeout_s);
  }
  int wait_exit(double timeout_s) {
    auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    while (pid_ > 0 && std::chrono::steady_clock::now() < until) {
      if (exited()) return exit_code_;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return pid_ > 0 ? -1 : exit_code_;
  }
  bool exited() {
    if (pid_ <= 0) return true;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : -2;
      pid_ = -1;
      return true;
    }
    return false;
  }
  void stop() {
    if (pid_ > 0 && signal_and_wait(SIGTERM, 30) == -1) signal_and_wait(SIGKILL, 10);
    if (stdout_) std::fclose(stdout_);
    stdout_ = nullptr;
  }

  // Process ids of the worker processes this server started (children running `steadyocr __worker`).
  std::vector<pid_t> workers() const {
    std::vector<pid_t> out;
    for (const ChildProcess& c : child_processes(pid_)) {
      if (read_file("/proc/" + std::to_string(c.pid) + "/cmdline").find("__worker") != std::string::npos) {
        out.push_back(c.pid);
      }
    }
    return out;
  }

 private:
  static int& counter() {
    static int c = 0;
    return c;
  }
  pid_t pid_ = -1;
  int port_ = -1;
  int exit_code_ = -1;
  FILE* stdout_ = nullptr;
  std::string log_;
  std::string output_;
};

// Sends `bytes` on a fresh connection and reads one response (headers and Content-Length body) for up to timeout_s.
// "" when nothing came back. `closed`, when given, tells whether the server closed the connection after the response
// (waiting up to a second more for it).
inline std::string raw_exchange(int port, const std::string& bytes, double timeout_s, bool* closed = nullptr) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    ::close(fd);
    return "";
  }
  ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  std::string got;
  auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (std::chrono::steady_clock::now() < until) {
    timeval tv{0, 100000};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    char buf[4096];
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n == 0) break;
    if (n > 0) got.append(buf, static_cast<size_t>(n));
    auto end = got.find("\r\n\r\n");
    if (end == std::string::npos) continue;
    auto cl = got.find("Content-Length: ");
    size_t length = cl == std::string::npos ? 0 : std::stoul(got.substr(cl + 16));
    if (got.size() >= end + 4 + length) break;
  }
  if (closed) {
    *closed = false;
    until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    while (!*closed && std::chrono::steady_clock::now() < until) {
      char buf[256];
      ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
      *closed = n == 0 || (n < 0 && errno == ECONNRESET);
    }
  }
  ::close(fd);
  return got;
}

// A file under tests/data/, whole.
inline std::string test_data(const std::string& rel) {
  return read_file(source_dir() + "/tests/data/" + rel);
}
// `bytes` in base64 (the JSON and OIP bodies).
inline std::string base64_of(const std::string& bytes) {
  return server::encode_base64(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}

inline nlohmann::json body_json(const httplib::Result& r) {
  if (!r) return nullptr;
  return nlohmann::json::parse(r->body, nullptr, false);
}

}  // namespace steadyocr::testing
