// autodiff_tape.cc: the process's one ADOL-C tape slot.
#include "tesscpp/autodiff/detail/tape.h"

namespace tesscpp::autodiff::internal {

TapeSlot& ProcessTapeSlot() {
  static auto* slot = new TapeSlot();  // leaked: components may use it until exit
  return *slot;
}

}  // namespace tesscpp::autodiff::internal
