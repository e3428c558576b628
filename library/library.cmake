# libdotcourse in the course build: included from the top-level CMakeLists.txt after chapter 07's
# course_chapter line (this file is the course's, never the student's: it is not generated from
# solutions/). The library is this folder's (include/dotcourse/dotcourse.h, src/: the C ABI and the
# rest, no hole in any) over the engine of the tree's chapter 07 (chapters/07_library or
# solutions/07_library: dot.cu/hpp, with the exercises), which it reaches through src/engine.hpp.
#
#   dotcourse            libdotcourse.so in build/<preset>/lib: the C ABI (dotcourse.h) over the
#                        chapter's engine (07_library_lib); only dotcourse_* is exported; installed
#                        with its header, CMake package and dotcourse.pc (packaging/)
#   ch07.exports         ctest: the shared library exports every function of dotcourse.h and nothing else
#   ch07.exports_catches_missing  ctest: that check fails when a declared function is missing
#   ch07.no_cublas_needed  ctest: readelf -d shows no NEEDED libcublas (src/cublas_lazy.cpp opens it)
#   ch07.python          ctest: the pytest suite of the Python package, against this build's library
#   ch07.python_cpu      ctest: its CPU-path tests only (tests/test_where.py), which need no GPU
#   ch07.go              ctest: `go test` of the Go package (registered only where Go is installed)
#   ch07.install_find_package, ch07.install_pkg_config  ctest: cmake --install into a fresh prefix,
#                        then a consumer outside the course built with find_package(dotcourse) (C++)
#                        or with pkg-config (C: README.md's guide commands, as written), and run (no GPU
#                        needed: a CPU context always, a GPU one where there is one)
set(ch07_tree "${COURSE_TREE_DIR}/07_library")
set(library_dir "${CMAKE_CURRENT_LIST_DIR}")

# The target and its install rules live in packaging/dotcourse_target.cmake, shared with the
# library's own CMake project (packaging/CMakeLists.txt: pip, the sdist, a C user without the course).
include("${library_dir}/packaging/dotcourse_target.cmake")
dotcourse_add_library(TREE "${ch07_tree}" ENGINE 07_library_lib)
get_target_property(dotcourse_header dotcourse DOTCOURSE_HEADER)  # library/include/dotcourse/dotcourse.h
dotcourse_install()  # cmake --install build/<preset> --component dotcourse [--prefix DIR]

# The driver (the C++ motivating program) and the tests call the C API too.
target_link_libraries(07_library PRIVATE dotcourse)
if(TARGET test_07_library)
  target_link_libraries(test_07_library PRIVATE dotcourse)
  # The tests of the library's own parts that need no export (calibration_order, host_auto.hpp, which
  # includes the seam's "07_library/dot.hpp" from the tree's root).
  target_include_directories(test_07_library PRIVATE "${library_dir}/src" "${COURSE_TREE_DIR}")
  # What dotcourse_version() must return: the one version (packaging/version.cmake), never a copy.
  target_compile_definitions(test_07_library PRIVATE "DOTCOURSE_EXPECTED_VERSION=\"${DOTCOURSE_VERSION}\"")
endif()

if(COURSE_BUILD_TESTS)
  add_test(NAME ch07.exports
           COMMAND "${CMAKE_COMMAND}" -DLIB=$<TARGET_FILE:dotcourse> -DHEADER=${dotcourse_header}
                   -P "${library_dir}/check_exports.cmake")
  set_tests_properties(ch07.exports PROPERTIES LABELS ch07)
  # The check itself: a function the header declares and the library lacks must fail it.
  add_test(NAME ch07.exports_catches_missing
           COMMAND "${CMAKE_COMMAND}" -DLIB=$<TARGET_FILE:dotcourse> -DHEADER=${dotcourse_header}
                   -DEXTRA_DECLARED=dotcourse_not_in_the_library -P "${library_dir}/check_exports.cmake")
  set_tests_properties(ch07.exports_catches_missing PROPERTIES LABELS ch07
                       PASS_REGULAR_EXPRESSION "does not export these functions of dotcourse.h:[ \t\r\n]*dotcourse_not_in_the_library")

  # cuBLAS is opened on first use (src/cublas_lazy.cpp), never needed to load the library; the
  # check itself must see a library that does need it (the kit's own test program links cuBLAS).
  add_test(NAME ch07.no_cublas_needed
           COMMAND "${CMAKE_COMMAND}" -DLIB=$<TARGET_FILE:dotcourse> -DFORBID=libcublas -P "${library_dir}/check_needed.cmake")
  set_tests_properties(ch07.no_cublas_needed PROPERTIES LABELS ch07)
  if(TARGET test_07_library)
    add_test(NAME ch07.no_cublas_needed_catches_it
             COMMAND "${CMAKE_COMMAND}" -DLIB=$<TARGET_FILE:test_07_library> -DFORBID=libcublas
                     -P "${library_dir}/check_needed.cmake")
    set_tests_properties(ch07.no_cublas_needed_catches_it PROPERTIES LABELS ch07
                         PASS_REGULAR_EXPRESSION "needs[ \t\r\n]+libcublas")
  endif()

  # The installed package, from outside the course (no GPU needed): cmake --install into a fresh
  # prefix, then a C++ consumer with find_package(dotcourse) and a C consumer with pkg-config.
  foreach(mode find_package pkg-config)
    string(REPLACE "-" "_" test_mode "${mode}")
    add_test(NAME ch07.install_${test_mode}
             COMMAND "${CMAKE_COMMAND}" -DBUILD_DIR=${CMAKE_BINARY_DIR} -DWORK=${CMAKE_BINARY_DIR}/ch07_install_${test_mode}
                     -DMODE=${mode} -DVERSION=${DOTCOURSE_VERSION} "-DGENERATOR=${CMAKE_GENERATOR}"
                     -P "${library_dir}/packaging/test_install.cmake")
    set_tests_properties(ch07.install_${test_mode} PROPERTIES LABELS ch07)
    set_tests_properties(ch07.install_${test_mode} PROPERTIES SKIP_REGULAR_EXPRESSION "COURSE-SKIP" TIMEOUT 600)
  endforeach()

  add_test(NAME ch07.python COMMAND bash "${library_dir}/python/run_pytest.sh" $<TARGET_FILE:dotcourse>)
  set_tests_properties(ch07.python PROPERTIES LABELS ch07 SKIP_REGULAR_EXPRESSION "COURSE-NO-GPU|COURSE-SKIP"
                                              TIMEOUT 1200)
  # The package's CPU path (where="cpu", Context(device="cpu"), the plan, the cache) needs no GPU:
  # this one passes, never skips, on a machine without one.
  add_test(NAME ch07.python_cpu COMMAND bash "${library_dir}/python/run_pytest.sh" $<TARGET_FILE:dotcourse>
                                        -k "test_where and not test_gpu_")
  set_tests_properties(ch07.python_cpu PROPERTIES LABELS ch07 SKIP_REGULAR_EXPRESSION "COURSE-SKIP" TIMEOUT 600)

  find_program(COURSE_GO go)
  if(COURSE_GO)
    add_test(NAME ch07.go COMMAND bash "${library_dir}/go/run_go_test.sh" "$<TARGET_FILE_DIR:dotcourse>")
    set_tests_properties(ch07.go PROPERTIES LABELS ch07 SKIP_REGULAR_EXPRESSION "COURSE-NO-GPU" TIMEOUT 1200)
  else()
    message(STATUS "dotcourse: no Go toolchain (go): the Go tests of chapter 07 are not registered "
                   "(build them where Go is: library/go/build_carry.sh)")
  endif()
endif()
