// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// The settings registry (SPEC §4.3): every `timelake.*` setting is declared
// once, with its type, default, the levels it may be set at, the format
// version that added it and a one-line description. Table properties, SQL
// `SET timelake.x = …`, the CLI's `timelake settings` and docs/settings.md all
// come from this one list.
//
//   const settings::Setting* s = settings::Find("TIMELAKE.Target_File_Size");
//   TIMELAKE_RETURN_NOT_OK(settings::Validate(*s, "256MiB"));
//
// A setting has one kebab-case name ("target-file-size"). Its table property
// is "timelake.target-file-size", its SQL name "timelake.target_file_size";
// lookup accepts those and the bare name with either separator, in any case.
//
// A few settings are declared ahead of their feature (the SPEC lists them and
// Timelake 0.7 may have stored them): `implemented` is false for those. They
// are validated and stored like any other, but nothing reads them yet;
// `timelake settings` and docs/settings.md say so.
//
// Nothing here allocates state or locks: every function is safe from any
// thread.

#ifndef TIMELAKE_SETTINGS_H_
#define TIMELAKE_SETTINGS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "timelake/status.h"

namespace timelake::settings {

enum class Type {
  kBool,      // true/false (also on/off, yes/no, 1/0)
  kInt,       // a non-negative integer
  kBytes,     // a size: 134217728, 128MiB, 64KiB, 1GB
  kDuration,  // ParseDuration: 90d, 12h, 30m, 45s, "3 hours"
  kEnum,      // one of `choices`
  kString,    // a column name or other text
  kList,      // comma-separated column names
};

// "bool", "integer", "bytes", "duration", "enum", "string", "list".
std::string_view TypeName(Type type);

// Where a setting may be set. A setting lists one or more levels.
enum Level : unsigned {
  kCreate = 1u << 0,   // TableOptions / `create --set` when the table is made
  kTable = 1u << 1,    // a table property, changeable later with `alter`
  kSession = 1u << 2,  // SQL `SET timelake.x = …`, CLI `--set`, SessionSettings
  kCall = 1u << 3,     // an options struct of one call (e.g. MaintainOptions)
  kManaged = 1u << 4,  // written by Timelake itself, never by hand
};

// "create, table, session".
std::string LevelNames(unsigned levels);

struct Setting {
  std::string_view name;  // kebab-case, without "timelake."
  Type type;
  // The value when set nowhere, as text; empty means "none".
  std::string_view default_value;
  unsigned levels;
  std::string_view since;         // Timelake format version that added it
  std::string_view description;   // one line
  std::string_view choices = {};  // kEnum: "merge|keys-first"
  // Property key when it differs from "timelake.<name>" (Timelake 0.7 stores
  // `chunk` as "timelake.chunk-interval").
  std::string_view property_key = {};
  // False for a setting declared before its feature landed: accepted,
  // validated and stored, but read by nothing yet.
  bool implemented = true;

  // "timelake.target-file-size" (or `property_key`).
  std::string PropertyKey() const;
  // "timelake.target_file_size".
  std::string SqlName() const;
};

// Every setting, in documentation order.
std::span<const Setting> All();

// The setting of any spelling of a name or property key, or nullptr.
const Setting* Find(std::string_view any_spelling);

// Whether `key` is in the `timelake.` namespace (any case, either separator).
bool IsTimelakeKey(std::string_view key);

// Checks `value` against the setting's type (kString and kList take any
// text). Errors: kInvalid naming the setting and the expected form.
arrow::Status Validate(const Setting& setting, std::string_view value);

// Typed readers of a value. Errors: kInvalid as Validate (AsInt: also for
// a number beyond int64 or of more than 18 digits).
arrow::Result<bool> AsBool(const Setting& setting, std::string_view value);
arrow::Result<int64_t> AsInt(const Setting& setting,
                             std::string_view value);  // also kBytes
arrow::Result<int64_t> AsMillis(const Setting& setting, std::string_view value);

// Where a setting's effective value comes from: call > session > table >
// default. Each map is keyed by any spelling; absent levels are empty maps.
class Resolver {
 public:
  Resolver(const std::map<std::string, std::string>* call,
           const std::map<std::string, std::string>* session,
           const std::map<std::string, std::string>* table);

  // The effective value as text, or nullopt when unset with no default.
  std::optional<std::string> Get(const Setting& setting) const;
  // Like Get for a name that must be in the registry (nullopt when it is
  // not).
  std::optional<std::string> Get(std::string_view name) const;
  // The effective value as a bool (false when unset with no default) or an
  // integer (kInt or kBytes; 0 when unset with no default). Errors: kInvalid
  // for a name not in the registry or a value that does not parse.
  arrow::Result<bool> GetBool(std::string_view name) const;
  arrow::Result<int64_t> GetInt(std::string_view name) const;

 private:
  const std::map<std::string, std::string>* levels_[3];
};

// The registry as a Markdown document (docs/settings.md).
std::string Markdown();

}  // namespace timelake::settings

#endif  // TIMELAKE_SETTINGS_H_
