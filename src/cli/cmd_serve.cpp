// `steadyocr serve`: the OCR engine behind HTTP (server/server.h, docs/SERVING.md), with the engine flags of `ocr`.
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string_view>

#include "cli/commands.h"
#include "cli/engine_options.h"
#include "core/cpu_share.h"
#include "server/server.h"

namespace steadyocr::cli {
namespace {

struct ServeArgs {
  EngineArgs engine;
  server::ServerOptions server;
  std::string log_format = "json";
  bool no_web = false;
};

int run_serve(ServeArgs& a) {
  auto options = engine_options_from(a.engine);
  if (!options.is_ok()) {
    std::fprintf(stderr, "error: %s\n", options.status().message().c_str());
    return kExitUsage;
  }
  // The angle classifier is loaded whenever its model is there, so that a request can ask for it (`cls`).
  options->pipeline.load_cls =
      options->pipeline.mode != pipeline::OcrMode::kDetOnly && std::filesystem::is_regular_file(options->models.cls);
  use_threads(a.engine.threads);
  // The server keeps --threads unless STEADYOCR_SHARE_CORES=on: its clients on the same machine are other processes to
  // the sampling (core/cpu_share.h), and with sharing on 2 cores its SERVER_BUSY answers under load went over 5 ms
  // median (ServerLifecycle.OverloadIsRefusedFastWithRetryAfter); `ocr`, `bench` and Python share by default.
  const char* share = std::getenv("STEADYOCR_SHARE_CORES");
  options->share_cores = share && std::string_view(share) == "on";
  cpu_share::set_enabled(options->share_cores);
  a.server.log_json = a.log_format == "json";
  a.server.web = !a.no_web;
  options->log_json = a.server.log_json;  // the worker processes' lines too
  return server::serve(a.server, *options);
}

}  // namespace

Command add_serve_command(CLI::App& root) {
  auto args = std::make_shared<ServeArgs>();
  server::ServerOptions& s = args->server;
  Command c;
  CLI::App* app = root.add_subcommand("serve", "Serve OCR over HTTP: /v1/ocr, KServe v2 (/v2), /readyz, /metrics");
  c.app = app;
  app->add_option("--host", s.host, "Address to listen on")->capture_default_str();
  app->add_option("--port", s.port, "Port to listen on (0: any free port, printed)")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  app->add_option("--max-queue", s.max_queue, "Images waiting for the engine before 503 SERVER_BUSY")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  app->add_option("--deadline-ms", s.deadline_ms, "Per request: result within this or 504 (queued work is dropped)")
      ->check(CLI::Range(1, 3600000))
      ->capture_default_str();
  app->add_option("--max-body-mb", s.max_body_mb, "Largest request body, in MB (413 beyond)")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  app->add_option("--max-batch", s.max_batch, "Images per /v1/ocr/batch or /v2 infer request")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  app->add_option("--drain-s", s.drain_s, "On SIGTERM/SIGINT, in-flight requests may finish this long")
      ->check(CLI::Range(0, 3600))
      ->capture_default_str();
  app->add_option("--read-timeout-s", s.read_timeout_s, "One read of a request may stall this long (408 beyond)")
      ->check(CLI::Range(1, 3600))
      ->capture_default_str();
  app->add_option("--body-timeout-s", s.body_timeout_s, "A whole request body must arrive within this (408 beyond)")
      ->check(CLI::Range(1, 3600))
      ->capture_default_str();
  app->add_option("--http-threads", s.http_threads, "Connections served at once (threads start as needed)")
      ->check(CLI::Range(8, 65536))
      ->capture_default_str();
  app->add_option("--concurrency", s.concurrency, "Engine calls in flight at once, per GPU the engine serves on")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  app->add_option("--batch-images", s.batch_images,
                  "Images handed to one engine call (0: the rung's in-flight count on worker rungs, else 4)")
      ->check(CLI::Range(0, 1024))
      ->capture_default_str();
  app->add_option(
         "--admit-mem-mb", s.admit_mem_mb,
         "Predicted working memory of the images in engine calls at once, MB; larger pages wait for room "
         "(0: 8192 per GPU on GPU rungs, none on CPU; -1: none; --gpu-mem is the engine's own, met by waiting)")
      ->check(CLI::Range(int64_t{-1}, int64_t{1} << 30))
      ->capture_default_str();
  app->add_option("--probe-interval-ms", s.probe_interval_ms, "Readiness probe through the engine when idle this long")
      ->check(CLI::Range(50, 600000))
      ->capture_default_str();
  app->add_option("--ready-max-age-ms", s.ready_max_age_ms,
                  "/readyz is 503 when no inference succeeded within this long")
      ->check(CLI::Range(100, 3600000))
      ->capture_default_str();
  app->add_option("--log-format", args->log_format, "json: one JSON object per line (one per request); text")
      ->check(CLI::IsMember({"json", "text"}))
      ->capture_default_str();
  app->add_flag("--no-web", args->no_web, "Turn the page off: GET / and /web/ answer 404 (docs/SERVING.md)");
  add_engine_flags(app, &args->engine);
  c.run = [args] { return run_serve(*args); };
  return c;
}

}  // namespace steadyocr::cli
