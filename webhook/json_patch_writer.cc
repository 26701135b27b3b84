#include "webhook/json_patch_writer.h"

#include <algorithm>

#include "webhook/json_text.h"

namespace kube_rdma {
namespace {

// RFC 6901: "~" and "/" in a key are escaped.
std::string childPath(const std::string& path, std::string_view key) {
  std::string out = path + "/";
  for (const char c : key) {
    out += c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c);
  }
  return out;
}

} // namespace

Addition Addition::object(std::initializer_list<std::pair<const char*, Addition>> members) {
  Addition out;
  for (const auto& [name, value] : members) {
    out.children.push_back(value);
    out.children.back().key = name;
  }
  return out;
}

Addition* Addition::find(std::string_view name) {
  auto it = std::find_if(children.begin(), children.end(),
                         [name](const Addition& c) { return c.key == name; });
  return it == children.end() ? nullptr : &*it;
}

Addition& Addition::at(std::string_view name, Kind created) {
  if (Addition* existing = find(name)) {
    return *existing;
  }
  children.push_back({created, std::string(name), "", {}});
  return children.back();
}

void appendJson(std::string& out, const Addition& value) {
  switch (value.kind) {
  case Addition::Kind::kString:
    appendJsonString(out, value.text);
    return;
  case Addition::Kind::kObject:
  case Addition::Kind::kArray:
    const bool object = value.kind == Addition::Kind::kObject;
    out += object ? '{' : '[';
    for (size_t i = 0; i < value.children.size(); ++i) {
      out += i == 0 ? "" : ",";
      if (object) {
        appendJsonString(out, value.children[i].key);
        out += ':';
      }
      appendJson(out, value.children[i]);
    }
    out += object ? '}' : ']';
    return;
  }
}

void mergeRecord(std::string_view previous, Addition& record) {
  simdjson::dom::parser parser;
  JsonElement old;
  JsonElement containers;
  simdjson::dom::object names;
  if (previous.empty() ||
      parser.parse(previous.data(), previous.size()).get(old) != simdjson::SUCCESS ||
      !member(old, "containers", containers) || containers.get(names) != simdjson::SUCCESS) {
    return;
  }
  for (const auto field : names) {
    Addition& merged = record.at("containers").at(field.key, Addition::Kind::kArray);
    for (JsonElement item : arrayOf(field.value)) {
      if (item.is_string() &&
          !std::any_of(merged.children.begin(), merged.children.end(),
                       [&](const Addition& a) { return a.text == stringOf(item); })) {
        merged.children.push_back(Addition::string(std::string(stringOf(item))));
      }
    }
  }
  for (const char* key : {"profile", "volume"}) {
    if (record.find(key) == nullptr && !stringMember(old, key).empty()) {
      record.set(key, std::string(stringMember(old, key)));
    }
  }
}

Status writePatch(std::optional<JsonElement> base, const Addition& additions,
                  const std::string& path, std::string& patch) {
  const auto add = [&patch](const std::string& op_path, const Addition& value) {
    patch += patch.empty() ? "[" : ",";
    patch += R"({"op":"add","path":)";
    appendJsonString(patch, op_path);
    patch += R"(,"value":)";
    appendJson(patch, value);
    patch += '}';
  };
  if (!base || base->is_null()) {
    add(path, additions);
    return Ok{};
  }
  switch (additions.kind) {
  case Addition::Kind::kString:
    if (!base->is_string() || stringOf(*base) != additions.text) {
      add(path, additions);
    }
    return Ok{};
  case Addition::Kind::kObject:
    if (additions.children.empty()) {
      return Ok{};
    }
    if (!base->is_object()) {
      return makeError(path + " is not an object");
    }
    for (const Addition& child : additions.children) {
      JsonElement value;
      Status written = writePatch(
          member(*base, child.key, value) ? std::optional<JsonElement>(value) : std::nullopt, child,
          childPath(path, child.key), patch);
      if (!written.ok()) {
        return written;
      }
    }
    return Ok{};
  case Addition::Kind::kArray:
    break;
  }
  if (!base->is_array()) {
    return makeError(path + " is not an array");
  }
  for (const Addition& element : additions.children) {
    add(path + "/-", element);
  }
  return Ok{};
}

} // namespace kube_rdma
