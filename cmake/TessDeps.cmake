# Third-party dependencies, all from Debian packages (scripts/deps/apt.txt).
find_package(PkgConfig REQUIRED)
find_package(simdjson 3.0 REQUIRED CONFIG)
# liblz4-dev ships only a pkg-config file.
pkg_check_modules(LZ4 REQUIRED IMPORTED_TARGET liblz4)
if(TESS_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
if(TESS_BUILD_BENCH AND NOT TESS_FUZZ)
  find_package(benchmark REQUIRED)
endif()

# CUDA (optional): the runtime API from the toolkit, for the cuda module. AUTO
# builds it whenever a toolkit is found (CI has one without a GPU).
set(TESSCPP_CUDA AUTO CACHE STRING "Build the CUDA module: AUTO | ON | OFF")
if(NOT TESSCPP_CUDA STREQUAL "OFF")
  find_package(CUDAToolkit QUIET)
  if(CUDAToolkit_FOUND)
    set(TESSCPP_CUDA ON)
  elseif(TESSCPP_CUDA STREQUAL "ON")
    message(FATAL_ERROR "TESSCPP_CUDA=ON but no CUDA toolkit was found (set CUDAToolkit_ROOT)")
  elseif("$ENV{CI}" STREQUAL "true")
    # The CI machine has a toolkit (and no GPU): without it the CUDA
    # module and its tests would silently drop out of a green run.
    message(FATAL_ERROR "CI=true but no CUDA toolkit was found: the CUDA module would not be built "
                        "(install it, set CUDAToolkit_ROOT, or configure with -DTESSCPP_CUDA=OFF)")
  else()
    set(TESSCPP_CUDA OFF)
  endif()
endif()
message(STATUS "tesscpp: CUDA module ${TESSCPP_CUDA}")
