// Copyright 2026 The Timelake Authors. Apache-2.0.

#include "timelake/rollup/rollup.h"

#include <algorithm>
#include <climits>
#include <map>
#include <set>

#include <arrow/api.h>
#include <nlohmann/json.hpp>

#include "timelake/commit/commit.h"
#include "timelake/commit/tables.h"
#include "timelake/maintain/maintain.h"
#include "timelake/read/rollups.h"
#include "timelake/read/session.h"
#include "timelake/settings.h"
#include "timelake/settings/contract.h"
#include "timelake/util/clock.h"
#include "timelake/write/lvi.h"

namespace timelake::rollup {

namespace {

using internal::LakeState;
using internal::TableState;
using nlohmann::json;
using read::Bucket;
using read::RollupAggregate;
using read::RollupDefinition;
using read::TimeRange;

// Refreshes of rollups of rollups follow at most this deep (a rollup of
// itself, through a loop of renamed tables, cannot recurse forever).
constexpr int kMaxDepth = 8;

std::string Quote(const std::string& name) {
  std::string out = "\"";
  for (char c : name) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string FromOf(const TableName& name) {
  return Quote(name.ns()) + "." + Quote(name.name());
}

// A raw table's list of rollups, one name added or taken out, over whatever
// version wins (two rollups created at once both stay listed).
class RollupListChange : public commit::Change {
 public:
  RollupListChange(std::string rollup, bool add, std::string context)
      : rollup_(std::move(rollup)), add_(add), context_(std::move(context)) {}

  arrow::Result<std::optional<format::TableMetadata>> Rebase(const TableState& base,
                                                             commit::Attempt*) override {
    auto names = read::RollupNamesOf(base.metadata);
    const bool listed = std::find(names.begin(), names.end(), rollup_) != names.end();
    if (listed == add_) return std::nullopt;  // already so
    if (add_) {
      names.push_back(rollup_);
    } else {
      std::erase(names, rollup_);
    }
    format::TableMetadata next = base.metadata;
    if (names.empty()) {
      next.properties.erase(internal::property::kRollups);
    } else {
      next.properties[internal::property::kRollups] = internal::JoinList(names);
    }
    next.last_updated_ms = std::max(internal::ToMillis(base.lake->clock->Now()),
                                    base.metadata.last_updated_ms);
    return next;
  }

 private:
  const std::string rollup_;
  const bool add_;
  const std::string context_;
};

arrow::Status ChangeList(const std::shared_ptr<LakeState>& lake, const TableName& raw,
                         const std::string& rollup, bool add) {
  const std::string context = std::string(add ? "listing " : "unlisting ") + "rollup " +
                              rollup + (add ? " on " : " from ") + raw.ToString();
  TIMELAKE_ASSIGN_OR_RAISE(auto base, internal::LoadTableState(lake, raw));
  RollupListChange change(rollup, add, context);
  commit::CommitOptions options;
  options.context = context;
  return commit::Commit(std::move(base), &change, options).status();
}

// The refresh query's aggregate expression of one stored aggregate.
std::string AggregateSql(const RollupAggregate& a, const std::string& time) {
  const std::string t = Quote(time);
  const std::string c = a.column ? Quote(*a.column) : "";
  if (a.function == "count") return a.column ? "count(" + c + ")" : "count(*)";
  if (a.function == "sum" || a.function == "min" || a.function == "max" ||
      a.function == "avg") {
    return a.function + "(" + c + ")";
  }
  if (a.function == "first_value" || a.function == "last_value") {
    return a.function + "(" + c + " ORDER BY " + t + ")";
  }
  if (a.function == "m4") return "m4(" + t + ", " + c + ")";
  if (a.function == "time_weighted_mean") {
    return "time_weighted_state(" + t + ", " + c + ")";
  }
  if (a.function == "time_weighted_mean:linear") {
    return "time_weighted_state(" + t + ", " + c + ", 'linear')";
  }
  return "";
}

// `column` (a timestamp) in one of `ranges`, as SQL.
std::string InRangesSql(const std::string& column, const std::vector<TimeRange>& ranges) {
  std::string out;
  for (const auto& r : ranges) {
    std::string term;
    if (r.lo)
      term = Quote(column) + " >= to_timestamp_micros(" + std::to_string(*r.lo) + ")";
    if (r.hi) {
      if (!term.empty()) term += " AND ";
      term += Quote(column) + " < to_timestamp_micros(" + std::to_string(*r.hi) + ")";
    }
    if (term.empty()) return "true";  // the whole axis
    out += (out.empty() ? "(" : " OR (") + term + ")";
  }
  return out.empty() ? "false" : out;
}

// `ranges` widened to whole buckets.
std::vector<TimeRange> Aligned(const std::vector<TimeRange>& ranges, const Bucket& b) {
  std::vector<TimeRange> out;
  for (const auto& r : ranges) {
    TimeRange a;
    if (r.lo) a.lo = b.Floor(*r.lo);
    if (r.hi) a.hi = b.Ceil(*r.hi);
    if (!out.empty() && out.back().hi && a.lo && *a.lo <= *out.back().hi) {
      if (!a.hi || *a.hi > *out.back().hi) out.back().hi = a.hi;
      continue;
    }
    out.push_back(a);
  }
  return out;
}

// The refresh query of `def` over `ranges` of the raw table's time.
std::string RefreshSql(const RollupDefinition& def, const TableName& source,
                       const std::string& time, const std::vector<TimeRange>& ranges) {
  std::string select;
  for (const auto& g : def.groups) select += Quote(g) + ", ";
  select += def.bucket.Sql(Quote(time)) + " AS " + Quote(def.bucket_column);
  for (const auto& a : def.aggregates) {
    select += ", " + AggregateSql(a, time) + " AS " + Quote(a.name);
  }
  std::string group_by;
  for (size_t i = 1; i <= def.groups.size() + 1; ++i) {
    group_by += (i > 1 ? ", " : "") + std::to_string(i);
  }
  return "SELECT " + select + " FROM " + FromOf(source) + " WHERE " +
         InRangesSql(time, ranges) + " GROUP BY " + group_by;
}

arrow::Result<RollupDefinition> DefinitionOf(const TableState& table,
                                             const std::string& context) {
  auto def = read::RollupDefinitionOf(table);
  if (!def.ok()) return WithContext(def.status(), context);
  if (!*def) {
    return Invalid(context + ": " + table.name.ToString() +
                   " is not a rollup (it has no timelake.rollup-source)");
  }
  return **def;
}

// The time range of a table's rows, from its live files' bounds on the
// time column; nullopt when a file has none.
std::optional<std::pair<int64_t, int64_t>> TimeBounds(const TableState& table) {
  auto files = internal::ListLiveFiles(table);
  if (!files.ok() || files->empty()) return std::nullopt;
  const std::optional<int> time_id = read::TimeColumnId(table);
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (const auto& f : *files) {
    const TimeRange r = read::RangeOf(f.data_file, time_id);
    if (!r.lo || !r.hi) return std::nullopt;
    lo = std::min(lo, *r.lo);
    hi = std::max(hi, *r.hi);
  }
  return std::make_pair(lo, hi);
}

// `ranges` (aligned to `bucket`) cut into the pieces one commit each
// recomputes: the parts in one partition of the rollup (widened to whole
// buckets, at least one). Unbounded ends are bounded by the raw table's
// rows first; when they cannot be, that range is one piece.
std::vector<std::vector<TimeRange>> Pieces(const std::vector<TimeRange>& ranges,
                                           const Bucket& bucket, Chunk chunk,
                                           const TableState& raw) {
  std::map<int64_t, std::vector<TimeRange>> by_partition;
  std::vector<std::vector<TimeRange>> unbounded;
  std::optional<std::optional<std::pair<int64_t, int64_t>>> bounds;
  for (TimeRange r : ranges) {
    if (!r.lo || !r.hi) {
      if (!bounds) bounds = TimeBounds(raw);
      if (!*bounds) {
        unbounded.push_back({r});
        continue;
      }
      if (!r.lo) r.lo = bucket.Floor((*bounds)->first);
      if (!r.hi) r.hi = bucket.Ceil((*bounds)->second);
      if (*r.lo >= *r.hi) continue;
    }
    for (int64_t t = *r.lo; t < *r.hi;) {
      const int32_t p = write::PartitionOf(t, chunk);
      const int64_t partition_end = internal::PartitionRange(p, chunk).second;
      const int64_t end =
          std::min(*r.hi, std::max(bucket.Ceil(partition_end), bucket.Next(t)));
      by_partition[p].push_back({t, end});
      t = end;
    }
  }
  std::vector<std::vector<TimeRange>> out = std::move(unbounded);
  for (auto& [p, piece] : by_partition) out.push_back(std::move(piece));
  return out;
}

}  // namespace

arrow::Result<RollupRefreshReport> Refresh(std::shared_ptr<LakeState> lake,
                                           const TableName& name) {
  const std::string context = "refreshing rollup " + name.ToString();
  RollupRefreshReport report;
  report.rollup = name.ToString();
  TIMELAKE_ASSIGN_OR_RAISE(auto rollup, internal::LoadTableState(lake, name));
  TIMELAKE_ASSIGN_OR_RAISE(auto def, DefinitionOf(*rollup, context));
  auto source_name = TableName::Parse(def.source);
  if (!source_name.ok()) return WithContext(source_name.status(), context);
  auto raw = internal::LoadTableState(lake, *source_name);
  if (!raw.ok()) {
    return WithContext(raw.status(), context + ": its raw table " + def.source);
  }
  TIMELAKE_RETURN_NOT_OK(WithContext(
      internal::CheckTableFormat(*rollup, internal::FormatAccess::kWrite), context));
  const auto* raw_snapshot = (*raw)->metadata.CurrentSnapshot();
  if (raw_snapshot == nullptr) return report;  // nothing to roll up yet
  const auto& raw_time = (*raw)->contract.time_column;
  if (!raw_time) {
    return Invalid(context + ": its raw table " + def.source + " has no time column");
  }

  read::Changes changes;
  auto source = read::RollupSourceOf(*rollup);
  if (source) {
    TIMELAKE_ASSIGN_OR_RAISE(changes, read::ChangesSince(**raw, *source));
  } else {
    changes.rebuild = true;
  }
  if (changes.empty()) {
    report.source_snapshot_id = raw_snapshot->snapshot_id;
    return report;
  }
  report.rebuilt = changes.rebuild;
  std::vector<TimeRange> compute, drop;
  if (changes.rebuild) {
    compute = drop = {TimeRange{}};
  } else {
    std::vector<TimeRange> all = changes.added;
    all.insert(all.end(), changes.removed.begin(), changes.removed.end());
    std::sort(all.begin(), all.end(), [](const TimeRange& a, const TimeRange& b) {
      return a.lo.value_or(INT64_MIN) < b.lo.value_or(INT64_MIN);
    });
    compute = Aligned(all, def.bucket);
    // In a dedup table a newer row replaces an older one of the same key,
    // and with it possibly the value of a grouping column that is not part
    // of the key: a group of the rollup may then vanish from a bucket, so
    // the rollup's rows of every recomputed bucket go first.
    const auto& key = (*raw)->contract.series_key;
    const bool groups_in_key =
        std::all_of(def.groups.begin(), def.groups.end(), [&](const std::string& g) {
          return std::find(key.begin(), key.end(), g) != key.end();
        });
    drop = Aligned((*raw)->contract.dedup && !groups_in_key ? all : changes.removed,
                   def.bucket);
  }
  report.ranges = static_cast<int64_t>(compute.size());
  internal::StepOptions step;

  // Buckets whose raw rows were removed: gone from the rollup first (the
  // commit keeps the old source, so they read from raw data meanwhile).
  if (!drop.empty() && rollup->metadata.CurrentSnapshot() != nullptr) {
    DeleteReport deleted;
    auto after =
        internal::RunDelete(rollup, InRangesSql(def.bucket_column, drop), step, &deleted);
    if (!after.ok()) return WithContext(after.status(), context);
    rollup = *after;
  }

  // The buckets' rows as the raw snapshot has them, a commit per piece of
  // the time axis (a partition of the rollup, widened to whole buckets), so
  // that a rebuild of years writes commits of bounded size. Only the last
  // commit records the raw snapshot: until then the rollup says it reflects
  // what it did, and the new rows are in ranges dirty for that.
  TIMELAKE_ASSIGN_OR_RAISE(auto layout, internal::LayoutOf(*rollup));
  const auto pieces = Pieces(compute, def.bucket, layout.chunk, **raw);
  std::set<std::optional<int32_t>> touched;
  for (size_t i = 0; i < std::max<size_t>(pieces.size(), 1); ++i) {
    const bool last = i + 1 >= pieces.size();
    std::optional<write::WriteOutput> written;
    if (!pieces.empty()) {
      const std::string sql = RefreshSql(def, *source_name, *raw_time, pieces[i]);
      auto reader = internal::QueryAt(*raw, sql, context);
      if (!reader.ok()) return reader.status();
      write::ChunkedWriter writer(*lake->store, rollup->table_key + "/data", layout,
                                  AppendOptions{}.buffer_rows, *lake->clock);
      for (;;) {
        std::shared_ptr<arrow::RecordBatch> batch;
        TIMELAKE_RETURN_NOT_OK((*reader)->ReadNext(&batch));
        if (batch == nullptr) break;
        if (auto st = writer.Add(batch); !st.ok()) return WithContext(st, context);
      }
      TIMELAKE_ASSIGN_OR_RAISE(written, writer.Finish());
      for (const auto& f : written->files) {
        if (f.footer != nullptr) lake->footers.Put(f.key, f.footer);
      }
    }
    internal::Replacement change;
    change.operation = "append";
    if (written) change.added = written->files;
    change.added_sequence_number = internal::Replacement::kCommitSequence;
    if (last) {
      change.summary[format::summary::kRollupSourceSnapshot] =
          std::to_string(raw_snapshot->snapshot_id);
      change.summary[format::summary::kRollupSourceSequence] =
          std::to_string(raw_snapshot->sequence_number);
    }
    auto latest = written ? written->latest : nullptr;
    const auto contract = rollup->contract;
    const auto schema = rollup->schema;
    change.index_at = [latest, contract, schema](const TableState& base)
        -> arrow::Result<std::shared_ptr<arrow::RecordBatch>> {
      std::shared_ptr<arrow::RecordBatch> previous;
      if (const auto* s = base.metadata.CurrentSnapshot()) {
        if (auto uri = internal::LviUri(*s)) {
          auto index = internal::ReadLvi(base, *uri);
          if (index.ok()) previous = *index;
        }
      }
      return internal::MergeLvi(previous, latest, contract, *schema);
    };
    if (!last && change.added.empty()) continue;  // nothing to record yet
    auto committed = internal::CommitReplacement(rollup, change, step, context);
    if (!committed.ok()) {
      for (const auto& f : change.added) (void)lake->store->Delete(f.key);
      return committed.status();
    }
    rollup = *committed;
    if (written) report.rows += written->rows;
    for (const auto& f : change.added) touched.insert(f.partition);
  }
  report.source_snapshot_id = raw_snapshot->snapshot_id;

  // Each refresh adds a file per touched partition, whose buckets overlap the
  // previous one's: without the tidying an append gets, a rollup refreshed
  // every few seconds soon has hundreds of files to merge on every read.
  const settings::Resolver by_rollup(nullptr, nullptr, &rollup->metadata.properties);
  if (!touched.empty() && by_rollup.GetBool("auto-maintain").ValueOr(true)) {
    MaintainReport maintained;
    auto after = internal::MaintainAfterAppend(rollup, touched, step.max_commit_attempts,
                                               &maintained);
    report.files_rewritten = maintained.files_rewritten;
    if (!after.ok()) report.maintenance_error = after.status().message();
  }
  return report;
}

namespace {

void RefreshTree(const std::shared_ptr<const TableState>& raw, RollupRefresh which,
                 int depth, std::vector<RollupRefreshReport>* out) {
  if (which == RollupRefresh::kNone || depth >= kMaxDepth) return;
  auto names = read::RollupNamesOf(raw->metadata);
  if (names.empty()) return;
  struct Due {
    TableName name;
    std::shared_ptr<const TableState> state;
    int64_t width = 0;
  };
  std::vector<Due> due;
  const int64_t now_ms = internal::ToMillis(raw->lake->clock->Now());
  for (const auto& n : names) {
    RollupRefreshReport failed;
    failed.rollup = n;
    auto name = TableName::Parse(n);
    if (!name.ok()) {
      failed.error = name.status().message();
      out->push_back(failed);
      continue;
    }
    auto state = internal::LoadTableState(raw->lake, *name);
    if (!state.ok()) {
      failed.error = state.status().message();
      out->push_back(failed);
      continue;
    }
    auto def = read::RollupDefinitionOf(**state);
    int64_t width = 0;
    if (def.ok() && *def) {
      width = (*def)->bucket.months > 0 ? (*def)->bucket.months * 31 * 86'400'000'000LL
                                        : (*def)->bucket.width_us;
    }
    if (which == RollupRefresh::kDue) {
      // The rollup's own interval, else its raw table's.
      const auto* own = &(*state)->metadata.properties;
      const settings::Resolver by_rollup(nullptr, nullptr, own);
      const settings::Resolver by_raw(nullptr, nullptr, &raw->metadata.properties);
      const bool own_set = own->count("timelake.rollup-refresh-interval") > 0;
      auto interval = (own_set ? by_rollup : by_raw).Get("rollup-refresh-interval");
      auto ms = ParseDuration(interval.value_or("5m"));
      const auto* last = (*state)->metadata.CurrentSnapshot();
      if (ms.ok() && last != nullptr && now_ms - last->timestamp_ms < ms->count()) {
        continue;  // not due yet
      }
    }
    due.push_back({*name, *state, width});
  }
  std::stable_sort(due.begin(), due.end(),
                   [](const Due& a, const Due& b) { return a.width < b.width; });
  for (const auto& d : due) {
    auto report = Refresh(raw->lake, d.name);
    if (!report.ok()) {
      RollupRefreshReport failed;
      failed.rollup = d.name.ToString();
      failed.error = report.status().message();
      out->push_back(std::move(failed));
      continue;
    }
    const bool changed = report->rows > 0 || report->ranges > 0;
    out->push_back(std::move(*report));
    if (!changed) continue;
    // Its own rollups (a rollup of a rollup) see its new rows.
    auto state = internal::LoadTableState(raw->lake, d.name);
    if (state.ok()) RefreshTree(*state, which, depth + 1, out);
  }
}

}  // namespace

std::vector<RollupRefreshReport> RefreshRollupsOf(
    const std::shared_ptr<const TableState>& raw, RollupRefresh which) {
  std::vector<RollupRefreshReport> out;
  RefreshTree(raw, which, 0, &out);
  return out;
}

namespace {

// CREATE MATERIALIZED ROLLUP: the table, its listing on the raw table, its
// first refresh.
arrow::Result<int64_t> Create(const std::shared_ptr<LakeState>& lake,
                              const RollupStatement& st) {
  const std::string context = "creating rollup " + st.name;
  TIMELAKE_ASSIGN_OR_RAISE(auto name, TableName::Parse(st.name));
  auto existing = internal::LoadTableState(lake, name);
  if (existing.ok()) {
    auto def = read::RollupDefinitionOf(**existing);
    if (!st.if_not_exists || !def.ok() || !*def) {
      return AlreadyExists(context + ": table " + name.ToString() + " already exists" +
                           (def.ok() && *def ? "" : " (and is not a rollup)"));
    }
    // IF NOT EXISTS over a rollup a crash left half-made: finish the job.
    auto raw = TableName::Parse((*def)->source);
    if (raw.ok()) TIMELAKE_RETURN_NOT_OK(ChangeList(lake, *raw, name.ToString(), true));
    if (!read::RollupSourceOf(**existing)) {
      TIMELAKE_ASSIGN_OR_RAISE(auto report, Refresh(lake, name));
      return report.rows;
    }
    return 0;
  }
  if (KindOf(existing.status()) != ErrorKind::kNotFound) return existing.status();

  // Options.
  TableOptions options;
  for (const auto& [key, value] : st.options) {
    if (key == "refresh_interval" || key == "rollup_refresh_interval") {
      options.properties["timelake.rollup-refresh-interval"] = value;
    } else {
      return Invalid(context + ": unknown option '" + key +
                     "' in WITH (…) (known: refresh_interval)");
    }
  }

  // The SELECT's shape, from the engine.
  auto described = internal::DescribeRollup(lake, st.select);
  if (!described.ok()) return WithContext(described.status(), context);
  json d = json::parse(*described, nullptr, /*allow_exceptions=*/false);
  if (!d.is_object())
    return MakeError(ErrorKind::kInternal, context + ": bad description");
  auto source = TableName::Parse(d["source"]["schema"].get<std::string>() + "." +
                                 d["source"]["table"].get<std::string>());
  if (!source.ok()) return WithContext(source.status(), context);
  if (*source == name) return Invalid(context + ": a rollup cannot roll up itself");
  TIMELAKE_ASSIGN_OR_RAISE(auto raw, internal::LoadTableState(lake, *source));
  const std::string time = d["time_column"].get<std::string>();
  if (raw->contract.time_column != time) {
    return Invalid(context + ": " + source->ToString() + " has no time column " + time);
  }

  RollupDefinition def;
  def.source = source->ToString();
  def.bucket_column = d["bucket"]["name"].get<std::string>();
  const int64_t origin = d["bucket"].value("origin_us", int64_t{0});
  if (d["bucket"]["kind"] == "months") {
    def.bucket.months = d["bucket"]["months"].get<int64_t>();
    if (origin != 0) {
      return Invalid(context + ": monthly buckets start at 1970-01 (no origin)");
    }
  } else {
    def.bucket.width_us = d["bucket"]["width_us"].get<int64_t>();
  }
  // The bucket as it will be stored: what its decoder refuses (a width of
  // more than 10,000 years) is refused now, before anything is written.
  auto stored = Bucket::Parse(def.bucket.ToText());
  if (!stored.ok()) return Invalid(context + ": " + stored.status().message());
  if (!(*stored == def.bucket)) {
    return MakeError(ErrorKind::kInternal,
                     context + ": the bucket " + def.bucket.ToText() + " does not store");
  }
  if (def.bucket.width_us > 0 && origin % def.bucket.width_us != 0) {
    const int64_t w = def.bucket.width_us;
    const int64_t offset = (origin % w + w) % w;
    return Invalid(
        context + ": a rollup's buckets start at 1970-01-01T00:00:00Z, as Timelake 0.7 " +
        "stores them, and these of " + def.bucket.ToText() + " start " +
        (offset % 1000 == 0 ? FormatDuration(std::chrono::milliseconds(offset / 1000))
                            : std::to_string(offset) + "us") +
        " after it (drop the origin, or use one a whole number of widths from it; " +
        "date_trunc('week') starts weeks on Mondays: use time_bucket(INTERVAL '7 "
        "days', " +
        "time) instead)");
  }
  for (const auto& g : d["groups"]) def.groups.push_back(g.get<std::string>());
  std::set<std::string> names;
  for (const auto& c : d["columns"]) names.insert(c.get<std::string>());
  auto has = [&](const std::string& f, const std::optional<std::string>& c) {
    return std::any_of(
        def.aggregates.begin(), def.aggregates.end(),
        [&](const RollupAggregate& a) { return a.function == f && a.column == c; });
  };
  for (const auto& a : d["aggregates"]) {
    RollupAggregate agg;
    agg.name = a["name"].get<std::string>();
    agg.function = a["function"].get<std::string>();
    if (a["column"].is_string()) agg.column = a["column"].get<std::string>();
    def.aggregates.push_back(std::move(agg));
  }
  // What coarser buckets and fewer groups re-aggregate from, stored beside
  // what was asked for (Timelake 0.7 lists them as aggregates of their own,
  // so it reads and routes them too): sum and count beside an average, the
  // first and last times beside first_value and last_value.
  auto add = [&](const std::string& f, const std::optional<std::string>& c) {
    if (has(f, c)) return;
    std::string base = f + "_" + c.value_or("all");
    std::string n = base;
    for (int i = 2; names.count(n); ++i) n = base + "_" + std::to_string(i);
    names.insert(n);
    def.aggregates.push_back({n, f, c});
  };
  const auto asked = def.aggregates;
  for (const auto& a : asked) {
    if (a.function == "avg") {
      add("sum", a.column);
      add("count", a.column);
    } else if (a.function == "first_value") {
      add("min", time);
    } else if (a.function == "last_value") {
      add("max", time);
    }
  }
  for (const auto& g : def.groups) {
    if (g == def.bucket_column) {
      return Invalid(context + ": the bucket's name " + g + " is a grouping column too");
    }
  }

  // The rollup table's schema: the refresh query's, over no rows.
  const std::string probe = RefreshSql(def, *source, time, {}) + " LIMIT 0";
  auto reader = internal::QueryAt(raw, probe, context);
  if (!reader.ok()) return reader.status();
  auto schema = (*reader)->schema();
  options.time_column = def.bucket_column;
  options.series_key = def.groups;
  options.dedup = true;
  options.chunk = def.bucket.months > 0 || def.bucket.width_us >= 3'600'000'000LL
                      ? Chunk::kMonth
                      : Chunk::kDay;
  const std::map<std::string, std::string> managed = read::RollupProperties(def);
  auto created = commit::CreateTable(lake, name, *schema, options, "", managed);
  if (!created.ok()) return WithContext(created.status(), context);
  // Listed before its first refresh: a crash in between leaves a rollup
  // that the next refresh (after an append, or REFRESH) fills.
  TIMELAKE_RETURN_NOT_OK(ChangeList(lake, *source, name.ToString(), true));
  TIMELAKE_ASSIGN_OR_RAISE(auto report, Refresh(lake, name));
  return report.rows;
}

arrow::Status Drop(const std::shared_ptr<LakeState>& lake, const RollupStatement& st) {
  const std::string context = "dropping rollup " + st.name;
  TIMELAKE_ASSIGN_OR_RAISE(auto name, TableName::Parse(st.name));
  auto state = internal::LoadTableState(lake, name);
  if (!state.ok()) {
    if (st.if_exists && KindOf(state.status()) == ErrorKind::kNotFound) {
      return arrow::Status::OK();
    }
    return WithContext(state.status(), context);
  }
  TIMELAKE_RETURN_NOT_OK(DefinitionOf(**state, context).status());
  return DropTable(lake, name, nullptr);
}

arrow::Result<std::shared_ptr<arrow::RecordBatchReader>> Answer(const std::string& rollup,
                                                                int64_t rows) {
  auto schema = arrow::schema({arrow::field("rollup", arrow::utf8(), false),
                               arrow::field("rows", arrow::int64(), false)});
  arrow::StringBuilder names;
  arrow::Int64Builder counts;
  TIMELAKE_RETURN_NOT_OK(names.Append(rollup));
  TIMELAKE_RETURN_NOT_OK(counts.Append(rows));
  TIMELAKE_ASSIGN_OR_RAISE(auto n, names.Finish());
  TIMELAKE_ASSIGN_OR_RAISE(auto c, counts.Finish());
  return arrow::RecordBatchReader::Make({arrow::RecordBatch::Make(schema, 1, {n, c})},
                                        schema);
}

}  // namespace

arrow::Result<std::shared_ptr<arrow::RecordBatchReader>> Execute(
    std::shared_ptr<LakeState> lake, const RollupStatement& statement) {
  TIMELAKE_ASSIGN_OR_RAISE(auto name, TableName::Parse(statement.name));
  switch (statement.kind) {
    case RollupStatement::Kind::kCreate: {
      TIMELAKE_ASSIGN_OR_RAISE(auto rows, Create(lake, statement));
      return Answer(name.ToString(), rows);
    }
    case RollupStatement::Kind::kRefresh: {
      TIMELAKE_ASSIGN_OR_RAISE(auto report, Refresh(lake, name));
      return Answer(name.ToString(), report.rows);
    }
    case RollupStatement::Kind::kDrop:
      TIMELAKE_RETURN_NOT_OK(Drop(lake, statement));
      return Answer(name.ToString(), 0);
  }
  return Invalid("unknown rollup statement");
}

arrow::Status DropTable(const std::shared_ptr<LakeState>& lake, const TableName& name,
                        std::vector<std::string>* dropped_rollups) {
  const std::string context = "dropping table " + name.ToString();
  auto state = internal::LoadTableState(lake, name);
  if (state.ok()) {
    auto def = read::RollupDefinitionOf(**state);
    if (def.ok() && *def) {
      // Off its raw table's list first: a crash then leaves an unlisted
      // rollup to drop again, never a listed one that is gone.
      auto raw = TableName::Parse((*def)->source);
      if (raw.ok()) {
        auto st = ChangeList(lake, *raw, name.ToString(), false);
        if (!st.ok() && KindOf(st) != ErrorKind::kNotFound)
          return WithContext(st, context);
      }
    }
    for (const auto& r : read::RollupNamesOf((*state)->metadata)) {
      auto rollup = TableName::Parse(r);
      if (!rollup.ok() || *rollup == name) continue;
      auto st = commit::DropTable(lake, *rollup);
      if (!st.ok() && KindOf(st) != ErrorKind::kNotFound) return WithContext(st, context);
      if (st.ok() && dropped_rollups != nullptr) dropped_rollups->push_back(r);
    }
  }
  return commit::DropTable(lake, name);
}

void DescribeRollups(const TableState& table, TableInfo* info) {
  auto def = read::RollupDefinitionOf(table);
  if (def.ok() && *def) info->rollup_of = (*def)->source;
  for (const auto& n : read::RollupNamesOf(table.metadata)) {
    TableInfo::Rollup r;
    r.name = n;
    auto name = TableName::Parse(n);
    auto state = name.ok()
                     ? internal::LoadTableState(table.lake, *name)
                     : arrow::Result<std::shared_ptr<const TableState>>(name.status());
    if (!state.ok()) {
      r.problem = state.status().message();
      info->rollups.push_back(std::move(r));
      continue;
    }
    auto d = read::RollupDefinitionOf(**state);
    if (d.ok() && *d) r.bucket = (*d)->bucket.ToText();
    if (const auto* s = (*state)->metadata.CurrentSnapshot())
      r.refreshed_ms = s->timestamp_ms;
    auto source = read::RollupSourceOf(**state);
    if (!source) {
      r.problem = "never refreshed";
    } else {
      r.source_snapshot_id = source->snapshot_id;
      // Raw commits since: the current history down to the source.
      const auto& m = table.metadata;
      bool found = false;
      std::set<int64_t> seen;
      for (const auto* s = m.CurrentSnapshot(); s != nullptr;
           s = s->parent_snapshot_id ? m.FindSnapshot(*s->parent_snapshot_id) : nullptr) {
        if (!seen.insert(s->snapshot_id).second) break;
        if (s->snapshot_id == source->snapshot_id) {
          found = true;
          break;
        }
        ++r.behind;
      }
      if (!found) {
        r.problem =
            "its source snapshot is not in the table's history: the next refresh "
            "recomputes it";
      }
    }
    info->rollups.push_back(std::move(r));
  }
}

}  // namespace timelake::rollup
