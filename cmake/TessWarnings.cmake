# tess_set_warnings(target): the warning set every first-party target compiles with.
function(tess_set_warnings target)
  target_compile_options(${target} PRIVATE
    -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wcast-align
    -Wimplicit-fallthrough -Wnull-dereference -Wformat=2)
  # g++ 12 reports std::variant members (Value) as "maybe uninitialized" at -O2
  # when a variant is built in place in a Result (GCC bugs 105562/107138); the
  # warning is a false positive there and unusable as an error.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(${target} PRIVATE -Wno-maybe-uninitialized)
  endif()
  if(TESS_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
