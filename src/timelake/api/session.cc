// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// Session::SqlStream: the statements the engine runs itself (DELETE, rollup
// statements) apart
// from those DataFusion runs (read/session.cc).

#include <arrow/api.h>

#include "timelake/read/session.h"
#include "timelake/rollup/rollup.h"
#include "timelake/timelake.h"

namespace timelake {

namespace {

// The one-row answer of a DELETE statement.
arrow::Result<std::shared_ptr<arrow::RecordBatchReader>> DeleteAnswer(
    const DeleteReport& report) {
  auto schema = arrow::schema({arrow::field("rows_deleted", arrow::int64(), false),
                               arrow::field("files_removed", arrow::int64(), false),
                               arrow::field("files_written", arrow::int64(), false)});
  std::vector<std::shared_ptr<arrow::Array>> columns;
  for (int64_t value :
       {report.rows_deleted, report.files_removed, report.files_written}) {
    arrow::Int64Builder builder;
    TIMELAKE_RETURN_NOT_OK(builder.Append(value));
    TIMELAKE_ASSIGN_OR_RAISE(auto array, builder.Finish());
    columns.push_back(std::move(array));
  }
  auto batch = arrow::RecordBatch::Make(schema, 1, std::move(columns));
  return arrow::RecordBatchReader::Make({batch}, schema);
}

}  // namespace

arrow::Result<std::shared_ptr<arrow::RecordBatchReader>> Session::SqlStream(
    std::string_view sql) {
  TIMELAKE_ASSIGN_OR_RAISE(auto statements, Parse(sql));
  if (statements.size() == 1 && statements[0].kind == Statement::Kind::kRollup &&
      !statements[0].rollup) {
    // A rollup statement without its ';' that does not parse: Parse leaves it
    // be, as a shell is still waiting for the rest, but here the text is all
    // there is, so it is read as ended to report what is wrong with it (not
    // DataFusion's parser error on "MATERIALIZED").
    TIMELAKE_ASSIGN_OR_RAISE(statements, Parse(statements[0].text + "\n;"));
  }
  if (statements.size() == 1 && statements[0].kind == Statement::Kind::kRollup &&
      statements[0].rollup) {
    return rollup::Execute(state_->lake, *statements[0].rollup);
  }
  if (statements.size() != 1 || statements[0].kind != Statement::Kind::kDelete) {
    return Query(sql);
  }
  const Statement& statement = statements[0];
  Lake lake(state_->lake);
  TIMELAKE_ASSIGN_OR_RAISE(auto table, lake.LoadTable(statement.name));
  TIMELAKE_ASSIGN_OR_RAISE(auto deleted, table.Delete(statement.value));
  return DeleteAnswer(deleted.second);
}

}  // namespace timelake
