// component_abi.h: the versioned entry point of a component library.
//
// A component library (lib<name>.so) exports one C function,
// `tesscpp_component_entry_v1`, returning a TesscppComponentEntryV1. The loader
// (component_library.h) reads the plain C fields first: the ABI version and the
// build signature, which names the tesscpp version, the compiler and the C++
// standard-library ABI the library was built with. Only when both match its own
// does it call `create` and use the tesscpp::Component that returns; a
// mismatch is refused with both signatures in the message instead of crashing
// on an incompatible C++ object layout. The fields are plain C so that any
// future loader can read them before trusting anything else.
#pragma once

#include <cstdint>

// Raised whenever a C++ type a component shares with the runtime changes its
// layout within one tesscpp version (2: ModelView notes reads, FieldReads;
// 3: Component has hessian_vector_product).
#define TESSCPP_COMPONENT_ABI_VERSION 3u
#define TESSCPP_COMPONENT_ENTRY_SYMBOL tesscpp_component_entry_v1
#define TESSCPP_COMPONENT_ENTRY_NAME "tesscpp_component_entry_v1"

#define TESSCPP_STRINGIFY_(x) #x
#define TESSCPP_STRINGIFY(x) TESSCPP_STRINGIFY_(x)
/// What must match between a component library and the process loading it.
#define TESSCPP_BUILD_SIGNATURE                                         \
  "tesscpp-0.1;gcc-" TESSCPP_STRINGIFY(__GNUC__) "." TESSCPP_STRINGIFY( \
      __GNUC_MINOR__) ";cxx11abi-" TESSCPP_STRINGIFY(_GLIBCXX_USE_CXX11_ABI) ";cxx-" TESSCPP_STRINGIFY(__cplusplus)

extern "C" {

struct TesscppComponentEntryV1 {
  uint32_t abi_version;             /* TESSCPP_COMPONENT_ABI_VERSION */
  uint32_t struct_size;             /* sizeof(TesscppComponentEntryV1) */
  const char* build_signature;      /* TESSCPP_BUILD_SIGNATURE of the library */
  void* (*create)();                /* a new tesscpp::Component (may throw in C++) */
  void (*destroy)(void* component); /* deletes what create returned */
};

using TesscppComponentEntryFn = const TesscppComponentEntryV1* (*)();

}  // extern "C"

namespace tesscpp::internal {
void DestroyComponent(void* component);
inline TesscppComponentEntryV1 MakeComponentEntry(void* (*create)()) {
  return TesscppComponentEntryV1{TESSCPP_COMPONENT_ABI_VERSION, sizeof(TesscppComponentEntryV1),
                                 TESSCPP_BUILD_SIGNATURE, create, &DestroyComponent};
}
}  // namespace tesscpp::internal
