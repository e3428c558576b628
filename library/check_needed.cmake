# ctest ch07.no_cublas_needed: a shared library's NEEDED entries (readelf -d) name none of FORBID.
#   cmake -DLIB=libdotcourse.so -DFORBID="libcublas" -P check_needed.cmake
# libdotcourse opens cuBLAS on a GPU context's first use (src/cublas_lazy.cpp), so a host without it
# loads the library; a cuBLAS function called from the library but missing from that file would
# bring libcublas back as NEEDED, and this fails.
foreach(var LIB FORBID)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "check_needed.cmake: pass -D${var}=...")
  endif()
endforeach()
find_program(READELF readelf REQUIRED)
execute_process(COMMAND "${READELF}" -d "${LIB}" RESULT_VARIABLE rc OUTPUT_VARIABLE dyn ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "readelf -d ${LIB} failed: ${err}")
endif()
string(REGEX MATCHALL "\\(NEEDED\\)[^\n]*" needed "${dyn}")
if(NOT needed)
  message(FATAL_ERROR "readelf -d ${LIB} shows no NEEDED entry at all: not a shared library?")
endif()
foreach(name IN LISTS FORBID)
  foreach(entry IN LISTS needed)
    if(entry MATCHES "\\[${name}\\." OR entry MATCHES "\\[${name}\\]")
      message(FATAL_ERROR "${LIB} needs ${name} at load time:\n${entry}\n(every NEEDED: ${needed})")
    endif()
  endforeach()
endforeach()
message(STATUS "${LIB}: no NEEDED ${FORBID} (NEEDED: ${needed})")
