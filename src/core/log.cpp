#include "core/log.h"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <ctime>
#include <mutex>

namespace steadyocr::log {

const char* level_name(Level l) {
  switch (l) {
    case Level::kDebug:
      return "debug";
    case Level::kInfo:
      return "info";
    case Level::kWarn:
      return "warn";
    case Level::kError:
      return "error";
    case Level::kOff:
      return "off";
  }
  return "?";
}

namespace {

std::atomic<Level> g_level{Level::kInfo};
std::atomic<bool> g_json{false};
std::mutex g_gpu_mu;
std::string g_gpu;  // set once, before the worker serves

spdlog::logger& logger() {
  static std::shared_ptr<spdlog::logger> l = [] {
    auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
    auto lg = std::make_shared<spdlog::logger>("steadyocr", sink);
    lg->set_pattern("%v");
    lg->set_level(spdlog::level::trace);
    return lg;
  }();
  return *l;
}

}  // namespace

void set_level(Level level) {
  g_level = level;
}
Level level() {
  return g_level.load(std::memory_order_relaxed);
}
void set_json(bool json) {
  g_json = json;
}
void set_gpu(const std::string& gpu) {
  std::lock_guard<std::mutex> lock(g_gpu_mu);
  g_gpu = gpu;
}

bool parse_level(std::string_view name, Level* out) {
  for (Level l : {Level::kDebug, Level::kInfo, Level::kWarn, Level::kError, Level::kOff}) {
    if (name == level_name(l)) {
      *out = l;
      return true;
    }
  }
  return false;
}

namespace {

// One line; `fields` null or a JSON value (write_record).
void write_line(Level level, std::string_view component, std::string_view message, const nlohmann::json* fields) {
  if (level < g_level.load() || level == Level::kOff) return;
  auto now = std::chrono::system_clock::now();
  std::time_t secs = std::chrono::system_clock::to_time_t(now);
  int ms =
      static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), g_json ? "%Y-%m-%dT%H:%M:%S" : "%H:%M:%S", &tm);
  std::string gpu;
  {
    std::lock_guard<std::mutex> lock(g_gpu_mu);
    gpu = g_gpu;
  }
  if (g_json) {  // one JSON object a line, written by nlohmann::json (invalid UTF-8 replaced, not an error)
    nlohmann::ordered_json line;
    line["ts"] = fmt::format("{}.{:03d}Z", stamp, ms);
    line["level"] = level_name(level);
    line["component"] = std::string(component);
    line["msg"] = std::string(message);
    if (!gpu.empty()) line["gpu"] = gpu;
    if (fields && fields->is_object()) {
      for (const auto& [key, value] : fields->items()) line[key] = value;
    } else if (fields && !fields->is_null()) {
      line["fields"] = *fields;
    }
    logger().info("{}", line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  } else {
    static const char* kTags[] = {"DEBUG", "INFO ", "WARN ", "ERROR"};
    const std::string extra =
        fields && !fields->is_null() ? fields->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) : "";
    logger().info("[{}.{:03d}] {} [{}] {}{}{}{}", stamp, ms, kTags[static_cast<int>(level)], component,
                  gpu.empty() ? "" : "GPU " + gpu + ": ", message, extra.empty() ? "" : " ", extra);
  }
}

}  // namespace

void write(Level level, std::string_view component, std::string_view message) {
  write_line(level, component, message, nullptr);
}

void write_record(Level level, std::string_view component, std::string_view message, const nlohmann::json& fields) {
  write_line(level, component, message, &fields);
}

}  // namespace steadyocr::log
