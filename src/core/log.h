// One levelled logger for the whole project (spdlog underneath), every line prefixed with its component.
#pragma once

#include <fmt/format.h>

#include <nlohmann/json_fwd.hpp>

#include <string>
#include <string_view>

namespace steadyocr::log {

enum class Level { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3, kOff = 4 };

void set_level(Level level);
Level level();
// "debug", "info", "warn", "error" or "off".
const char* level_name(Level level);
// Parses "debug|info|warn|error|off"; returns false on an unknown name.
bool parse_level(std::string_view name, Level* out);
// Structured JSON lines instead of text (used by the server).
void set_json(bool json);
// Every later line of this process names its GPU (a worker pinned to one of several): "gpu":"K" in JSON mode, a
// "GPU K: " before the message in text mode. "" names none.
void set_gpu(const std::string& gpu);
void write(Level level, std::string_view component, std::string_view message);
// A structured record: the members of `fields` (a JSON object) join the line's own (ts, level, component, msg) in
// JSON mode (a value that is not an object goes in as "fields"); in text mode its text follows the message.
void write_record(Level level, std::string_view component, std::string_view message, const nlohmann::json& fields);

template <typename... A>
void debug(std::string_view component, fmt::format_string<A...> f, A&&... a) {
  if (level() <= Level::kDebug) write(Level::kDebug, component, fmt::format(f, std::forward<A>(a)...));
}
template <typename... A>
void info(std::string_view component, fmt::format_string<A...> f, A&&... a) {
  if (level() <= Level::kInfo) write(Level::kInfo, component, fmt::format(f, std::forward<A>(a)...));
}
template <typename... A>
void warn(std::string_view component, fmt::format_string<A...> f, A&&... a) {
  if (level() <= Level::kWarn) write(Level::kWarn, component, fmt::format(f, std::forward<A>(a)...));
}
template <typename... A>
void error(std::string_view component, fmt::format_string<A...> f, A&&... a) {
  if (level() <= Level::kError) write(Level::kError, component, fmt::format(f, std::forward<A>(a)...));
}

}  // namespace steadyocr::log
