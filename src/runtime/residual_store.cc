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

// What an entry's copy of `value` holds: tensor bytes, and a rough count for
// the tree (strings, and the nodes of lists and dicts, which a large JSON
// list in the inputs makes many of).
int64_t HeldBytes(const Value& value) {
  constexpr int64_t kNode = 32;
  switch (value.kind()) {
    case Value::Kind::kTensor: return kNode + value.as_tensor().nbytes();
    case Value::Kind::kString: return kNode + static_cast<int64_t>(value.as_string().size());
    case Value::Kind::kList: {
      int64_t bytes = kNode;
      for (const Value& item : value.as_list()) bytes += HeldBytes(item);
      return bytes;
    }
    case Value::Kind::kDict: {
      int64_t bytes = kNode;
      for (const auto& [key, item] : value.as_dict())
        bytes += static_cast<int64_t>(key.size()) + HeldBytes(item);
      return bytes;
    }
    case Value::Kind::kNull:
    case Value::Kind::kBool:
    case Value::Kind::kInt:
    case Value::Kind::kFloat: break;
  }
  return kNode;
}

}  // namespace

ResidualStore::ResidualStore(ResidualLimits limits) : limits_(limits) {}

const std::string& ResidualStore::ProcessToken() {
  const int pid = static_cast<int>(::getpid());
  if (pid != owner_pid_) {
    // A fork: the entries are the parent's, and the parent's references
    // must not resolve here.
    dropped_.splice(dropped_.end(), lru_);
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
  dropped_.splice(dropped_.end(), lru_, entry);
}

void ResidualStore::EvictExpired(Clock::time_point now) {
  // The oldest are at the back only by use; expiry scans all (the store
  // holds few entries: each is a whole forward solve).
  swept_ = now;
  for (auto it = lru_.begin(); it != lru_.end();) {
    auto next = std::next(it);
    if (now - it->made > limits_.ttl) Drop(it, &ResidualStats::evictions);
    it = next;
  }
}

std::optional<std::string> ResidualStore::Put(Value inputs, component::Residual residual) {
  residual.host_bytes += HeldBytes(inputs);
  Lru gone;  // destroyed after the lock is let go
  std::lock_guard<std::mutex> lock(mutex_);
  const std::string token = ProcessToken();
  std::optional<std::string> reference;
  if (residual.host_bytes > limits_.host_bytes || residual.device_bytes > limits_.device_bytes ||
      residual.host_bytes < 0 || residual.device_bytes < 0) {
    ++stats_.refused;
  } else {
    const Clock::time_point now = clock_();
    EvictExpired(now);
    // Least recently used first, among the entries holding the memory that
    // is short: dropping host state does not make room on the device.
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
    lru_.push_front(Entry{RandomHex(), std::make_shared<const Value>(std::move(inputs)),
                          std::make_shared<const component::Residual>(std::move(residual)), now});
    by_id_.emplace(lru_.front().id, lru_.begin());
    reference = token + "." + lru_.front().id;
  }
  gone.splice(gone.end(), dropped_);
  return reference;
}

ResidualStore::Lru::iterator ResidualStore::Locate(std::string_view reference, std::string_view* miss) {
  const std::string& token = ProcessToken();
  const size_t dot = reference.rfind('.');
  if (dot == std::string_view::npos) {
    *miss = "malformed";
  } else if (reference.substr(0, dot) != token) {
    *miss = "another process";
  } else if (auto it = by_id_.find(reference.substr(dot + 1)); it == by_id_.end()) {
    *miss = "unknown";
  } else {
    return it->second;
  }
  return lru_.end();
}

ResidualStore::Found ResidualStore::Find(std::string_view reference, const Value& inputs) {
  Found found;
  Lru gone;
  std::shared_ptr<const Value> made_at;
  std::shared_ptr<const component::Residual> residual;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    EvictExpired(clock_());
    if (auto it = Locate(reference, &found.miss); it != lru_.end()) {
      made_at = it->inputs;
      residual = it->residual;
    } else {
      ++stats_.misses;
    }
    gone.splice(gone.end(), dropped_);
  }
  if (residual == nullptr) return found;
  // Outside the lock: inputs may be large.
  const bool same = SameInputs(*made_at, inputs);
  std::lock_guard<std::mutex> lock(mutex_);
  if (!same) {
    found.miss = "inputs differ";
    ++stats_.misses;
    return found;
  }
  // Still there: the most recently used now.
  if (auto it = Locate(reference, &found.miss); it != lru_.end()) lru_.splice(lru_.begin(), lru_, it);
  found.miss = {};
  found.residual = std::move(residual);
  ++stats_.hits;
  return found;
}

bool ResidualStore::Release(std::string_view references, std::string_view used) {
  Lru gone;
  bool named_used = false;
  std::lock_guard<std::mutex> lock(mutex_);
  while (!references.empty()) {
    const size_t comma = references.find(',');
    std::string_view reference = references.substr(0, comma);
    references = comma == std::string_view::npos ? std::string_view() : references.substr(comma + 1);
    while (!reference.empty() && reference.front() == ' ') reference.remove_prefix(1);
    if (!used.empty() && reference == used) {
      named_used = true;
      continue;
    }
    std::string_view miss;
    if (auto it = Locate(reference, &miss); it != lru_.end()) Drop(it, &ResidualStats::released);
  }
  gone.splice(gone.end(), dropped_);
  return named_used;
}

ResidualStats ResidualStore::Stats() {
  Lru gone;
  std::lock_guard<std::mutex> lock(mutex_);
  // Entries also expire when nothing else touches the store.
  if (const Clock::time_point now = clock_(); now - swept_ >= std::chrono::seconds(1)) EvictExpired(now);
  gone.splice(gone.end(), dropped_);
  return stats_;
}

}  // namespace tesscpp::runtime
