# The course's CMake vocabulary: finding Catch2 (v2 or v3) and declaring a chapter.

# Catch2 3 (the GPU machine, most students) or Catch2 2.13 (Debian): one interface target,
# `course_catch`, carries the right headers and a main() for either.
macro(course_find_catch2)
  find_package(Catch2 3 CONFIG QUIET)
  if(Catch2_FOUND)
    add_library(course_catch INTERFACE)
    target_link_libraries(course_catch INTERFACE Catch2::Catch2WithMain)
    target_compile_definitions(course_catch INTERFACE COURSE_CATCH2_V3=1)
  else()
    find_package(Catch2 2.13 CONFIG REQUIRED)
    add_library(course_catch STATIC "${PROJECT_SOURCE_DIR}/tests/support/catch_main_v2.cpp")
    # Catch2 2's whole runner compiles here (15 s at -O3, 7 s at -O0, in every build folder); its
    # speed is not what a test measures.
    set_source_files_properties("${PROJECT_SOURCE_DIR}/tests/support/catch_main_v2.cpp" PROPERTIES COMPILE_OPTIONS -O0)
    target_link_libraries(course_catch PUBLIC Catch2::Catch2)
    # Catch2 2 is one header of 17,000 lines that every test file parses (about a second each, in
    # every build folder): parsed once here, into a precompiled header that every test program
    # reuses (course_add_catch_tests). Its own target, with the kit's flags: catch_main_v2.cpp
    # defines CATCH_CONFIG_MAIN before the header and cannot take it precompiled. Catch2 3's
    # headers are small and compiled apart: nothing to do there.
    add_library(course_catch_pch OBJECT "${PROJECT_SOURCE_DIR}/tests/support/catch_pch.cpp")
    target_link_libraries(course_catch_pch PRIVATE Catch2::Catch2 course_common)
    target_precompile_headers(course_catch_pch PRIVATE <catch2/catch.hpp>)
  endif()
  message(STATUS "dotcourse: Catch2 ${Catch2_VERSION}")
  list(APPEND CMAKE_MODULE_PATH "${Catch2_DIR}")
  include(Catch)
endmacro()

# Registers every Catch2 test case of TARGET with CTest, under LABEL. GPU tests print the marker
# COURSE-NO-GPU when no GPU is present, and tests that need more device memory than the card has
# print COURSE-NO-MEMORY, and tests that need more GPUs than the machine has print COURSE-FEW-GPUS;
# CTest reports them as skipped (never as passed).
function(course_add_catch_tests target label)
  if(TARGET course_catch_pch)  # Catch2 2: the header precompiled once (course_find_catch2)
    target_precompile_headers(${target} REUSE_FROM course_catch_pch)
  endif()
  catch_discover_tests(${target}
    DISCOVERY_TIMEOUT 60
    PROPERTIES SKIP_REGULAR_EXPRESSION "COURSE-NO-GPU|COURSE-NO-MEMORY|COURSE-FEW-GPUS"
               TIMEOUT 1200
               LABELS ${label})
endfunction()

# course_chapter(NN_name SOURCES a.cu b.cu [LIBS target...])
#
# Declares one chapter:
#   NN_name_lib   the exercise sources, from ${COURSE_TREE_DIR}/NN_name/ (student or solution files)
#   NN_name       the chapter's executable, from chapters/NN_name/main.cpp (the driver is never an exercise)
#   test_NN_name  the chapter's Catch2 tests, from tests/test_NN_name.cpp, labelled chNN in CTest
function(course_chapter name)
  cmake_parse_arguments(PARSE_ARGV 1 CH "" "" "SOURCES;LIBS")
  if(NOT CH_SOURCES)
    message(FATAL_ERROR "course_chapter(${name}): SOURCES is empty")
  endif()
  string(SUBSTRING "${name}" 0 2 number)
  set(label "ch${number}")
  set(tree_dir "${COURSE_TREE_DIR}/${name}")

  list(TRANSFORM CH_SOURCES PREPEND "${tree_dir}/")
  foreach(src IN LISTS CH_SOURCES)
    if(NOT EXISTS "${src}")
      message(FATAL_ERROR "course_chapter(${name}): ${src} does not exist. "
                          "Is COURSE_TREE (${COURSE_TREE}) a complete chapters/ tree?")
    endif()
  endforeach()

  add_library(${name}_lib STATIC ${CH_SOURCES})
  target_include_directories(${name}_lib PUBLIC "${tree_dir}")
  target_link_libraries(${name}_lib PUBLIC course_common ${CH_LIBS})
  set_target_properties(${name}_lib PROPERTIES CUDA_SEPARABLE_COMPILATION OFF
                                               POSITION_INDEPENDENT_CODE ON)

  set_property(GLOBAL APPEND PROPERTY COURSE_CHAPTERS ${name})

  add_executable(${name} "${PROJECT_SOURCE_DIR}/chapters/${name}/main.cpp")
  target_link_libraries(${name} PRIVATE ${name}_lib course_cli)

  # ${name}_all: everything the chapter builds (its executable, its tests, and what a chapter's own
  # .cmake file or the instructor's extra tests add with add_dependencies). `tools/grade --chapter`
  # builds this one target, so nothing that CTest then runs for the chapter is left unbuilt.
  add_custom_target(${name}_all)
  add_dependencies(${name}_all ${name})

  set(test_src "${PROJECT_SOURCE_DIR}/tests/test_${name}.cpp")
  if(COURSE_BUILD_TESTS AND EXISTS "${test_src}")
    add_executable(test_${name} "${test_src}")
    target_link_libraries(test_${name} PRIVATE ${name}_lib course_test_support)
    course_add_catch_tests(test_${name} ${label})
    add_dependencies(${name}_all test_${name})
  endif()
  # A chapter's tests of its CUDA calls without a GPU (tests/test_NN_name_host_calls.cpp): that file
  # defines the CUDA runtime functions the chapter calls, over a model in host memory, in place of
  # libcudart.so's (course_common links the shared runtime, so the program's own definitions win).
  # A program of its own: the chapter's other tests need the real runtime.
  set(calls_src "${PROJECT_SOURCE_DIR}/tests/test_${name}_host_calls.cpp")
  if(COURSE_BUILD_TESTS AND EXISTS "${calls_src}")
    add_executable(test_${name}_host_calls "${calls_src}")
    target_link_libraries(test_${name}_host_calls PRIVATE ${name}_lib course_test_support)
    course_add_catch_tests(test_${name}_host_calls ${label})
    add_dependencies(${name}_all test_${name}_host_calls)
  endif()

  # One source for the list of versions: the executable's --list must print the registry that
  # tools/version_lists.py reads from the source (and writes into the README). A maintainers' check,
  # in the solutions build only; it needs no GPU (--list returns before the GPU is touched).
  if(COURSE_BUILD_TESTS AND COURSE_TREE STREQUAL "solutions")
    find_package(Python3 COMPONENTS Interpreter QUIET)
    if(Python3_FOUND)
      add_test(NAME tools.version_list_${number}
               COMMAND Python3::Interpreter "${PROJECT_SOURCE_DIR}/tools/version_lists.py" --check-list ${name}
                       "$<TARGET_FILE:${name}>")
      set_tests_properties(tools.version_list_${number} PROPERTIES LABELS tools)
    endif()
  endif()
endfunction()

# Instructor-only tests (tools/grade --extra-tests DIR): every DIR/NN_name*.cpp becomes a Catch2
# executable test_extra_<file name>, linked to that chapter's library (the student's tree) and
# labelled chNN, so the grader runs and reports it with the chapter's own tests. Call it after
# the last course_chapter().
function(course_add_extra_tests)
  set(dir "${COURSE_EXTRA_TESTS_DIR}")
  if(NOT dir OR NOT COURSE_BUILD_TESTS)
    return()
  endif()
  if(NOT IS_DIRECTORY "${dir}")
    message(FATAL_ERROR "COURSE_EXTRA_TESTS_DIR='${dir}' is not a folder")
  endif()
  get_property(chapters GLOBAL PROPERTY COURSE_CHAPTERS)
  file(GLOB sources "${dir}/*.cpp")
  foreach(src IN LISTS sources)
    get_filename_component(stem "${src}" NAME_WE)
    set(found "")
    foreach(ch IN LISTS chapters)
      string(FIND "${stem}" "${ch}" at)
      if(at EQUAL 0)
        set(found "${ch}")
      endif()
    endforeach()
    if(NOT found)
      message(FATAL_ERROR "extra test ${src}: its name must start with a chapter's folder name "
                          "(one of: ${chapters})")
    endif()
    string(SUBSTRING "${found}" 0 2 number)
    add_executable(test_extra_${stem} "${src}")
    target_link_libraries(test_extra_${stem} PRIVATE ${found}_lib course_test_support)
    course_add_catch_tests(test_extra_${stem} ch${number})
    add_dependencies(${found}_all test_extra_${stem})
    message(STATUS "dotcourse: instructor's tests ${src} for ${found}")
  endforeach()
endfunction()
