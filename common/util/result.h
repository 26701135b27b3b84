#pragma once

#include <string>
#include <utility>
#include <variant>

namespace kube_rdma {

// An error that says what was wrong, in words an operator can act on.
struct Error {
  std::string message;
};

// A value or an Error. C++20 has no std::expected; this is the one result type the project uses.
// E is Error but where callers must tell errors apart by more than words (kubeclient/'s ApiError
// carries the HTTP status). [[nodiscard]]: an ignored Status is an error nobody logs.
template <class T, class E = Error> class [[nodiscard]] Result {
public:
  Result(T value) : state_(std::move(value)) {} // NOLINT(google-explicit-constructor)
  Result(E error) : state_(std::move(error)) {} // NOLINT(google-explicit-constructor)

  bool ok() const { return std::holds_alternative<T>(state_); }
  explicit operator bool() const { return ok(); }

  const T& value() const& { return std::get<T>(state_); }
  T& value() & { return std::get<T>(state_); }
  T&& value() && { return std::get<T>(std::move(state_)); }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

  const E& error() const { return std::get<E>(state_); }

private:
  std::variant<T, E> state_;
};

// For operations that return nothing but can fail.
struct Ok {};
using Status = Result<Ok>;

inline Error makeError(std::string message) {
  return Error{std::move(message)};
}

// An error in line `number` (1-based) of the file named `file`, as the procfs parsers report one.
inline Error lineError(const char* file, size_t number, const std::string& what) {
  return makeError(std::string(file) + " line " + std::to_string(number) + ": " + what);
}

} // namespace kube_rdma
