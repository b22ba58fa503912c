#pragma once
// A request the server refuses: the HTTP status and a message naming the field and the value.
// Answered as text-embeddings-inference answers errors: {"error": message, "error_type": type}.
#include <stdexcept>
#include <string>

namespace xg::serve {

struct HttpError : std::runtime_error {
  HttpError(int status, const std::string& message) : std::runtime_error(message), status(status) {}
  int status;
};

// The error_type of a status: "validation" (400, 413, 422), "not_found" (404), "overloaded"
// (503), "backend" (500).
inline std::string error_type(int status) {
  if (status == 404) return "not_found";
  if (status == 503) return "overloaded";
  if (status >= 500) return "backend";
  return "validation";
}

}  // namespace xg::serve
