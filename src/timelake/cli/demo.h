// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// `timelake demo`: the TSBS cpu-only data set into a local warehouse, then a
// few typical time-series queries with their timings.

#ifndef TIMELAKE_CLI_DEMO_H_
#define TIMELAKE_CLI_DEMO_H_

#include <iosfwd>
#include <string>
#include <vector>

#include <arrow/status.h>

namespace timelake::cli {

struct DemoOptions {
  // Warehouse URL or local path. Default: ./timelake-demo.
  std::string warehouse = "timelake-demo";
  // TSBS hosts. Default: 100.
  int hosts = 100;
  // Hours of data (one row per host every 10 s). Default: 24.
  int hours = 24;
  // Statements run first on the query session (the CLI's --set). Default: none.
  std::vector<std::string> session_statements;
};

// Runs the demo, printing to `out` (progress goes to stderr). Drops and
// recreates the table demo.cpu in the warehouse; nothing else is touched.
arrow::Status RunDemo(const DemoOptions& options, std::ostream* out);

}  // namespace timelake::cli

#endif  // TIMELAKE_CLI_DEMO_H_
