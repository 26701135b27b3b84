#include "common/util/metrics.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <numeric>
#include <sstream>

namespace kube_rdma {

Histogram::Histogram(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds)), buckets_(bounds_.size() + 1, 0) {}

void Histogram::observe(double value) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++buckets_[std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin()];
  sum_ += value;
  ++count_;
}

Histogram::Snapshot Histogram::snapshot() const {
  std::lock_guard<std::mutex> lock(mutex_);
  Snapshot s{bounds_, {}, sum_, count_};
  std::partial_sum(buckets_.begin(), buckets_.end(), std::back_inserter(s.cumulative));
  return s;
}

MetricsRegistry::Family& MetricsRegistry::family(const MetricFamily& metric, MetricType type) {
  auto it = families_.find(metric.name);
  if (it == families_.end()) {
    order_.push_back(metric.name);
    it = families_.emplace(metric.name, Family{type, metric.help, {}, {}, {}}).first;
  }
  return it->second;
}

Counter& MetricsRegistry::counter(const MetricFamily& metric, const Labels& labels) {
  std::lock_guard<std::mutex> lock(mutex_);
  return family(metric, MetricType::kCounter).counters.try_emplace(labels).first->second;
}

Gauge& MetricsRegistry::gauge(const MetricFamily& metric, const Labels& labels) {
  std::lock_guard<std::mutex> lock(mutex_);
  return family(metric, MetricType::kGauge).gauges.try_emplace(labels).first->second;
}

Histogram& MetricsRegistry::histogram(const MetricFamily& metric, const std::vector<double>& bounds,
                                      const Labels& labels) {
  std::lock_guard<std::mutex> lock(mutex_);
  return family(metric, MetricType::kHistogram)
      .histograms.try_emplace(labels, bounds)
      .first->second;
}

void MetricsRegistry::clearGauge(const std::string& name) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = families_.find(name);
  if (it != families_.end()) {
    it->second.gauges.clear();
  }
}

namespace {

// Escapes a label value per the exposition format (backslash, quote, newline).
std::string escapeLabelValue(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string formatValue(double v) {
  if (std::isinf(v)) {
    return v > 0 ? "+Inf" : "-Inf";
  }
  if (std::isnan(v)) {
    return "NaN";
  }
  char buf[64];
  // Counts stay whole numbers (1000000, not 1e+06); anything else gets the shortest text that
  // reads back as the same double (0.25 and 5e-05, not 0.25000000000000001).
  constexpr double kExactIntegerLimit = 9007199254740992.0; // 2^53
  const bool whole = std::fabs(v) < kExactIntegerLimit && v == std::trunc(v);
  const auto result = whole ? std::to_chars(buf, buf + sizeof(buf), static_cast<int64_t>(v))
                            : std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, result.ptr);
}

std::string renderLabels(const Labels& labels, const std::string& extra_key = "",
                         const std::string& extra_value = "") {
  if (labels.empty() && extra_key.empty()) {
    return "";
  }
  std::string out = "{";
  for (const auto& [k, v] : labels) {
    out += (out.back() == '{' ? "" : ",") + k + "=\"" + escapeLabelValue(v) + "\"";
  }
  if (!extra_key.empty()) {
    out += (out.back() == '{' ? "" : ",") + extra_key + "=\"" + extra_value + "\"";
  }
  return out + "}";
}

void renderHeader(std::ostream& out, const std::string& name, const std::string& help,
                  MetricType type) {
  const char* type_name = type == MetricType::kCounter ? "counter"
                          : type == MetricType::kGauge ? "gauge"
                                                       : "histogram";
  out << "# HELP " << name << ' ' << help << '\n';
  out << "# TYPE " << name << ' ' << type_name << '\n';
}

} // namespace

std::string MetricsRegistry::render() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::ostringstream out;
  for (const auto& name : order_) {
    const Family& fam = families_.at(name);
    renderHeader(out, name, fam.help, fam.type);
    for (const auto& [labels, c] : fam.counters) {
      out << name << renderLabels(labels) << ' ' << formatValue(c.value()) << '\n';
    }
    for (const auto& [labels, g] : fam.gauges) {
      out << name << renderLabels(labels) << ' ' << formatValue(g.value()) << '\n';
    }
    for (const auto& [labels, h] : fam.histograms) {
      const auto snap = h.snapshot();
      for (size_t i = 0; i < snap.bounds.size(); ++i) {
        out << name << "_bucket" << renderLabels(labels, "le", formatValue(snap.bounds[i])) << ' '
            << snap.cumulative[i] << '\n';
      }
      out << name << "_bucket" << renderLabels(labels, "le", "+Inf") << ' ' << snap.count << '\n';
      out << name << "_sum" << renderLabels(labels) << ' ' << formatValue(snap.sum) << '\n';
      out << name << "_count" << renderLabels(labels) << ' ' << snap.count << '\n';
    }
  }
  return out.str();
}

std::string renderScraped(const std::vector<ScrapedFamily>& families) {
  std::ostringstream out;
  for (const auto& family : families) {
    renderHeader(out, family.name, family.help, family.type);
    for (const auto& [labels, value] : family.samples) {
      out << family.name << renderLabels(labels) << ' ' << formatValue(value) << '\n';
    }
  }
  return out.str();
}

} // namespace kube_rdma
