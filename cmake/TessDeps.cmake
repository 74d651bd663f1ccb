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
