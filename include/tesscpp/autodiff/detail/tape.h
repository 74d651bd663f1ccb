// tape.h: the process's one ADOL-C tape slot, shared by every
// component library that uses tesscpp/autodiff.h (internal to it).
//
// ADOL-C keeps its tapes in process-wide state that is not safe to touch from
// two threads at once (docs/autodiff.md: it aborts). Components built from
// autodiff.h in different libraries each get their own copies of its statics,
// so the lock every taping and sweep holds, and the count of recordings that
// tells a kept tape from one recorded since by another component, live in
// libtesscpp (src/derivation/autodiff_tape.cc), which needs no ADOL-C.
#pragma once

#include <cstdint>
#include <mutex>

namespace tesscpp::autodiff::internal {

struct TapeSlot {
  std::mutex lock;
  uint64_t recordings = 0;  ///< tapes recorded so far, by any component
};

TapeSlot& ProcessTapeSlot();

}  // namespace tesscpp::autodiff::internal
