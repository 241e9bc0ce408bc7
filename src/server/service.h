// What the routes share (internal to server/): the engine and its admission, readiness, the request's context, body
// reading with limits, and answering. http_server.cpp wires it to cpp-httplib; routes_*.cpp add the routes.
#pragma once

#include <httplib.h>

#include <nlohmann/json.hpp>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/timer.h"
#include "engine/engine.h"
#include "server/admission.h"
#include "server/errors.h"
#include "server/readiness.h"
#include "server/request_parse.h"
#include "server/server.h"

namespace steadyocr::server {

// The request being handled on this thread: filled by the routes, logged and counted when the response is written.
struct RequestContext {
  bool active = false;
  std::string id;
  std::string route = "other";
  std::string outcome = "OK";  // OK or the error code
  std::string rung;            // the rung that read the images ("" when none ran)
  std::string gpu;             // with several GPUs, the GPU(s) that read them ("0", "0,1"; "" otherwise)
  size_t bytes_in = 0;
  int images = 0;
  // The body was not read to its end (too slow, cut at the limit, unparsable framing): what the client still sends
  // must not be read as a next request, so the connection closes after the response.
  bool close_connection = false;
  Stopwatch clock;
};
RequestContext& current_request();

// One image's way through the engine.
struct ImageRun {
  Refusal error;  // refused before the engine (header checks), or the engine's failure
  engine::EngineOutcome outcome;
  double queue_ms = 0;
};

class OcrService {
 public:
  OcrService(ServerOptions options, engine::EngineOptions engine_options);

  const ServerOptions& options() const { return options_; }
  const engine::EngineOptions& engine_options() const { return engine_options_; }
  const ServingModels& models() const { return models_; }

  // The engine once it serves (null while starting and after shutdown).
  std::shared_ptr<engine::OcrEngine> engine() const;
  void set_engine(std::shared_ptr<engine::OcrEngine> engine);
  Admission* admission() const { return admission_.get(); }
  void start_admission(AdmissionOptions options);
  void stop_admission();
  Readiness& readiness() { return readiness_; }
  const Readiness& readiness() const { return readiness_; }
  std::string current_rung() const;

  // Drain: not ready, no new work; cancel_waits ends the waits still open (the drain deadline passed).
  void begin_drain();
  bool draining() const { return draining_; }
  void cancel_waits();
  int active_work() const { return active_work_; }
  std::atomic<int>& http_active() { return http_active_; }

  // SERVER_STARTING or SERVER_DRAINING when no new work can be taken.
  Refusal refuse_unless_serving() const;
  // Reads the body within the limits (size, time); multipart bodies into parts. The query is copied too.
  Refusal read_body(const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& reader,
                    RequestBody* body);
  // Checks each input's header, admits the readable ones as one ticket, and waits for them. A refusal of the whole
  // request (SERVER_BUSY, DEADLINE_EXCEEDED, SERVER_DRAINING) comes back; per-image errors land in `runs`.
  Refusal run(std::vector<ImageInput>& inputs, std::vector<ImageRun>* runs);

  // The CLI's per-image JSON (lines, backend, rung, fallbacks, timings_ms with the queue time added).
  nlohmann::ordered_json result_json(const std::string& name, const ImageRun& run) const;

  // Answers with a JSON body (and the request's rung header).
  void reply_json(httplib::Response& res, int status, const nlohmann::ordered_json& body) const;
  // Answers an error: /v1 shape, or OIP's {"error": "..."} when `oip`.
  void reply_error(httplib::Response& res, const ApiError& e, bool oip = false) const;
  // The same for a refusal before the request's body was read: the connection is closed after the answer, or the
  // unread body would be parsed as the next request on it.
  void reply_error_body_unread(httplib::Response& res, const ApiError& e, bool oip = false) const;

 private:
  ServerOptions options_;
  engine::EngineOptions engine_options_;
  ServingModels models_;
  mutable std::mutex mu_;
  std::shared_ptr<engine::OcrEngine> engine_;
  std::unique_ptr<Admission> admission_;
  Readiness readiness_;
  std::atomic<bool> draining_{false};
  std::atomic<int> active_work_{0};  // requests with admitted images
  std::atomic<int> http_active_{0};
};

// Makes cpp-httplib close the connection once `res` is written (Connection: close).
void close_after_response(httplib::Response& res);

// Route registration (routes_v1.cpp, routes_oip.cpp, routes_health.cpp, routes_web.cpp).
void add_v1_routes(httplib::Server& http, OcrService& service);
void add_oip_routes(httplib::Server& http, OcrService& service);
void add_health_routes(httplib::Server& http, OcrService& service);
void add_web_routes(httplib::Server& http, OcrService& service);

}  // namespace steadyocr::server
