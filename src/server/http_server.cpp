// serve(): cpp-httplib set up (limits, timeouts, connection threads, the request context around every route), the
// lifecycle (listen, load the engine, serve, drain on SIGTERM/SIGINT) and the per-request log line and counters.
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <future>
#include <random>
#include <thread>

#include "core/log.h"
#include "core/metrics.h"
#include "core/thread_name.h"
#include "server/server.h"
#include "server/server_metrics.h"
#include "server/service.h"
#include "server/task_queue.h"
#include "server/web_assets.h"

namespace steadyocr::server {
namespace {

using json = nlohmann::ordered_json;

int g_signal_pipe[2] = {-1, -1};

void on_signal(int signo) {
  const char c = static_cast<char>(signo);
  [[maybe_unused]] ssize_t n = ::write(g_signal_pipe[1], &c, 1);
}

// SIGTERM/SIGINT end up as a byte in a pipe the main thread polls. A handler (not a blocked mask) because worker
// processes inherit a signal mask across exec but not handlers.
bool install_signal_handlers() {
  if (::pipe2(g_signal_pipe, O_CLOEXEC | O_NONBLOCK) != 0) return false;
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  ::sigaction(SIGTERM, &sa, nullptr);
  ::sigaction(SIGINT, &sa, nullptr);
  ::signal(SIGPIPE, SIG_IGN);  // a client that hangs up mid-response must not kill the server
  return true;
}

// The signal received (0 when none within timeout_ms).
int wait_signal(int timeout_ms) {
  pollfd p{g_signal_pipe[0], POLLIN, 0};
  if (::poll(&p, 1, timeout_ms) <= 0) return 0;
  char c = 0;
  return ::read(g_signal_pipe[0], &c, 1) == 1 ? c : 0;
}

const char* signal_name(int s) {
  return s == SIGTERM ? "SIGTERM" : s == SIGINT ? "SIGINT" : "signal";
}

// The client's X-Request-Id when it is a sane token (printable, at most 128 characters), else a new one.
std::string request_id(const httplib::Request& req) {
  const std::string given = req.get_header_value("X-Request-Id");
  bool sane = !given.empty() && given.size() <= 128;
  for (unsigned char c : given) sane &= std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == ':' || c == '/';
  if (sane) return given;
  thread_local std::mt19937_64 rng(std::random_device{}());
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(rng()));
  return buf;
}

// The route label of the metrics: a bounded set (the routes, the page's embedded files, then "other" per family).
std::string route_of(const std::string& path) {
  for (const char* r : {"/v1/ocr", "/v1/ocr/batch", "/livez", "/readyz", "/metrics", "/v2", "/v2/health/live",
                        "/v2/health/ready", "/"}) {
    if (path == r) return r;
  }
  if (path.rfind("/web/", 0) == 0) return find_web_asset(path.substr(5)) ? path : "/web/other";
  return path.rfind("/v2/", 0) == 0 ? "/v2/other" : "other";
}

// The error body for responses cpp-httplib made itself (unknown route, unparsable request, oversized body).
ApiError library_error(int status) {
  switch (status) {
    case 404:
      return api_error("NOT_FOUND", "no such route", "see docs/SERVING.md for the routes");
    case 413:
      return api_error("BODY_TOO_LARGE", "the body is larger than the limit", "send a smaller body");
    case 414:
      return api_error("BAD_REQUEST", "the request URI is too long", "send options in the body");
    case 500:
      return api_error("INTERNAL", "internal error", "report it with the request id");
    default: {
      ApiError e = api_error("BAD_REQUEST", "the request cannot be parsed (request line or headers)",
                             "send a valid HTTP/1.1 request");
      e.http_status = status;
      return e;
    }
  }
}

class HttpFront {
 public:
  explicit HttpFront(OcrService& s) : s_(s) {}

  void configure() {
    const ServerOptions& o = s_.options();
    http_.set_read_timeout(o.read_timeout_s, 0);
    http_.set_write_timeout(std::max(5, o.read_timeout_s), 0);
    http_.set_keep_alive_max_count(1000);
    http_.set_keep_alive_timeout(5);
    // Content-Length above the limit: cpp-httplib reads the body away and answers 413 (our error handler's body).
    http_.set_payload_max_length(static_cast<size_t>(o.max_body_mb) << 20);
    const size_t threads = static_cast<size_t>(std::max(8, o.http_threads));
    http_.new_task_queue = [threads] { return new ElasticTaskQueue(8, threads); };
    // SO_REUSEADDR only: cpp-httplib's default adds SO_REUSEPORT, which lets a second server bind a port in use
    // without an error. TCP_NODELAY (inherited by accepted sockets): cpp-httplib writes the headers and the body
    // separately, and Nagle's algorithm held the body until the client's delayed ACK, 40 ms on every small response.
    // The socket is kept to widen its listen backlog after the bind.
    http_.set_socket_options([this](socket_t sock) {
      int yes = 1;
      ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
      ::setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof(yes));
      listen_fd_ = sock;
    });
    http_.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      RequestContext& ctx = current_request();
      ctx = RequestContext{};
      ctx.active = true;
      ctx.id = request_id(req);
      ctx.route = route_of(req.path);
      res.set_header("X-Request-Id", ctx.id);
      ++s_.http_active();
      return httplib::Server::HandlerResponse::Unhandled;
    });
    http_.set_error_handler(
        httplib::Server::HandlerWithResponse([this](const httplib::Request& req, httplib::Response& res) {
          if (!res.body.empty() || res.content_length_ > 0 || res.has_header("X-Steadyocr-Error-Code")) {
            return httplib::Server::HandlerResponse::Unhandled;  // a route's own error
          }
          const bool oip = req.path.rfind("/v2", 0) == 0;
          if (!current_request().active) {  // before routing: an unparsable request; nothing after it is trusted
            current_request() = RequestContext{};
            current_request().close_connection = res.status == 400 || res.status == 414;
          }
          const int status = res.status;
          ApiError e = library_error(status);
          s_.reply_error(res, e, oip);
          res.status = status;
          return httplib::Server::HandlerResponse::Handled;
        }));
    http_.set_exception_handler([this](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
      std::string what = "unknown exception";
      try {
        std::rethrow_exception(ep);
      } catch (const std::exception& ex) {
        what = ex.what();
      } catch (...) {
      }
      log::error("server", "{} {}: {}", req.method, req.path, what);
      s_.reply_error(res, api_error("INTERNAL", "internal error: " + what, "report it with the request id"),
                     req.path.rfind("/v2", 0) == 0);
    });
    http_.set_post_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      RequestContext& ctx = current_request();
      if (!ctx.active) {  // answered before routing: an unparsable request, or an Expect: 100-continue refusal
        const std::string code = res.get_header_value("X-Steadyocr-Error-Code");
        ctx = RequestContext{};
        ctx.id = request_id(req);
        ctx.route = route_of(req.path);
        ctx.outcome = !code.empty() ? code : res.status >= 400 ? library_error(res.status).code : "OK";
      }
      if (!res.has_header("X-Request-Id")) res.set_header("X-Request-Id", ctx.id);
      const std::string rung = ctx.rung.empty() ? s_.current_rung() : ctx.rung;
      res.set_header("X-Steadyocr-Rung", rung.empty() ? "none" : rung);
      // Counted and logged before the response leaves, so a client that reads /metrics next sees its request.
      log_request(req, res);
    });
    // A client that asks before sending the body (Expect: 100-continue) learns at once that it is too large or that
    // no work is taken, without uploading it.
    http_.set_expect_100_continue_handler([this](const httplib::Request& req, httplib::Response& res) {
      current_request() = RequestContext{};  // before routing (no pre-routing call)
      const size_t max = static_cast<size_t>(s_.options().max_body_mb) << 20;
      if (req.has_header("Content-Length") && req.get_header_value<uint64_t>("Content-Length") > max) {
        res.status = 413;
        return 413;
      }
      // A refused client may send its body anyway (RFC 9110 allows it); on a kept connection that body would be
      // read as the next request (a spurious 400 in the log), so a refusal closes the connection.
      current_request().close_connection = true;
      if (auto e = s_.refuse_unless_serving()) {
        s_.reply_error(res, *e, req.path.rfind("/v2", 0) == 0);
        return res.status;
      }
      current_request().close_connection = false;
      return 100;
    });
    add_v1_routes(http_, s_);
    add_oip_routes(http_, s_);
    add_health_routes(http_, s_);
    if (o.web) add_web_routes(http_, s_);
  }

  // Binds host:port (0: any); the port bound, or -1 with the reason printed.
  int bind() {
    const ServerOptions& o = s_.options();
    int port = o.port == 0 ? http_.bind_to_any_port(o.host) : (http_.bind_to_port(o.host, o.port) ? o.port : -1);
    if (port < 0) {
      std::fprintf(stderr, "error: cannot listen on %s:%d: %s; pick another --port or stop what holds it\n",
                   o.host.c_str(), o.port, std::strerror(errno));
      return -1;
    }
    // cpp-httplib listens with a backlog of 5: under a burst, connections beyond it wait for SYN retries (1 s and
    // more) before they are even accepted. Listening again on the bound socket widens the backlog.
    if (listen_fd_ >= 0) ::listen(listen_fd_, SOMAXCONN);
    return port;
  }

  void start() {
    done_ = std::async(std::launch::async, [this] {
      name_this_thread("so-listen");
      return http_.listen_after_bind();
    });
  }
  // Stops accepting; true when every connection thread finished before `until`.
  bool stop(Clock::time_point until) {
    // cpp-httplib's stop() does nothing before its listen loop has begun: an engine that fails at once could
    // otherwise leave the loop accepting for ever.
    while (!http_.is_running() && done_.wait_for(std::chrono::milliseconds(1)) != std::future_status::ready &&
           Clock::now() < until) {
    }
    http_.stop();
    return done_.wait_until(until) == std::future_status::ready;
  }

 private:
  void log_request(const httplib::Request& req, const httplib::Response& res) {
    RequestContext& ctx = current_request();
    const double ms = ctx.clock.elapsed_ms();
    if (res.status >= 400 && ctx.outcome == "OK") ctx.outcome = res.get_header_value("X-Steadyocr-Error-Code");
    if (ctx.outcome.empty()) ctx.outcome = "ERROR";
    record_request(ctx.route, res.status, ctx.outcome, ms / 1000.0);
    json fields = {{"id", ctx.id},
                   {"method", req.method},
                   {"route", ctx.route},
                   {"path", req.path},
                   {"status", res.status},
                   {"outcome", ctx.outcome},
                   {"rung", res.get_header_value("X-Steadyocr-Rung")},
                   {"ms", std::round(ms * 100) / 100},
                   {"bytes_in", ctx.bytes_in},
                   {"bytes_out", res.body.size() + res.content_length_},
                   {"images", ctx.images},
                   {"remote", req.remote_addr}};
    if (!ctx.gpu.empty()) fields["gpu"] = ctx.gpu;
    log::write_record(res.status >= 500 ? log::Level::kWarn : log::Level::kInfo, "http", "request",
                      fields);  // the path may be any bytes: written with invalid UTF-8 replaced
    if (ctx.active) --s_.http_active();
    ctx.active = false;
  }

  OcrService& s_;
  httplib::Server http_;
  int listen_fd_ = -1;
  std::future<bool> done_;
};

void print_rung(const engine::OcrEngine& e) {
  std::printf("steadyocr serve: serving from rung %s (backend %s)\n", e.current_rung().c_str(),
              engine::backend_of_rung(e.current_rung()).c_str());
  if (e.gpu_count() > 1) {
    for (const auto& g : e.gpus()) {
      std::printf("steadyocr serve: GPU %s (%s, CUDA_VISIBLE_DEVICES=%s): %s\n", g.gpu.c_str(),
                  g.name.empty() ? "name not known" : g.name.c_str(), g.device.c_str(),
                  g.in_service ? ("serving on " + g.rung).c_str() : "out of service (re-probed)");
    }
  }
  for (const auto& ev : e.events()) {
    std::printf("steadyocr serve: backend event %s: %s%s -> %s: %s%s%s\n", ev.time.c_str(),
                ev.gpu.empty() ? "" : ("GPU " + ev.gpu + ": ").c_str(), ev.from.c_str(),
                ev.to.empty() ? "(none)" : ev.to.c_str(), ev.reason.c_str(),
                ev.detail.empty() ? "" : (" - " + ev.detail).c_str(),
                ev.fix.empty() ? "" : ("; fix: " + ev.fix).c_str());
  }
  std::fflush(stdout);
}

}  // namespace

int serve(const ServerOptions& options, const engine::EngineOptions& engine_options) {
  log::set_json(options.log_json);
  if (!install_signal_handlers()) {
    std::fprintf(stderr, "error: cannot set up signal handling: %s\n", std::strerror(errno));
    return 1;
  }
  describe_server_metrics();
  OcrService service(options, engine_options);
  HttpFront front(service);
  front.configure();
  const int port = front.bind();
  if (port < 0) return 2;
  front.start();
  std::printf("steadyocr serve: listening on http://%s:%d\n", options.host.c_str(), port);
  std::fflush(stdout);
  log::info("server", "listening on {}:{}; loading the models (503 SERVER_STARTING until ready)", options.host, port);
  record_doctor_findings();

  auto created = engine::OcrEngine::create(engine_options);
  if (!created.is_ok()) {
    std::fprintf(stderr, "error: %s\n", created.status().message().c_str());
    const StatusCode code = created.status().code();
    const int rc = code == StatusCode::kInvalidArgument || code == StatusCode::kNotFound ? 2 : 1;  // as `ocr`
    if (!front.stop(Clock::now() + std::chrono::seconds(6))) {
      std::fflush(stderr);
      ::_exit(rc);  // a connection thread still parked in a keep-alive wait
    }
    return rc;
  }
  std::shared_ptr<engine::OcrEngine> engine(std::move(*created));
  AdmissionOptions ao;
  ao.max_queue = options.max_queue;
  // Per GPU: each engine call is spread over the GPUs in service, so that many calls keep each GPU as busy as one.
  const int gpus = static_cast<int>(std::max<size_t>(1, engine->gpu_count()));
  ao.concurrency = options.concurrency * gpus;
  const std::string rung = engine->current_rung();
  ao.batch_images = options.batch_images > 0       ? options.batch_images
                    : engine::is_worker_rung(rung) ? engine::worker_in_flight(engine_options, rung)
                                                   : 4;
  if (options.admit_mem_mb > 0) {
    ao.memory_budget_bytes = options.admit_mem_mb << 20;
  } else if (options.admit_mem_mb == 0 && engine::is_gpu_rung(rung)) {
    // Not --gpu-mem: the engine meets that budget itself by waiting for memory, and the pages admitted at once must
    // be enough to keep the worker's images in flight (a 576 MiB budget would admit about four).
    ao.memory_budget_bytes = (int64_t{8192} << 20) * gpus;
  }
  metrics::set_gauge("steadyocr_admission_memory_bytes", {{"state", "budget"}},
                     static_cast<double>(ao.memory_budget_bytes));
  service.set_engine(engine);
  service.start_admission(ao);
  service.readiness().start(engine);
  print_rung(*engine);

  int sig = 0;
  while ((sig = wait_signal(1000)) == 0) {
  }
  const auto drain_deadline = Clock::now() + std::chrono::seconds(options.drain_s);
  log::info("server", "{}: draining (not ready; new work refused; {} requests in flight may finish within {} s)",
            signal_name(sig), service.active_work(), options.drain_s);
  service.begin_drain();
  while (service.active_work() > 0 && Clock::now() < drain_deadline) {
    if (wait_signal(10) != 0) break;  // a second signal: stop waiting
  }
  if (service.active_work() > 0) {
    log::warn("server", "drain: {} requests still in flight at the deadline; answering them SERVER_DRAINING",
              service.active_work());
    service.cancel_waits();
    for (int i = 0; i < 100 && service.active_work() > 0; ++i) wait_signal(10);
  }
  // The rest is bounded by the drain deadline too: a probe or an engine call stuck on a hung device (the watchdog may
  // take minutes) must not hold the exit. Past the deadline the process exits without waiting for them; the worker
  // processes see their pipe close and exit.
  const auto exit_by = std::max(drain_deadline, Clock::now() + std::chrono::seconds(1));
  std::promise<bool> stopped;
  std::future<bool> done = stopped.get_future();
  std::thread([&, p = std::move(stopped)]() mutable {
    service.readiness().stop();
    // Idle keep-alive connections end within the keep-alive timeout.
    const bool closed = front.stop(exit_by);
    service.stop_admission();
    service.set_engine(nullptr);
    engine.reset();  // stops the worker processes
    p.set_value(closed);
  }).detach();
  const bool clean = done.wait_until(exit_by) == std::future_status::ready && done.get();
  log::info("server", "drained; exiting");
  if (!clean) {
    log::warn("server",
              "threads still busy at the drain deadline (a stuck engine call or an idle keep-alive "
              "connection); exiting without them");
    std::fflush(stdout);
    std::fflush(stderr);
    ::_exit(0);
  }
  return 0;
}

}  // namespace steadyocr::server
