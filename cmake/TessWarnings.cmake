# tess_set_warnings(target): the warning set every first-party target compiles with.
# Turns one g++ warning off for one source file: for g++ 12's -O2 false
# positives, which the caller names with a reason next to the call.
function(tess_gcc_silence file warning)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    set_source_files_properties(${file} PROPERTIES COMPILE_OPTIONS "-Wno-${warning}")
  endif()
endfunction()

function(tess_set_warnings target)
  target_compile_options(${target} PRIVATE
    -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wcast-align
    -Wimplicit-fallthrough -Wnull-dereference -Wformat=2
    # Designated initializers that leave members to their defaults
    # ({.doc = "..."}) are how FieldOptions are meant to be written; g++ 12
    # warns about every omitted member.
    -Wno-missing-field-initializers)
  if(TESS_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
