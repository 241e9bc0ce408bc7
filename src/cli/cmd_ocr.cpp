// `steadyocr ocr`: read text in image files and directories with the PP-OCR pipeline.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>
#include <future>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/engine_options.h"
#include "core/log.h"
#include "core/parallel.h"
#include "core/timer.h"
#include "engine/engine.h"
#include "engine/result_format.h"
#include "pipeline/image_decode.h"
#include "pipeline/pipeline.h"
#include "runtime/backend_registry.h"

namespace steadyocr::cli {
namespace {

namespace fs = std::filesystem;
using namespace steadyocr::pipeline;
using namespace steadyocr::engine;

struct OcrArgs {
  std::vector<std::string> inputs;
  EngineArgs engine;
  bool recursive = false, quiet = false;
  std::string format = "json";
  std::string output;
  std::string vis_dir;
};

// Output keys: base names, or the path as given when two inputs share a base name.
std::vector<std::string> output_names(const std::vector<InputFile>& files) {
  std::map<std::string, int> count;
  for (const auto& f : files) ++count[fs::path(f.path).filename().string()];
  std::vector<std::string> names;
  for (const auto& f : files) {
    std::string base = fs::path(f.path).filename().string();
    names.push_back(count[base] > 1 ? f.path : base);
  }
  return names;
}

// The visualisation's file name in --vis DIR: the output name with '/' replaced, an image extension kept (else .jpg).
fs::path vis_file(const std::string& name) {
  std::string file = name;
  std::replace(file.begin(), file.end(), '/', '_');
  if (!has_image_extension(file)) file += ".jpg";
  return file;
}

class Progress {
 public:
  Progress(size_t total, bool enabled) : total_(total), enabled_(enabled) {}
  void update(size_t done) {
    if (!enabled_) return;
    const int width = 30;
    int filled = static_cast<int>(width * done / std::max<size_t>(total_, 1));
    double secs = clock_.elapsed_ms() / 1000.0;
    double rate = secs > 0 ? done / secs : 0;
    std::string bar(filled, '=');
    bar.resize(width, ' ');
    std::fprintf(stderr, "\r[%s] %zu/%zu  %.2f img/s", bar.c_str(), done, total_, rate);
    if (rate > 0 && done < total_) std::fprintf(stderr, "  ETA %.0fs ", (total_ - done) / rate);
    std::fflush(stderr);
    shown_ = true;
  }
  // Clears the bar so that a message can be printed on a clean line.
  void clear() {
    if (!shown_) return;
    std::fprintf(stderr, "\r\033[K");
    shown_ = false;
  }

 private:
  size_t total_;
  bool enabled_;
  bool shown_ = false;
  Stopwatch clock_;
};

int run_ocr(const OcrArgs& a) {
  OutputFormat format;
  if (!parse_output_format(a.format, &format)) {
    std::fprintf(stderr, "error: --format must be json, jsonl, tsv or text (got '%s')\n", a.format.c_str());
    return kExitUsage;
  }
  std::string usage_error;
  std::vector<InputFile> files = expand_inputs(a.inputs, a.recursive, &usage_error);
  if (!usage_error.empty()) {
    std::fprintf(stderr, "error: %s\n", usage_error.c_str());
    return kExitUsage;
  }

  auto options = engine_options_from(a.engine);
  if (!options.is_ok()) {
    std::fprintf(stderr, "error: %s\n", options.status().message().c_str());
    return kExitUsage;
  }
  const DecodeLimits& limits = options->limits;
  use_threads(a.engine.threads);

  std::unique_ptr<std::ofstream> file_out;
  if (!a.output.empty()) {
    file_out = std::make_unique<std::ofstream>(a.output, std::ios::binary | std::ios::trunc);
    if (!*file_out) {
      std::fprintf(stderr, "error: cannot write output file %s\n", a.output.c_str());
      return kExitUsage;
    }
  }
  std::ostream& out = file_out ? static_cast<std::ostream&>(*file_out) : std::cout;
  if (!a.vis_dir.empty()) {
    std::error_code ec;
    fs::create_directories(a.vis_dir, ec);
    if (ec) {
      std::fprintf(stderr, "error: cannot create --vis directory %s: %s\n", a.vis_dir.c_str(), ec.message().c_str());
      return kExitUsage;
    }
  }

  auto engine_or = OcrEngine::create(*options);
  if (!engine_or.is_ok()) {
    std::fprintf(stderr, "error: %s\n", engine_or.status().message().c_str());
    return is_usage_error(engine_or.status()) ? kExitUsage : kExitFailed;
  }
  OcrEngine& engine = **engine_or;

  const std::vector<std::string> names = output_names(files);
  std::vector<ImageOutcome> outcomes;
  size_t failed = 0;
  Progress progress(files.size(), !a.quiet && files.size() > 3 && isatty(STDERR_FILENO));
  Stopwatch wall;
  if (format == OutputFormat::kTsv) out << tsv_header();

  // Chunks: files are read in parallel, then the engine runs them together (in parallel where the backend
  // allows, spread over the GPUs with several); results are written as each chunk completes, in the input order.
  // On worker rungs (GPUs) two chunks are in flight: the next is read and started while the engine still reads the
  // last images of the one before, so the device does not idle at a chunk's end waiting for its slowest image.
  const size_t chunk = static_cast<size_t>(std::max(8, 2 * num_threads())) * std::max<size_t>(1, engine.gpu_count());
  struct Chunk {
    std::vector<ImageOutcome> batch;
    std::vector<size_t> index;  // batch entries that went to the engine, in the order of its results
    std::future<std::vector<EngineOutcome>> results;
  };
  auto start_chunk = [&](size_t start) {
    const size_t n = std::min(chunk, files.size() - start);
    auto c = std::make_unique<Chunk>();
    c->batch.resize(n);
    std::vector<ImageJob> jobs(n);
    parallel_for_each(static_cast<int64_t>(n), [&](int64_t k) {
      const InputFile& f = files[start + k];
      ImageOutcome& o = c->batch[k];
      o.name = names[start + k];
      o.path = f.path;
      jobs[k].name = o.name;
      if (!a.vis_dir.empty()) jobs[k].vis_format = vis_file(o.name).extension().string();
      if (!f.missing.empty()) {
        o.ok = false;
        o.error = f.path + ": " + f.missing;
        return;
      }
      auto bytes = read_file_bytes(f.path, limits.max_file_bytes);
      if (!bytes.is_ok()) {
        o.ok = false;
        o.error = bytes.status().message();
        return;
      }
      jobs[k].bytes = std::move(*bytes);
    });
    std::vector<ImageJob> to_run;
    for (size_t k = 0; k < n; ++k) {
      if (c->batch[k].ok) {
        to_run.push_back(std::move(jobs[k]));
        c->index.push_back(k);
      }
    }
    if (to_run.empty()) {  // nothing could be read: no engine call
      c->results = std::async(std::launch::deferred, [] { return std::vector<EngineOutcome>(); });
    } else {
      c->results =
          std::async(std::launch::async, [&engine, to_run = std::move(to_run)] { return engine.ocr_batch(to_run); });
    }
    return c;
  };
  std::deque<std::unique_ptr<Chunk>> in_flight;
  size_t next = 0;
  while (next < files.size() || !in_flight.empty()) {
    // A host rung's engine call uses every core itself: one chunk at a time there.
    const size_t depth = is_worker_rung(engine.current_rung()) ? 2 : 1;
    if (next < files.size() && in_flight.size() < depth) {
      in_flight.push_back(start_chunk(next));
      next += in_flight.back()->batch.size();
      continue;
    }
    std::unique_ptr<Chunk> c = std::move(in_flight.front());
    in_flight.pop_front();
    std::vector<EngineOutcome> results = c->results.get();
    std::vector<ImageOutcome>& batch = c->batch;
    for (size_t r = 0; r < results.size(); ++r) {
      ImageOutcome& o = batch[c->index[r]];
      o.fallbacks = results[r].events;
      o.rung = results[r].rung;
      o.gpu = results[r].gpu;
      if (!results[r].status.is_ok()) {
        o.ok = false;
        o.result.backend = backend_of_rung(results[r].rung);
        o.error = o.path + ": " + results[r].status.message();
        continue;
      }
      o.result = std::move(results[r].result);
      if (!a.vis_dir.empty()) {
        // Drawn by the rung from the picture it decoded for reading (the image is decoded once).
        const fs::path file = fs::path(a.vis_dir) / vis_file(o.name);
        Status s = results[r].vis_status;
        if (s.is_ok()) {
          std::ofstream f(file, std::ios::binary | std::ios::trunc);
          f.write(reinterpret_cast<const char*>(results[r].vis.data()),
                  static_cast<std::streamsize>(results[r].vis.size()));
          if (!f) s = invalid_argument("cannot write visualisation " + file.string());
        }
        if (!s.is_ok()) {
          progress.clear();
          std::fprintf(stderr, "warning: %s\n", s.message().c_str());
        }
      }
    }
    for (auto& o : batch) {
      if (!o.ok) {
        ++failed;
        progress.clear();
        std::fprintf(stderr, "error: %s\n", o.error.c_str());
      }
      if (format != OutputFormat::kJson) {
        out << format_outcome(o, format);
        out.flush();
      }
      outcomes.push_back(std::move(o));
    }
    progress.update(outcomes.size());
  }
  if (format == OutputFormat::kJson) out << format_outcomes(outcomes, format);
  out.flush();
  progress.clear();
  const double secs = wall.elapsed_ms() / 1000.0;
  if (!a.quiet) {
    const std::string rung = engine.current_rung();
    const int groups = engine::backend_of_rung(rung) == "cpu" ? engine.options().pipeline.host_groups : 1;
    std::fprintf(stderr, "ocr: %zu images, %zu failed, %.2f s, %.2f images/s, backend %s, %d threads%s\n",
                 outcomes.size(), failed, secs, secs > 0 ? outcomes.size() / secs : 0.0, rung.c_str(), num_threads(),
                 groups > 1 ? fmt::format(" in {} image groups", groups).c_str() : "");
  }
  // Every move on the backend ladder, also with --quiet: a slower backend is never silent.
  for (const auto& e : engine.events()) {
    std::fprintf(stderr, "ocr: backend event %s: %s%s -> %s: %s%s%s\n", e.time.c_str(),
                 e.gpu.empty() ? "" : ("GPU " + e.gpu + ": ").c_str(), e.from.c_str(),
                 e.to.empty() ? "(none)" : e.to.c_str(), e.reason.c_str(),
                 e.detail.empty() ? "" : (" - " + e.detail).c_str(), e.fix.empty() ? "" : ("; fix: " + e.fix).c_str());
  }
  if (engine.gpu_count() > 1 && !a.quiet) {
    for (const auto& g : engine.gpus()) {
      std::fprintf(stderr, "ocr: GPU %s (%s): %llu images read, %s\n", g.gpu.c_str(), g.device.c_str(),
                   static_cast<unsigned long long>(g.images_ok),
                   g.in_service ? ("serving on " + g.rung).c_str() : "out of service");
    }
  }
  for (const auto& [rung, st] : engine.worker_stats()) {
    if (st.worker_losses || st.retries) {
      std::fprintf(stderr, "ocr: %s worker: %llu lost (%llu hung), %llu jobs retried, %llu started\n", rung.c_str(),
                   static_cast<unsigned long long>(st.worker_losses), static_cast<unsigned long long>(st.hangs),
                   static_cast<unsigned long long>(st.retries), static_cast<unsigned long long>(st.worker_starts));
    }
  }
  if (file_out && !*file_out) {
    std::fprintf(stderr, "error: writing %s failed\n", a.output.c_str());
    return kExitFailed;
  }
  return failed > 0 ? kExitFailed : kExitOk;
}

}  // namespace

Command add_ocr_command(CLI::App& root) {
  auto args = std::make_shared<OcrArgs>();
  Command c;
  CLI::App* app = root.add_subcommand("ocr", "Read text in images (PP-OCR: detection, optional angle, recognition)");
  c.app = app;
  app->add_option("inputs", args->inputs, "Image files or directories (jpg, png, bmp, webp, tiff)")->required();
  add_engine_flags(app, &args->engine);
  app->add_option("--format", args->format, "Output format")
      ->check(CLI::IsMember({"json", "jsonl", "tsv", "text"}))
      ->capture_default_str();
  app->add_option("-o,--output", args->output, "Write results to FILE instead of stdout");
  app->add_option("--vis", args->vis_dir, "Write each image with its boxes and text drawn into DIR");
  app->add_flag("-r,--recursive", args->recursive, "Look for images in subdirectories too");
  app->add_flag("-q,--quiet", args->quiet, "No progress bar and no summary line");
  c.run = [args] { return run_ocr(*args); };
  return c;
}

}  // namespace steadyocr::cli
