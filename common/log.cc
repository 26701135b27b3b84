#include "common/log.h"

#include <chrono>
#include <ctime>

#include <nlohmann/json.hpp>

namespace kube_rdma {
namespace {

const char* levelName(LogLevel level) {
  switch (level) {
  case LogLevel::kDebug:
    return "debug";
  case LogLevel::kInfo:
    return "info";
  case LogLevel::kWarn:
    return "warn";
  case LogLevel::kError:
    return "error";
  }
  return "info";
}

std::string timestamp() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t secs = std::chrono::system_clock::to_time_t(now);
  const auto millis =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[40];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
  char out[48];
  std::snprintf(out, sizeof(out), "%s.%03lldZ", buf, static_cast<long long>(millis));
  return out;
}

// Quote a text value only when it needs it, so plain values stay grep-friendly.
std::string quoteIfNeeded(const std::string& value) {
  if (!value.empty() && value.find_first_of(" \"=\t\n") == std::string::npos) {
    return value;
  }
  return nlohmann::json(value).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

} // namespace

void Logger::log(LogLevel level, const std::string& msg, std::initializer_list<LogField> fields) {
  if (level < min_level_) {
    return;
  }
  std::string line;
  if (format_ == LogFormat::kJson) {
    nlohmann::ordered_json obj;
    obj["ts"] = timestamp();
    obj["level"] = levelName(level);
    obj["msg"] = msg;
    for (const auto& [key, value] : fields) {
      obj[key] = value;
    }
    line = obj.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  } else {
    line = timestamp() + " " + levelName(level) + " " + quoteIfNeeded(msg);
    for (const auto& [key, value] : fields) {
      line += " " + key + "=" + quoteIfNeeded(value);
    }
  }
  line += '\n';
  std::lock_guard<std::mutex> lock(mutex_);
  sink_ << line << std::flush;
}

bool parseLogFormat(const std::string& text, LogFormat& out) {
  if (text == "text") {
    out = LogFormat::kText;
    return true;
  }
  if (text == "json") {
    out = LogFormat::kJson;
    return true;
  }
  return false;
}

} // namespace kube_rdma
