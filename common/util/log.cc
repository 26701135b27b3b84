#include "common/util/log.h"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <iterator>

#include <nlohmann/json.hpp>

namespace kube_rdma {
namespace {

const char* levelName(LogLevel level) {
  static constexpr const char* kNames[] = {"debug", "info", "warn", "error"};
  static_assert(std::size(kNames) == static_cast<size_t>(LogLevel::kError) + 1);
  return kNames[static_cast<size_t>(level)];
}

// "2026-11-30T18:42:05.123Z".
void appendTimestamp(std::string& out) {
  const long long millis = std::chrono::duration_cast<std::chrono::milliseconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count();
  const std::time_t secs = static_cast<std::time_t>(millis / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char text[40];
  const size_t length = std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &tm);
  std::snprintf(text + length, sizeof text - length, ".%03lldZ", millis % 1000);
  out += text;
}

// Quote a text value only when it needs it, so plain values stay grep-friendly.
void appendTextValue(std::string& out, const std::string& value) {
  if (!value.empty() && value.find_first_of(" \"=\t\n") == std::string::npos) {
    out += value;
    return;
  }
  out += nlohmann::json(value).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// One JSON object per line. A key given twice (or "ts", "level", "msg" again) keeps one member,
// the last value at the first position, as a JSON object must.
std::string jsonLine(LogLevel level, const std::string& msg, std::span<const LogField> fields) {
  std::string ts;
  appendTimestamp(ts);
  nlohmann::ordered_json obj;
  obj["ts"] = ts;
  obj["level"] = levelName(level);
  obj["msg"] = msg;
  for (const auto& [key, value] : fields) {
    obj[key] = value;
  }
  return obj.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

} // namespace

void Logger::log(LogLevel level, const std::string& msg, std::initializer_list<LogField> fields) {
  log(level, msg, std::span<const LogField>(fields.begin(), fields.size()));
}

void Logger::log(LogLevel level, const std::string& msg, std::span<const LogField> fields) {
  if (level < min_level_) {
    return;
  }
  std::string line;
  if (format_ == LogFormat::kJson) {
    line = jsonLine(level, msg, fields);
  } else {
    line.reserve(128 + msg.size());
    appendTimestamp(line);
    line += ' ';
    line += levelName(level);
    line += ' ';
    appendTextValue(line, msg);
    for (const auto& [key, value] : fields) {
      line += ' ';
      line += key;
      line += '=';
      appendTextValue(line, value);
    }
  }
  line += '\n';
  std::lock_guard<std::mutex> lock(mutex_);
  sink_ << line << std::flush;
}

std::string rfc3339Utc(std::chrono::system_clock::time_point time) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(time);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[32];
  const size_t n = std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return std::string(text, n);
}

bool parseLogFormat(const std::string& text, LogFormat& out) {
  if (text != "text" && text != "json") {
    return false;
  }
  out = text == "json" ? LogFormat::kJson : LogFormat::kText;
  return true;
}

} // namespace kube_rdma
