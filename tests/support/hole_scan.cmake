# The integrity scan of the holes (tests/support/hole_scan.py): one CTest per chapter with host or
# kernel holes that an exploit could use, labelled like the chapter's tests (chNN) so the grader
# runs it with them. It reads the tree that is built (COURSE_TREE_DIR) and needs no GPU.
# Included from tests/CMakeLists.txt after Python3 is looked for.
if(Python3_FOUND)
  foreach(chapter IN ITEMS 01_timing 02_cpu_dot 03_one_thread 04_one_block 05_many_blocks 06_ladder 07_library 08_pinned 09_streams
                           10_dtypes 11_multi_gpu)
    if(IS_DIRECTORY "${COURSE_TREE_DIR}/${chapter}")
      string(SUBSTRING "${chapter}" 0 2 number)
      set(name "ch${number} integrity: the holes call no library or other version, keep no state, read no environment")
      add_test(NAME "${name}"
               COMMAND Python3::Interpreter "${CMAKE_CURRENT_LIST_DIR}/hole_scan.py" --tree "${COURSE_TREE_DIR}"
                       --chapter ${chapter})
      set_tests_properties("${name}" PROPERTIES LABELS ch${number} TIMEOUT 60)
    endif()
  endforeach()
endif()

# A correct but serial loop where the exercise asks for independent lanes (chapter 02's `unrolled`):
# the compiled loop must hold packed adds (tests/support/lanes_check.py). Meaningful only when
# optimised (the grader builds Release); 77 (objdump missing) is a skip.
if(Python3_FOUND AND CMAKE_BUILD_TYPE MATCHES "^(Release|RelWithDebInfo)$" AND CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang"
   AND IS_DIRECTORY "${COURSE_TREE_DIR}/02_cpu_dot")
  set(name "ch02 unrolled lanes: the compiled loop adds in packed lanes, not one chain")
  add_test(NAME "${name}"
           COMMAND Python3::Interpreter "${CMAKE_CURRENT_LIST_DIR}/lanes_check.py" --object $<TARGET_FILE:02_cpu_dot_lib>
                   --function "ch02::dot_unrolled(" --what "dot_unrolled's loop (exercise 1)")
  set_tests_properties("${name}" PROPERTIES LABELS ch02 TIMEOUT 60 SKIP_RETURN_CODE 77)
endif()

# Maintainers' checks (solutions build only, like the other tools.* tests): the scan's rules are
# clean on the course's own hole bodies and stubs, and docs/grading.md's exploit gallery table is
# what the negative cases say (tests/negative/gallery_table.py --check).
if(Python3_FOUND AND COURSE_TREE STREQUAL "solutions" AND IS_DIRECTORY "${PROJECT_SOURCE_DIR}/solutions")
  add_test(NAME tools.hole_scan_self_test COMMAND Python3::Interpreter "${CMAKE_CURRENT_LIST_DIR}/hole_scan.py" --self-test)
  add_test(NAME tools.exploit_gallery_check
           COMMAND Python3::Interpreter "${PROJECT_SOURCE_DIR}/tests/negative/gallery_table.py" --check)
  set_tests_properties(tools.hole_scan_self_test tools.exploit_gallery_check PROPERTIES LABELS tools)
endif()
