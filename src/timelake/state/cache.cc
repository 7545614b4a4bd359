// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// The lake's in-process caches (state.h).

#include "timelake/settings.h"
#include "timelake/state/state.h"

namespace timelake::internal {

std::shared_ptr<arrow::Buffer> ObjectCache::Get(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = index_.find(key);
  if (it == index_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->second;
}

void ObjectCache::Erase(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = index_.find(key);
  if (it == index_.end()) return;
  bytes_ -= static_cast<size_t>(it->second->second->size());
  lru_.erase(it->second);
  index_.erase(it);
}

void ObjectCache::Put(const std::string& key, std::shared_ptr<arrow::Buffer> value) {
  const size_t size = static_cast<size_t>(value->size());
  if (size > max_bytes_ / 4) return;  // one object may not take the cache
  std::lock_guard<std::mutex> lock(mu_);
  if (index_.count(key)) return;
  lru_.emplace_front(key, std::move(value));
  index_[key] = lru_.begin();
  bytes_ += size;
  while (lru_.size() > max_entries_ || bytes_ > max_bytes_) {
    bytes_ -= static_cast<size_t>(lru_.back().second->size());
    index_.erase(lru_.back().first);
    lru_.pop_back();
  }
}

arrow::Result<std::shared_ptr<arrow::Buffer>> GetImmutable(LakeState& lake,
                                                           const std::string& key) {
  if (auto hit = lake.objects.Get(key)) return hit;
  TIMELAKE_ASSIGN_OR_RAISE(auto bytes, lake.store->Get(key));
  lake.objects.Put(key, bytes);
  return bytes;
}

bool TableCache::Entry::FreshAt(TimePoint now) const {
  // A clock that went back (the wall clock set back) makes the entry stale:
  // it would otherwise stay fresh for as long as the clock went back.
  return state != nullptr && now >= loaded && now - loaded < interval;
}

std::shared_ptr<const TableState> TableCache::Fresh(const TableName& name,
                                                    TimePoint now) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(name.ToString());
  if (it == entries_.end() || !it->second.FreshAt(now)) return nullptr;
  return it->second.state;
}

void TableCache::Remember(const TableState& state, TimePoint now) {
  const settings::Resolver resolve(nullptr, nullptr, &state.metadata.properties);
  auto interval = resolve.Get("version-check-interval");
  const settings::Setting* s = settings::Find("version-check-interval");
  auto ms = interval ? settings::AsMillis(*s, *interval) : arrow::Result<int64_t>(0);
  auto detached = std::make_shared<TableState>(state);
  detached->lake.reset();
  std::lock_guard<std::mutex> lock(mu_);
  auto& entry = entries_[state.name.ToString()];
  // A newer version stays while it is fresh (a slower load of an older
  // version must not replace it); an expired one is replaced by anything,
  // as the table may have been dropped and created again.
  if (entry.FreshAt(now) && entry.state->version > state.version) return;
  entry.state = std::move(detached);
  entry.loaded = now;
  entry.interval = std::chrono::milliseconds(ms.ok() ? *ms : 0);
}

void TableCache::Forget(const TableName& name) {
  std::lock_guard<std::mutex> lock(mu_);
  entries_.erase(name.ToString());
}

arrow::Result<std::shared_ptr<const TableState>> LoadTableStateForRead(
    std::shared_ptr<LakeState> lake, const TableName& name) {
  if (auto cached = lake->tables.Fresh(name, lake->clock->Now())) {
    auto state = std::make_shared<TableState>(*cached);
    state->lake = std::move(lake);
    return state;
  }
  return LoadTableState(std::move(lake), name);
}

}  // namespace timelake::internal
