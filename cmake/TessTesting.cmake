# Helpers that register tests with CTest.
if(TESS_BUILD_TESTS OR TESS_FUZZ)
  enable_testing()
  include(GoogleTest)
endif()

# tess_add_gtest(name SOURCES ... LIBS ...): one GoogleTest executable per module,
# its cases discovered at test time and labelled "unit".
function(tess_add_gtest name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} GTest::gtest GTest::gtest_main GTest::gmock)
  target_compile_definitions(${name} PRIVATE TESS_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
  target_include_directories(${name} PRIVATE "${PROJECT_SOURCE_DIR}/tests")
  tess_set_warnings(${name})
  gtest_discover_tests(${name} DISCOVERY_MODE PRE_TEST PROPERTIES LABELS unit
                       DISCOVERY_TIMEOUT 60)
endfunction()
