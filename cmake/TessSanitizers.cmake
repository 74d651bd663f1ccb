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
  # UBSan recovers by default (prints and carries on, so the run passes):
  # -fno-sanitize-recover makes undefined behaviour abort, which libFuzzer
  # reports as a crash with the input that caused it.
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all
                      -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
endif()
