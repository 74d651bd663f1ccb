// process_identity.h: a process named so that a reused pid is not taken for it.
//
// A pid alone can be handed to a new process once the old one exits; the pair
// (pid, start time in clock ticks since boot, field 22 of /proc/<pid>/stat)
// cannot. A server uses it to hold GPU memory for a client process exactly as
// long as that process lives (docs/gpu-transport-protocol.md 11).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tesscpp::platform {

struct ProcessIdentity {
  int64_t pid = 0;
  uint64_t start_ticks = 0;

  /// \brief The calling process (nullopt where /proc cannot be read).
  static std::optional<ProcessIdentity> Self();

  /// \brief The process `pid` names now (nullopt when there is none that
  /// this process can see).
  static std::optional<ProcessIdentity> Of(int64_t pid);

  /// \brief "<pid>:<start_ticks>" as ToString() writes it; nullopt for any
  /// other text.
  static std::optional<ProcessIdentity> Parse(std::string_view text);

  std::string ToString() const;

  /// \brief Whether this process runs and this process can see it (false for
  /// one in another pid namespace, unless the same pid there also started at
  /// the same tick).
  bool Alive() const;

  friend bool operator==(const ProcessIdentity&, const ProcessIdentity&) = default;
};

}  // namespace tesscpp::platform
