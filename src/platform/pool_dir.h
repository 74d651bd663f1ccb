// pool_dir.h: a directory of one process's own, removed when it is gone.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>

#include "tesscpp/internal/platform/file.h"
#include "tesscpp/result.h"

namespace tesscpp::platform {

/// \brief A directory that one process owns: `<parent>/<prefix><pid>-<id>`.
/// The runtime's pools of files made ahead of the calls that use them
/// (RunDirectoryPool, BinrefOutputPool) live in the output path, so that
/// renaming a file out is atomic and cheap; the ADOL-C tapes a process
/// writes to disk live in one (derivation's ProcessTapeDirectory), so that
/// processes started in one directory never share tape files.
///
/// Its owner holds an exclusive flock on its `lock` file for as long as the
/// owner lives, so a pool whose lock can be taken has no owner left (killed,
/// or a server worker that ended with _Exit): RemoveOrphans removes those.
/// Unlike a pid, that holds across pid namespaces (containers sharing an
/// output volume on one host) and pid reuse. A forked child inherits the
/// object but not the pool: Owned() is false there.
class PoolDirectory {
 public:
  /// \brief Made under a staging name and locked before it takes the pool's
  /// name, so that no other process's clean-up ever sees it unlocked.
  /// `what` names the pool in errors.
  static Result<PoolDirectory> Create(const std::string& parent, std::string_view prefix,
                                      std::string_view what);

  const std::string& path() const { return path_; }
  /// \brief Whether this process made the pool (false in a forked child).
  bool Owned() const;
  /// \brief Removes the other pools of the same prefix in the parent whose
  /// lock can be taken. Lists the parent, which may hold many runs: for a
  /// pool's background thread, not a call.
  void RemoveOrphans() const;
  /// \brief Removes the directory with what is left in it (the owner's
  /// last step; a no-op in a forked child).
  void Remove() const;

 private:
  PoolDirectory(std::string parent, std::string prefix, std::string path, Fd lock);

  std::string parent_;
  std::string prefix_;
  std::string path_;
  Fd lock_;  // flock'ed while the owner lives
  pid_t owner_;
};

}  // namespace tesscpp::platform
