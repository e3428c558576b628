# Runs one chapter's executable with bad options: each must exit 2 (bad command line, README's exit
# codes) with one line that names the option first, before the executable looks for a GPU, so the
# answer is the same on a machine with or without one. The one list of cases for every chapter:
# the options of the kit (course::App) for all, then the chapter's own. Registered per chapter by
# tests/CMakeLists.txt (label cli); needs no GPU.
#
#   cmake -DPROGRAM=build/solutions/bin/05_many_blocks -DCHAPTER=05_many_blocks -P tests/support/bad_options.cmake
#
# A case is "ARGUMENTS|WORDS": ARGUMENTS split as a shell would, WORDS what the error line must
# start with after "CHAPTER: error: ".
if(NOT PROGRAM OR NOT CHAPTER)
  message(FATAL_ERROR "bad_options.cmake: give -DPROGRAM=<executable> -DCHAPTER=<NN_name>")
endif()

set(cases
  "--n 0|--n: '0' is not a size of at least 1"
  "--n lots|--n: 'lots' is not a size"
  "--reps 0|--reps: '0' is not a whole number from 1 to 100000"
  "--warmup many|--warmup: 'many' is not a whole number from 0 to 10000"
  "--seed -1|--seed: '-1' is not a seed"
  "--device x|--device: 'x' is not a device number"
  "--kernel no_such_version|--kernel: 'no_such_version' is not a version of this chapter"
  "--no-such-option 1|unknown option '--no-such-option'"
  "--quiet 0|'0' follows no option that takes a value"
  "--reps 3 --reps 4|--reps: given 2 times"
  "--csv --quiet|--csv: give it a value")
if(IS_DIRECTORY /proc)  # a folder root may not write in, whatever access() says
  list(APPEND cases "--csv /proc/course_bad_option.csv|--csv: '/proc/course_bad_option.csv' cannot be made")
endif()

string(SUBSTRING "${CHAPTER}" 0 2 number)
if(number STREQUAL "01")
  list(APPEND cases "--iters 1,x|--iters: 'x' is not a whole number from 0 to 100000"
                    "--intensity-n 0|--intensity-n: '0' is not a size of at least 1"
                    "--cpu-reps 0|--cpu-reps: '0' is not a whole number from 1 to 1000")
elseif(number STREQUAL "02")
  list(APPEND cases "--accuracy-n 5|--accuracy-n: '5' is not 0 (skip) or a size of at least 2^10"
                    "--threads 2000|--threads: '2000' is not a whole number from 0 to 1024"
                    "--sizes 2^20,0|--sizes: '0' is not a size of at least 1")
elseif(number STREQUAL "03" OR number STREQUAL "06" OR number STREQUAL "10")
  list(APPEND cases "--sizes 2^20,0|--sizes: '0' is not a size of at least 1")
elseif(number STREQUAL "05")
  list(APPEND cases "--per-thread 0|--per-thread: '0' is not a whole number from 1 to 4096")
elseif(number STREQUAL "09")
  list(APPEND cases "--streams 0|--streams: '0' is not a whole number from 1 to"
                    "--chunks 0|--chunks: '0' is not a whole number from 1 to 4096")
elseif(number STREQUAL "11")
  list(APPEND cases "--gpus -1|--gpus: '-1' is not a whole number from 0 to 64"
                    "--strong-n 0|--strong-n: '0' is not a size of at least 1"
                    "--host-n x|--host-n: 'x' is not a size"
                    "--steps sweep,nothing|--steps: 'nothing' is not a step"
                    "--device 1|--device: 11_multi_gpu uses GPUs 0 to --gpus - 1")
endif()

set(failures 0)
foreach(case IN LISTS cases)
  string(FIND "${case}" "|" bar)
  string(SUBSTRING "${case}" 0 ${bar} args_text)
  math(EXPR from "${bar} + 1")
  string(SUBSTRING "${case}" ${from} -1 words)
  separate_arguments(args UNIX_COMMAND "${args_text}")
  execute_process(COMMAND "${PROGRAM}" ${args} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
                  TIMEOUT 60)
  set(expected "${CHAPTER}: error: ${words}")
  string(FIND "${err}" "${expected}" at)
  if(rc STREQUAL "2" AND at EQUAL 0)
    message(STATUS "ok: ${CHAPTER} ${args_text}")
  else()
    math(EXPR failures "${failures} + 1")
    string(STRIP "${err}" err)
    message("FAILED: ${CHAPTER} ${args_text}\n  expected: exit code 2 and stderr starting \"${expected}\"\n"
            "  got: exit code ${rc}, stderr: ${err}")
  endif()
endforeach()
list(LENGTH cases total)
if(failures GREATER 0)
  message(FATAL_ERROR "${failures} of ${total} bad command lines were not refused with exit code 2 and the "
                      "option's own words before the GPU check (common/src/cli.cpp, course::App::run; the "
                      "chapter's options in chapters/${CHAPTER}/main.cpp)")
endif()
message(STATUS "${CHAPTER}: all ${total} bad command lines refused with exit code 2")
