# Arrow C++ and Parquet from the pinned pyarrow wheel (SPEC §2).
#
# The wheel ships headers and versioned shared libraries (libarrow.so.2600, ...)
# but no CMake package, so we declare imported targets on the full library
# paths. Executables get an RPATH to the wheel's directory.

if(NOT TIMELAKE_PYTHON)
  set(TIMELAKE_PYTHON "${CMAKE_SOURCE_DIR}/.venv/bin/python")
endif()
if(NOT EXISTS "${TIMELAKE_PYTHON}")
  message(FATAL_ERROR "Python ${TIMELAKE_PYTHON} not found: run scripts/setup.sh (or make)")
endif()

execute_process(
  COMMAND "${TIMELAKE_PYTHON}" -c
          "import pyarrow as pa; print(pa.__version__); print(pa.get_include()); print(pa.get_library_dirs()[0])"
  OUTPUT_VARIABLE _pa_out
  RESULT_VARIABLE _pa_rc
  OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT _pa_rc EQUAL 0)
  message(FATAL_ERROR "pyarrow is not importable from ${TIMELAKE_PYTHON}")
endif()
string(REPLACE "\n" ";" _pa_lines "${_pa_out}")
list(GET _pa_lines 0 TIMELAKE_ARROW_VERSION)
list(GET _pa_lines 1 TIMELAKE_ARROW_INCLUDE_DIR)
list(GET _pa_lines 2 TIMELAKE_ARROW_LIB_DIR)

# "26.0.1" -> SO version "2600".
string(REGEX MATCH "^([0-9]+)\\.([0-9]+)" _ "${TIMELAKE_ARROW_VERSION}")
math(EXPR _so "${CMAKE_MATCH_1} * 100 + ${CMAKE_MATCH_2}")
set(TIMELAKE_ARROW_SO_VERSION "${_so}")
message(STATUS "Arrow ${TIMELAKE_ARROW_VERSION} from ${TIMELAKE_ARROW_LIB_DIR}")

function(_timelake_arrow_lib target libname)
  set(_path "${TIMELAKE_ARROW_LIB_DIR}/lib${libname}.so.${TIMELAKE_ARROW_SO_VERSION}")
  if(NOT EXISTS "${_path}")
    message(FATAL_ERROR "missing ${_path}")
  endif()
  add_library(${target} SHARED IMPORTED GLOBAL)
  set_target_properties(${target} PROPERTIES
    IMPORTED_LOCATION "${_path}"
    IMPORTED_NO_SONAME FALSE
    INTERFACE_INCLUDE_DIRECTORIES "${TIMELAKE_ARROW_INCLUDE_DIR}")
endfunction()

_timelake_arrow_lib(Arrow::arrow arrow)
_timelake_arrow_lib(Arrow::compute arrow_compute)
_timelake_arrow_lib(Arrow::acero arrow_acero)
_timelake_arrow_lib(Arrow::dataset arrow_dataset)
_timelake_arrow_lib(Arrow::parquet parquet)
set_property(TARGET Arrow::compute PROPERTY INTERFACE_LINK_LIBRARIES Arrow::arrow)
set_property(TARGET Arrow::parquet PROPERTY INTERFACE_LINK_LIBRARIES Arrow::arrow)
set_property(TARGET Arrow::acero PROPERTY INTERFACE_LINK_LIBRARIES Arrow::compute)
set_property(TARGET Arrow::dataset PROPERTY INTERFACE_LINK_LIBRARIES Arrow::acero Arrow::parquet)

list(APPEND CMAKE_BUILD_RPATH "${TIMELAKE_ARROW_LIB_DIR}")
list(APPEND CMAKE_INSTALL_RPATH "${TIMELAKE_ARROW_LIB_DIR}")
