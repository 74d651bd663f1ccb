// Fuzz target: what the client makes of a server's answer. The first byte
// picks the status (200, 406, 422, 500), the rest is the body: error bodies
// go through ErrorFromResponse (422 detail lists, 406 offers), 200 bodies
// through the answer decoder with arraydict detection. Nothing may crash, and
// an error status must never come back OK.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "client/response_errors.h"
#include "tesscpp/internal/codec/json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tesscpp;
  if (size == 0) return 0;
  static constexpr int kStatuses[] = {200, 406, 422, 500};
  client::HttpResponse response;
  response.status = kStatuses[data[0] % 4];
  response.body = Buffer::FromString(std::string(reinterpret_cast<const char*>(data + 1), size - 1));
  if (response.status == 200) {
    JsonReadOptions read;
    read.arrays = ArrayDetection::kTagged;
    read.array_options.accept_raw = true;
    (void)ReadJson(response.body, read);
    return 0;
  }
  const Status status = client::ErrorFromResponse(response, "apply", std::string("application/json"));
  if (status.ok()) std::abort();
  (void)status.ToString();
  return 0;
}
