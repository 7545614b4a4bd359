# Builds the Rust platform crate and copies its static library into this
# CMake build directory (run by RustPlatform.cmake as `cmake -P`).
#
#   cmake -DCARGO=... -DCARGO_TARGET_DIR=... -DCRATE_DIR=... -DOUTPUT=... -P CargoBuild.cmake
#
# The cargo target directory is shared by every clone on the machine, and
# cargo writes one release/libtimelake_platform.a there whatever the sources.
# Two clones building at once would each link whichever copy came last, so the
# build and the copy happen under one lock on the target directory: each build
# directory links the library built from its own sources. The copy is only
# written when it differs, so an unchanged crate relinks nothing.

foreach(_var CARGO CARGO_TARGET_DIR CRATE_DIR OUTPUT)
  if(NOT DEFINED ${_var})
    message(FATAL_ERROR "CargoBuild.cmake: ${_var} is not set")
  endif()
endforeach()

file(MAKE_DIRECTORY "${CARGO_TARGET_DIR}")
# Released when this process exits, also when cargo fails.
file(LOCK "${CARGO_TARGET_DIR}/.timelake-build.lock" GUARD PROCESS
     TIMEOUT 3600 RESULT_VARIABLE _lock)
if(NOT _lock STREQUAL "0")
  message(FATAL_ERROR "locking ${CARGO_TARGET_DIR}/.timelake-build.lock: ${_lock}")
endif()

set(ENV{CARGO_TARGET_DIR} "${CARGO_TARGET_DIR}")
execute_process(
  COMMAND "${CARGO}" build --release --locked --quiet
  WORKING_DIRECTORY "${CRATE_DIR}"
  RESULT_VARIABLE _cargo)
if(NOT _cargo STREQUAL "0")
  message(FATAL_ERROR "cargo build of ${CRATE_DIR} failed: ${_cargo}")
endif()

get_filename_component(_output_dir "${OUTPUT}" DIRECTORY)
file(MAKE_DIRECTORY "${_output_dir}")
file(COPY_FILE "${CARGO_TARGET_DIR}/release/libtimelake_platform.a" "${OUTPUT}"
     ONLY_IF_DIFFERENT)
