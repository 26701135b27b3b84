#pragma once

#include <atomic>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

// Prometheus text exposition (format 0.0.4). Counters, gauges and histograms with labels; the
// registry renders them in registration order. No HTTP here: the daemons serve render().
namespace kube_rdma {

using Labels = std::map<std::string, std::string>;

enum class MetricType { kCounter, kGauge, kHistogram };

class Counter {
public:
  void inc(double by = 1.0) { value_ += by; }
  double value() const { return value_; }

private:
  std::atomic<double> value_{0};
};

class Gauge {
public:
  void set(double value) { value_ = value; }
  double value() const { return value_; }

private:
  std::atomic<double> value_{0};
};

class Histogram {
public:
  explicit Histogram(std::vector<double> upper_bounds); // ascending
  void observe(double value);
  struct Snapshot {
    std::vector<double> bounds;
    std::vector<uint64_t> cumulative; // one per bound, then +Inf
    double sum = 0;
    uint64_t count = 0;
  };
  Snapshot snapshot() const;

private:
  std::vector<double> bounds_;
  mutable std::mutex mutex_;
  std::vector<uint64_t> buckets_;
  double sum_ = 0;
  uint64_t count_ = 0;
};

// A metric family's name and help text: a daemon defines each of its metrics once, as one of these.
struct MetricFamily {
  const char* name;
  const char* help;
};

// A named metric family; each distinct label set is one time series.
class MetricsRegistry {
public:
  Counter& counter(const MetricFamily& metric, const Labels& labels = {});
  Gauge& gauge(const MetricFamily& metric, const Labels& labels = {});
  Histogram& histogram(const MetricFamily& metric, const std::vector<double>& bounds,
                       const Labels& labels = {});
  // Drops every series of a gauge family, for values recomputed as a whole (devices by health).
  void clearGauge(const std::string& name);
  std::string render() const;

private:
  // Map nodes never move: the references handed out stay valid as series are added.
  struct Family {
    MetricType type;
    std::string help;
    std::map<Labels, Counter> counters;
    std::map<Labels, Gauge> gauges;
    std::map<Labels, Histogram> histograms;
  };
  Family& family(const MetricFamily& metric, MetricType type);

  mutable std::mutex mutex_;
  std::vector<std::string> order_;
  std::map<std::string, Family> families_;
};

// A family whose values are read when scraped (sysfs counters), not kept in a registry: the kernel
// holds the count, so the exposition carries the value read, typed as what it is.
struct ScrapedFamily {
  std::string name;
  std::string help;
  MetricType type = MetricType::kCounter; // counter or gauge
  std::vector<std::pair<Labels, double>> samples;
};

// The exposition of `families`, in order, in the format MetricsRegistry::render() uses.
std::string renderScraped(const std::vector<ScrapedFamily>& families);

} // namespace kube_rdma
