# The Python package's compiled extension, dotcourse._core (src/core.cpp, nanobind), as a target:
#   dotcourse_add_python_core(INCLUDE dir)   the module `_core`, which includes INCLUDE/dotcourse/dotcourse.h
# It needs no CUDA and does not link libdotcourse: it opens the library at run time (dlopen of the
# path the package chooses), so one build serves the wheel and every build of the course.
# Included by the wheel's build (packaging/CMakeLists.txt under scikit-build-core) and by the small
# project beside it (CMakeLists.txt: run_pytest.sh builds the extension for a course build).
include_guard(GLOBAL)
set(DOTCOURSE_PYTHON_DIR "${CMAKE_CURRENT_LIST_DIR}")

function(dotcourse_add_python_core)
  cmake_parse_arguments(PARSE_ARGV 0 DC "" "INCLUDE" "")
  find_package(Python 3.9 REQUIRED COMPONENTS Interpreter Development.Module)
  if(NOT nanobind_DIR)
    execute_process(COMMAND "${Python_EXECUTABLE}" -m nanobind --cmake_dir
                    OUTPUT_VARIABLE nb_dir OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE nb_rc)
    if(NOT nb_rc EQUAL 0)
      message(FATAL_ERROR "dotcourse: ${Python_EXECUTABLE} has no nanobind (pip install nanobind)")
    endif()
    set(nanobind_DIR "${nb_dir}" CACHE PATH "nanobind's CMake folder")
  endif()
  find_package(nanobind CONFIG REQUIRED)
  # NumPy's C headers: the fast path reads a float32 array's fields through NumPy's C API.
  if(NOT DOTCOURSE_NUMPY_INCLUDE)
    execute_process(COMMAND "${Python_EXECUTABLE}" -c "import numpy; print(numpy.get_include())"
                    OUTPUT_VARIABLE np_inc OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE np_rc)
    if(NOT np_rc EQUAL 0 OR NOT EXISTS "${np_inc}/numpy/arrayobject.h")
      message(FATAL_ERROR "dotcourse: ${Python_EXECUTABLE} has no NumPy headers (pip install numpy)")
    endif()
    set(DOTCOURSE_NUMPY_INCLUDE "${np_inc}" CACHE PATH "NumPy's C headers (numpy.get_include())")
  endif()
  # NOMINSIZE: -O2/-O3 from the build type, not -Os (the fast path is the point of the module).
  nanobind_add_module(_core NOMINSIZE "${DOTCOURSE_PYTHON_DIR}/src/core.cpp")
  target_include_directories(_core PRIVATE "${DC_INCLUDE}" "${DOTCOURSE_NUMPY_INCLUDE}")
  target_link_libraries(_core PRIVATE ${CMAKE_DL_LIBS})
  target_compile_features(_core PRIVATE cxx_std_17)
endfunction()
