// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// Session::Parse: a SQL script split into statements.

#include <cctype>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>

#include "timelake/timelake.h"

namespace timelake {

namespace {

// The white space of std::isspace, which Parse splits by: also vertical
// tabs and form feeds.
constexpr char kSpaces[] = " \t\r\n\v\f";

std::string Trim(std::string_view text) {
  const size_t first = text.find_first_not_of(kSpaces);
  if (first == std::string_view::npos) return "";
  const size_t last = text.find_last_not_of(kSpaces);
  return std::string(text.substr(first, last - first + 1));
}

std::string Upper(std::string_view text) {
  std::string out(text);
  for (auto& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

// The words of `text` upper-cased, up to `n` of them.
std::vector<std::string> LeadingWords(std::string_view text, size_t n) {
  std::vector<std::string> words;
  size_t i = 0;
  while (words.size() < n && i < text.size()) {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    size_t start = i;
    while (i < text.size() &&
           (std::isalnum(static_cast<unsigned char>(text[i])) || text[i] == '_')) {
      ++i;
    }
    if (i == start) break;
    words.push_back(Upper(text.substr(start, i - start)));
  }
  return words;
}

bool IsSpace(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }
bool IsWordChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}

// A table name at text[*i] (after spaces): the parts of a dotted name
// unquoted and joined by '.', unquoted ones lower-cased as DataFusion folds
// them, a leading catalog "timelake" dropped. Moves *i past it. On failure
// returns nullopt and sets *why.
std::optional<std::string> ParseTableName(std::string_view text, size_t* i,
                                          std::string* why) {
  std::vector<std::string> parts;
  for (;;) {
    while (*i < text.size() && IsSpace(text[*i])) ++*i;
    std::string part;
    if (*i < text.size() && text[*i] == '"') {
      bool closed = false;
      for (++*i; *i < text.size(); ++*i) {
        if (text[*i] == '"') {
          if (*i + 1 < text.size() && text[*i + 1] == '"') {
            part += '"';
            ++*i;
            continue;
          }
          closed = true;
          ++*i;
          break;
        }
        part += text[*i];
      }
      if (!closed || part.empty()) {
        *why = "a bad quoted table name";
        return std::nullopt;
      }
    } else {
      while (*i < text.size() && IsWordChar(text[*i])) {
        part += static_cast<char>(std::tolower(static_cast<unsigned char>(text[*i])));
        ++*i;
      }
      if (part.empty()) {
        *why = "no table name";
        return std::nullopt;
      }
    }
    parts.push_back(std::move(part));
    while (*i < text.size() && IsSpace(text[*i])) ++*i;
    if (*i < text.size() && text[*i] == '.') {
      ++*i;
      continue;
    }
    break;
  }
  if (parts.size() == 3 && parts[0] == "timelake") parts.erase(parts.begin());
  if (parts.size() > 2) {
    *why = "a name of more than namespace.table";
    return std::nullopt;
  }
  return parts.size() == 2 ? parts[0] + "." + parts[1] : parts[0];
}

// DELETE FROM name [WHERE predicate]: the table name in `name`, the
// predicate in `value` (empty: every row).
arrow::Status ParseDelete(Statement* s) {
  const std::string_view text = s->text;
  auto fail = [&](const std::string& what) {
    return Invalid("line " + std::to_string(s->line) +
                   ": expected DELETE FROM table [WHERE " + "predicate], " + what +
                   " in '" + s->text + "'");
  };
  size_t i = std::string_view("DELETE").size();
  while (i < text.size() && IsSpace(text[i])) ++i;
  const auto words = LeadingWords(text.substr(i), 1);
  if (words.empty() || words[0] != "FROM") return fail("no FROM");
  i += 4;
  std::string why;
  auto name = ParseTableName(text, &i, &why);
  if (!name) return fail(why);
  s->name = *name;
  if (i == text.size()) return arrow::Status::OK();
  const auto where = LeadingWords(text.substr(i), 1);
  if (where.empty() || where[0] != "WHERE") {
    return fail("'" + std::string(text.substr(i)) + "' after the table name");
  }
  s->value = Trim(text.substr(i + 5));
  if (s->value.empty()) return fail("no predicate after WHERE");
  return arrow::Status::OK();
}

// Skips the words of `expect` (upper case) at text[*i]; false when another
// word comes.
bool SkipWords(std::string_view text, size_t* i,
               std::initializer_list<const char*> expect) {
  for (const char* word : expect) {
    while (*i < text.size() && IsSpace(text[*i])) ++*i;
    const auto got = LeadingWords(text.substr(*i), 1);
    if (got.empty() || got[0] != word) return false;
    *i += std::string_view(word).size();
  }
  return true;
}

// The position of a trailing `WITH ( … )` at the top level of `text` (not
// in a string, comment or parentheses), or npos.
size_t TrailingWith(std::string_view text) {
  int depth = 0;
  size_t candidate = std::string_view::npos;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\'' || c == '"') {
      for (++i; i < text.size() && text[i] != c; ++i) {
      }
      continue;
    }
    if (c == '-' && i + 1 < text.size() && text[i + 1] == '-') {
      while (i < text.size() && text[i] != '\n') ++i;
      continue;
    }
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (depth == 0 && (i == 0 || !IsWordChar(text[i - 1])) &&
        LeadingWords(text.substr(i), 1) == std::vector<std::string>{"WITH"} &&
        i + 4 <= text.size()) {
      size_t j = i + 4;
      while (j < text.size() && IsSpace(text[j])) ++j;
      if (j < text.size() && text[j] == '(') candidate = i;
    }
  }
  if (candidate == std::string_view::npos) return candidate;
  // It must end the statement: its parentheses close at the end.
  size_t j = candidate + 4;
  while (j < text.size() && IsSpace(text[j])) ++j;
  int d = 0;
  for (; j < text.size(); ++j) {
    if (text[j] == '\'' || text[j] == '"') {
      const char q = text[j];
      for (++j; j < text.size() && text[j] != q; ++j) {
      }
      continue;
    }
    if (text[j] == '(') ++d;
    if (text[j] == ')' && --d == 0) break;
  }
  if (j >= text.size() || Trim(text.substr(j + 1)) != "") return std::string_view::npos;
  return candidate;
}

// WITH (key = value, …): the options, or an error naming the bad one.
arrow::Status ParseOptions(std::string_view body, const std::string& where,
                           std::map<std::string, std::string>* out) {
  // body is the text between the parentheses.
  size_t i = 0;
  while (true) {
    while (i < body.size() && IsSpace(body[i])) ++i;
    if (i == body.size()) break;
    size_t start = i;
    while (i < body.size() && (IsWordChar(body[i]) || body[i] == '.' || body[i] == '-'))
      ++i;
    std::string key(body.substr(start, i - start));
    for (auto& c : key)
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    while (i < body.size() && IsSpace(body[i])) ++i;
    if (key.empty() || i == body.size() || body[i] != '=') {
      return Invalid(where + ": expected WITH (name = 'value', …), got '" +
                     std::string(body) + "'");
    }
    ++i;
    while (i < body.size() && IsSpace(body[i])) ++i;
    std::string value;
    if (i < body.size() && body[i] == '\'') {
      for (++i; i < body.size(); ++i) {
        if (body[i] == '\'') {
          if (i + 1 < body.size() && body[i + 1] == '\'') {
            value += '\'';
            ++i;
            continue;
          }
          break;
        }
        value += body[i];
      }
      if (i == body.size())
        return Invalid(where + ": an unterminated string in WITH (…)");
      ++i;
    } else {
      start = i;
      while (i < body.size() && body[i] != ',' && !IsSpace(body[i])) ++i;
      value = std::string(body.substr(start, i - start));
    }
    (*out)[key] = value;
    while (i < body.size() && IsSpace(body[i])) ++i;
    if (i < body.size() && body[i] == ',') ++i;
  }
  return arrow::Status::OK();
}

// CREATE MATERIALIZED ROLLUP [IF NOT EXISTS] name AS select [WITH (…)],
// REFRESH MATERIALIZED ROLLUP name, DROP MATERIALIZED ROLLUP [IF EXISTS] name.
arrow::Status ParseRollup(Statement* s) {
  const std::string_view text = s->text;
  const std::string where = "line " + std::to_string(s->line);
  auto fail = [&](const std::string& what) {
    return Invalid(where + ": " + what + " in '" + s->text +
                   "' (expected CREATE MATERIALIZED ROLLUP [IF NOT EXISTS] name AS "
                   "SELECT … [WITH (…)], REFRESH MATERIALIZED ROLLUP name or DROP "
                   "MATERIALIZED ROLLUP [IF EXISTS] name)");
  };
  RollupStatement r;
  size_t i = 0;
  const auto first = LeadingWords(text, 1)[0];
  i = first.size();
  r.kind = first == "CREATE"    ? RollupStatement::Kind::kCreate
           : first == "REFRESH" ? RollupStatement::Kind::kRefresh
                                : RollupStatement::Kind::kDrop;
  SkipWords(text, &i, {"MATERIALIZED", "ROLLUP"});
  size_t at = i;
  if (r.kind == RollupStatement::Kind::kCreate &&
      SkipWords(text, &at, {"IF", "NOT", "EXISTS"})) {
    r.if_not_exists = true;
    i = at;
  }
  at = i;
  if (r.kind == RollupStatement::Kind::kDrop && SkipWords(text, &at, {"IF", "EXISTS"})) {
    r.if_exists = true;
    i = at;
  }
  std::string why;
  auto name = ParseTableName(text, &i, &why);
  if (!name) return fail(why);
  r.name = *name;
  if (r.kind != RollupStatement::Kind::kCreate) {
    if (Trim(text.substr(i)) != "") {
      return fail("'" + Trim(text.substr(i)) + "' after the name");
    }
  } else {
    if (!SkipWords(text, &i, {"AS"})) return fail("no AS after the name");
    std::string_view rest = text.substr(i);
    const size_t with = TrailingWith(rest);
    if (with != std::string_view::npos) {
      std::string_view clause = rest.substr(with + 4);
      const size_t open = clause.find('(');
      const size_t close = clause.rfind(')');
      TIMELAKE_RETURN_NOT_OK(
          ParseOptions(clause.substr(open + 1, close - open - 1), where, &r.options));
      rest = rest.substr(0, with);
    }
    r.select = Trim(rest);
    if (r.select.empty()) return fail("no SELECT after AS");
  }
  s->name = r.name;
  s->rollup = std::move(r);
  return arrow::Status::OK();
}

// Fills kind, name and value from the text.
arrow::Status Classify(Statement* s) {
  const auto words = LeadingWords(s->text, 3);
  if (words.empty()) return arrow::Status::OK();
  if (words[0] == "DELETE") {
    s->kind = Statement::Kind::kDelete;
    return ParseDelete(s);
  }
  if ((words[0] == "CREATE" || words[0] == "REFRESH" || words[0] == "DROP") &&
      words.size() >= 3 && words[1] == "MATERIALIZED" && words[2] == "ROLLUP") {
    s->kind = Statement::Kind::kRollup;
    // A statement still being typed (no ';' yet) is not an error.
    auto parsed = ParseRollup(s);
    return parsed.ok() || !s->terminated ? arrow::Status::OK() : parsed;
  }
  if (words[0] != "SET") return arrow::Status::OK();
  s->kind = Statement::Kind::kSet;
  // SET name = value | SET name TO value; the value may be quoted.
  std::string_view rest = std::string_view(s->text).substr(3);
  const size_t eq = rest.find('=');
  const std::string upper = Upper(rest);
  const size_t to = upper.find(" TO ");
  size_t split = eq;
  size_t skip = 1;
  if (eq == std::string_view::npos || (to != std::string::npos && to < eq)) {
    split = to;
    skip = 4;
  }
  if (split == std::string_view::npos) {
    return Invalid("line " + std::to_string(s->line) +
                   ": expected SET name = value, got '" + s->text + "'");
  }
  s->name = Trim(rest.substr(0, split));
  std::string value = Trim(rest.substr(split + skip));
  if (value.size() >= 2 && (value.front() == '\'' || value.front() == '"') &&
      value.back() == value.front()) {
    const char quote = value.front();
    std::string unquoted;
    for (size_t i = 1; i + 1 < value.size(); ++i) {
      unquoted += value[i];
      if (value[i] == quote && value[i + 1] == quote) ++i;  // '' is one quote
    }
    value = unquoted;
  }
  s->value = value;
  if (s->name.empty() || s->value.empty()) {
    return Invalid("line " + std::to_string(s->line) +
                   ": expected SET name = value, got '" + s->text + "'");
  }
  return arrow::Status::OK();
}

}  // namespace

arrow::Result<std::vector<Statement>> Session::Parse(std::string_view script) {
  enum class State { kCode, kSingle, kDouble, kLineComment, kBlockComment };
  std::vector<Statement> out;
  State state = State::kCode;
  size_t begin = 0;
  int line = 1;
  int begin_line = 1;
  int open_line = 1;  // where the current string or block comment started
  size_t open_at = 0;
  bool has_sql = false;
  auto add = [&](std::string_view text, bool terminated) -> arrow::Status {
    Statement s;
    s.text = Trim(text);
    s.line = begin_line;
    s.terminated = terminated;
    TIMELAKE_RETURN_NOT_OK(Classify(&s));
    out.push_back(std::move(s));
    return arrow::Status::OK();
  };
  for (size_t i = 0; i < script.size(); ++i) {
    const char c = script[i];
    const char next = i + 1 < script.size() ? script[i + 1] : '\0';
    switch (state) {
      case State::kCode:
        if (c == '\'' || c == '"') {
          state = c == '\'' ? State::kSingle : State::kDouble;
          open_line = line;
          open_at = i;
        } else if (c == '-' && next == '-') {
          state = State::kLineComment;
          ++i;
          break;
        } else if (c == '/' && next == '*') {
          state = State::kBlockComment;
          open_line = line;
          open_at = i;
          ++i;
          break;
        } else if (c == ';') {
          if (has_sql) TIMELAKE_RETURN_NOT_OK(add(script.substr(begin, i - begin), true));
          begin = i + 1;
          has_sql = false;
          break;
        }
        if (!std::isspace(static_cast<unsigned char>(c))) {
          if (!has_sql) {
            begin_line = line;
            begin = i;  // leading comments are not part of the statement
          }
          has_sql = true;
        }
        break;
      case State::kSingle:
        if (c == '\'') state = State::kCode;  // '' re-enters at once: an escape
        break;
      case State::kDouble:
        if (c == '"') state = State::kCode;
        break;
      case State::kLineComment:
        if (c == '\n') state = State::kCode;
        break;
      case State::kBlockComment:
        if (c == '*' && next == '/') {
          state = State::kCode;
          ++i;
        }
        break;
    }
    if (c == '\n') ++line;
  }
  // An open string or block comment keeps the rest as an unterminated
  // statement even without SQL, so a shell can wait for the lines that end
  // it.
  if (state == State::kSingle || state == State::kDouble ||
      state == State::kBlockComment) {
    if (!has_sql) {
      begin_line = open_line;
      begin = open_at;
    }
    has_sql = true;
  }
  if (has_sql) TIMELAKE_RETURN_NOT_OK(add(script.substr(begin), false));
  return out;
}

}  // namespace timelake
