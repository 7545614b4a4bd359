// Copyright 2026 The Timelake Authors. Apache-2.0.

#include "timelake/versions/versions.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <random>
#include <thread>

namespace timelake::versions {

namespace {

bool AllDigits(std::string_view s) {
  if (s.empty() || s.size() > 18) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// Background writes: detached threads counted so that Flush() can wait.
struct Background {
  std::mutex mu;
  std::condition_variable cv;
  int running = 0;
};

Background& GetBackground() {
  static Background* b = new Background();  // never destroyed: threads may outlive main
  return *b;
}

}  // namespace

std::string MetadataPrefix(const std::string& table_key) {
  return table_key + "/metadata";
}

std::string VersionKey(const std::string& table_key, int64_t number) {
  return MetadataPrefix(table_key) + "/v" + std::to_string(number) + ".metadata.json";
}

std::optional<int64_t> VersionOfFileName(std::string_view name) {
  constexpr std::string_view kSuffix = ".metadata.json";
  if (name.size() <= kSuffix.size() ||
      name.substr(name.size() - kSuffix.size()) != kSuffix) {
    return std::nullopt;
  }
  std::string_view stem = name.substr(0, name.size() - kSuffix.size());
  if (stem[0] == 'v' && AllDigits(stem.substr(1)))
    return std::stoll(std::string(stem.substr(1)));
  const size_t dash = stem.find('-');
  if (dash != std::string_view::npos && AllDigits(stem.substr(0, dash))) {
    return std::stoll(std::string(stem.substr(0, dash)));
  }
  return std::nullopt;
}

arrow::Result<std::optional<Version>> FindLatestVersion(const storage::Store& store,
                                                        const std::string& table_key) {
  TIMELAKE_ASSIGN_OR_RAISE(auto listing,
                           store.List(MetadataPrefix(table_key) + "/", true));
  std::optional<Version> best;
  for (const auto& obj : listing.objects) {
    const std::string_view key = obj.key;
    const size_t slash = key.rfind('/');
    auto n =
        VersionOfFileName(slash == std::string_view::npos ? key : key.substr(slash + 1));
    // Prefer our own v<N> spelling when two files claim the same number.
    if (n && (!best || *n > best->number ||
              (*n == best->number && key.find("/v") != std::string_view::npos))) {
      best = Version{*n, obj.key};
    }
  }
  return best;
}

arrow::Status TableNotFound(const storage::Store& store, const std::string& table_key,
                            const std::string& table_name) {
  std::string message = "table " + table_name + " not found in " + store.root_url();
  auto listing = store.List(table_key + "/", true);
  if (!listing.ok()) return NotFound(message);
  auto last = [](std::string_view key) {
    while (!key.empty() && key.back() == '/') key.remove_suffix(1);
    const size_t slash = key.rfind('/');
    return std::string(slash == std::string_view::npos ? key : key.substr(slash + 1));
  };
  std::vector<std::string> held;
  for (const auto& p : listing->prefixes) held.push_back(last(p) + "/");
  for (const auto& o : listing->objects) held.push_back(last(o.key));
  if (held.empty()) return NotFound(message);
  std::sort(held.begin(), held.end());
  constexpr size_t kNamed = 5;
  std::string names;
  for (size_t i = 0; i < held.size() && i < kNamed; ++i) {
    names += (i ? ", " : "") + held[i];
  }
  if (held.size() > kNamed) names += ", … (" + std::to_string(held.size()) + " in all)";
  return NotFound(message + ": " + table_key + "/ holds " + names +
                  " but no metadata/v<N>.metadata.json, so it is no table");
}

arrow::Result<LoadedVersion> LoadLatest(const storage::Store& store,
                                        const std::string& table_key,
                                        const std::string& table_name) {
  TIMELAKE_ASSIGN_OR_RAISE(auto latest, FindLatestVersion(store, table_key));
  if (!latest) return TableNotFound(store, table_key, table_name);
  auto bytes = store.Get(latest->key);
  if (!bytes.ok()) {
    return WithContext(bytes.status(), "loading table " + table_name);
  }
  auto metadata = format::TableMetadata::Parse(
      std::string_view(reinterpret_cast<const char*>((*bytes)->data()),
                       static_cast<size_t>((*bytes)->size())),
      store.Uri(latest->key));
  if (!metadata.ok())
    return WithContext(metadata.status(), "loading table " + table_name);
  return LoadedVersion{std::move(*latest), std::move(*metadata)};
}

arrow::Result<bool> TryCommit(const storage::Store& store, const std::string& table_key,
                              int64_t number, const format::TableMetadata& metadata,
                              std::string_view base_key) {
  const std::string text = metadata.Serialize();
  const std::string key = VersionKey(table_key, number);
  auto st = store.Put(key, text, storage::PutMode::kCreate);
  if (st.ok()) {
    // Maintenance deletes the oldest versions (a prefix of them). A writer
    // whose base is among those is stale: its put lands in the hole they
    // left, not at the top. Its base is gone then; take the put back and
    // report a lost race, so that it reloads the newest version.
    if (!base_key.empty()) {
      auto base = store.Head(base_key);
      if (!base.ok() && KindOf(base.status()) == ErrorKind::kNotFound) {
        TIMELAKE_RETURN_NOT_OK(store.Delete(key));
        return false;
      }
    }
    return true;
  }
  if (KindOf(st) != ErrorKind::kAlreadyExists) return st;
  // A put retried after a lost response finds its own first attempt: the
  // object holds exactly our text then, and the commit is ours. (Every
  // version carries a fresh timestamp and, for appends, a random snapshot id,
  // so another writer's version never equals ours by accident.)
  auto existing = store.Get(key);
  if (!existing.ok()) return existing.status();
  const std::string_view stored(reinterpret_cast<const char*>((*existing)->data()),
                                static_cast<size_t>((*existing)->size()));
  return stored == text;
}

namespace {

// The backoff after a lost race: a random sleep up to kBackoffBaseMs ×
// 2^attempt. 5 ms is about one put-if-absent on S3, so racing writers
// spread out within a few rounds; the cap of 1 s keeps a writer that keeps
// losing responsive (19 backoffs of 20 attempts: about 7 s on average).
constexpr int kBackoffBaseMs = 5;
constexpr int kBackoffCapMs = 1000;
// 5 ms << 8 already exceeds the cap; a larger shift could overflow.
constexpr int kBackoffMaxShift = 8;

}  // namespace

void BackoffBeforeRetry(int attempt) {
  thread_local std::mt19937 rng(std::random_device{}());
  const int cap_ms =
      std::min(kBackoffCapMs, kBackoffBaseMs << std::clamp(attempt, 0, kBackoffMaxShift));
  std::this_thread::sleep_for(
      std::chrono::milliseconds(std::uniform_int_distribution<int>(1, cap_ms)(rng)));
}

void RunInBackground(std::function<void()> work) {
  Background& bg = GetBackground();
  {
    std::lock_guard<std::mutex> lock(bg.mu);
    ++bg.running;
  }
  std::thread([work = std::move(work)] {
    work();
    Background& b = GetBackground();
    std::lock_guard<std::mutex> lock(b.mu);
    --b.running;
    b.cv.notify_all();
  }).detach();
}

void WriteVersionHintAsync(std::shared_ptr<storage::Store> store, std::string table_key,
                           int64_t number) {
  RunInBackground([store = std::move(store), table_key = std::move(table_key), number] {
    // Best effort: readers list metadata/ and never need the hint.
    (void)store->Put(MetadataPrefix(table_key) + "/version-hint.text",
                     std::to_string(number));
  });
}

void WaitForBackgroundWrites() {
  Background& bg = GetBackground();
  std::unique_lock<std::mutex> lock(bg.mu);
  bg.cv.wait(lock, [&] { return bg.running == 0; });
}

}  // namespace timelake::versions
