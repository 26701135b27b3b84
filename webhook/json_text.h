#pragma once

#include <string>
#include <string_view>

// The webhook writes its JSON (patch, injected record, reply) as text from what it built, not
// through a DOM. Its strings are valid UTF-8: they come from simdjson's parse, which checks, or
// from the policy, which nlohmann-json checked.
namespace kube_rdma {

// Appends `text` as a JSON string, escaping the quote, the backslash and control characters.
void appendJsonString(std::string& out, std::string_view text);

} // namespace kube_rdma
