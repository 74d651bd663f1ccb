// pool_dir.cc: PoolDirectory.
#include "platform/pool_dir.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <utility>

#include "platform/uuid.h"

namespace tesscpp::platform {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kStaging = "staging-";
constexpr std::string_view kLockName = "/lock";

}  // namespace

Result<PoolDirectory> PoolDirectory::Create(const std::string& parent, std::string_view prefix,
                                            std::string_view what) {
  const std::string id = NewUuid4().substr(0, 8);
  const std::string staging = parent + "/" + std::string(prefix) + std::string(kStaging) + id;
  std::string path = parent + "/" + std::string(prefix) + std::to_string(::getpid()) + "-" + id;
  std::error_code ec;
  fs::create_directory(staging, ec);
  if (ec) return Status::IoError("cannot create the ", what, " directory '", staging, "': ", ec.message());
  auto lock = Fd::Open(staging + std::string(kLockName), O_RDWR | O_CREAT | O_CLOEXEC);
  if (lock.ok() && ::flock(lock->get(), LOCK_EX) == 0 && std::rename(staging.c_str(), path.c_str()) == 0) {
    return PoolDirectory(parent, std::string(prefix), std::move(path), *std::move(lock));
  }
  fs::remove_all(staging, ec);
  return Status::IoError("cannot set up the ", what, " directory '", path, "'");
}

PoolDirectory::PoolDirectory(std::string parent, std::string prefix, std::string path, Fd lock)
    : parent_(std::move(parent)),
      prefix_(std::move(prefix)),
      path_(std::move(path)),
      lock_(std::move(lock)),
      owner_(::getpid()) {}

bool PoolDirectory::Owned() const { return ::getpid() == owner_; }

void PoolDirectory::RemoveOrphans() const {
  const std::string staging = prefix_ + std::string(kStaging);
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(parent_, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix_, 0) != 0 || name.rfind(staging, 0) == 0 || entry.path() == path_) continue;
    auto lock = Fd::Open(entry.path().string() + std::string(kLockName), O_RDWR | O_CLOEXEC);
    if (!lock.ok() || ::flock(lock->get(), LOCK_EX | LOCK_NB) != 0) continue;
    std::error_code ignored;
    fs::remove_all(entry.path(), ignored);
  }
}

void PoolDirectory::Remove() const {
  if (!Owned()) return;
  std::error_code ec;
  fs::remove_all(path_, ec);
}

}  // namespace tesscpp::platform
