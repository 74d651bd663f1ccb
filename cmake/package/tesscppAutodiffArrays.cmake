# tesscpp::autodiff_arrays: what tesscpp/autodiff_arrays.h needs
# (docs/autodiff.md, "Array form"): Dr.Jit's C++ headers and libraries, which
# its PyPI wheel ships with a CMake package (drjit==1.5.0, pinned in
# scripts/deps/requirements-dev.txt). Optional: the target exists only where
# Dr.Jit is found; tesscpp_autodiff_arrays_FOUND says so. Dr.Jit is looked for
# by find_package (drjit_DIR or CMAKE_PREFIX_PATH), else in the wheel of the
# Python that TESSCPP_DRJIT_PYTHON names (default: the project's .venv, or
# python3 on PATH). Included by the build and by the installed package alike.
if(NOT TARGET tesscpp::autodiff_arrays)
  find_package(drjit CONFIG QUIET)
  if(NOT drjit_FOUND)
    if(NOT TESSCPP_DRJIT_PYTHON)
      find_program(TESSCPP_DRJIT_PYTHON NAMES python3 python
                   HINTS "${PROJECT_SOURCE_DIR}/.venv/bin" NO_DEFAULT_PATH)
      find_program(TESSCPP_DRJIT_PYTHON NAMES python3 python)
    endif()
    if(TESSCPP_DRJIT_PYTHON)
      # The wheel's folder without importing it (its extension module would
      # start Dr.Jit's thread pool for nothing).
      execute_process(COMMAND "${TESSCPP_DRJIT_PYTHON}" -c
                        "import importlib.util as u; s = u.find_spec('drjit'); print(s.submodule_search_locations[0] if s else '')"
                      OUTPUT_VARIABLE _tesscpp_drjit_dir OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
      if(_tesscpp_drjit_dir AND EXISTS "${_tesscpp_drjit_dir}/cmake/drjit/drjitConfig.cmake")
        find_package(drjit CONFIG QUIET PATHS "${_tesscpp_drjit_dir}/cmake/drjit" NO_DEFAULT_PATH)
      endif()
      unset(_tesscpp_drjit_dir)
    endif()
  endif()
  if(drjit_FOUND AND TARGET drjit-core)
    add_library(tesscpp::autodiff_arrays INTERFACE IMPORTED)
    set_target_properties(tesscpp::autodiff_arrays PROPERTIES
      INTERFACE_LINK_LIBRARIES "drjit;drjit-core;drjit-extra;nanothread")
  endif()
endif()
if(TARGET tesscpp::autodiff_arrays)
  set(tesscpp_autodiff_arrays_FOUND TRUE)
else()
  set(tesscpp_autodiff_arrays_FOUND FALSE)
endif()
