# libdotcourse.so as a target, and its installed form: shared by the course build (library.cmake)
# and the library's own CMake project (packaging/CMakeLists.txt, which pip and the sdist build).
#
#   dotcourse_add_library(TREE dir ENGINE target)
#       the target `dotcourse`: the C ABI (TREE/c_api.cpp and TREE/dotcourse.h, the lesson's files of
#       chapters/07_library or solutions/07_library; src/typed.cu and src/host_auto.cpp, the library's
#       own) over the chapter's engine (ENGINE, a static library of TREE/dot.cu); only
#       dotcourse_* is exported; its version is DOTCOURSE_VERSION (version.cmake); the build tree
#       gets lib/pkgconfig/dotcourse.pc too
#   dotcourse_install()
#       cmake --install (COMPONENT dotcourse): include/dotcourse.h, lib/libdotcourse.so,
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
  add_library(dotcourse SHARED "${DC_TREE}/c_api.cpp" "${library_dir}/src/host_auto.cpp" "${library_dir}/src/typed.cu"
                               "${library_dir}/src/typed_cpu.cpp" "${library_dir}/src/cublas_lazy.cpp")
  target_link_libraries(dotcourse PRIVATE ${DC_ENGINE} ${CMAKE_DL_LIBS})
  # src/ holds the parts no exercise touches (host_auto.hpp, typed.hpp, for c_api.cpp); they include
  # the tree's dot.hpp and dotcourse.h, which the engine's include folder gives.
  target_include_directories(dotcourse PRIVATE "${library_dir}/src")
  # In the build tree the whole chapter folder (dot.hpp for the driver and the tests); installed,
  # only dotcourse.h.
  target_include_directories(dotcourse INTERFACE "$<BUILD_INTERFACE:${DC_TREE}>"
                                                 "$<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>")
  target_compile_definitions(dotcourse PRIVATE DOTCOURSE_BUILDING "DOTCOURSE_VERSION_STRING=\"${DOTCOURSE_VERSION}\"")
  set_target_properties(dotcourse PROPERTIES
    CXX_VISIBILITY_PRESET hidden
    CUDA_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    DOTCOURSE_HEADER "${DC_TREE}/dotcourse.h"
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
  set(pc_includedir "${DC_TREE}")
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
          PUBLIC_HEADER DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}" COMPONENT dotcourse)
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
