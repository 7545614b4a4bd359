// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// Range-checked integers from stored JSON (table metadata, Iceberg schemas).
//
// nlohmann's get<int>() truncates floats (1.5 -> 1), wraps integers that do not
// fit and converts floats out of the target's range with undefined behaviour
// (found by fuzz/table_metadata_fuzz.cc: "format-version": 1e300). Stored JSON
// is untrusted input, so its readers take integers through these helpers.
// Anything but a JSON integer within T's range throws nlohmann's
// json::type_error, which those readers already catch, like the other type
// errors of nlohmann's accessors, and report as kCorrupt.

#ifndef TIMELAKE_FORMAT_JSON_INT_H_
#define TIMELAKE_FORMAT_JSON_INT_H_

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace timelake::format::internal {

// The integer `v` as T. Throws json::type_error unless `v` is a JSON integer
// (not a float) within T's range.
template <typename T>
T GetInt(const nlohmann::json& v) {
  static_assert(std::is_signed_v<T>, "stored ids and counts are signed");
  if (v.is_number_unsigned()) {
    const auto u = v.get<uint64_t>();
    if (u <= static_cast<uint64_t>(std::numeric_limits<T>::max())) {
      return static_cast<T>(u);
    }
  } else if (v.is_number_integer()) {
    const auto i = v.get<int64_t>();
    if (i >= std::numeric_limits<T>::min() && i <= std::numeric_limits<T>::max()) {
      return static_cast<T>(i);
    }
  }
  throw nlohmann::json::type_error::create(
      302,
      "expected an integer of at most " + std::to_string(sizeof(T) * 8) + " bits, got " +
          v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
      &v);
}

// Like obj.value(key, fallback) for integers: `fallback` when the object has no
// member `key`, else GetInt of the member. Throws json::type_error when `obj`
// is not an object.
template <typename T>
T GetInt(const nlohmann::json& obj, std::string_view key, T fallback) {
  if (!obj.is_object()) {
    throw nlohmann::json::type_error::create(
        306, "cannot read \"" + std::string(key) + "\" of a " + obj.type_name(), &obj);
  }
  auto it = obj.find(key);
  return it == obj.end() ? fallback : GetInt<T>(*it);
}

}  // namespace timelake::format::internal

#endif  // TIMELAKE_FORMAT_JSON_INT_H_
