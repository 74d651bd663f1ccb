# tesscpp::autodiff_arrays: what tesscpp/autodiff_arrays.h needs
# (docs/autodiff.md, "Array form"): Dr.Jit's C++ headers and libraries, which
# its PyPI wheel ships with a CMake package (drjit==1.5.0, pinned in
# scripts/deps/requirements-dev.txt), and nanobind's intrusive reference
# counter headers, which Dr.Jit's custom operations (drjit/custom.h) include
# and its wheel does not ship (the PyPI package nanobind, pinned there too).
# Optional: the target exists only where both are found;
# tesscpp_autodiff_arrays_FOUND says so. Dr.Jit is looked for by find_package
# (drjit_DIR or CMAKE_PREFIX_PATH), else in the wheel of the Python that
# TESSCPP_DRJIT_PYTHON names (default: the project's .venv, or python3 on
# PATH); nanobind's headers in TESSCPP_NANOBIND_INCLUDE, else in that
# Python's nanobind. Included by the build and by the installed package alike.
if(NOT TARGET tesscpp::autodiff_arrays)
  find_package(drjit CONFIG QUIET)
  if(NOT TESSCPP_DRJIT_PYTHON)
    find_program(TESSCPP_DRJIT_PYTHON NAMES python3 python
                 HINTS "${PROJECT_SOURCE_DIR}/.venv/bin" NO_DEFAULT_PATH)
    find_program(TESSCPP_DRJIT_PYTHON NAMES python3 python)
  endif()
  if(NOT drjit_FOUND)
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
  if(NOT TESSCPP_NANOBIND_INCLUDE AND TESSCPP_DRJIT_PYTHON)
    execute_process(COMMAND "${TESSCPP_DRJIT_PYTHON}" -m nanobind --include_dir
                    OUTPUT_VARIABLE _tesscpp_nanobind_include OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    if(_tesscpp_nanobind_include)
      set(TESSCPP_NANOBIND_INCLUDE "${_tesscpp_nanobind_include}" CACHE PATH "nanobind's include folder")
    endif()
    unset(_tesscpp_nanobind_include)
  endif()
  if(drjit_FOUND AND TARGET drjit-core)
    if(EXISTS "${TESSCPP_NANOBIND_INCLUDE}/nanobind/intrusive/counter.h")
      add_library(tesscpp::autodiff_arrays INTERFACE IMPORTED)
      set_target_properties(tesscpp::autodiff_arrays PROPERTIES
        INTERFACE_LINK_LIBRARIES "drjit;drjit-core;drjit-extra;nanothread"
        INTERFACE_INCLUDE_DIRECTORIES "${TESSCPP_NANOBIND_INCLUDE}")
    else()
      message(STATUS "tesscpp: Dr.Jit found but not nanobind's headers (pip install nanobind, or set "
                     "TESSCPP_NANOBIND_INCLUDE); tesscpp::autodiff_arrays is not defined")
    endif()
  endif()
endif()
if(TARGET tesscpp::autodiff_arrays)
  set(tesscpp_autodiff_arrays_FOUND TRUE)
else()
  set(tesscpp_autodiff_arrays_FOUND FALSE)
endif()
