// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// Small helpers every file of the `timelake` tool shares: usage errors and
// the exit status they map to, the one-line error report, KEY=VALUE options
// and elapsed time.

#ifndef TIMELAKE_CLI_UTIL_H_
#define TIMELAKE_CLI_UTIL_H_

#include <chrono>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <arrow/result.h>
#include <arrow/status.h>

namespace timelake::cli {

// Exit status of a failed command, and of a usage error (a bad flag or
// argument: nothing was attempted).
inline constexpr int kExitError = 1;
inline constexpr int kExitUsage = 2;

// An Invalid status marked as a usage error (exit status 2 instead of 1).
arrow::Status UsageError(std::string message);
// Whether `status` came from UsageError.
bool IsUsageError(const arrow::Status& status);

// `message` on one line: runs of whitespace (newlines included) become one
// space, leading and trailing whitespace is dropped. Error messages of the
// engine may span lines (DataFusion adds context); the CLI promises one line.
std::string OneLine(std::string_view message);
// Prints "timelake: error: <message>" as one line on stderr.
void PrintError(const arrow::Status& status);

// ASCII lower case.
std::string ToLower(std::string_view text);

// "KEY=VALUE" split at the first '='. Errors: a usage error naming `option`
// when there is no '=' or no key.
arrow::Result<std::pair<std::string, std::string>> SplitKeyValue(const std::string& text,
                                                                 std::string_view option);
// Every item split by SplitKeyValue; a later key replaces an earlier one.
arrow::Result<std::map<std::string, std::string>> ParseKeyValues(
    const std::vector<std::string>& items, std::string_view option);

// Seconds elapsed on the steady clock since `start`, for timings the tool
// prints.
double SecondsSince(std::chrono::steady_clock::time_point start);

}  // namespace timelake::cli

#endif  // TIMELAKE_CLI_UTIL_H_
