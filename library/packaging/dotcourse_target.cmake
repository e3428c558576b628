# libdotcourse.so as a target, and its installed form: shared by the course build (library.cmake)
# and the library's own CMake project (packaging/CMakeLists.txt, which pip and the sdist build).
#
#   dotcourse_add_library(TREE dir ENGINE target)
#       the target `dotcourse`: the public header (include/dotcourse/dotcourse.h), the C ABI
#       (src/c_api.cpp) and the library's other parts (src/), all of library/, over chapter 07's
#       engine: ENGINE, a static library of TREE/dot.cu, where TREE is a tree's 07_library folder
#       (chapters/ or solutions/). The library reaches the chapter through one header,
#       src/engine.hpp, which includes "07_library/dot.hpp" from TREE's parent. Only dotcourse_* is
#       exported; its version is DOTCOURSE_VERSION (version.cmake); the build tree gets
#       lib/pkgconfig/dotcourse.pc too
#   dotcourse_install()
#       cmake --install (COMPONENT dotcourse): include/dotcourse/dotcourse.h, lib/libdotcourse.so,
#       lib/cmake/dotcourse/ (find_package(dotcourse) -> dotcourse::dotcourse), lib/pkgconfig/dotcourse.pc
#   dotcourse_install_python(DESTINATION dir)
#       the wheel: libdotcourse.so into the Python package, rpath $ORIGIN (COMPONENT dotcourse_python)
include_guard(GLOBAL)
include("${CMAKE_CURRENT_LIST_DIR}/version.cmake")
include(GNUInstallDirs)
set(DOTCOURSE_PACKAGING_DIR "${CMAKE_CURRENT_LIST_DIR}")

function(dotcourse_add_library)
  cmake_parse_arguments(PARSE_ARGV 0 DC "" "TREE;ENGINE" "")
  get_filename_component(library_dir "${DOTCOURSE_PACKAGING_DIR}/.." ABSOLUTE)
  get_filename_component(tree_name "${DC_TREE}" NAME)
  if(NOT tree_name STREQUAL "07_library" OR NOT EXISTS "${DC_TREE}/dot.hpp")
    message(FATAL_ERROR "dotcourse: TREE='${DC_TREE}' must be a tree's 07_library folder, with dot.cu and dot.hpp "
                        "(library/src/engine.hpp includes \"07_library/dot.hpp\")")
  endif()
  get_filename_component(tree_root "${DC_TREE}" DIRECTORY)
  add_library(dotcourse SHARED "${library_dir}/src/c_api.cpp" "${library_dir}/src/host_auto.cpp"
                               "${library_dir}/src/typed.cu" "${library_dir}/src/typed_cpu.cpp"
                               "${library_dir}/src/cublas_lazy.cpp")
  target_link_libraries(dotcourse PRIVATE ${DC_ENGINE} ${CMAKE_DL_LIBS})
  # The public header by its path, <dotcourse/dotcourse.h>, in the build tree and installed alike.
  target_include_directories(dotcourse PUBLIC "$<BUILD_INTERFACE:${library_dir}/include>"
                                              "$<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>")
  # The library's own headers (src/) and the seam's "07_library/dot.hpp" (the tree's root): the
  # library's alone, never its users'.
  target_include_directories(dotcourse PRIVATE "${library_dir}/src" "${tree_root}")
  target_compile_definitions(dotcourse PRIVATE DOTCOURSE_BUILDING "DOTCOURSE_VERSION_STRING=\"${DOTCOURSE_VERSION}\"")
  set_target_properties(dotcourse PROPERTIES
    CXX_VISIBILITY_PRESET hidden
    CUDA_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    DOTCOURSE_HEADER "${library_dir}/include/dotcourse/dotcourse.h"
    LIBRARY_OUTPUT_DIRECTORY "${CMAKE_BINARY_DIR}/lib")
  # -fvisibility=hidden covers this file; the static libraries inside were compiled without it, so
  # the linker hides their symbols too (--exclude-libs), and the version script keeps only dotcourse_*.
  # src/cublas_lazy.cpp defines the cuBLAS functions the kit calls and opens cuBLAS on the first
  # one (a CPU-only context never does): with --as-needed, a libcublas the kit's target still names
  # (the course build's course_common) resolves nothing and is not recorded as NEEDED.
  target_link_options(dotcourse PRIVATE "LINKER:--exclude-libs,ALL"
                                        "LINKER:--version-script=${library_dir}/dotcourse.map"
                                        "LINKER:--as-needed")
  set_property(TARGET dotcourse APPEND PROPERTY LINK_DEPENDS "${library_dir}/dotcourse.map")

  # The build tree's pkg-config file (Go's `#cgo pkg-config: dotcourse` against a build, not an install).
  set(pc_prefix "${CMAKE_BINARY_DIR}")
  set(pc_libdir "${CMAKE_BINARY_DIR}/lib")
  set(pc_includedir "${library_dir}/include")
  configure_file("${DOTCOURSE_PACKAGING_DIR}/dotcourse.pc.in" "${CMAKE_BINARY_DIR}/lib/pkgconfig/dotcourse.pc" @ONLY)
endfunction()

function(dotcourse_install)
  include(CMakePackageConfigHelpers)
  set(cmake_dir "${CMAKE_INSTALL_LIBDIR}/cmake/dotcourse")
  # Installed on the machine that built it, libdotcourse.so finds the CUDA runtime and cuBLAS of the
  # toolkit it was built with (its rpath), else by the loader's search (ldconfig, LD_LIBRARY_PATH).
  # The wheel (dotcourse_install_python) keeps no such path.
  get_target_property(header dotcourse DOTCOURSE_HEADER)
  set_target_properties(dotcourse PROPERTIES INSTALL_RPATH "${CUDAToolkit_LIBRARY_DIR}" PUBLIC_HEADER "${header}")
  install(TARGETS dotcourse EXPORT dotcourseTargets
          LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}" COMPONENT dotcourse
          PUBLIC_HEADER DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}/dotcourse" COMPONENT dotcourse)
  install(EXPORT dotcourseTargets NAMESPACE dotcourse:: DESTINATION "${cmake_dir}" COMPONENT dotcourse)
  configure_package_config_file("${DOTCOURSE_PACKAGING_DIR}/dotcourseConfig.cmake.in"
                                "${CMAKE_BINARY_DIR}/packaging/dotcourseConfig.cmake" INSTALL_DESTINATION "${cmake_dir}")
  # 0.x: a minor version may break the API, so only the same major.minor is compatible.
  write_basic_package_version_file("${CMAKE_BINARY_DIR}/packaging/dotcourseConfigVersion.cmake"
                                   VERSION "${DOTCOURSE_VERSION}" COMPATIBILITY SameMinorVersion)
  install(FILES "${CMAKE_BINARY_DIR}/packaging/dotcourseConfig.cmake"
                "${CMAKE_BINARY_DIR}/packaging/dotcourseConfigVersion.cmake"
          DESTINATION "${cmake_dir}" COMPONENT dotcourse)
  # dotcourse.pc is relocatable: its prefix is found from its own folder (${pcfiledir}), so
  # `cmake --install --prefix ANY` gives a correct file.
  set(up "")
  string(REPLACE "/" ";" parts "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
  foreach(part IN LISTS parts)
    string(APPEND up "/..")
  endforeach()
  set(pc_prefix "\${pcfiledir}${up}")
  set(pc_libdir "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
  set(pc_includedir "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
  configure_file("${DOTCOURSE_PACKAGING_DIR}/dotcourse.pc.in" "${CMAKE_BINARY_DIR}/packaging/dotcourse.pc" @ONLY)
  install(FILES "${CMAKE_BINARY_DIR}/packaging/dotcourse.pc" DESTINATION "${CMAKE_INSTALL_LIBDIR}/pkgconfig"
          COMPONENT dotcourse)
endfunction()

function(dotcourse_install_python)
  cmake_parse_arguments(PARSE_ARGV 0 DC "" "DESTINATION" "")
  # The wheel carries libdotcourse.so beside the package's __init__.py. Its rpath is its own folder:
  # the packaging build links the CUDA runtime statically, and cuBLAS is opened on a GPU context's
  # first use from the loader's search, $CUDA_HOME/lib64 or /usr/local/cuda/lib64
  # (src/cublas_lazy.cpp). No build machine path is kept.
  set_target_properties(dotcourse PROPERTIES INSTALL_RPATH "$ORIGIN")
  install(TARGETS dotcourse LIBRARY DESTINATION "${DC_DESTINATION}" COMPONENT dotcourse_python)
endfunction()
