# Chapter 11 needs NCCL, and its MPI form needs MPI. Without them the chapter (or its MPI form) is
# left out of the build with a message; nothing else changes.
#
# NCCL ships with the CUDA toolkit on some installs (/usr/local/cuda/include/nccl.h) and as a
# system package on others (/usr/include/nccl.h, libnccl.so.2 without the libnccl.so link when
# only the runtime package is there). NCCL_ROOT points elsewhere.
find_path(COURSE_NCCL_INCLUDE_DIR nccl.h
  HINTS ENV NCCL_ROOT "${NCCL_ROOT}" ${CUDAToolkit_INCLUDE_DIRS}
  PATH_SUFFIXES include)
find_library(COURSE_NCCL_LIBRARY NAMES nccl libnccl.so.2
  HINTS ENV NCCL_ROOT "${NCCL_ROOT}" "${CUDAToolkit_LIBRARY_DIR}"
  PATH_SUFFIXES lib lib64)
if(NOT COURSE_NCCL_INCLUDE_DIR OR NOT COURSE_NCCL_LIBRARY)
  message(NOTICE "dotcourse: NCCL not found (nccl.h: ${COURSE_NCCL_INCLUDE_DIR}; libnccl: ${COURSE_NCCL_LIBRARY}). "
                 "Chapter 11_multi_gpu is left out of the build. Install NCCL (libnccl-dev) or set NCCL_ROOT.")
  return()
endif()
message(STATUS "dotcourse: NCCL ${COURSE_NCCL_LIBRARY} (header in ${COURSE_NCCL_INCLUDE_DIR})")
add_library(course_nccl INTERFACE)
target_include_directories(course_nccl INTERFACE "${COURSE_NCCL_INCLUDE_DIR}")
target_link_libraries(course_nccl INTERFACE "${COURSE_NCCL_LIBRARY}")

course_chapter(11_multi_gpu SOURCES dot.cu LIBS course_nccl Threads::Threads)

find_package(MPI COMPONENTS CXX QUIET)
if(NOT MPI_CXX_FOUND)
  message(NOTICE "dotcourse: MPI not found: 11_multi_gpu_mpi (one process per GPU, started by mpirun) "
                 "is left out of the build. Install OpenMPI (libopenmpi-dev) to build it.")
  return()
endif()
message(STATUS "dotcourse: MPI ${MPI_CXX_VERSION} (${MPIEXEC_EXECUTABLE}): building 11_multi_gpu_mpi")
add_executable(11_multi_gpu_mpi "${PROJECT_SOURCE_DIR}/chapters/11_multi_gpu/main_mpi.cpp")
target_link_libraries(11_multi_gpu_mpi PRIVATE 11_multi_gpu_lib course_cli MPI::MPI_CXX)
add_dependencies(11_multi_gpu_all 11_multi_gpu_mpi)  # built with the chapter: CTest runs its checks
if(COURSE_BUILD_TESTS AND MPIEXEC_EXECUTABLE)
  # The MPI form's own check (--test: awkward sizes, the fp64 bound, the same bits on every rank
  # and every run), with 1 and with 2 processes. Two processes need two GPUs: the program prints
  # COURSE-FEW-GPUS and CTest reports the test as skipped where there are fewer.
  foreach(np 1 2)
    add_test(NAME "ch11 mpi: ${np} process(es) agree with the fp64 reference, bit for bit on every rank"
             COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${np} ${MPIEXEC_PREFLAGS}
                     $<TARGET_FILE:11_multi_gpu_mpi> ${MPIEXEC_POSTFLAGS} --test)
    set_tests_properties("ch11 mpi: ${np} process(es) agree with the fp64 reference, bit for bit on every rank"
      PROPERTIES LABELS ch11
                 SKIP_REGULAR_EXPRESSION "COURSE-NO-GPU|COURSE-FEW-GPUS"
                 ENVIRONMENT "NCCL_NVLS_ENABLE=0;OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;OMPI_MCA_rmaps_base_oversubscribe=1"
                 TIMEOUT 300)
  endforeach()
endif()
