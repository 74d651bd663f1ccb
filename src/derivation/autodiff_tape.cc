// autodiff_tape.cc: the process's one ADOL-C tape slot and tape directory.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <utility>

#include "platform/pool_dir.h"
#include "tesscpp/autodiff/detail/tape.h"

namespace tesscpp::autodiff::internal {

namespace {

// This process's tape directory. In a forked child the copy is the parent's,
// which Remove leaves alone.
struct HeldTapeDirectory {
  std::optional<platform::PoolDirectory> dir;
  void Remove() const {
    if (dir) dir->Remove();
  }
  ~HeldTapeDirectory() { Remove(); }
};

HeldTapeDirectory& Held() {
  static HeldTapeDirectory held;
  return held;
}

}  // namespace

TapeSlot& ProcessTapeSlot() {
  static auto* slot = new TapeSlot();  // leaked: components may use it until exit
  return *slot;
}

Result<std::string> ProcessTapeDirectory() {
  HeldTapeDirectory& held = Held();
  if (held.dir && held.dir->Owned()) return held.dir->path();
  std::string parent;
  if (const char* chosen = std::getenv("TESSCPP_TAPE_DIR"); chosen != nullptr && *chosen != '\0') {
    parent = chosen;
  } else {
    std::error_code ec;
    parent = std::filesystem::temp_directory_path(ec).string();
    if (ec) return Status::IoError("no temporary directory for ADOL-C's tapes: ", ec.message());
  }
  TESS_ASSIGN_OR_RETURN(platform::PoolDirectory made,
                        platform::PoolDirectory::Create(parent, "tesscpp-tapes-", "ADOL-C tape"));
  made.RemoveOrphans();
  held.dir.emplace(std::move(made));
  // A server's worker ends with quick_exit, which runs no destructors (they
  // would free what its parent's threads held at the fork) but this.
  static const bool registered = std::at_quick_exit([] { Held().Remove(); }) == 0;
  (void)registered;
  return held.dir->path();
}

bool ClaimTapeSlot(TapeSlot& slot) {
  const int64_t self = ::getpid();
  if (slot.files_owner == self) return false;
  if (slot.files_owner != 0) {  // a forked child: the parent's tapes are not its own
    ++slot.tag;
    ++slot.recordings;
  }
  slot.files_owner = self;
  return true;
}

}  // namespace tesscpp::autodiff::internal
