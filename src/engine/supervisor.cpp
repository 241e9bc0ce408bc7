#include "engine/supervisor.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <deque>
#include <nlohmann/json.hpp>

#include "core/log.h"
#include "core/metrics.h"
#include "core/thread_name.h"
#include "engine/wire.h"

extern char** environ;

namespace steadyocr::engine {

using json = nlohmann::json;

struct Supervisor::Worker {
  pid_t pid = -1;
  int to_fd = -1;    // we write requests here (worker's fd 3)
  int from_fd = -1;  // we read replies here (worker's fd 4)
  uint64_t generation = 0;
  bool lost = false;
  std::mutex write_mu;
};

namespace {

std::string describe_wait_status(int st) {
  if (WIFEXITED(st)) {
    int code = WEXITSTATUS(st);
    if (code == 70) return "exited with code 70 (device context lost)";
    return "exited with code " + std::to_string(code);
  }
  if (WIFSIGNALED(st)) return std::string("killed by signal ") + strsignal(WTERMSIG(st));
  return "ended (status " + std::to_string(st) + ")";
}

// Waits for pid up to timeout_ms, then SIGKILLs it; returns a description of how it ended.
std::string reap(pid_t pid, int timeout_ms) {
  int st = 0;
  auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < until) {
    pid_t r = ::waitpid(pid, &st, WNOHANG);
    if (r == pid) return describe_wait_status(st);
    if (r < 0) return "already reaped";
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ::kill(pid, SIGKILL);
  if (::waitpid(pid, &st, 0) == pid) return describe_wait_status(st);
  return "lost";
}

const char* const kWorkerFix =
    "run `steadyocr doctor --level 4` for the device checks; the engine re-probes the rung and moves back when it "
    "is healthy";

}  // namespace

Supervisor::Supervisor(SupervisorOptions options) : options_(std::move(options)) {
  // A worker that dies closes its pipe: writes must fail with EPIPE, not kill this process.
  ::signal(SIGPIPE, SIG_IGN);
}

Supervisor::~Supervisor() {
  stop();
}

void Supervisor::add_event(std::string kind, std::string detail) {
  // A first start is routine; restarts, exits, kills and retries are what an operator must see.
  if (kind == "worker_started" && events_.empty()) {
    log::info("supervisor", "{}: {} {}", options_.name, kind, detail);
  } else {
    log::warn("supervisor", "{}: {} {}", options_.name, kind, detail);
  }
  metrics::inc("steadyocr_worker_events_total", {{"worker", options_.name}, {"kind", kind}});
  events_.push_back({std::move(kind), std::move(detail)});
}

Result<std::shared_ptr<Supervisor::Worker>> Supervisor::spawn(std::string* ready_header) {
  if (options_.argv.empty()) return invalid_argument("supervisor '" + options_.name + "' has no worker command");
  int req[2], rep[2];
  if (::pipe2(req, O_CLOEXEC) != 0) return unavailable(std::string("pipe failed: ") + std::strerror(errno));
  if (::pipe2(rep, O_CLOEXEC) != 0) {
    ::close(req[0]);
    ::close(req[1]);
    return unavailable(std::string("pipe failed: ") + std::strerror(errno));
  }
  // Everything the child needs is built before fork: after fork only async-signal-safe calls.
  const std::vector<std::pair<std::string, std::string>>& extra = options_.env;
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    bool overridden = false;
    for (auto& [k, v] : extra) overridden |= kv.rfind(k + "=", 0) == 0;
    if (!overridden) env_strings.push_back(kv);
  }
  // Later entries win.
  for (size_t i = 0; i < extra.size(); ++i) {
    bool superseded = false;
    for (size_t j = i + 1; j < extra.size(); ++j) superseded |= extra[j].first == extra[i].first;
    if (!superseded) env_strings.push_back(extra[i].first + "=" + extra[i].second);
  }
  std::vector<char*> envp, argv;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args =
      stats_.worker_starts > 0 && !options_.restart_argv.empty() ? options_.restart_argv : options_.argv;
  for (auto& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);

  pid_t pid = ::fork();
  if (pid < 0) {
    for (int fd : {req[0], req[1], rep[0], rep[1]}) ::close(fd);
    return unavailable(std::string("fork failed: ") + std::strerror(errno));
  }
  if (pid == 0) {
    // Move both ends above 4 first so that placing them on 3 and 4 cannot clobber one another;
    // dup2 onto a different descriptor clears close-on-exec.
    int in_fd = ::fcntl(req[0], F_DUPFD, 10), out_fd = ::fcntl(rep[1], F_DUPFD, 10);
    if (in_fd < 0 || out_fd < 0 || ::dup2(in_fd, 3) < 0 || ::dup2(out_fd, 4) < 0) ::_exit(126);
    ::execvpe(argv[0], argv.data(), envp.data());
    ::_exit(127);
  }
  ::close(req[0]);
  ::close(rep[1]);
  auto w = std::make_shared<Worker>();
  w->pid = pid;
  w->to_fd = req[1];
  w->from_fd = rep[0];
  w->generation = ++generation_;
  ++stats_.worker_starts;

  auto ready = read_message(w->from_fd, options_.startup_timeout_ms);
  if (!ready.is_ok()) {
    std::string how = ready.status().code() == StatusCode::kDeadlineExceeded
                          ? "did not become ready within " + std::to_string(options_.startup_timeout_ms) + " ms"
                          : "ended before it was ready";
    ::kill(pid, SIGKILL);
    std::string ended = reap(pid, 1000);
    ::close(w->to_fd);
    ::close(w->from_fd);
    std::string msg = "worker '" + options_.argv[0] + "' " + how + " (" + ended + ")";
    return Status(StatusCode::kUnavailable, msg, {"WORKER_START_FAILED", msg, kWorkerFix});
  }
  json h = json::parse(ready->header, nullptr, false);
  if (h.is_discarded() || !h.value("ready", false)) {
    // The worker's own status crosses intact (its code and finding: a self-test mismatch, a doctor finding).
    Status why = h.is_discarded() || !h.contains("status") ? data_loss("malformed ready message")
                                                           : status_from_json(h["status"]);
    ::close(w->to_fd);
    reap(pid, 2000);
    ::close(w->from_fd);
    if (why.is_ok()) why = internal_error("the worker refused to start without saying why");
    Status refused(why.code() == StatusCode::kDeviceFault ? StatusCode::kDeviceFault : StatusCode::kUnavailable,
                   "worker refused to start: " + why.message());
    return why.finding() ? refused.with_finding(*why.finding()) : refused;
  }
  *ready_header = ready->header;
  readers_.emplace_back([this, w] {
    name_this_thread("so-reader");
    reader_loop(w);
  });
  add_event("worker_started", "pid " + std::to_string(pid));
  return w;
}

Result<std::string> Supervisor::start() {
  std::unique_lock<std::mutex> lock(mu_);
  healthy_ = true;
  losses_in_row_ = 0;
  if (worker_ && !worker_->lost) return ready_info_;
  std::string ready;
  ASSIGN_OR_RETURN(worker_, spawn(&ready));
  ready_info_ = ready;
  return ready;
}

Result<std::shared_ptr<Supervisor::Worker>> Supervisor::ensure_worker(std::unique_lock<std::mutex>&) {
  if (worker_ && !worker_->lost) return worker_;
  if (!healthy_) {
    std::string msg =
        "worker '" + options_.name + "' lost " + std::to_string(losses_in_row_) + " times in a row; not restarting it";
    return Status(StatusCode::kDeviceFault, msg, {"DEVICE_FAULT", msg, kWorkerFix});
  }
  std::string ready;
  auto w = spawn(&ready);
  if (!w.is_ok()) {
    ++losses_in_row_;
    if (losses_in_row_ >= options_.max_restarts_in_row) healthy_ = false;
    return w.status();
  }
  worker_ = *w;
  ready_info_ = ready;
  return worker_;
}

void Supervisor::lose_worker(const std::shared_ptr<Worker>& w, const std::string& why, bool hang) {
  std::unique_lock<std::mutex> lock(mu_);
  if (w->lost) return;
  w->lost = true;
  ::kill(w->pid, SIGKILL);  // a dying or hung worker is never reused
  lock.unlock();
  std::string ended = reap(w->pid, 0);
  lock.lock();
  for (auto& [id, p] : pending_) {
    if (p->generation == w->generation && !p->done) {
      p->lost = true;
      p->hung = hang;
    }
  }
  if (worker_ == w) worker_.reset();
  ++stats_.worker_losses;
  if (hang) ++stats_.hangs;
  if (++losses_in_row_ >= options_.max_restarts_in_row) healthy_ = false;
  add_event(hang ? "worker_killed_hang" : "worker_exited",
            "pid " + std::to_string(w->pid) + ": " + why + (hang ? "" : " (" + ended + ")"));
  cv_.notify_all();
}

void Supervisor::reader_loop(std::shared_ptr<Worker> w) {
  for (;;) {
    auto m = read_message(w->from_fd, -1);
    if (!m.is_ok()) {
      lose_worker(w, m.status().message(), false);
      break;
    }
    json h = json::parse(m->header, nullptr, false);
    uint64_t id = h.is_discarded() ? 0 : h.value("_id", uint64_t{0});
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pending_.find(id);
    if (it == pending_.end()) continue;  // a reply for a job already given up on
    it->second->done = true;
    it->second->reply = std::move(*m);
    cv_.notify_all();
  }
  ::close(w->from_fd);
  std::lock_guard<std::mutex> g(w->write_mu);
  if (w->to_fd >= 0) ::close(w->to_fd);
  w->to_fd = -1;
}

Result<Message> Supervisor::call(const Message& request) {
  json h = json::parse(request.header.empty() ? "{}" : request.header, nullptr, false);
  if (h.is_discarded() || !h.is_object()) return invalid_argument("job header must be a JSON object");
  Status last = Status(StatusCode::kDeviceFault, "no attempt made");
  for (int attempt = 1; attempt <= options_.max_attempts; ++attempt) {
    std::unique_lock<std::mutex> lock(mu_);
    auto w = ensure_worker(lock);
    if (!w.is_ok()) {
      ++stats_.jobs_failed;
      return w.status();
    }
    std::shared_ptr<Worker> worker = *w;
    uint64_t id = next_id_++;
    auto p = std::make_shared<Pending>();
    p->generation = worker->generation;
    pending_[id] = p;
    lock.unlock();

    h["_id"] = id;
    Message framed{h.dump(), request.payload};
    Status ws;
    {
      std::lock_guard<std::mutex> g(worker->write_mu);
      ws = worker->to_fd >= 0 ? write_message(worker->to_fd, framed) : unavailable("worker pipe closed");
    }
    if (!ws.is_ok()) lose_worker(worker, "request could not be sent: " + ws.message(), false);

    lock.lock();
    bool finished =
        cv_.wait_for(lock, std::chrono::milliseconds(options_.job_timeout_ms), [&] { return p->done || p->lost; });
    if (!finished) {
      lock.unlock();
      lose_worker(
          worker,
          "job " + std::to_string(id) + " ran past the " + std::to_string(options_.job_timeout_ms) + " ms watchdog",
          true);
      lock.lock();
    }
    pending_.erase(id);
    if (p->done) {
      ++stats_.jobs_ok;
      losses_in_row_ = 0;
      return std::move(p->reply);
    }
    if (p->hung) {
      std::string msg = "worker '" + options_.name + "' hung (watchdog " + std::to_string(options_.job_timeout_ms) +
                        " ms) on this job";
      // A device that is only slow for this image (a CPU Vulkan device such as lavapipe, a very large page) looks
      // the same to the watchdog as a hung one: the fix names the limit too.
      std::string fix =
          "if the device is only slow for this image (a CPU Vulkan device such as lavapipe, a very "
          "large page), raise --watchdog (now " +
          std::to_string((options_.job_timeout_ms + 999) / 1000) + " s); otherwise " + kWorkerFix;
      last = Status(StatusCode::kDeadlineExceeded, msg, {"WORKER_HANG", msg, fix});
    } else {
      std::string msg = "worker '" + options_.name + "' died while running this job";
      last = Status(StatusCode::kDeviceFault, msg, {"DEVICE_FAULT", msg, kWorkerFix});
    }
    if (attempt < options_.max_attempts) {
      ++stats_.retries;
      add_event("job_retried", "attempt " + std::to_string(attempt + 1) + " after: " + last.message());
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  ++stats_.jobs_failed;
  add_event("job_failed", last.message() + " (" + std::to_string(options_.max_attempts) + " attempts)");
  return last;
}

std::vector<SupervisorEvent> Supervisor::drain_events() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<SupervisorEvent> out;
  out.swap(events_);
  return out;
}

SupervisorStats Supervisor::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

std::string Supervisor::ready_info() const {
  std::lock_guard<std::mutex> lock(mu_);
  return worker_ ? ready_info_ : "";
}

void Supervisor::stop() {
  std::shared_ptr<Worker> w;
  {
    std::lock_guard<std::mutex> lock(mu_);
    w = worker_;
    worker_.reset();
    if (w) w->lost = true;  // a clean stop is not a loss
  }
  if (w) {
    {
      std::lock_guard<std::mutex> g(w->write_mu);
      if (w->to_fd >= 0) ::close(w->to_fd);  // EOF on fd 3 asks the worker to exit
      w->to_fd = -1;
    }
    reap(w->pid, 3000);
  }
  for (auto& t : readers_) {
    if (t.joinable()) t.join();
  }
  readers_.clear();
}

// ---- worker side ------------------------------------------------------------------------------------

Status reply_status(const Message& reply) {
  json h = json::parse(reply.header.empty() ? "{}" : reply.header, nullptr, false);
  if (h.is_discarded() || !h.is_object()) return data_loss("worker reply header is not a JSON object");
  if (!h.contains("_status")) return Status::ok();
  return status_from_json(h["_status"]);
}

int refuse_worker(const Status& why) {
  json h = {{"ready", false}, {"error", why.message()}, {"status", status_to_json(why)}};
  (void)write_message(4, {h.dump(), ""});
  return 3;
}

int serve_worker(const std::string& ready_header, const WorkerHandler& handler, int concurrency,
                 const std::function<bool()>& context_lost) {
  const pid_t parent = ::getppid();
  std::mutex write_mu;
  if (!write_message(4, {ready_header, ""}).is_ok()) return 4;
  std::mutex qmu;
  std::condition_variable qcv;
  std::deque<Message> queue;
  bool eof = false;
  auto work = [&] {
    for (;;) {
      Message m;
      {
        std::unique_lock<std::mutex> lock(qmu);
        qcv.wait(lock, [&] { return eof || !queue.empty(); });
        if (queue.empty()) return;
        m = std::move(queue.front());
        queue.pop_front();
      }
      json h = json::parse(m.header, nullptr, false);
      uint64_t id = h.is_discarded() ? 0 : h.value("_id", uint64_t{0});
      auto r = handler(m);
      Message reply;
      if (r.is_ok()) {
        reply = std::move(*r);
        json rh = json::parse(reply.header.empty() ? "{}" : reply.header, nullptr, false);
        if (rh.is_discarded() || !rh.is_object()) rh = json::object();
        rh["_id"] = id;
        reply.header = rh.dump();
      } else if (r.status().code() == StatusCode::kDeviceFault ||
                 (r.status().code() == StatusCode::kDeviceError && context_lost && context_lost())) {
        log::error("worker", "device context lost: {}; exiting so the supervisor retries elsewhere",
                   r.status().message());
        ::_exit(70);
      } else {
        reply.header =
            json{{"_id", id}, {"_error", r.status().message()}, {"_status", status_to_json(r.status())}}.dump();
      }
      std::lock_guard<std::mutex> g(write_mu);
      if (!write_message(4, reply).is_ok()) ::_exit(5);
    }
  };
  std::vector<std::thread> threads;
  std::atomic<int> working{std::max(1, concurrency)};
  for (int i = 0; i < std::max(1, concurrency); ++i) {
    threads.emplace_back([&] {
      work();
      --working;
    });
  }
  for (;;) {
    auto m = read_message(3, -1);
    if (!m.is_ok()) break;
    std::lock_guard<std::mutex> lock(qmu);
    queue.push_back(std::move(*m));
    qcv.notify_one();
  }
  {
    std::lock_guard<std::mutex> lock(qmu);
    eof = true;
  }
  qcv.notify_all();
  // If the supervisor went away without stopping us (its process exited or was killed), nobody can take the answers
  // of the jobs still running, and one may hang on the device for good, holding it: do not wait for them then. (The
  // pipe closes before the dying parent is gone, so keep asking while the jobs finish.)
  while (working > 0) {
    if (::getppid() != parent) ::_exit(0);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  for (auto& t : threads) t.join();
  return 0;
}

}  // namespace steadyocr::engine
