# The one version of libdotcourse and of the course. Everything else reads it from here: the CMake
# projects (the course's top-level CMakeLists.txt and packaging/CMakeLists.txt, project(VERSION);
# library.cmake), and from them the C library (dotcourse_version()), the C++ test of it, the CMake
# package (dotcourseConfigVersion.cmake), dotcourse.pc; the Python package (pyproject.toml reads
# this line; dotcourse.__version__) and the Go tests. tests/tools/test_one_version.py checks that
# no other file states it.
set(DOTCOURSE_VERSION 0.8.0)
