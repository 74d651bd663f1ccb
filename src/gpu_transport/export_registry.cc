// export_registry.cc: export groups kept for clients.
#include "gpu_transport/export_registry.h"

#include <algorithm>
#include <map>

#include "platform/uuid.h"

namespace tesscpp::gpu_transport {

template <typename Drop>
void ExportRegistry::ReleaseIf(const Drop& drop) {
  std::vector<Group> released;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = groups_.begin(); it != groups_.end();) {
      if (drop(it->first, it->second)) {
        released.push_back(std::move(it->second));
        it = groups_.erase(it);
      } else {
        ++it;
      }
    }
  }
}

template <typename Drop>
void ExportRegistry::ReleaseExpiredAnd(const Drop& drop) {
  const auto now = clock_();
  std::map<int64_t, bool> alive;  // per borrower pid: /proc is read once per sweep
  ReleaseIf([&](const std::string& id, const Group& group) {
    if (drop(id, group)) return true;
    if (!group.borrower) return now - group.kept_at > kTimeout;
    auto [it, first] = alive.emplace(group.borrower->pid, false);
    if (first) it->second = group.borrower->Alive();
    return !it->second;
  });
}

void ExportRegistry::OnRequest(const std::optional<std::string>& exports_done) {
  if (!exports_done || exports_done->empty()) return;
  std::vector<std::string> ids;
  for (size_t start = 0;;) {
    const size_t comma = exports_done->find(',', start);
    ids.push_back(
        exports_done->substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  ReleaseExpiredAnd([&](const std::string& id, const Group&) {
    return std::find(ids.begin(), ids.end(), id) != ids.end();
  });
}

void ExportRegistry::BeforeEndpoint(bool acknowledged) {
  ReleaseExpiredAnd(
      [&](const std::string&, const Group& group) { return !acknowledged && !group.acknowledged; });
}

std::optional<std::string> ExportRegistry::Keep(std::vector<std::shared_ptr<void>> pins, bool acknowledged,
                                                std::optional<platform::ProcessIdentity> borrower) {
  if (pins.empty()) return std::nullopt;
  std::string id = platform::NewUuid4();  // uuid4().hex: the 32 hex digits
  id.erase(std::remove(id.begin(), id.end(), '-'), id.end());
  std::lock_guard<std::mutex> lock(mutex_);
  groups_[id] = Group{std::move(pins), clock_(), acknowledged, borrower};
  return id;
}

size_t ExportRegistry::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return groups_.size();
}

}  // namespace tesscpp::gpu_transport
