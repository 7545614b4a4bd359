// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// UUIDs: version 7 (time-ordered, RFC 9562) for data file names and table
// uuids, so that names sort by creation time; random 64-bit ids for snapshots.

#ifndef TIMELAKE_UTIL_UUID_H_
#define TIMELAKE_UTIL_UUID_H_

#include <cstdint>
#include <string>

#include "timelake/util/clock.h"

namespace timelake::internal {

// "01a237c6-cd77-729a-819a-73e5962901ef" for the given time.
std::string NewUuidV7(TimePoint now);
// A random UUID version 4.
std::string NewUuidV4();
// A positive random 63-bit id (Iceberg snapshot ids are positive longs).
int64_t NewSnapshotId();

}  // namespace timelake::internal

#endif  // TIMELAKE_UTIL_UUID_H_
