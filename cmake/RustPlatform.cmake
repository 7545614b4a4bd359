# The Rust platform crate (object_store + DataFusion) as one static library.
#
# Cargo's target directory lives outside the clone (default
# ~/.cache/timelake/cargo-target) so that rebuilds and CI runs on the same
# machine reuse the compiled DataFusion. Cargo is run on every build; it
# returns at once when nothing changed.

find_program(CARGO_EXECUTABLE cargo HINTS "$ENV{HOME}/.cargo/bin" REQUIRED)
if(NOT TIMELAKE_CARGO_TARGET_DIR)
  if(DEFINED ENV{TIMELAKE_CARGO_TARGET_DIR})
    set(TIMELAKE_CARGO_TARGET_DIR "$ENV{TIMELAKE_CARGO_TARGET_DIR}")
  else()
    set(TIMELAKE_CARGO_TARGET_DIR "$ENV{HOME}/.cache/timelake/cargo-target")
  endif()
endif()

# The crate is always built with the release profile: DataFusion in debug is
# too slow to test with, and one profile means one cold build. The library is
# linked from a copy in this build directory, made under a lock on the target
# directory (cmake/CargoBuild.cmake): another clone building at the same time
# with the same target directory cannot swap its library in.
set(_rust_lib "${CMAKE_BINARY_DIR}/rust/libtimelake_platform.a")
# A wheel build (scikit-build-core) exports CC and CXX; the crates' build
# scripts (zstd-sys, ring, ...) rebuild on any change of them, which would
# make the wheel build and `make` rebuild DataFusion's dependencies in turn in
# a shared target directory. Cargo then sees the environment `make` gives it.
set(_cargo_env "")
if(SKBUILD)
  set(_cargo_env ${CMAKE_COMMAND} -E env --unset=CC --unset=CXX)
endif()
add_custom_target(timelake_platform_cargo
  COMMAND ${_cargo_env} ${CMAKE_COMMAND} -DCARGO=${CARGO_EXECUTABLE}
          -DCARGO_TARGET_DIR=${TIMELAKE_CARGO_TARGET_DIR}
          -DCRATE_DIR=${CMAKE_SOURCE_DIR}/rust -DOUTPUT=${_rust_lib}
          -P ${CMAKE_SOURCE_DIR}/cmake/CargoBuild.cmake
  BYPRODUCTS "${_rust_lib}"
  USES_TERMINAL
  COMMENT "Building the Rust platform crate (cargo)")

add_library(timelake_platform STATIC IMPORTED GLOBAL)
set_target_properties(timelake_platform PROPERTIES
  IMPORTED_LOCATION "${_rust_lib}"
  INTERFACE_INCLUDE_DIRECTORIES "${CMAKE_SOURCE_DIR}/rust/include"
  INTERFACE_LINK_LIBRARIES "Threads::Threads;dl;m;rt")
add_dependencies(timelake_platform timelake_platform_cargo)
