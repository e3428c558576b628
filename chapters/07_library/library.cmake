# Chapter 07's extra targets, included from the top-level CMakeLists.txt after its course_chapter
# line (this file is the course's, never the student's: it is not generated from solutions/).
#
#   dotcourse            libdotcourse.so in build/<preset>/lib: the C ABI (dotcourse.h) over the
#                        chapter's engine (07_library_lib); only dotcourse_* is exported
#   ch07.exports         ctest: the shared library exports every function of dotcourse.h and nothing else
#   ch07.exports_catches_missing  ctest: that check fails when a declared function is missing
#   ch07.python          ctest: the pytest suite of the Python package, against this build's library
#   ch07.go              ctest: `go test` of the Go package (registered only where Go is installed)
set(ch07_tree "${COURSE_TREE_DIR}/07_library")
set(ch07_dir "${CMAKE_CURRENT_LIST_DIR}")

add_library(dotcourse SHARED "${ch07_tree}/c_api.cpp" "${ch07_tree}/typed.cu")
target_link_libraries(dotcourse PRIVATE 07_library_lib)
target_include_directories(dotcourse INTERFACE "${ch07_tree}")
target_compile_definitions(dotcourse PRIVATE DOTCOURSE_BUILDING)
set_target_properties(dotcourse PROPERTIES
  CXX_VISIBILITY_PRESET hidden
  CUDA_VISIBILITY_PRESET hidden
  VISIBILITY_INLINES_HIDDEN ON
  LIBRARY_OUTPUT_DIRECTORY "${CMAKE_BINARY_DIR}/lib")
# -fvisibility=hidden covers this file; the static libraries inside were compiled without it, so
# the linker hides their symbols too (--exclude-libs), and the version script keeps only dotcourse_*.
target_link_options(dotcourse PRIVATE "LINKER:--exclude-libs,ALL"
                                      "LINKER:--version-script=${ch07_dir}/dotcourse.map")
set_property(TARGET dotcourse APPEND PROPERTY LINK_DEPENDS "${ch07_dir}/dotcourse.map")

# pip install chapters/07_library/python: scikit-build-core installs the library into the package.
if(SKBUILD)
  set_target_properties(dotcourse PROPERTIES INSTALL_RPATH "${CUDAToolkit_LIBRARY_DIR}")
  install(TARGETS dotcourse LIBRARY DESTINATION dotcourse COMPONENT dotcourse_python)
endif()

# The driver (the C++ motivating program) and the tests call the C API too.
target_link_libraries(07_library PRIVATE dotcourse)
if(TARGET test_07_library)
  target_link_libraries(test_07_library PRIVATE dotcourse)
endif()

if(COURSE_BUILD_TESTS)
  add_test(NAME ch07.exports
           COMMAND "${CMAKE_COMMAND}" -DLIB=$<TARGET_FILE:dotcourse> -DHEADER=${ch07_tree}/dotcourse.h
                   -P "${ch07_dir}/check_exports.cmake")
  set_tests_properties(ch07.exports PROPERTIES LABELS ch07)
  # The check itself: a function the header declares and the library lacks must fail it.
  add_test(NAME ch07.exports_catches_missing
           COMMAND "${CMAKE_COMMAND}" -DLIB=$<TARGET_FILE:dotcourse> -DHEADER=${ch07_tree}/dotcourse.h
                   -DEXTRA_DECLARED=dotcourse_not_in_the_library -P "${ch07_dir}/check_exports.cmake")
  set_tests_properties(ch07.exports_catches_missing PROPERTIES LABELS ch07
                       PASS_REGULAR_EXPRESSION "does not export these functions of dotcourse.h:[ \t\r\n]*dotcourse_not_in_the_library")

  add_test(NAME ch07.python COMMAND bash "${ch07_dir}/python/run_pytest.sh" $<TARGET_FILE:dotcourse>)
  set_tests_properties(ch07.python PROPERTIES LABELS ch07 SKIP_REGULAR_EXPRESSION "COURSE-NO-GPU|COURSE-SKIP"
                                              TIMEOUT 1200)

  find_program(COURSE_GO go)
  if(COURSE_GO)
    add_test(NAME ch07.go COMMAND bash "${ch07_dir}/go/run_go_test.sh" "$<TARGET_FILE_DIR:dotcourse>")
    set_tests_properties(ch07.go PROPERTIES LABELS ch07 SKIP_REGULAR_EXPRESSION "COURSE-NO-GPU" TIMEOUT 1200)
  else()
    message(STATUS "dotcourse: no Go toolchain (go): the Go tests of chapter 07 are not registered "
                   "(build them where Go is: chapters/07_library/go/build_carry.sh)")
  endif()
endif()
