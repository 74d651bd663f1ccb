// residual_store.cc: kept forward state by reference, bounded in bytes and time.
#include "runtime/residual_store.h"

#include <unistd.h>

#include <algorithm>
#include <utility>

#include "platform/uuid.h"

namespace tesscpp::runtime {
namespace {

// 32 random hex digits: references cannot be guessed or collide.
std::string RandomHex() {
  std::string hex = platform::NewUuid4();
  hex.erase(std::remove(hex.begin(), hex.end(), '-'), hex.end());
  return hex;
}

// The bytes of the tensors in `value`: a stored entry keeps its inputs (and so
// their buffers) alive, and the budget counts them.
int64_t TensorBytes(const Value& value) {
  if (value.is_tensor()) return value.as_tensor().nbytes();
  int64_t bytes = 0;
  if (value.is_list()) {
    for (const Value& item : value.as_list()) bytes += TensorBytes(item);
  } else if (value.is_dict()) {
    for (const auto& [key, item] : value.as_dict()) bytes += TensorBytes(item);
  }
  return bytes;
}

}  // namespace

ResidualStore::ResidualStore(ResidualLimits limits) : limits_(limits) {}

const std::string& ResidualStore::ProcessToken() {
  const int pid = static_cast<int>(::getpid());
  if (pid != owner_pid_) {
    // A fork: the entries are the parent's, and the parent's references
    // must not resolve here.
    lru_.clear();
    by_id_.clear();
    stats_ = ResidualStats{};
    owner_pid_ = pid;
    token_ = std::to_string(pid) + "-" + RandomHex();
  }
  return token_;
}

void ResidualStore::Drop(Lru::iterator entry, uint64_t ResidualStats::*counter) {
  stats_.host_bytes -= entry->residual->host_bytes;
  stats_.device_bytes -= entry->residual->device_bytes;
  --stats_.entries;
  ++(stats_.*counter);
  by_id_.erase(entry->id);
  lru_.erase(entry);
}

void ResidualStore::EvictExpired(Clock::time_point now) {
  // The oldest are at the back only by use; expiry scans all (the store
  // holds few entries: each is a whole forward solve).
  for (auto it = lru_.begin(); it != lru_.end();) {
    auto next = std::next(it);
    if (now - it->made > limits_.ttl) Drop(it, &ResidualStats::evictions);
    it = next;
  }
}

std::optional<std::string> ResidualStore::Put(Value inputs, component::Residual residual) {
  residual.host_bytes += TensorBytes(inputs);
  std::lock_guard<std::mutex> lock(mutex_);
  const std::string token = ProcessToken();
  if (residual.host_bytes > limits_.host_bytes || residual.device_bytes > limits_.device_bytes ||
      residual.host_bytes < 0 || residual.device_bytes < 0) {
    ++stats_.refused;
    return std::nullopt;
  }
  const Clock::time_point now = clock_();
  EvictExpired(now);
  // Least recently used first, among the entries holding the memory that is
  // short: dropping host state does not make room on the device.
  for (;;) {
    const bool host_short = stats_.host_bytes + residual.host_bytes > limits_.host_bytes;
    const bool device_short = stats_.device_bytes + residual.device_bytes > limits_.device_bytes;
    if (!host_short && !device_short) break;
    auto victim = std::find_if(lru_.rbegin(), lru_.rend(), [&](const Entry& e) {
      return (host_short && e.residual->host_bytes > 0) || (device_short && e.residual->device_bytes > 0);
    });
    Drop(std::prev(victim.base()), &ResidualStats::evictions);
  }
  stats_.host_bytes += residual.host_bytes;
  stats_.device_bytes += residual.device_bytes;
  ++stats_.entries;
  ++stats_.kept;
  lru_.push_front(Entry{RandomHex(), std::move(inputs),
                        std::make_shared<const component::Residual>(std::move(residual)), now});
  by_id_.emplace(lru_.front().id, lru_.begin());
  return token + "." + lru_.front().id;
}

ResidualStore::Found ResidualStore::Find(std::string_view reference, const Value& inputs) {
  std::lock_guard<std::mutex> lock(mutex_);
  const std::string& token = ProcessToken();
  const size_t dot = reference.rfind('.');
  Found found;
  if (dot == std::string_view::npos) {
    found.miss = "malformed";
  } else if (reference.substr(0, dot) != token) {
    found.miss = "another process";
  } else {
    EvictExpired(clock_());
    auto it = by_id_.find(reference.substr(dot + 1));
    if (it == by_id_.end()) {
      found.miss = "unknown";
    } else if (!(it->second->inputs == inputs)) {
      found.miss = "inputs differ";
    } else {
      lru_.splice(lru_.begin(), lru_, it->second);  // iterators stay valid
      found.residual = lru_.front().residual;
    }
  }
  ++(found.residual != nullptr ? stats_.hits : stats_.misses);
  return found;
}

void ResidualStore::Release(std::string_view references) {
  std::lock_guard<std::mutex> lock(mutex_);
  const std::string& token = ProcessToken();
  while (!references.empty()) {
    const size_t comma = references.find(',');
    std::string_view reference = references.substr(0, comma);
    references = comma == std::string_view::npos ? std::string_view() : references.substr(comma + 1);
    while (!reference.empty() && reference.front() == ' ') reference.remove_prefix(1);
    const size_t dot = reference.rfind('.');
    if (dot == std::string_view::npos || reference.substr(0, dot) != token) continue;
    if (auto it = by_id_.find(reference.substr(dot + 1)); it != by_id_.end()) {
      Drop(it->second, &ResidualStats::released);
    }
  }
}

ResidualStats ResidualStore::Stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

}  // namespace tesscpp::runtime
