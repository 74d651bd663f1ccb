# tess_set_warnings(target): the warning set every first-party target compiles with.
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
