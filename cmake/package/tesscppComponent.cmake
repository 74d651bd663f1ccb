# tesscpp_add_component(<name> SOURCES <file>... [OUTPUT_DIRECTORY <dir>])
#
# Builds lib<name>.so, a component library that `tesscpp serve`, the CLI's
# one-shot endpoints and Tesseract.from_library load. It links
# tesscpp::tesscpp (C++20, the SDK's headers), exports nothing but the entry
# point TESSCPP_COMPONENT defines (hidden visibility, so two components in one
# process never share their own symbols), and refuses undefined symbols at
# link time rather than at load time. The build signature the loader checks is
# compiled in by TESSCPP_COMPONENT: a component must be rebuilt for each
# tesscpp release.
function(tesscpp_add_component name)
  cmake_parse_arguments(ARG "" "OUTPUT_DIRECTORY" "SOURCES" ${ARGN})
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "tesscpp_add_component(${name}): SOURCES is required")
  endif()
  add_library(${name} MODULE ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE tesscpp::tesscpp)
  target_link_options(${name} PRIVATE "LINKER:--no-undefined")
  set_target_properties(${name} PROPERTIES
    PREFIX "lib"
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  if(ARG_OUTPUT_DIRECTORY)
    set_target_properties(${name} PROPERTIES LIBRARY_OUTPUT_DIRECTORY "${ARG_OUTPUT_DIRECTORY}")
  endif()
endfunction()
