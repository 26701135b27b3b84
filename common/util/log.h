#pragma once

#include <chrono>
#include <initializer_list>
#include <mutex>
#include <ostream>
#include <span>
#include <string>
#include <utility>

namespace kube_rdma {

enum class LogLevel { kDebug, kInfo, kWarn, kError };
enum class LogFormat { kText, kJson };

using LogField = std::pair<std::string, std::string>;

// Structured, line-oriented logs an operator can grep: `ts level msg key=value ...` or one JSON
// object per line. Thread-safe; the sink is injected so tests can read what was logged.
class Logger {
public:
  Logger(std::ostream& sink, LogFormat format = LogFormat::kText,
         LogLevel min_level = LogLevel::kInfo)
      : sink_(sink), format_(format), min_level_(min_level) {}

  void log(LogLevel level, const std::string& msg, std::initializer_list<LogField> fields = {});
  void log(LogLevel level, const std::string& msg, std::span<const LogField> fields);
  void debug(const std::string& msg, std::initializer_list<LogField> fields = {}) {
    log(LogLevel::kDebug, msg, fields);
  }
  void info(const std::string& msg, std::initializer_list<LogField> fields = {}) {
    log(LogLevel::kInfo, msg, fields);
  }
  void warn(const std::string& msg, std::initializer_list<LogField> fields = {}) {
    log(LogLevel::kWarn, msg, fields);
  }
  void error(const std::string& msg, std::initializer_list<LogField> fields = {}) {
    log(LogLevel::kError, msg, fields);
  }

private:
  std::ostream& sink_;
  LogFormat format_;
  LogLevel min_level_;
  std::mutex mutex_;
};

// "2026-12-01T23:04:05Z": RFC 3339 in UTC, whole seconds (the fraction is dropped), as NFD's
// expiry-time and Kubernetes' timestamps take it.
std::string rfc3339Utc(std::chrono::system_clock::time_point time);

// "text" or "json"; anything else is an error the caller reports.
bool parseLogFormat(const std::string& text, LogFormat& out);

} // namespace kube_rdma
