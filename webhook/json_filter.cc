#include "webhook/json_filter.h"

namespace kube_rdma {
namespace {

using nlohmann::json;

// nlohmann's SAX interface. Kept values are built in place like json_sax_dom_parser does (members
// of std::map nodes and the last element of an array do not move while they are open); dropped
// values are only counted.
class FilteringSax {
public:
  FilteringSax(const JsonFilter& filter, size_t max_depth)
      : root_filter_(filter), max_depth_(max_depth) {}

  bool null() { return scalar(nullptr); }
  bool boolean(bool value) { return scalar(value); }
  bool number_integer(json::number_integer_t value) { return scalar(value); }
  bool number_unsigned(json::number_unsigned_t value) { return scalar(value); }
  bool number_float(json::number_float_t value, const json::string_t&) { return scalar(value); }
  bool string(json::string_t& value) { return scalar(value); }
  bool binary(json::binary_t&) { return false; } // JSON text has no binary values

  bool start_object(size_t) { return open(json::value_t::object); }
  bool start_array(size_t) { return open(json::value_t::array); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }

  bool key(json::string_t& name) {
    if (dropped_depth_ > 0) {
      return true;
    }
    const Frame& object = stack_.back();
    pending_filter_ = object.filter->member(name);
    pending_ = pending_filter_ != nullptr ? &(*object.value)[name] : nullptr;
    return true;
  }

  bool parse_error(size_t, const std::string&, const nlohmann::detail::exception&) { return false; }

  bool tooDeep() const { return too_deep_; }
  json& root() { return root_; }

private:
  struct Frame {
    json* value;
    const JsonFilter* filter;
  };
  struct Slot {
    json* value; // nullptr: dropped
    const JsonFilter* filter;
  };

  // Where the value that starts now goes.
  Slot take() {
    if (stack_.empty()) {
      return {&root_, &root_filter_};
    }
    const Frame& parent = stack_.back();
    if (parent.value->is_array()) {
      return {&parent.value->emplace_back(), parent.filter};
    }
    return {std::exchange(pending_, nullptr), pending_filter_};
  }

  template <class T> bool scalar(T&& value) {
    if (dropped_depth_ == 0) {
      if (const Slot slot = take(); slot.value != nullptr) {
        *slot.value = std::forward<T>(value);
      }
    }
    return true;
  }

  bool open(json::value_t type) {
    if (++depth_ > max_depth_) {
      too_deep_ = true;
      return false;
    }
    if (dropped_depth_ > 0) {
      ++dropped_depth_;
      return true;
    }
    const Slot slot = take();
    if (slot.value == nullptr) {
      dropped_depth_ = 1;
      return true;
    }
    *slot.value = json(type);
    stack_.push_back({slot.value, slot.filter});
    return true;
  }

  bool close() {
    --depth_;
    if (dropped_depth_ > 0) {
      --dropped_depth_;
    } else {
      stack_.pop_back();
    }
    return true;
  }

  const JsonFilter& root_filter_;
  const size_t max_depth_;
  json root_;
  std::vector<Frame> stack_;
  json* pending_ = nullptr; // the member a kept key named; nullptr after a dropped key
  const JsonFilter* pending_filter_ = nullptr;
  size_t dropped_depth_ = 0; // open objects and arrays inside a dropped value
  size_t depth_ = 0;
  bool too_deep_ = false;
};

} // namespace

const JsonFilter* JsonFilter::member(std::string_view key) const {
  if (keep_all_) {
    return this;
  }
  for (const auto& [name, filter] : members_) {
    if (name == key) {
      return &filter;
    }
  }
  return nullptr;
}

Result<nlohmann::json> parseFiltered(std::string_view text, const JsonFilter& filter,
                                     size_t max_depth) {
  FilteringSax sax(filter, max_depth);
  if (!json::sax_parse(text.begin(), text.end(), &sax)) {
    if (sax.tooDeep()) {
      return makeError("nests deeper than " + std::to_string(max_depth) + " levels");
    }
    return makeError("not JSON");
  }
  return std::move(sax.root());
}

} // namespace kube_rdma
