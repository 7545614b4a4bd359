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
#
# The lock alone is not enough: cargo names a path crate's artifacts by its
# path within the workspace, not by the clone, and judges them fresh by file
# times. Built from clone A at 10:05, they look fresh to clone B whose sources
# last changed at 10:00, and B would get A's library. So a stamp beside them
# records which crate directory built them; when another did (or a cargo run
# outside this script rebuilt them since: the library is newer than the
# stamp), this crate alone is cleaned and rebuilt (its dependencies stay).

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
set(_library "${CARGO_TARGET_DIR}/release/libtimelake_platform.a")
set(_stamp "${CARGO_TARGET_DIR}/release/.timelake-platform-source")
set(_built_from "")
if(EXISTS "${_stamp}")
  file(READ "${_stamp}" _built_from)
endif()
if(EXISTS "${_library}" AND (NOT _built_from STREQUAL CRATE_DIR OR
                             "${_library}" IS_NEWER_THAN "${_stamp}"))
  message(STATUS "Rebuilding timelake_platform: ${_library} was built from "
                 "'${_built_from}', not from ${CRATE_DIR}")
  execute_process(
    COMMAND "${CARGO}" clean --release --quiet -p timelake-platform
    WORKING_DIRECTORY "${CRATE_DIR}"
    RESULT_VARIABLE _clean)
  if(NOT _clean STREQUAL "0")
    message(FATAL_ERROR "cargo clean -p timelake-platform failed: ${_clean}")
  endif()
endif()
execute_process(
  COMMAND "${CARGO}" build --release --locked --quiet
  WORKING_DIRECTORY "${CRATE_DIR}"
  RESULT_VARIABLE _cargo)
if(NOT _cargo STREQUAL "0")
  message(FATAL_ERROR "cargo build of ${CRATE_DIR} failed: ${_cargo}")
endif()

file(WRITE "${_stamp}" "${CRATE_DIR}")

get_filename_component(_output_dir "${OUTPUT}" DIRECTORY)
file(MAKE_DIRECTORY "${_output_dir}")
file(COPY_FILE "${_library}" "${OUTPUT}" ONLY_IF_DIFFERENT)
