# tess_set_warnings(target): the warning set every first-party target compiles with.
function(tess_set_warnings target)
  target_compile_options(${target} PRIVATE
    -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wcast-align
    -Wimplicit-fallthrough -Wnull-dereference -Wformat=2)
  if(TESS_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
