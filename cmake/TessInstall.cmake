# The installable SDK: headers, libtesscpp.so, the tesscpp CLI, a relocatable
# CMake package (find_package(tesscpp CONFIG)) with tesscpp_add_component(),
# and a pkg-config file. `cmake --install build/<preset> --prefix P` lays it
# out under P; pip install ./python lays the same tree out inside the wheel's
# tesscpp/ folder (TESS_SDK_ROOT), where tesscpp.cmake_dir() finds it.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

if(SKBUILD)
  set(TESS_SDK_ROOT "tesscpp/")
  set(sdk_libdir "lib")
else()
  set(TESS_SDK_ROOT "")
  set(sdk_libdir "${CMAKE_INSTALL_LIBDIR}")
endif()
set(sdk_bindir "${TESS_SDK_ROOT}bin")
set(sdk_includedir "${TESS_SDK_ROOT}include")
set(sdk_cmakedir "${TESS_SDK_ROOT}${sdk_libdir}/cmake/tesscpp")
set(sdk_pkgconfigdir "${TESS_SDK_ROOT}${sdk_libdir}/pkgconfig")
set(sdk_libdir "${TESS_SDK_ROOT}${sdk_libdir}")

# The CLI finds libtesscpp.so beside it, wherever the tree is moved.
file(RELATIVE_PATH cli_to_lib "/${sdk_bindir}" "/${sdk_libdir}")
set_target_properties(tesscpp_cli PROPERTIES INSTALL_RPATH "$ORIGIN/${cli_to_lib}")

install(TARGETS tesscpp EXPORT tesscppTargets
        LIBRARY DESTINATION "${sdk_libdir}"
        INCLUDES DESTINATION "${sdk_includedir}")
install(TARGETS tesscpp_cli RUNTIME DESTINATION "${sdk_bindir}")
# internal/ is this tree's own (tools, bindings, tests), never installed.
install(DIRECTORY "${PROJECT_SOURCE_DIR}/include/tesscpp" DESTINATION "${sdk_includedir}"
        PATTERN "internal" EXCLUDE)
install(EXPORT tesscppTargets NAMESPACE tesscpp:: DESTINATION "${sdk_cmakedir}")

configure_package_config_file("${PROJECT_SOURCE_DIR}/cmake/package/tesscppConfig.cmake.in"
                              "${PROJECT_BINARY_DIR}/package/tesscppConfig.cmake"
                              INSTALL_DESTINATION "${sdk_cmakedir}" PATH_VARS sdk_bindir)
# A component must be rebuilt for each tesscpp release (the loader refuses a
# mismatched build signature), so only the same major.minor is compatible.
write_basic_package_version_file("${PROJECT_BINARY_DIR}/package/tesscppConfigVersion.cmake"
                                 COMPATIBILITY SameMinorVersion)
install(FILES "${PROJECT_BINARY_DIR}/package/tesscppConfig.cmake"
              "${PROJECT_BINARY_DIR}/package/tesscppConfigVersion.cmake"
              "${PROJECT_SOURCE_DIR}/cmake/package/tesscppComponent.cmake"
              "${PROJECT_SOURCE_DIR}/cmake/package/tesscppAutodiff.cmake"
              "${PROJECT_SOURCE_DIR}/cmake/package/tesscppAutodiffArrays.cmake"
        DESTINATION "${sdk_cmakedir}")

# pkg-config: paths relative to the .pc file's folder (pcfiledir), so the
# tree stays relocatable like the CMake package.
file(RELATIVE_PATH pc_to_prefix "/${sdk_pkgconfigdir}" "/")
file(RELATIVE_PATH prefix_to_lib "/" "/${sdk_libdir}")
file(RELATIVE_PATH prefix_to_include "/" "/${sdk_includedir}")
configure_file("${PROJECT_SOURCE_DIR}/cmake/package/tesscpp.pc.in" "${PROJECT_BINARY_DIR}/package/tesscpp.pc" @ONLY)
install(FILES "${PROJECT_BINARY_DIR}/package/tesscpp.pc" DESTINATION "${sdk_pkgconfigdir}")
