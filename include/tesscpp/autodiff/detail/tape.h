// tape.h: the process's one ADOL-C tape slot, shared by every
// component library that uses tesscpp/autodiff.h (internal to it).
//
// ADOL-C keeps its tapes in process-wide state that is not safe to touch from
// two threads at once (docs/autodiff.md: it aborts). Components built from
// autodiff.h in different libraries each get their own copies of its statics,
// so the lock every taping and sweep holds, the count of recordings that
// tells a kept tape from one recorded since by another component, and the
// count of sweeps that tells whether the values a reverse sweep reads are
// still those one forward sweep left, and the directory the process's tapes
// spill to, live in libtesscpp (src/derivation/autodiff_tape.cc), which needs
// no ADOL-C.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

#include "tesscpp/result.h"

namespace tesscpp::autodiff::internal {

struct TapeSlot {
  std::mutex lock;
  uint64_t recordings = 0;  ///< tapes recorded so far, by any component
  /// Passes over the tape so far (recordings, forward and reverse sweeps, by
  /// any component): ADOL-C keeps the values of the last forward pass for one
  /// reverse sweep, which reads them up.
  uint64_t sweeps = 0;
  /// Forward evaluations of derived functions (on doubles, recorded or swept
  /// forward on the tape), for tests that count a step's forward passes.
  std::atomic<uint64_t> forward_passes{0};
  /// The ADOL-C tag this process records under. A forked child records under
  /// the next: its parent's tag keeps the parent's file names (ADOL-C fixes
  /// them when a tag's tape is first made).
  short tag = 1;
  /// The process id whose tape directory ADOL-C's file names point at (0:
  /// none has recorded yet).
  int64_t files_owner = 0;
};

TapeSlot& ProcessTapeSlot();

/// \brief The directory this process's tapes spill to (ADOL-C writes a tape
/// that outgrows its buffers to files): made on the first call in each
/// process, forked children included, under $TESSCPP_TAPE_DIR or else the
/// temporary directory ($TMPDIR, /tmp), as `tesscpp-tapes-<pid>-<id>`.
/// Removed at a normal exit and at quick_exit (how a server's worker ends);
/// one whose process ended otherwise (killed, or a worker abandoning calls at
/// its drain timeout) is removed by the next process that makes one.
Result<std::string> ProcessTapeDirectory();

/// \brief Under `slot.lock`, before any use of the tape: whether this is the
/// process's first (forked children's included), whose caller then points
/// ADOL-C's tape file names at ProcessTapeDirectory(). A forked child's first
/// also moves `tag` on and counts a recording, so that no tape of its
/// parent's (whose files are the parent's) is swept or recorded over in it.
bool ClaimTapeSlot(TapeSlot& slot);

}  // namespace tesscpp::autodiff::internal
