#include "server/service.h"

#include <cmath>

#include "engine/result_format.h"
#include "server/server_metrics.h"

namespace steadyocr::server {
namespace {

ServingModels serving_models(const engine::EngineOptions& eo) {
  ServingModels m;
  m.mode = eo.pipeline.mode;
  m.det = m.mode != pipeline::OcrMode::kRecOnly;
  m.rec = m.mode != pipeline::OcrMode::kDetOnly;
  m.cls = m.rec && (eo.pipeline.use_cls || eo.pipeline.load_cls);
  m.cls_default = eo.pipeline.use_cls;
  return m;
}

}  // namespace

RequestContext& current_request() {
  thread_local RequestContext ctx;
  return ctx;
}

OcrService::OcrService(ServerOptions options, engine::EngineOptions engine_options)
    : options_(std::move(options)),
      engine_options_(std::move(engine_options)),
      models_(serving_models(engine_options_)),
      readiness_(ReadinessOptions{options_.probe_interval_ms, options_.ready_max_age_ms, engine_options_.require_gpu}) {
}

std::shared_ptr<engine::OcrEngine> OcrService::engine() const {
  std::lock_guard<std::mutex> lock(mu_);
  return engine_;
}

void OcrService::set_engine(std::shared_ptr<engine::OcrEngine> engine) {
  std::lock_guard<std::mutex> lock(mu_);
  engine_ = std::move(engine);
}

void OcrService::start_admission(AdmissionOptions options) {
  admission_ = std::make_unique<Admission>(engine().get(), options);
}

void OcrService::stop_admission() {
  if (admission_) admission_->stop();
}

std::string OcrService::current_rung() const {
  auto e = engine();
  return e ? e->current_rung() : std::string();
}

void OcrService::begin_drain() {
  draining_ = true;
  readiness_.set_draining();
}

void OcrService::cancel_waits() {
  if (admission_) admission_->cancel_all();
}

Refusal OcrService::refuse_unless_serving() const {
  if (draining_) {
    ApiError e = api_error("SERVER_DRAINING", "the server is shutting down and takes no new work",
                           "send the request to another replica (or retry after the restart)");
    e.retry_after_s = 1;
    return e;
  }
  if (!engine() || !admission_) {
    ApiError e =
        api_error("SERVER_STARTING", "the models are still loading", "retry after Retry-After; /readyz says when");
    e.retry_after_s = 1;
    return e;
  }
  return std::nullopt;
}

Refusal OcrService::read_body(const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& reader,
                              RequestBody* body) {
  body->content_type = req.get_header_value("Content-Type");
  body->query = req.params;
  const bool chunked = req.get_header_value("Transfer-Encoding") == "chunked";
  if (!req.has_header("Content-Length") && !chunked) {
    current_request().close_connection = true;  // where a body would end is unknown
    return api_error("LENGTH_REQUIRED", "a POST without Content-Length or Transfer-Encoding: chunked",
                     "send the body with its Content-Length");
  }
  const size_t max = static_cast<size_t>(options_.max_body_mb) << 20;
  size_t total = 0;
  bool too_large = false, too_slow = false;
  Stopwatch sw;
  auto within_limits = [&](size_t n) {
    total += n;
    too_large = total > max;
    too_slow = sw.elapsed_ms() > options_.body_timeout_s * 1000.0;
    return !too_large && !too_slow;
  };
  const bool multipart = req.is_multipart_form_data();
  bool ok;
  if (multipart) {
    ok = reader(
        [&](const httplib::MultipartFormData& f) {
          body->parts.push_back({f.name, f.filename, f.content_type, ""});
          return body->parts.size() <= static_cast<size_t>(options_.max_batch) + 1;
        },
        [&](const char* data, size_t n) {
          if (!within_limits(n)) return false;
          body->parts.back().content.append(data, n);
          return true;
        });
  } else {
    ok = reader([&](const char* data, size_t n) {
      if (!within_limits(n)) return false;
      body->data.append(data, n);
      return true;
    });
  }
  current_request().bytes_in = total;
  if (ok) return std::nullopt;
  // cpp-httplib reads a body whose Content-Length is over the limit away before it answers 413; any other failure
  // leaves the rest of the body unread.
  current_request().close_connection = !(res.status == 413 && !too_large);
  if (too_large || res.status == 413) {
    return api_error("BODY_TOO_LARGE",
                     "the body is larger than the limit of " + std::to_string(options_.max_body_mb) + " MB",
                     "send a smaller image (or start the server with a larger --max-body-mb)");
  }
  if (too_slow || sw.elapsed_ms() >= options_.read_timeout_s * 1000.0) {
    return api_error("BODY_TIMEOUT",
                     "the body did not arrive in time (" + std::to_string(total) + " bytes after " +
                         std::to_string(static_cast<int>(sw.elapsed_ms())) + " ms; a read may stall " +
                         std::to_string(options_.read_timeout_s) + " s, the whole body take " +
                         std::to_string(options_.body_timeout_s) + " s)",
                     "send the body at once (or raise --read-timeout-s / --body-timeout-s)");
  }
  if (multipart) {
    if (body->parts.size() > static_cast<size_t>(options_.max_batch) + 1) {
      return api_error("BATCH_TOO_LARGE", "more form fields than --max-batch allows", "split the batch");
    }
    return api_error("BAD_MULTIPART", "the multipart/form-data body cannot be parsed (boundary or parts)",
                     "send a well-formed form: Content-Type multipart/form-data; boundary=..., parts ending with the "
                     "closing boundary");
  }
  return api_error("BODY_INCOMPLETE", "the body ended before its declared length (" + std::to_string(total) + " bytes)",
                   "send the whole body");
}

Refusal OcrService::run(std::vector<ImageInput>& inputs, std::vector<ImageRun>* runs) {
  runs->assign(inputs.size(), ImageRun{});
  std::vector<engine::ImageJob> jobs;
  std::vector<size_t> index;
  int64_t cost = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    ImageInput& in = inputs[i];
    pipeline::ImageHeader header;
    if (!in.error) in.error = check_image(in.bytes.data(), in.bytes.size(), engine_options_.limits, &header);
    if (!in.error) cost += predicted_image_bytes(header.width, header.height, engine_options_.pipeline.det_limit_side);
    if (in.error) {
      (*runs)[i].error = in.error;
      continue;
    }
    engine::ImageJob job;
    job.name = in.name.empty() ? current_request().id : in.name;
    job.bytes = std::move(in.bytes);
    job.options = in.options;
    jobs.push_back(std::move(job));
    index.push_back(i);
  }
  current_request().images = static_cast<int>(inputs.size());
  if (jobs.empty()) return std::nullopt;
  if (auto refusal = refuse_unless_serving()) return refusal;
  const auto deadline = Clock::now() + std::chrono::milliseconds(options_.deadline_ms);
  std::shared_ptr<Ticket> ticket = admission_->submit(std::move(jobs), deadline, cost);
  if (!ticket) {
    ApiError e = api_error("SERVER_BUSY",
                           "the queue is full (" + std::to_string(admission_->queue_depth()) + " of " +
                               std::to_string(options_.max_queue) + " images waiting)",
                           "retry after Retry-After, or add replicas (scale on steadyocr_queue_depth)");
    e.retry_after_s = 1;
    return e;
  }
  struct ActiveWork {
    std::atomic<int>& n;
    explicit ActiveWork(std::atomic<int>& c) : n(c) { ++n; }
    ~ActiveWork() { --n; }
  } active(active_work_);
  const Admission::Wait w = admission_->wait(ticket);
  if (w == Admission::Wait::kDeadline) {
    return api_error("DEADLINE_EXCEEDED",
                     "no result within the deadline of " + std::to_string(options_.deadline_ms) + " ms (" +
                         (ticket->state == Ticket::State::kDropped ? "still queued: dropped, never run"
                                                                   : "still running: its result is discarded") +
                         ")",
                     "retry later or with fewer images (or start the server with a larger --deadline-ms)");
  }
  if (w == Admission::Wait::kCancelled) {
    ApiError e = api_error("SERVER_DRAINING", "the server shut down before this request's images were read",
                           "send the request to another replica");
    e.retry_after_s = 1;
    return e;
  }
  for (size_t k = 0; k < index.size(); ++k) {
    ImageRun& r = (*runs)[index[k]];
    r.outcome = std::move(ticket->outcomes[k]);
    r.queue_ms = ticket->queue_ms();
    current_request().rung = r.outcome.rung;
    if (!r.outcome.gpu.empty()) {
      std::string& g = current_request().gpu;  // a batch's images may have been read on several
      if (("," + g + ",").find("," + r.outcome.gpu + ",") == std::string::npos)
        g += (g.empty() ? "" : ",") + r.outcome.gpu;
    }
    if (r.outcome.status.is_ok()) {
      readiness_.note_success();
      record_stages(r.outcome.result.timings, r.queue_ms);
    } else {
      r.error = error_from_status(r.outcome.status);
    }
  }
  return std::nullopt;
}

nlohmann::ordered_json OcrService::result_json(const std::string& name, const ImageRun& run) const {
  engine::ImageOutcome o;
  o.name = name;
  o.ok = run.outcome.status.is_ok();
  o.error = run.outcome.status.is_ok() ? "" : run.outcome.status.message();
  o.result = run.outcome.result;
  o.rung = run.outcome.rung;
  o.gpu = run.outcome.gpu;
  o.fallbacks = run.outcome.events;
  nlohmann::ordered_json j = engine::outcome_to_json(o);
  j["timings_ms"]["queue"] = std::round(run.queue_ms * 100) / 100;
  return j;
}

void OcrService::reply_json(httplib::Response& res, int status, const nlohmann::ordered_json& body) const {
  res.status = status;
  res.set_content(body.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n",
                  "application/json");
}

void OcrService::reply_error(httplib::Response& res, const ApiError& e, bool oip) const {
  RequestContext& ctx = current_request();
  ctx.outcome = e.code;
  res.set_header("X-Steadyocr-Error-Code", e.code);
  if (e.retry_after_s > 0) res.set_header("Retry-After", std::to_string(e.retry_after_s));
  reply_json(res, e.http_status, oip ? oip_error_json(e) : v1_error_json(e));
  if (ctx.close_connection) close_after_response(res);
}

void OcrService::reply_error_body_unread(httplib::Response& res, const ApiError& e, bool oip) const {
  current_request().close_connection = true;
  reply_error(res, e, oip);
}

void close_after_response(httplib::Response& res) {
  // cpp-httplib 0.11.4 keeps a connection open whatever the response says; it closes one whose content provider
  // fails. This provider writes every byte of the response, then fails.
  auto body = std::make_shared<std::string>(std::move(res.body));
  res.body.clear();
  const std::string type = res.get_header_value("Content-Type");
  res.set_header("Connection", "close");
  if (body->empty()) body->assign("\n");
  res.set_content_provider(body->size(), type, [body](size_t offset, size_t length, httplib::DataSink& sink) {
    sink.write(body->data() + offset, length);
    return false;
  });
}

}  // namespace steadyocr::server
