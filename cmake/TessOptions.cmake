# Build options and language level shared by every target.
option(TESS_BUILD_TESTS "Build the GoogleTest suites and register CTest tests" ON)
option(TESS_BUILD_BENCH "Build the Google Benchmark programs in bench/" ON)
option(TESS_WERROR "Treat compiler warnings as errors (CI)" OFF)
option(TESS_PYTHON "Build the _tesscpp Python module (python/); needs nanobind in .venv or Python_EXECUTABLE" ON)
option(TESS_FUZZ "Build libFuzzer targets (needs clang); the libraries get fuzzer instrumentation" OFF)
set(TESS_ARCH "x86-64-v3" CACHE STRING "-march level for the whole build (AVX2 baseline)")
set(TESS_SANITIZE "none" CACHE STRING "none | address,undefined | thread")

set(CMAKE_CXX_STANDARD 20)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
set(CMAKE_CXX_EXTENSIONS OFF)
# Everything is linked into shared objects later (components, the Python module).
set(CMAKE_POSITION_INDEPENDENT_CODE ON)
set(CMAKE_EXPORT_COMPILE_COMMANDS ON)

if(NOT CMAKE_BUILD_TYPE AND NOT CMAKE_CONFIGURATION_TYPES)
  set(CMAKE_BUILD_TYPE RelWithDebInfo CACHE STRING "" FORCE)
endif()

# simdjson's On-Demand kernel is chosen at compile time from -m flags: x86-64-v3 lacks
# PCLMUL and binds the slow fallback kernel, so add it.
if(TESS_ARCH)
  add_compile_options(-march=${TESS_ARCH} -mpclmul)
endif()

find_program(TESS_CCACHE ccache)
if(TESS_CCACHE)
  # Without the build directory in the hash (ccache adds it under -g), builds
  # of this tree in other directories with the same flags share the cache: the
  # wheel test's build (python/tests/check_wheel.sh) reuses the ci build's.
  set(CMAKE_CXX_COMPILER_LAUNCHER "${CMAKE_COMMAND};-E;env;CCACHE_NOHASHDIR=true;${TESS_CCACHE}")
endif()
# lld links noticeably faster than GNU ld on the 2-core machine.
find_program(TESS_LLD NAMES ld.lld ld.lld-14)
if(TESS_LLD)
  add_link_options(-fuse-ld=lld)
endif()
