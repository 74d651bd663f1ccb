#include "http/access_log.h"

#include <unistd.h>

#include <chrono>

#include "tesscpp/internal/codec/json.h"
#include "tesscpp/value.h"

namespace tesscpp::http {

void LogAccess(int fd, std::string_view method, std::string_view target, int status, double seconds,
               int64_t bytes_in, int64_t bytes_out, const std::string& remote) {
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  const Value line = Value::Dict{{"time", Value(now)},
                                 {"remote", Value(remote)},
                                 {"method", Value(std::string(method))},
                                 {"target", Value(std::string(target))},
                                 {"status", Value(static_cast<int64_t>(status))},
                                 {"duration_ms", Value(seconds * 1e3)},
                                 {"bytes_in", Value(bytes_in)},
                                 {"bytes_out", Value(bytes_out)}};
  auto json = WriteJson(line);
  if (!json.ok()) return;
  std::string text(json->string_view());
  text += '\n';
  (void)!::write(fd, text.data(), text.size());
}

}  // namespace tesscpp::http
