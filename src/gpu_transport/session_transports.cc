// session_transports.cc: one request's calls of every transport a session made.
#include "gpu_transport/session_transports.h"

namespace tesscpp::gpu_transport {
namespace {

// The requested transport's call reads and writes the device arrays; the
// others only add their headers and learn the answer's.
class SessionCall final : public ClientCall {
 public:
  SessionCall(std::vector<std::unique_ptr<ClientCall>> calls, ClientCall* requested)
      : calls_(std::move(calls)), requested_(requested) {}

  DeviceArrayWriter* inputs() override { return requested_ != nullptr ? requested_->inputs() : nullptr; }

  Result<std::vector<std::string>> Headers(const Value* payload) override {
    std::vector<std::string> headers;
    for (size_t i = 0; i < calls_.size(); ++i) {
      Result<std::vector<std::string>> more = calls_[i]->Headers(payload);
      if (!more.ok()) {
        // Those that said something take it back: the request is not sent.
        for (size_t j = 0; j < i; ++j) calls_[j]->Unanswered();
        return more.status();
      }
      headers.insert(headers.end(), more->begin(), more->end());
    }
    return headers;
  }

  void Unanswered() override {
    for (const auto& call : calls_) call->Unanswered();
  }

  Result<DeviceArrayReader*> Answered(int status, const HeaderLookup& header) override {
    DeviceArrayReader* outputs = nullptr;
    for (const auto& call : calls_) {
      TESS_ASSIGN_OR_RETURN(DeviceArrayReader * read, call->Answered(status, header));
      if (call.get() == requested_) outputs = read;
    }
    return outputs;
  }

  void Decoded(const Value& outputs) override {
    for (const auto& call : calls_) call->Decoded(outputs);
  }

 private:
  std::vector<std::unique_ptr<ClientCall>> calls_;
  ClientCall* requested_;
};

}  // namespace

ClientTransport* SessionTransports::ClientOf(const TransportEntry& entry) {
  for (const auto& [known, client] : clients_) {
    if (known == &entry) return client.get();
  }
  clients_.emplace_back(&entry, entry.make_client(options_));
  return clients_.back().second.get();
}

Result<std::unique_ptr<ClientCall>> SessionTransports::Begin(std::string_view transport) {
  Result<const TransportEntry*> entry = TransportNamed(transport);
  if (!entry.ok()) {
    return Status::InvalidArgument("gpu_transport: this client does not implement '", transport, "' (",
                                   TransportChoices(NameList::kPlain), ")");
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (*entry != nullptr) ClientOf(**entry);
  std::vector<std::unique_ptr<ClientCall>> calls;
  ClientCall* requested = nullptr;
  for (const auto& [known, client] : clients_) {
    calls.push_back(client->Begin(known == *entry));
    if (known == *entry) requested = calls.back().get();
  }
  return std::unique_ptr<ClientCall>(std::make_unique<SessionCall>(std::move(calls), requested));
}

Result<CheckOutcome> SessionTransports::Check(std::string_view transport, std::string_view peer,
                                              const CheckPost& post) {
  const TransportEntry* entry = FindTransport(transport);
  if (entry == nullptr) {
    return CheckOutcome{false,
                        "this client does not implement gpu_transport '" + std::string(transport) + "'"};
  }
  ClientTransport* client = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    client = ClientOf(*entry);
  }
  return client->Check(peer, post);
}

std::optional<std::vector<std::string>> SessionTransports::Closing() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::optional<std::vector<std::string>> headers;
  for (const auto& [known, client] : clients_) {
    std::optional<std::vector<std::string>> more = client->Closing();
    if (!more) continue;
    if (!headers) headers.emplace();
    headers->insert(headers->end(), more->begin(), more->end());
  }
  return headers;
}

}  // namespace tesscpp::gpu_transport
