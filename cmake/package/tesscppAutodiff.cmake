# tesscpp::autodiff: what tesscpp/autodiff.h needs (docs/autodiff.md), ADOL-C
# and Sacado's headers (Debian: libadolc-dev, libtrilinos-sacado-dev). Optional:
# the target exists only where both are found; tesscpp_autodiff_FOUND says so.
# Included by the build and by the installed package alike.
if(NOT TARGET tesscpp::autodiff)
  find_path(TESSCPP_ADOLC_INCLUDE_DIR adolc/adolc.h)
  find_library(TESSCPP_ADOLC_LIBRARY adolc)
  find_path(TESSCPP_SACADO_INCLUDE_DIR Sacado_No_Kokkos.hpp PATH_SUFFIXES trilinos)
  if(TESSCPP_ADOLC_INCLUDE_DIR AND TESSCPP_ADOLC_LIBRARY AND TESSCPP_SACADO_INCLUDE_DIR)
    add_library(tesscpp::autodiff INTERFACE IMPORTED)
    set_target_properties(tesscpp::autodiff PROPERTIES
      INTERFACE_INCLUDE_DIRECTORIES "${TESSCPP_ADOLC_INCLUDE_DIR};${TESSCPP_SACADO_INCLUDE_DIR}"
      INTERFACE_LINK_LIBRARIES "${TESSCPP_ADOLC_LIBRARY}")
  endif()
endif()
if(TARGET tesscpp::autodiff)
  set(tesscpp_autodiff_FOUND TRUE)
else()
  set(tesscpp_autodiff_FOUND FALSE)
endif()
