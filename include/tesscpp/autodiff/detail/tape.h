// tape.h: the process's one ADOL-C tape slot, shared by every
// component library that uses tesscpp/autodiff.h (internal to it).
//
// ADOL-C keeps its tapes in process-wide state that is not safe to touch from
// two threads at once (docs/autodiff.md: it aborts). Components built from
// autodiff.h in different libraries each get their own copies of its statics,
// so the lock every taping and sweep holds, the count of recordings that
// tells a kept tape from one recorded since by another component, and the
// count of sweeps that tells whether the values a reverse sweep reads are
// still those one forward sweep left, live in libtesscpp
// (src/derivation/autodiff_tape.cc), which needs no ADOL-C.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>

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
};

TapeSlot& ProcessTapeSlot();

}  // namespace tesscpp::autodiff::internal
