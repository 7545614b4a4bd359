// Copyright 2026 The Timelake Authors. Apache-2.0.

#include "timelake/upgrade/upgrade.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "timelake/commit/changes.h"
#include "timelake/commit/commit.h"
#include "timelake/format/schema.h"
#include "timelake/maintain/maintain.h"
#include "timelake/read/session.h"
#include "timelake/settings.h"
#include "timelake/util/clock.h"
#include "timelake/versions/versions.h"
#include "timelake/write/data_writer.h"
#include "timelake/write/lvi.h"

namespace timelake {

std::string_view UpgradeStepName(UpgradeStep::Kind kind) {
  switch (kind) {
    case UpgradeStep::Kind::kProtectSnapshots:
      return "protect-snapshots";
    case UpgradeStep::Kind::kRecordFormatVersion:
      return "record-format-version";
    case UpgradeStep::Kind::kAddContract:
      return "add-contract";
    case UpgradeStep::Kind::kBuildLastValueIndex:
      return "build-last-value-index";
    case UpgradeStep::Kind::kRewriteFiles:
      return "rewrite-files";
    case UpgradeStep::Kind::kWriteHead:
      return "write-head";
  }
  return "?";
}

namespace internal {

namespace {

using nlohmann::json;
using SteadyClock = std::chrono::steady_clock;

// A run within this long after another does not protect the snapshots
// again: moving the protection on by the minutes between them is not worth
// a commit, and a resumed upgrade should not commit what is done.
constexpr std::chrono::milliseconds kProtectSlack = std::chrono::hours(1);

constexpr char kHeadText[] = "write the head object of the version reached";

std::string Joined(const std::vector<std::string>& items) {
  return fmt::format("{}", fmt::join(items, ", "));
}

bool IsTimestamp(const arrow::DataType& type) {
  return type.id() == arrow::Type::TIMESTAMP &&
         static_cast<const arrow::TimestampType&>(type).unit() == arrow::TimeUnit::MICRO;
}

// The "fields" of the table's default sort order (empty: unsorted).
json DefaultSortFields(const format::TableMetadata& m) {
  auto orders = m.doc.find("sort-orders");
  auto current = m.doc.find("default-sort-order-id");
  if (orders == m.doc.end() || !orders->is_array() || current == m.doc.end() ||
      !current->is_number_integer()) {
    return json::array();
  }
  for (const auto& order : *orders) {
    if (order.is_object() && order.contains("order-id") &&
        order["order-id"] == *current && order.contains("fields") &&
        order["fields"].is_array()) {
      return order["fields"];
    }
  }
  return json::array();
}

// Timelake's sort order: the series key columns, then time, ascending,
// nulls first.
json SortFields(const arrow::Schema& schema, const std::vector<std::string>& series,
                const std::string& time) {
  json fields = json::array();
  std::vector<std::string> columns = series;
  columns.push_back(time);
  for (const auto& c : columns) {
    const auto field = schema.GetFieldByName(c);
    fields.push_back({{"source-id", field ? format::FieldId(*field).value_or(0) : 0},
                      {"transform", "identity"},
                      {"direction", "asc"},
                      {"null-order", "nulls-first"}});
  }
  return fields;
}

bool SameSortFields(const json& a, const json& b) {
  if (!a.is_array() || !b.is_array() || a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    for (const char* key : {"source-id", "transform", "direction", "null-order"}) {
      if (!a[i].is_object() || !b[i].is_object() ||
          a[i].value(key, json()) != b[i].value(key, json()))
        return false;
    }
  }
  return true;
}

// Whether `props` set the registry's setting `name`, in any spelling.
bool HasSetting(const std::map<std::string, std::string>& props, std::string_view name) {
  for (const auto& [key, value] : props) {
    if (!settings::IsTimelakeKey(key)) continue;
    const settings::Setting* s = settings::Find(key);
    if (s != nullptr && s->name == name) return true;
  }
  return false;
}

// What a time-series table of this format has and a table lacks.
struct ContractEdit {
  std::map<std::string, std::string> properties;  // to set
  std::string ingest_column;                      // to add to the schema ("": none)
  json sort_fields;                               // null: the sort order stays
  std::vector<std::string> parts;                 // what it adds, for the step
};

// The contract `table` lacks (nullopt: none). Errors: kInvalid for an
// adoption that cannot be (see Table::Upgrade), kUnsupported for a
// partitioning Timelake does not write.
arrow::Result<std::optional<ContractEdit>> PlanContract(const TableState& table,
                                                        const UpgradeOptions& options,
                                                        const std::string& context) {
  const auto& props = table.metadata.properties;
  const arrow::Schema& schema = *table.schema;
  ContractEdit edit;
  std::optional<std::string> time = table.contract.time_column;
  std::vector<std::string> series = table.contract.series_key;
  auto columns = [&] {
    std::vector<std::string> names;
    for (const auto& f : schema.fields()) names.push_back(f->name());
    return Joined(names);
  };
  if (!time) {
    if (!options.time_column) {
      if (!options.series_key.empty()) {
        return Invalid(context +
                       ": a series key needs a time column (the table has none)");
      }
      return std::nullopt;  // a plain table stays one
    }
    // Adopting a plain table: its time column and series key.
    time = options.time_column;
    series = options.series_key;
    const auto field = schema.GetFieldByName(*time);
    if (field == nullptr) {
      return Invalid(context + ": the table has no column '" + *time +
                     "' for the time column (its columns: " + columns() + ")");
    }
    if (!IsTimestamp(*field->type())) {
      return Invalid(context + ": column '" + *time + "' is " +
                     field->type()->ToString() + ", not a timestamp; it cannot be " +
                     "the time column");
    }
    for (size_t i = 0; i < series.size(); ++i) {
      const auto& k = series[i];
      const auto key = schema.GetFieldByName(k);
      if (key == nullptr) {
        return Invalid(context + ": the table has no column '" + k +
                       "' for the series key (its columns: " + columns() + ")");
      }
      if (k == *time) {
        return Invalid(context + ": '" + k + "' is the time column; it cannot be in " +
                       "the series key too");
      }
      if (std::find(series.begin(), series.begin() + static_cast<long>(i), k) !=
          series.begin() + static_cast<long>(i)) {
        return Invalid(context + ": '" + k + "' is in the series key twice");
      }
      if (key->type()->num_fields() > 0) {
        return Invalid(context + ": column '" + k + "' is " + key->type()->ToString() +
                       "; a series key column has a primitive type");
      }
    }
    // Every row needs a time: the files' null counts say whether one lacks it.
    const int id = format::FieldId(*field).value_or(-1);
    TIMELAKE_ASSIGN_OR_RAISE(auto files, ListLiveFiles(table));
    int64_t nulls = 0, with_nulls = 0;
    for (const auto& f : files) {
      auto it = f.data_file.null_value_counts.find(id);
      if (it != f.data_file.null_value_counts.end() && it->second > 0) {
        nulls += it->second;
        ++with_nulls;
      }
    }
    if (nulls > 0) {
      return Invalid(context + ": time column '" + *time + "' is null in " +
                     std::to_string(nulls) + " rows of " + std::to_string(with_nulls) +
                     " data files; every row of a time-series table has a time (delete " +
                     "those rows first)");
    }
    // The partitioning stays: none, or the hour, day or month of the time
    // column (the spec other engines read).
    const auto& spec = table.metadata.DefaultSpec();
    std::optional<Chunk> chunk;
    if (!spec.fields.empty()) {
      auto parsed = spec.fields.size() == 1 ? ParseChunk(spec.fields[0].transform)
                                            : arrow::Result<Chunk>(Invalid(""));
      if (!parsed.ok() || spec.fields[0].source_id != id) {
        std::vector<std::string> spec_fields;
        for (const auto& pf : spec.fields)
          spec_fields.push_back(pf.transform + "(" + pf.name + ")");
        return Unsupported(context + ": its partition spec (" + Joined(spec_fields) +
                           ") is not the hour, day or month of '" + *time +
                           "': Timelake writes only those (or no partitioning)");
      }
      chunk = *parsed;
    }
    edit.properties[property::kTimeColumn] = *time;
    if (!series.empty()) edit.properties[property::kSeriesKey] = JoinList(series);
    if (chunk) edit.properties[property::kChunk] = std::string(ChunkName(*chunk));
    const bool dedup = options.dedup.value_or(!series.empty());
    edit.properties[property::kDedup] = dedup ? "true" : "false";
    edit.parts.push_back(
        "time column " + *time +
        (series.empty() ? std::string() : ", series key " + JoinList(series)) +
        (chunk ? ", chunk " + std::string(ChunkName(*chunk)) : ", unpartitioned") +
        ", dedup " + (dedup ? "on" : "off"));
  } else {
    if (options.time_column && *options.time_column != *time) {
      return Invalid(context + ": the table's time column is '" + *time + "', not '" +
                     *options.time_column + "' (it is fixed)");
    }
    if (!options.series_key.empty() && options.series_key != series) {
      return Invalid(context + ": the table's series key is '" + JoinList(series) +
                     "', not '" + JoinList(options.series_key) + "' (it is fixed)");
    }
    if (!HasSetting(props, "dedup")) {
      const bool dedup = options.dedup.value_or(!series.empty());
      edit.properties[property::kDedup] = dedup ? "true" : "false";
      edit.parts.push_back(std::string("dedup ") + (dedup ? "on" : "off"));
    }
  }
  // The insertion-time column: a property naming it, and the column
  // (optional: the rows already stored have none, which ranks them oldest).
  std::string ingest = table.contract.ingest_column;
  if (ingest.empty()) {
    ingest = "_ingest_ts";
    edit.properties[property::kIngestTimeColumn] = ingest;
  }
  if (const auto field = schema.GetFieldByName(ingest)) {
    if (!IsTimestamp(*field->type())) {
      return Invalid(context + ": column '" + ingest + "' is " +
                     field->type()->ToString() + ", not the timestamp of insertion " +
                     "times Timelake keeps under that name");
    }
  } else {
    edit.ingest_column = ingest;
    edit.parts.push_back("the insertion-time column " + ingest);
  }
  // The sort order every file is written in.
  const json wanted = SortFields(schema, series, *time);
  if (!SameSortFields(DefaultSortFields(table.metadata), wanted)) {
    edit.sort_fields = wanted;
    std::vector<std::string> order = series;
    order.push_back(*time);
    edit.parts.push_back("sort order (" + Joined(order) + ")");
  }
  if (edit.properties.empty() && edit.ingest_column.empty() && edit.sort_fields.is_null())
    return std::nullopt;
  if (edit.parts.empty()) edit.parts.push_back("the contract's properties");
  return edit;
}

// `table`'s metadata with `edit` made.
arrow::Result<format::TableMetadata> ApplyContract(const TableState& table,
                                                   const ContractEdit& edit) {
  format::TableMetadata next = table.metadata;
  for (const auto& [key, value] : edit.properties) next.properties[key] = value;
  TIMELAKE_RETURN_NOT_OK(ParseContract(next.properties).status());
  if (!edit.ingest_column.empty()) {
    int last_column_id = next.last_column_id;
    TIMELAKE_ASSIGN_OR_RAISE(
        auto schema, format::EvolveSchema(
                         next.CurrentSchema(),
                         {SchemaChange::AddColumn(
                             edit.ingest_column,
                             arrow::timestamp(arrow::TimeUnit::MICRO, format::kUtcZone))},
                         {}, commit::NextSchemaId(next), &last_column_id));
    commit::AddCurrentSchema(&next, std::move(schema), last_column_id);
  }
  if (!edit.sort_fields.is_null()) {
    json& orders = next.doc["sort-orders"];
    if (!orders.is_array()) orders = json::array();
    int64_t id = 1;
    for (const auto& order : orders) {
      if (order.is_object() && order.contains("order-id") &&
          order["order-id"].is_number_integer())
        id = std::max<int64_t>(id, order["order-id"].get<int64_t>() + 1);
    }
    orders.push_back({{"order-id", id}, {"fields", edit.sort_fields}});
    next.doc["default-sort-order-id"] = id;
  }
  next.last_updated_ms =
      std::max(ToMillis(table.lake->clock->Now()), table.metadata.last_updated_ms);
  return next;
}

// The contract step as a commit::Change: planned again over whatever version
// wins, so a concurrent commit is rebased over and a run that finds it done
// commits nothing.
class ContractChange : public commit::Change {
 public:
  ContractChange(const UpgradeOptions& options, std::string context)
      : options_(options), context_(std::move(context)) {}

  arrow::Result<std::optional<format::TableMetadata>> Rebase(const TableState& base,
                                                             commit::Attempt*) override {
    TIMELAKE_ASSIGN_OR_RAISE(auto edit, PlanContract(base, options_, context_));
    if (!edit) return std::nullopt;
    auto next = ApplyContract(base, *edit);
    if (!next.ok()) return WithContext(next.status(), context_);
    return std::move(*next);
  }

 private:
  const UpgradeOptions& options_;
  const std::string context_;
};

// A version's state with other metadata, for planning what the steps after
// a change of it would do (a dry run). Not remembered anywhere.
arrow::Result<std::shared_ptr<const TableState>> Simulate(
    const TableState& table, format::TableMetadata metadata) {
  auto state = std::make_shared<TableState>(table);
  TIMELAKE_ASSIGN_OR_RAISE(state->schema,
                           format::IcebergToArrow(metadata.CurrentSchema()));
  TIMELAKE_ASSIGN_OR_RAISE(state->contract, ParseContract(metadata.properties));
  state->metadata = std::move(metadata);
  return std::shared_ptr<const TableState>(std::move(state));
}

// Whether the current snapshot of a time-series table lacks its index.
bool LacksLvi(const TableState& table) {
  const auto* snapshot = table.metadata.CurrentSnapshot();
  return table.contract.time_column && snapshot != nullptr && !LviUri(*snapshot);
}

bool WritesHead(const TableState& table) {
  const settings::Resolver resolve(nullptr, nullptr, &table.metadata.properties);
  return resolve.Get("head-format").value_or("arrow") == "arrow";
}

std::string RewriteText(const Rewrite& job, const TableState& table,
                        const MaintainRules& rules, const write::Layout& layout) {
  std::vector<const format::LiveFile*> inputs;
  for (const auto& f : job.inputs) inputs.push_back(&f);
  std::string why;
  NeedsRewrite(inputs, table, rules, &why);
  return "rewrite " + PartitionName(layout, job.partition) + ": " +
         std::to_string(job.inputs.size()) +
         (job.inputs.size() == 1 ? " file" : " files") +
         (why.empty() ? std::string() : " (" + why + ")");
}

}  // namespace

arrow::Result<std::shared_ptr<arrow::RecordBatch>> ComputeLvi(
    const std::shared_ptr<const TableState>& table) {
  const auto& contract = table->contract;
  if (!contract.time_column) return nullptr;
  TIMELAKE_ASSIGN_OR_RAISE(auto files, ListLiveFiles(*table));
  std::shared_ptr<arrow::RecordBatch> index;
  if (!files.empty()) {
    // The merge orders rows by (series…, time, insertion, commit): the last
    // row of a series in it is its newest by the tie rule.
    TIMELAKE_ASSIGN_OR_RAISE(auto reader, MergeFiles(table, files, contract.dedup));
    for (;;) {
      std::shared_ptr<arrow::RecordBatch> batch;
      TIMELAKE_RETURN_NOT_OK(reader->ReadNext(&batch));
      if (batch == nullptr) break;
      if (batch->num_rows() == 0) continue;
      TIMELAKE_ASSIGN_OR_RAISE(
          auto newest, LatestPerSeries({batch}, *contract.time_column,
                                       contract.series_key, contract.ingest_column));
      TIMELAKE_ASSIGN_OR_RAISE(index, MergeLvi(index, newest, contract, *table->schema));
    }
  }
  // A table without rows gets an empty index, so that it counts as built.
  if (index == nullptr) return arrow::RecordBatch::MakeEmpty(table->schema);
  return index;
}

arrow::Result<std::shared_ptr<const TableState>> RunUpgrade(
    const std::shared_ptr<const TableState>& handle, const UpgradeOptions& options,
    UpgradeReport* report) {
  const auto start = SteadyClock::now();
  const std::string context = "upgrading " + handle->name.ToString();
  auto finish = [&](std::shared_ptr<const TableState> table) {
    report->version = table->version;
    report->duration =
        std::chrono::duration_cast<std::chrono::microseconds>(SteadyClock::now() - start);
    return table;
  };
  report->dry_run = options.dry_run;
  // Planned on the newest version, not this handle's.
  TIMELAKE_ASSIGN_OR_RAISE(auto table, LoadTableState(handle->lake, handle->name));
  TIMELAKE_RETURN_NOT_OK(
      WithContext(CheckTableFormat(*table, FormatAccess::kWrite), context));
  const std::string ours = table->lake->format_version;
  report->from_format = FormatVersionOf(table->metadata);
  auto order = CompareFormatVersions(report->from_format, ours);
  if (!order.ok()) return WithContext(order.status(), context);
  const bool record_format = *order < 0;
  report->to_format = record_format ? ours : report->from_format;

  // Everything that can refuse the upgrade, before any commit: the contract
  // and the layout of the table it makes.
  TIMELAKE_ASSIGN_OR_RAISE(auto contract, PlanContract(*table, options, context));
  std::shared_ptr<const TableState> planned = table;
  if (contract) {
    auto next = ApplyContract(*table, *contract);
    if (!next.ok()) return WithContext(next.status(), context);
    auto simulated = Simulate(*table, std::move(*next));
    if (!simulated.ok()) return WithContext(simulated.status(), context);
    planned = *simulated;
  }
  auto layout = LayoutOf(*planned);
  if (!layout.ok()) {
    return Unsupported(
        context + ": its partition spec is not the hour, day or month " +
        "of a time column: Timelake writes only those (or no partitioning)");
  }
  auto rules = RulesOf(*planned);
  if (!rules.ok()) return WithContext(rules.status(), context);
  const bool build_lvi = LacksLvi(*planned);
  std::vector<Rewrite> jobs;
  if (options.compact) {
    auto files = ListLiveFiles(*planned);
    if (!files.ok()) return WithContext(files.status(), context);
    jobs = PlanFull(*files, *planned, *rules, /*cold_only=*/false, SIZE_MAX);
  }
  const bool commits = record_format || contract || build_lvi || !jobs.empty();
  bool stale_head = false;
  if (WritesHead(*planned)) {
    auto head = StoredHeadVersion(*table);
    if (!head.ok()) return WithContext(head.status(), context);
    stale_head = *head != table->version;
  }
  const auto keep = std::max(options.keep_snapshots, std::chrono::milliseconds(0));
  const int64_t protect_until = ToMillis(table->lake->clock->Now()) + keep.count();
  const bool protect =
      commits && rules->keep_snapshots_until_ms + kProtectSlack.count() < protect_until;
  if (!commits && !stale_head) return finish(table);

  const std::string protect_text = "protect the snapshots from expiry for " +
                                   FormatDuration(keep) +
                                   " (timelake.keep-snapshots-until)";
  const std::string format_text =
      "record timelake.format-version " + ours + " (was " +
      (report->from_format.empty() ? std::string("untagged: 0.1.0")
                                   : report->from_format) +
      ")";
  const std::string contract_text =
      contract ? "add the time-series contract: " + Joined(contract->parts) : "";
  const std::string lvi_text = "build the last-value index of the current snapshot";
  if (options.dry_run) {
    auto add = [&](UpgradeStep::Kind kind, std::string text) {
      report->steps.push_back(UpgradeStep{kind, std::move(text), false, 0});
    };
    if (protect) add(UpgradeStep::Kind::kProtectSnapshots, protect_text);
    if (record_format) add(UpgradeStep::Kind::kRecordFormatVersion, format_text);
    if (contract) add(UpgradeStep::Kind::kAddContract, contract_text);
    if (build_lvi) add(UpgradeStep::Kind::kBuildLastValueIndex, lvi_text);
    for (const auto& job : jobs) {
      add(UpgradeStep::Kind::kRewriteFiles, RewriteText(job, *planned, *rules, *layout));
    }
    if (WritesHead(*planned)) add(UpgradeStep::Kind::kWriteHead, kHeadText);
    return finish(table);
  }

  StepOptions step;
  step.max_commit_attempts = std::max(1, options.max_commit_attempts);
  step.progress = options.progress;
  auto done = [&](UpgradeStep::Kind kind, std::string text, int64_t version) {
    if (options.progress) options.progress(text);
    report->steps.push_back(UpgradeStep{kind, std::move(text), true, version});
  };
  commit::CommitOptions copts;
  copts.max_attempts = step.max_commit_attempts;
  auto set_property = [&](const char* key, std::string value,
                          const std::string& what) -> arrow::Status {
    copts.context = context + ": " + what;
    commit::PropertyChange change({{key, std::move(value)}}, copts.context);
    TIMELAKE_ASSIGN_OR_RAISE(auto outcome, commit::Commit(table, &change, copts));
    table = outcome.state;
    return arrow::Status::OK();
  };
  if (protect) {
    TIMELAKE_RETURN_NOT_OK(set_property("timelake.keep-snapshots-until",
                                        std::to_string(protect_until),
                                        "protecting the snapshots"));
    done(UpgradeStep::Kind::kProtectSnapshots, protect_text, table->version);
  }
  if (record_format) {
    TIMELAKE_RETURN_NOT_OK(
        set_property(property::kFormatVersion, ours, "recording the format version"));
    done(UpgradeStep::Kind::kRecordFormatVersion, format_text, table->version);
  }
  if (contract) {
    copts.context = context + ": adding the contract";
    ContractChange change(options, copts.context);
    TIMELAKE_ASSIGN_OR_RAISE(auto outcome, commit::Commit(table, &change, copts));
    table = outcome.state;
    if (outcome.committed) {
      done(UpgradeStep::Kind::kAddContract, contract_text, table->version);
    }
  }
  // The steps after the contract are planned again on the version reached.
  if (LacksLvi(*table)) {
    const std::string what = context + ": building the last-value index";
    auto index = ComputeLvi(table);
    if (!index.ok()) return WithContext(index.status(), what);
    Replacement change;
    change.operation = "replace";
    // Computed for the snapshot planned on; again for another one that a
    // concurrent commit made current first.
    change.index_at = [planned = table->metadata.current_snapshot_id,
                       index = *index](const TableState& base)
        -> arrow::Result<std::shared_ptr<arrow::RecordBatch>> {
      if (base.metadata.current_snapshot_id == planned) return index;
      return ComputeLvi(std::make_shared<const TableState>(base));
    };
    TIMELAKE_ASSIGN_OR_RAISE(table, CommitReplacement(table, change, step, what));
    done(UpgradeStep::Kind::kBuildLastValueIndex, lvi_text, table->version);
  }
  if (options.compact) {
    TIMELAKE_ASSIGN_OR_RAISE(auto current_rules, RulesOf(*table));
    TIMELAKE_ASSIGN_OR_RAISE(auto current_layout, LayoutOf(*table));
    MaintainReport compacted;
    TIMELAKE_ASSIGN_OR_RAISE(
        table,
        RunCompaction(table, current_rules, StepOptions{step.max_commit_attempts, {}},
                      &compacted, [&](const Rewrite& job, const TableState& after) {
                        done(UpgradeStep::Kind::kRewriteFiles,
                             RewriteText(job, after, current_rules, current_layout),
                             after.version);
                      }));
    report->files_rewritten = compacted.files_rewritten;
    report->files_written = compacted.files_written;
    report->rows_rewritten = compacted.rows_rewritten;
  }
  // The head: the commits above write it in the background; written here
  // when none did or that write failed.
  if (WritesHead(*table)) {
    versions::WaitForBackgroundWrites();
    TIMELAKE_ASSIGN_OR_RAISE(auto head, StoredHeadVersion(*table));
    if (head != table->version) {
      auto written = commit::WriteHead(*table);
      if (!written.ok()) {
        return WithContext(written, context + ": writing the head of version " +
                                        std::to_string(table->version));
      }
    }
    done(UpgradeStep::Kind::kWriteHead, kHeadText, 0);
  }
  return finish(table);
}

}  // namespace internal
}  // namespace timelake
