// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// `timelake`: the command-line tool, over the public API only (SPEC §10).
// This file parses the global flags, builds the subcommands from the table in
// commands.h and runs the one given. Errors end as one line
// "timelake: error: <message>" on stderr with exit status 1 (2 for usage
// errors); nothing here prints a stack trace.

#include <exception>
#include <iostream>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <arrow/compute/initialize.h>
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "timelake/cli/commands.h"
#include "timelake/cli/util.h"
#include "timelake/timelake.h"

namespace timelake::cli {
namespace {

// A subcommand as declared on the command line.
struct Declared {
  const CommandSpec* spec;
  CLI::App* app;
  std::unique_ptr<Command> command;
};

// The first argument that is neither a global option nor its value: the
// subcommand's name as typed, or empty.
std::string CalledSubcommand(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "-w" || arg == "--warehouse" || arg == "--set" ||
        arg == "--storage-option") {
      ++i;  // its value
      continue;
    }
    if (!arg.empty() && arg.front() == '-') continue;
    return std::string(arg);
  }
  return "";
}

int Main(int argc, char** argv) {
  CLI::App app{
      "Timelake: time series as Apache Iceberg tables of Parquet files, queried with "
      "SQL."};
  app.name("timelake");
  app.set_version_flag("--version",
                       fmt::format("timelake (table format {})", kFormatVersion));
  app.require_subcommand(1);
  // Global options may also follow the subcommand (`timelake sql -w DIR ...`).
  app.fallthrough();

  GlobalArgs global;
  app.add_option("-w,--warehouse", global.warehouse,
                 "Warehouse: a local path, file://, s3://, gs:// or az:// URL "
                 "(default: $TIMELAKE_WAREHOUSE)");
  app.add_option("--set", global.sets,
                 "Session setting timelake.NAME=VALUE for queries (repeatable)")
      ->allow_extra_args(false);
  app.add_option("--storage-option", global.storage_options,
                 "Storage option KEY=VALUE, e.g. aws_region=eu-west-1 (repeatable)")
      ->allow_extra_args(false);

  // A subcommand called by its alias (`import`) is named so in its --help
  // and usage errors.
  const std::string called = CalledSubcommand(argc, argv);
  std::vector<Declared> subcommands;
  for (const CommandSpec& spec : Subcommands()) {
    const bool by_alias = !spec.alias.empty() && called == spec.alias;
    CLI::App* sub = app.add_subcommand(std::string(by_alias ? spec.alias : spec.name),
                                       std::string(spec.description));
    if (!spec.alias.empty()) sub->alias(std::string(by_alias ? spec.name : spec.alias));
    auto command = spec.make();
    command->AddOptions(sub);
    subcommands.push_back({&spec, sub, std::move(command)});
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success))
      return app.exit(e);
    std::cerr << "timelake: error: " << OneLine(e.what()) << " (see --help)" << std::endl;
    return kExitUsage;
  }

  // require_subcommand(1) made sure exactly one was given.
  Declared* chosen = nullptr;
  for (auto& declared : subcommands) {
    if (declared.app->parsed()) chosen = &declared;
  }

  arrow::Status status = arrow::compute::Initialize();
  // Before the subcommand --set means session settings; table properties are
  // given after `create` or `append`, and the other commands run no query.
  if (status.ok() && !global.sets.empty() &&
      (chosen == nullptr || !chosen->spec->runs_queries)) {
    status = UsageError(
        "--set before the subcommand sets session settings, which only sql, latest and "
        "demo use (table properties go after create or append: `create TABLE --set "
        "k=v`)");
  }
  if (status.ok() && chosen != nullptr) status = chosen->command->Run(global);
  if (!status.ok()) {
    PrintError(status);
    return IsUsageError(status) ? kExitUsage : kExitError;
  }
  return 0;
}

}  // namespace
}  // namespace timelake::cli

int main(int argc, char** argv) {
  timelake::PreferJemallocPool();
  int code = timelake::cli::kExitError;
  try {
    code = timelake::cli::Main(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "timelake: error: " << timelake::cli::OneLine(e.what()) << std::endl;
  } catch (...) {
    std::cerr << "timelake: error: unexpected failure" << std::endl;
  }
  // Background writes (head object, version hint) finish before exit.
  timelake::Flush();
  return code;
}
