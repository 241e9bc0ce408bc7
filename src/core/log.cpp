#include "core/log.h"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

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

std::string json_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 8);
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += fmt::format("\\u{:04x}", static_cast<int>(c));
        } else {
          out += c;
        }
    }
  }
  return out;
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

void write(Level level, std::string_view component, std::string_view message) {
  write_record(level, component, message, "");
}

void write_record(Level level, std::string_view component, std::string_view message, std::string_view fields) {
  if (level < g_level.load() || level == Level::kOff) return;
  // The members of the caller's object, without its braces.
  std::string_view members;
  if (fields.size() > 2 && fields.front() == '{' && fields.back() == '}') members = fields.substr(1, fields.size() - 2);
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
  if (g_json) {
    const std::string gpu_member = gpu.empty() ? "" : R"(,"gpu":")" + json_escape(gpu) + "\"";
    logger().info(R"({{"ts":"{}.{:03d}Z","level":"{}","component":"{}","msg":"{}"{}{}{}}})", stamp, ms,
                  level_name(level), json_escape(component), json_escape(message), gpu_member,
                  members.empty() ? "" : ",", members);
  } else {
    static const char* kTags[] = {"DEBUG", "INFO ", "WARN ", "ERROR"};
    logger().info("[{}.{:03d}] {} [{}] {}{}{}{}", stamp, ms, kTags[static_cast<int>(level)], component,
                  gpu.empty() ? "" : "GPU " + gpu + ": ", message, fields.empty() ? "" : " ", fields);
  }
}

}  // namespace steadyocr::log
