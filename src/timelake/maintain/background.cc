// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// Inline maintenance in the background (AppendOptions::maintain_in_background):
// the run after append N overlaps append N+1's writing and commit, and
// append N+1 reports it.

#include <condition_variable>
#include <mutex>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <arrow/memory_pool.h>

#include "timelake/maintain/maintain.h"
#include "timelake/versions/versions.h"

namespace timelake::internal {

void AddReport(MaintainReport* to, const MaintainReport& r) {
  to->partitions_dropped += r.partitions_dropped;
  to->files_dropped += r.files_dropped;
  to->rows_dropped += r.rows_dropped;
  to->partitions_compacted += r.partitions_compacted;
  to->files_rewritten += r.files_rewritten;
  to->files_written += r.files_written;
  to->rows_rewritten += r.rows_rewritten;
  to->duplicates_removed += r.duplicates_removed;
  to->bytes_rewritten += r.bytes_rewritten;
  to->bytes_written += r.bytes_written;
  to->snapshots_expired += r.snapshots_expired;
  to->files_deleted += r.files_deleted;
  to->orphans_deleted += r.orphans_deleted;
  to->commits += r.commits;
  to->conflicts += r.conflicts;
  to->version = std::max(to->version, r.version);
  to->duration += r.duration;
}

namespace {

// Hands memory a compaction freed back to the system. A compaction decodes,
// sorts and encodes a partition's files on several threads, each with its
// own malloc arena and allocator heap, and those keep what they freed: an
// ingest of 1,000 hosts x 12 h peaked at 122 MB of live heap (heaptrack)
// and 370-430 MiB of RSS, 335-360 MiB with this. Cheap beside the
// compaction itself; not done after appends, where it cost 10% of the
// ingest's time in page faults.
void ReleaseFreedMemory() {
  arrow::default_memory_pool()->ReleaseUnused();
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

// Waits for `run` and returns its outcome with `lake` as the table's.
MaintenanceOutcome Await(BackgroundRun& run, const std::shared_ptr<LakeState>& lake) {
  std::unique_lock<std::mutex> lock(run.mu);
  run.cv.wait(lock, [&] { return run.done; });
  MaintenanceOutcome out;
  out.report = run.report;
  out.error = run.error;
  if (run.table != nullptr) {
    auto table = std::make_shared<TableState>(*run.table);
    table->lake = lake;
    out.table = std::move(table);
  }
  return out;
}

}  // namespace

void StartMaintenance(std::shared_ptr<const TableState> table,
                      std::set<std::optional<int32_t>> partitions,
                      int max_commit_attempts) {
  auto run = std::make_shared<BackgroundRun>();
  std::shared_ptr<BackgroundRun> previous;
  LakeState& lake = *table->lake;
  {
    std::lock_guard<std::mutex> lock(lake.maintenance_mu);
    auto& slot = lake.maintenance[table->name.ToString()];
    previous = std::exchange(slot, run);
  }
  versions::RunInBackground([run, previous = std::move(previous),
                             table = std::move(table), partitions = std::move(partitions),
                             max_commit_attempts] {
    MaintainReport report;
    arrow::Status error;
    std::shared_ptr<const TableState> base = table;
    if (previous != nullptr) {
      // Another thread's append of the same table left this one running.
      MaintenanceOutcome before = Await(*previous, table->lake);
      AddReport(&report, before.report);
      error = before.error;
      if (before.table != nullptr && before.table->version > base->version) {
        base = before.table;
      }
    }
    // The newest version a run made (a failed run leaves the one before it).
    std::shared_ptr<const TableState> newest = base != table ? base : nullptr;
    std::set<std::optional<int32_t>> todo = std::move(partitions);
    int64_t taken = 0;  // handed appends `todo` holds
    for (;;) {
      MaintainReport mine;
      auto done = MaintainAfterAppend(base, todo, max_commit_attempts, &mine);
      AddReport(&report, mine);
      if (mine.partitions_compacted > 0) ReleaseFreedMemory();
      if (done.ok()) {
        newest = *done;
        base = *done;
      } else {
        // Every failure, the earliest first.
        error = error.ok() ? done.status()
                           : arrow::Status(error.code(), error.message() + "; then " +
                                                             done.status().message());
      }
      std::lock_guard<std::mutex> lock(run->mu);
      run->handed -= std::exchange(taken, 0);
      if (run->handed_partitions.empty()) {
        std::shared_ptr<TableState> detached;
        if (newest != nullptr) {
          detached = std::make_shared<TableState>(*newest);
          detached->lake.reset();
        }
        run->table = std::move(detached);
        run->report = report;
        run->error = std::move(error);
        run->handed_table.reset();  // appends that touched no partition
        run->done = true;
        run->cv.notify_all();
        return;
      }
      // Appends that returned meanwhile handed on their partitions: those
      // next, from the newest version either made.
      todo = std::exchange(run->handed_partitions, {});
      auto handed = std::exchange(run->handed_table, nullptr);
      taken = run->handed;
      if (handed != nullptr && handed->version > base->version) base = std::move(handed);
    }
  });
}

bool HandToMaintenance(const std::shared_ptr<const TableState>& table,
                       const std::set<std::optional<int32_t>>& partitions,
                       int64_t backlog) {
  if (backlog < 1) return false;
  std::shared_ptr<BackgroundRun> run;
  {
    LakeState& lake = *table->lake;
    std::lock_guard<std::mutex> lock(lake.maintenance_mu);
    auto it = lake.maintenance.find(table->name.ToString());
    if (it == lake.maintenance.end()) return false;
    run = it->second;
  }
  std::lock_guard<std::mutex> lock(run->mu);
  if (run->done || run->handed >= backlog) return false;
  run->handed_partitions.insert(partitions.begin(), partitions.end());
  if (run->handed_table == nullptr || table->version > run->handed_table->version) {
    run->handed_table = table;
  }
  ++run->handed;
  return true;
}

std::optional<MaintenanceOutcome> WaitForMaintenance(
    const std::shared_ptr<LakeState>& lake, const TableName& name) {
  std::shared_ptr<BackgroundRun> run;
  {
    std::lock_guard<std::mutex> lock(lake->maintenance_mu);
    auto it = lake->maintenance.find(name.ToString());
    if (it == lake->maintenance.end()) return std::nullopt;
    run = std::move(it->second);
    lake->maintenance.erase(it);
  }
  return Await(*run, lake);
}

}  // namespace timelake::internal
