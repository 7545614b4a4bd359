// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// The subcommands of `timelake`, as a table main() builds the command line
// from. Each subcommand is a Command: it declares its own flags, bound to its
// own fields, and runs once they are parsed. The table lists them in the
// order `timelake --help` shows them; the Command of each lives in the file
// of its group:
//   ingest_commands.cc  create, append (alias import)
//   query_commands.cc   sql, latest
//   table_commands.cc   maintain, delete, rollback, upgrade, info, ls, drop,
//                       alter
//   serve_command.cc    serve
//   commands.cc         settings, demo, and what the groups share
//
// Commands run on the calling thread, one per process; nothing here is
// thread-safe.

#ifndef TIMELAKE_CLI_COMMANDS_H_
#define TIMELAKE_CLI_COMMANDS_H_

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <arrow/result.h>
#include <arrow/status.h>

#include "timelake/timelake.h"

namespace CLI {
class App;
}  // namespace CLI

namespace timelake::cli {

// The options given before the subcommand (or, since they fall through,
// after it).
struct GlobalArgs {
  // -w: the warehouse. Default: empty, $TIMELAKE_WAREHOUSE.
  std::string warehouse;
  // --set timelake.NAME=VALUE: session settings of the commands that query.
  std::vector<std::string> sets;
  // --storage-option KEY=VALUE: options of the storage client.
  std::vector<std::string> storage_options;
};

// One subcommand.
class Command {
 public:
  virtual ~Command() = default;
  // Declares the subcommand's positionals and flags on `app`, bound to fields
  // of this object, which must outlive the parse.
  virtual void AddOptions(CLI::App* app) = 0;
  // Runs the parsed command. Errors: a usage error (exit status 2) for a bad
  // combination of flags, any other status (exit status 1) for a failure.
  virtual arrow::Status Run(const GlobalArgs& global) = 0;
};

// An entry of the table of subcommands.
struct CommandSpec {
  std::string_view name;
  // A second name, or empty.
  std::string_view alias;
  // The line `timelake --help` shows.
  std::string_view description;
  // Whether the command runs queries, so that --set before the subcommand
  // (session settings) means something to it.
  bool runs_queries;
  std::unique_ptr<Command> (*make)();
};

// Every subcommand, in the order `timelake --help` lists them.
std::span<const CommandSpec> Subcommands();

// --- shared by the commands -------------------------------------------------

// What a command does with its warehouse: only a command that writes tables
// may create a local warehouse directory that does not exist yet, so a typo
// in -w of `ls` or `info` is an error instead of an empty answer.
enum class WarehouseUse { kExisting, kCreate };

// The warehouse of -w (else $TIMELAKE_WAREHOUSE), opened with the storage
// options. Errors: a usage error when neither names one, a bad
// --storage-option; NotFound "no warehouse at …" for kExisting and a local
// path (or file:// URL) that is not a directory; those of Lake::Open.
arrow::Result<Lake> OpenLake(const GlobalArgs& global, WarehouseUse use);

// `--set timelake.x=y` becomes `SET timelake.x = 'y'` on the query session,
// the session level of the settings registry (SPEC §4.3). Errors: a usage
// error for an item that is not timelake.NAME=VALUE.
arrow::Result<std::vector<std::string>> SessionStatements(
    const std::vector<std::string>& sets);

// --- one factory per subcommand, defined in the file of its group -----------

std::unique_ptr<Command> MakeCreateCommand();
std::unique_ptr<Command> MakeAppendCommand();
std::unique_ptr<Command> MakeSqlCommand();
std::unique_ptr<Command> MakeLatestCommand();
std::unique_ptr<Command> MakeMaintainCommand();
std::unique_ptr<Command> MakeDeleteCommand();
std::unique_ptr<Command> MakeRollbackCommand();
std::unique_ptr<Command> MakeInfoCommand();
std::unique_ptr<Command> MakeLsCommand();
std::unique_ptr<Command> MakeDropCommand();
std::unique_ptr<Command> MakeAlterCommand();
std::unique_ptr<Command> MakeUpgradeCommand();
std::unique_ptr<Command> MakeServeCommand();
std::unique_ptr<Command> MakeSettingsCommand();
std::unique_ptr<Command> MakeDemoCommand();

}  // namespace timelake::cli

#endif  // TIMELAKE_CLI_COMMANDS_H_
