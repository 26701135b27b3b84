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

void appendDigits(std::string& out, long long value, int width) {
  char digits[20];
  for (int i = width - 1; i >= 0; --i) {
    digits[i] = static_cast<char>('0' + value % 10);
    value /= 10;
  }
  out.append(digits, static_cast<size_t>(width));
}

// "2026-11-30T18:42:05.123Z". The date and time of day are formatted once a second per thread:
// gmtime_r and strftime cost more than the rest of a log line.
void appendTimestamp(std::string& out) {
  const auto now = std::chrono::system_clock::now();
  const auto millis = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch());
  const std::time_t secs = static_cast<std::time_t>(millis.count() / 1000);
  thread_local std::time_t cached_secs = -1;
  thread_local std::string cached; // up to the seconds
  if (secs != cached_secs) {
    std::tm tm{};
    gmtime_r(&secs, &tm);
    cached.clear();
    appendDigits(cached, tm.tm_year + 1900, 4);
    cached += '-';
    appendDigits(cached, tm.tm_mon + 1, 2);
    cached += '-';
    appendDigits(cached, tm.tm_mday, 2);
    cached += 'T';
    appendDigits(cached, tm.tm_hour, 2);
    cached += ':';
    appendDigits(cached, tm.tm_min, 2);
    cached += ':';
    appendDigits(cached, tm.tm_sec, 2);
    cached_secs = secs;
  }
  out += cached;
  out += '.';
  appendDigits(out, millis.count() % 1000, 3);
  out += 'Z';
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
std::string jsonLine(LogLevel level, const std::string& msg,
                     std::initializer_list<LogField> fields) {
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
  if (level < min_level_) {
    return;
  }
  std::string line;
  line.reserve(128 + msg.size());
  if (format_ == LogFormat::kJson) {
    line = jsonLine(level, msg, fields);
  } else {
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
