// Copyright 2026 The Timelake Authors. Apache-2.0.

#include "timelake/cli/shell.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string_view>
#include <vector>

#include <arrow/array.h>
#include <arrow/builder.h>
#include <arrow/record_batch.h>
#include <arrow/type.h>
#include <fmt/format.h>
#include <readline/history.h>
#include <readline/readline.h>

#include "timelake/cli/util.h"
#include "timelake/status.h"

namespace timelake::cli {
namespace {

std::string Trim(std::string_view text) {
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return "";
  const size_t last = text.find_last_not_of(" \t\r\n");
  return std::string(text.substr(first, last - first + 1));
}

constexpr std::string_view kShellHelp =
    "Statements end with ';' and may span lines. Ctrl-C clears the line, or cancels\n"
    "the running statement; Ctrl-D, \\q, quit or exit leave the shell.\n"
    "  \\?, help          list these commands\n"
    "  \\q                quit\n"
    "  \\d                list the tables\n"
    "  \\d TABLE          describe TABLE: its columns, the time column, the series key\n"
    "  \\timing [on|off]  print \"(N rows, 1.2 ms)\" after each statement (default: on)\n"
    "  \\x [on|off|auto]  expanded display, one \"column | value\" line per value\n"
    "                    (default: off; auto: for rows wider than the terminal)\n";

std::string HistoryPath() {
  const char* home = std::getenv("HOME");
  return home != nullptr ? std::string(home) + "/.timelake_history" : "";
}

// --- Ctrl-C ------------------------------------------------------------------
//
// The SIGINT handler touches only what is async-signal-safe: two lock-free
// atomics, Session::Interrupt (an atomic store) and write(2). It may run on
// any thread (the engine's threads do not block SIGINT), so it wakes the
// prompt through a pipe rather than by interrupting a system call.

std::atomic<Session*> running_session{nullptr};
std::atomic<int> wake_pipe_write{-1};
static_assert(std::atomic<Session*>::is_always_lock_free);
static_assert(std::atomic<int>::is_always_lock_free);

void OnInterrupt(int /*signal*/) {
  const int saved_errno = errno;
  if (Session* session = running_session.load()) session->Interrupt();
  const int fd = wake_pipe_write.load();
  if (fd >= 0) {
    const char byte = 0;
    // A full pipe already holds a wake-up.
    [[maybe_unused]] const ssize_t written = write(fd, &byte, 1);
  }
  errno = saved_errno;
}

void DrainPipe(int fd) {
  char bytes[64];
  while (read(fd, bytes, sizeof(bytes)) > 0) {
  }
}

// While it lives, SIGINT does not end the process but interrupts the running
// statement and wakes ReadLine; the previous disposition comes back after.
class InterruptScope {
 public:
  static arrow::Result<std::unique_ptr<InterruptScope>> Install() {
    auto scope = std::unique_ptr<InterruptScope>(new InterruptScope());
    if (pipe(scope->pipe_) != 0) {
      return arrow::Status::IOError("setting up Ctrl-C for the shell: pipe failed: ",
                                    std::strerror(errno));
    }
    for (int fd : scope->pipe_) {
      fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
      fcntl(fd, F_SETFD, FD_CLOEXEC);
    }
    wake_pipe_write.store(scope->pipe_[1]);
    struct sigaction action = {};
    action.sa_handler = OnInterrupt;
    sigemptyset(&action.sa_mask);
    // Calls the signal lands in (writes of the result) resume; poll(2) in
    // ReadLine returns EINTR whatever the flag says.
    action.sa_flags = SA_RESTART;
    if (sigaction(SIGINT, &action, &scope->previous_) != 0) {
      return arrow::Status::IOError("setting up Ctrl-C for the shell: sigaction failed: ",
                                    std::strerror(errno));
    }
    scope->installed_ = true;
    return scope;
  }

  ~InterruptScope() {
    if (installed_) sigaction(SIGINT, &previous_, nullptr);
    wake_pipe_write.store(-1);
    for (int fd : pipe_) {
      if (fd >= 0) close(fd);
    }
  }

  // Readable after each Ctrl-C, until Drain().
  int wake_fd() const { return pipe_[0]; }
  // Forgets the Ctrl-Cs so far: one that stopped a statement must not also
  // clear the next line.
  void Drain() const { DrainPipe(pipe_[0]); }

 private:
  InterruptScope() = default;
  int pipe_[2] = {-1, -1};
  struct sigaction previous_ = {};
  bool installed_ = false;
};

// Makes Ctrl-C interrupt `session` while it lives.
class RunningStatement {
 public:
  explicit RunningStatement(Session* session) { running_session.store(session); }
  ~RunningStatement() { running_session.store(nullptr); }
  RunningStatement(const RunningStatement&) = delete;
  RunningStatement& operator=(const RunningStatement&) = delete;
};

// --- line input --------------------------------------------------------------
//
// Readline's callback interface rather than readline(): the wait for a key is
// ours, so it can wait for the Ctrl-C pipe too and drop the line cleanly
// (readline's own SIGINT handling, rl_catch_signals, is off).

enum class Input { kLine, kInterrupted, kEnd };

struct PendingLine {
  bool done = false;
  std::optional<std::string> line;  // nullopt at end of input
};
PendingLine* pending_line = nullptr;  // the shell's thread only

void OnLine(char* raw) {
  // Removed first, so that readline prints no prompt of its own for a next
  // line; ReadLine installs one with the right prompt.
  rl_callback_handler_remove();
  pending_line->done = true;
  if (raw != nullptr) {
    pending_line->line = std::string(raw);
    std::free(raw);
  }
}

Input ReadLine(const char* prompt, int wake_fd, std::string* line) {
  PendingLine pending;
  pending_line = &pending;
  rl_callback_handler_install(prompt, OnLine);
  const int in = fileno(rl_instream != nullptr ? rl_instream : stdin);
  bool interrupted = false;
  while (!pending.done) {
    struct pollfd fds[2] = {{in, POLLIN, 0}, {wake_fd, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;  // a signal (SIGINT, SIGWINCH): look again
      break;
    }
    if ((fds[1].revents & POLLIN) != 0) {
      DrainPipe(wake_fd);
      interrupted = true;
      break;
    }
    if ((fds[0].revents & POLLNVAL) != 0) break;
    if (fds[0].revents != 0) rl_callback_read_char();
  }
  if (!pending.done) {
    if (interrupted) {
      // As psql and duckdb do: show the line was dropped (at the cursor, as
      // readline's own handler echoes it), start a new one.
      FILE* screen = rl_outstream != nullptr ? rl_outstream : stdout;
      std::fputs("^C\n", screen);
      std::fflush(screen);
      // The screen shows a fresh line now; without this the next prompt
      // would first be redrawn over the dropped text. (Not
      // rl_free_line_state: it redraws the prompt, then the handler's
      // install draws it again. The history position resets on install.)
      rl_on_new_line();
      rl_replace_line("", /*clear_undo=*/1);
      rl_callback_sigcleanup();
    }
    rl_callback_handler_remove();
  }
  pending_line = nullptr;
  if (interrupted) return Input::kInterrupted;
  if (!pending.line.has_value()) return Input::kEnd;
  *line = std::move(*pending.line);
  return Input::kLine;
}

// --- backslash commands ------------------------------------------------------

struct ShellState {
  bool timing = true;
  Expanded expanded = Expanded::kOff;
};

// Columns of the terminal `out` writes to; 0 for a file or pipe.
int64_t ScreenWidth(const std::ostream* out) {
  if (out != &std::cout || isatty(STDOUT_FILENO) != 1) return 0;
  struct winsize size = {};
  if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) != 0) return 0;
  return size.ws_col;
}

// What a column is to the table: "time", "series key" (numbered when the key
// has several columns), or "".
std::string ColumnRole(const Table& table, const std::string& column) {
  if (table.time_column() == column) return "time";
  const auto key = table.series_key();
  for (size_t i = 0; i < key.size(); ++i) {
    if (key[i] != column) continue;
    return key.size() == 1 ? "series key" : fmt::format("series key {}", i + 1);
  }
  return "";
}

// \d TABLE: "table NAME" and one row per column.
arrow::Status DescribeTable(const Lake& lake, const std::string& name,
                            const TextTableOptions& options, std::ostream* out) {
  ARROW_ASSIGN_OR_RAISE(Table table, lake.LoadTable(name));
  arrow::StringBuilder names, types, roles;
  arrow::BooleanBuilder nullable;
  const auto schema = table.schema();
  for (const auto& field : schema->fields()) {
    ARROW_RETURN_NOT_OK(names.Append(field->name()));
    ARROW_RETURN_NOT_OK(types.Append(field->type()->ToString()));
    ARROW_RETURN_NOT_OK(nullable.Append(field->nullable()));
    ARROW_RETURN_NOT_OK(roles.Append(ColumnRole(table, field->name())));
  }
  std::shared_ptr<arrow::Array> columns[4];
  ARROW_RETURN_NOT_OK(names.Finish(&columns[0]));
  ARROW_RETURN_NOT_OK(types.Finish(&columns[1]));
  ARROW_RETURN_NOT_OK(nullable.Finish(&columns[2]));
  ARROW_RETURN_NOT_OK(roles.Finish(&columns[3]));
  auto rows = arrow::RecordBatch::Make(
      arrow::schema({arrow::field("column", arrow::utf8()),
                     arrow::field("type", arrow::utf8()),
                     arrow::field("nullable", arrow::boolean()),
                     arrow::field("key", arrow::utf8())}),
      schema->num_fields(), {columns[0], columns[1], columns[2], columns[3]});
  *out << "table " << table.name().ToString() << "\n";
  TextTableOptions all = options;
  all.max_rows = 0;
  all.row_count = false;
  ARROW_ASSIGN_OR_RAISE(auto writer, MakeTextWriter(OutputFormat::kTable, out, all));
  ARROW_RETURN_NOT_OK(writer->Begin(rows->schema()));
  ARROW_RETURN_NOT_OK(writer->Write(*rows));
  return writer->Finish();
}

// \d: the tables, one "namespace.name" a line, as `timelake ls` prints them.
arrow::Status ListTables(const Lake& lake, std::ostream* out) {
  ARROW_ASSIGN_OR_RAISE(auto tables, lake.ListTables());
  if (tables.empty()) {
    std::cerr << "no tables in " << lake.url() << std::endl;
    return arrow::Status::OK();
  }
  std::string text;
  for (const auto& name : tables) text += name.ToString() + "\n";
  *out << text;
  out->flush();
  if (!*out) return arrow::Status::IOError("writing the table list failed");
  return arrow::Status::OK();
}

// A command's one optional argument among `choices`; nullopt when none was
// given. Errors: a usage error naming the command's form.
arrow::Result<std::optional<std::string>> OneChoice(
    const std::string& command, const std::vector<std::string>& args,
    const std::vector<std::string_view>& choices, std::string_view form) {
  if (args.empty()) return std::optional<std::string>();
  if (args.size() == 1) {
    const std::string choice = ToLower(args[0]);
    for (auto c : choices) {
      if (choice == c) return std::optional<std::string>(choice);
    }
  }
  return UsageError(fmt::format("{} takes {}", command, form));
}

// Runs one backslash command line. Returns true for \q. Errors: a usage
// error for an unknown command or bad arguments, and those of the lake.
arrow::Result<bool> RunCommand(const std::string& text, const Lake& lake,
                               const OutputTarget& target, ShellState* state,
                               std::ostream* out) {
  std::istringstream words(text);
  std::string command;
  words >> command;
  std::vector<std::string> args;
  for (std::string arg; words >> arg;) args.push_back(arg);
  // "\d t;" as psql takes it: the ';' ends the command.
  if (!args.empty() && args.back().ends_with(';')) {
    args.back().pop_back();
    if (args.back().empty()) args.pop_back();
  }
  if (command == "\\q") return true;
  if (command == "\\?") {
    std::cerr << kShellHelp;
  } else if (command == "\\timing") {
    const std::vector<std::string_view> choices = {"on", "off"};
    ARROW_ASSIGN_OR_RAISE(auto choice,
                          OneChoice(command, args, choices, "on or off (or nothing)"));
    state->timing = choice.has_value() ? *choice == "on" : !state->timing;
    std::cerr << "Timing is " << (state->timing ? "on." : "off.") << std::endl;
  } else if (command == "\\x") {
    const std::vector<std::string_view> choices = {"on", "off", "auto"};
    ARROW_ASSIGN_OR_RAISE(
        auto choice, OneChoice(command, args, choices, "on, off or auto (or nothing)"));
    if (!choice.has_value()) {
      state->expanded =
          state->expanded == Expanded::kOff ? Expanded::kOn : Expanded::kOff;
    } else {
      state->expanded = *choice == "on"    ? Expanded::kOn
                        : *choice == "off" ? Expanded::kOff
                                           : Expanded::kAuto;
    }
    std::cerr << "Expanded display is "
              << (state->expanded == Expanded::kOn    ? "on."
                  : state->expanded == Expanded::kOff ? "off."
                                                      : "used automatically.")
              << std::endl;
  } else if (command == "\\d") {
    if (args.size() > 1) return UsageError("\\d takes at most one table name");
    if (args.empty()) {
      ARROW_RETURN_NOT_OK(ListTables(lake, out));
    } else {
      TextTableOptions options = target.table;
      options.expanded = state->expanded;
      options.width = ScreenWidth(out);
      ARROW_RETURN_NOT_OK(DescribeTable(lake, args[0], options, out));
    }
  } else {
    return UsageError(fmt::format("unknown command {}; \\? lists the commands", command));
  }
  return false;
}

// The format an -o file's name asks for, or nullopt.
std::optional<OutputFormat> FormatOfExtension(std::string_view extension) {
  const std::string ext = ToLower(extension);
  if (ext == ".txt") return OutputFormat::kTable;
  if (ext == ".csv") return OutputFormat::kCsv;
  if (ext == ".json" || ext == ".ndjson" || ext == ".jsonl") return OutputFormat::kJson;
  if (ext == ".parquet" || ext == ".pq") return OutputFormat::kParquet;
  return std::nullopt;
}

// The result of EXPLAIN: (plan_type, plan) strings, a plan of many lines.
bool IsPlan(const arrow::Schema& schema) {
  return schema.num_fields() == 2 && schema.field(0)->name() == "plan_type" &&
         schema.field(1)->name() == "plan" &&
         schema.field(0)->type()->id() == arrow::Type::STRING &&
         schema.field(1)->type()->id() == arrow::Type::STRING;
}

// EXPLAIN in the text format: each plan whole, its lines indented under its
// type, instead of table cells cut at 64 characters with "\n" escaped.
arrow::Status PrintPlan(arrow::RecordBatchReader* reader, std::ostream* out,
                        std::chrono::steady_clock::time_point start, bool timing) {
  std::string text;
  int64_t rows = 0;
  while (true) {
    std::shared_ptr<arrow::RecordBatch> batch;
    ARROW_RETURN_NOT_OK(reader->ReadNext(&batch));
    if (batch == nullptr) break;
    const auto& types = static_cast<const arrow::StringArray&>(*batch->column(0));
    const auto& plans = static_cast<const arrow::StringArray&>(*batch->column(1));
    for (int64_t r = 0; r < batch->num_rows(); ++r, ++rows) {
      if (rows > 0) text += '\n';
      text += std::string(types.IsNull(r) ? "plan" : types.GetView(r)) + ":\n";
      std::string_view plan = plans.IsNull(r) ? "" : plans.GetView(r);
      while (!plan.empty()) {
        const size_t end = plan.find('\n');
        text += "  " + std::string(plan.substr(0, end)) + "\n";
        plan = end == std::string_view::npos ? "" : plan.substr(end + 1);
      }
    }
  }
  *out << text;
  out->flush();
  if (!*out) return arrow::Status::IOError("writing the plan failed");
  if (timing) PrintTiming(rows, SecondsSince(start));
  return arrow::Status::OK();
}

}  // namespace

arrow::Result<OutputTarget> ResolveOutput(const OutputFlags& flags) {
  OutputTarget target;
  target.path = flags.path;
  if (!flags.format.empty()) {
    ARROW_ASSIGN_OR_RAISE(target.format, ParseOutputFormat(flags.format));
  } else if (!flags.path.empty()) {
    const std::string extension = std::filesystem::path(flags.path).extension().string();
    auto format = FormatOfExtension(extension);
    if (!format.has_value()) {
      return UsageError(fmt::format(
          "-o {}: no output format is named by the extension '{}' (use .txt, .csv, "
          ".json, .ndjson, .jsonl or .parquet, or pass --format)",
          flags.path, extension));
    }
    target.format = *format;
  }
  if (target.format == OutputFormat::kParquet && target.path.empty()) {
    return UsageError("--format parquet writes a file: pass -o FILE");
  }
  if (flags.max_rows.has_value()) {
    if (*flags.max_rows < 0) return UsageError("--max-rows must be 0 (all) or more");
    target.table.max_rows = *flags.max_rows;
  } else {
    // A terminal shows a preview; a file or a pipe gets the whole result.
    const bool terminal = flags.path.empty() && isatty(STDOUT_FILENO) == 1;
    target.table.max_rows = terminal ? TextTableOptions{}.max_rows : 0;
  }
  return target;
}

arrow::Result<std::unique_ptr<OutputStream>> OutputStream::Open(
    const OutputTarget& target) {
  auto stream = std::unique_ptr<OutputStream>(new OutputStream());
  stream->out_ = &std::cout;
  if (!target.path.empty() && target.format != OutputFormat::kParquet) {
    stream->file_.open(target.path, std::ios::binary | std::ios::trunc);
    if (!stream->file_) return arrow::Status::IOError("cannot write ", target.path);
    stream->out_ = &stream->file_;
  }
  return stream;
}

arrow::Result<std::unique_ptr<ResultWriter>> MakeWriter(const OutputTarget& target,
                                                        std::ostream* out) {
  if (target.format == OutputFormat::kParquet) {
    if (target.path.empty())
      return UsageError("--format parquet writes a file: pass -o FILE");
    return MakeParquetWriter(target.path);
  }
  return MakeTextWriter(target.format, out, target.table);
}

void PrintTiming(int64_t rows, double seconds) {
  std::cerr << fmt::format("({} row{}, {})", FormatInteger(rows), rows == 1 ? "" : "s",
                           FormatSeconds(seconds))
            << std::endl;
}

arrow::Status RunStatement(Session* session, const std::string& sql, bool explain_analyze,
                           const OutputTarget& target, std::ostream* out) {
  const auto start = std::chrono::steady_clock::now();
  if (explain_analyze) {
    ARROW_ASSIGN_OR_RAISE(std::string plan, session->ExplainAnalyze(sql));
    *out << plan;
    if (!plan.empty() && plan.back() != '\n') *out << '\n';
    out->flush();
    if (target.timing) {
      std::cerr << fmt::format("({})", FormatSeconds(SecondsSince(start))) << std::endl;
    }
    return arrow::Status::OK();
  }
  ARROW_ASSIGN_OR_RAISE(auto reader, session->SqlStream(sql));
  if (target.format == OutputFormat::kTable && IsPlan(*reader->schema())) {
    return PrintPlan(reader.get(), out, start, target.timing);
  }
  ARROW_ASSIGN_OR_RAISE(auto writer, MakeWriter(target, out));
  ARROW_RETURN_NOT_OK(WriteReader(reader.get(), writer.get()));
  if (target.timing) PrintTiming(writer->rows(), SecondsSince(start));
  return arrow::Status::OK();
}

arrow::Status ApplySessionStatements(Session* session,
                                     const std::vector<std::string>& statements) {
  for (const auto& statement : statements) {
    auto result = session->Sql(statement);
    if (!result.ok())
      return WithContext(result.status(), "applying --set (" + statement + ")");
  }
  return arrow::Status::OK();
}

arrow::Status RunShell(const Lake& lake, Session* session, const OutputTarget& target,
                       bool explain_analyze, std::ostream* out) {
  ARROW_ASSIGN_OR_RAISE(auto interrupts, InterruptScope::Install());
  const std::string history = HistoryPath();
  rl_readline_name = "timelake";
  rl_catch_signals = 0;  // Ctrl-C is ours (InterruptScope)
  if (!history.empty()) read_history(history.c_str());
  std::cerr << "timelake sql: statements end with ';', \\q quits, \\? lists the commands"
            << std::endl;
  ShellState state;
  std::string buffer;
  while (true) {
    const bool continuation = !Trim(buffer).empty();
    std::string line;
    const Input input =
        ReadLine(continuation ? "      -> " : "timelake> ", interrupts->wake_fd(), &line);
    if (input == Input::kEnd) {
      std::cerr << std::endl;
      break;
    }
    if (input == Input::kInterrupted) {
      buffer.clear();
      continue;
    }
    const std::string command = Trim(line);
    if (!continuation) {
      if (command == "quit" || command == "exit") break;
      if (command == "help") {
        std::cerr << kShellHelp;
        continue;
      }
      if (command.starts_with('\\')) {
        add_history(command.c_str());
        auto quit = RunCommand(command, lake, target, &state, out);
        if (!quit.ok()) PrintError(quit.status());
        if (quit.ok() && *quit) break;
        continue;
      }
      if (command.empty()) continue;
    }
    buffer += line;
    buffer += '\n';
    auto statements = Session::Parse(buffer);
    if (!statements.ok()) {
      PrintError(statements.status());
      buffer.clear();
      continue;
    }
    // Complete statements run now; an unterminated one waits for more lines.
    std::string rest;
    if (!statements->empty() && !statements->back().terminated) {
      rest = statements->back().text + "\n";
      statements->pop_back();
    }
    OutputTarget statement_target = target;
    statement_target.timing = state.timing;
    statement_target.table.expanded = state.expanded;
    statement_target.table.width = ScreenWidth(out);
    for (const auto& statement : *statements) {
      add_history((statement.text + ";").c_str());
      arrow::Status status;
      {
        RunningStatement running(session);
        status =
            RunStatement(session, statement.text, explain_analyze, statement_target, out);
      }
      interrupts->Drain();
      if (status.ok()) continue;
      if (KindOf(status) != ErrorKind::kCancelled) {
        PrintError(status);
        continue;
      }
      // Ctrl-C stops the rest of the line too.
      std::cerr << "cancelled" << std::endl;
      rest.clear();
      break;
    }
    buffer = rest;
  }
  if (!history.empty()) {
    write_history(history.c_str());
    history_truncate_file(history.c_str(), 1000);
  }
  return arrow::Status::OK();
}

}  // namespace timelake::cli
