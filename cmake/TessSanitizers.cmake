# Global sanitizer and fuzzer instrumentation, selected by TESS_SANITIZE and TESS_FUZZ.
if(NOT TESS_SANITIZE STREQUAL "none")
  add_compile_options(-fsanitize=${TESS_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${TESS_SANITIZE})
endif()
if(TESS_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "TESS_FUZZ needs clang (use the 'fuzz' preset)")
  endif()
  # Libraries get coverage instrumentation; only fuzz targets link libFuzzer's main.
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
endif()
