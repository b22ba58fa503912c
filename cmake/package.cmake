# The libraries as a package: xgrad::<component> targets (the same names in the tree, through
# aliases, and after find_package(xgrad)), xgrad::xgrad for all of them, and the install rules.
# Usage requirements (XTENSOR_USE_XSIMD, the instruction-set flags, the dependencies) travel
# with the targets, so a consumer compiles with the flags the libraries were built with.
include(CMakePackageConfigHelpers)

set(XGRAD_COMPONENTS config util cli autograd nn optim text models metrics inference training)
foreach(component IN LISTS XGRAD_COMPONENTS)
  set_target_properties(xgrad_${component} PROPERTIES EXPORT_NAME ${component})
  add_library(xgrad::${component} ALIAS xgrad_${component})
endforeach()

# Everything: training pulls in the rest (inference, models, metrics, optim, nn, autograd, text).
add_library(xgrad_all INTERFACE)
target_link_libraries(xgrad_all INTERFACE xgrad_training)
set_target_properties(xgrad_all PROPERTIES EXPORT_NAME xgrad)
add_library(xgrad::xgrad ALIAS xgrad_all)

set(XGRAD_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/xgrad)
list(TRANSFORM XGRAD_COMPONENTS PREPEND xgrad_ OUTPUT_VARIABLE xgrad_targets)
install(TARGETS ${xgrad_targets} xgrad_all EXPORT xgradTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${XGRAD_INSTALL_INCLUDEDIR})
install(EXPORT xgradTargets NAMESPACE xgrad:: DESTINATION ${XGRAD_CMAKE_DIR})
foreach(dir util autograd nn optim text models metrics inference training)
  install(DIRECTORY ${dir} DESTINATION ${XGRAD_INSTALL_INCLUDEDIR}
          FILES_MATCHING PATTERN "*.hpp" PATTERN "*.def")
endforeach()
# The bundled data the programs default to, where util/bundled_data.hpp finds it in an installation.
install(DIRECTORY data DESTINATION ${CMAKE_INSTALL_DATADIR}/xgrad FILES_MATCHING PATTERN "*.txt" PATTERN "*.json"
        PATTERN "*.tsv" PATTERN "*.conll" PATTERN "README.md")
install(FILES ${PROJECT_BINARY_DIR}/include/util/version.hpp DESTINATION ${XGRAD_INSTALL_INCLUDEDIR}/util)

if(XGRAD_HAVE_MPI)
  set(XGRAD_PACKAGE_WITH_MPI ON)
else()
  set(XGRAD_PACKAGE_WITH_MPI OFF)
endif()
configure_package_config_file(cmake/xgradConfig.cmake.in ${PROJECT_BINARY_DIR}/xgradConfig.cmake
                              INSTALL_DESTINATION ${XGRAD_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/xgradConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/xgradConfig.cmake ${PROJECT_BINARY_DIR}/xgradConfigVersion.cmake
        DESTINATION ${XGRAD_CMAKE_DIR})
