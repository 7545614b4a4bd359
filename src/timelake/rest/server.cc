// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// `timelake serve`: the Iceberg REST catalog (include/timelake/catalog_server.h)
// on cpp-httplib. Each handler decodes its request (requests.h), acts
// through the engine's own stages (state/ to load, commit/ to commit, the
// public Lake to create and drop) and answers JSON; every error is the
// spec's ErrorModel, {"error": {"message", "type", "code"}}, and leaves
// storage as it was.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "timelake/catalog_server.h"
#include "timelake/commit/commit.h"
#include "timelake/format/schema.h"
#include "timelake/rest/requests.h"
#include "timelake/rest/table_commit.h"
#include "timelake/settings.h"
#include "timelake/state/state.h"
#include "timelake/versions/versions.h"

namespace timelake {

namespace {

using nlohmann::json;

// The object that makes an empty namespace exist (createNamespace); a
// namespace with tables exists without it.
constexpr char kNamespaceMarker[] = ".timelake-namespace";

// The endpoints served, as the config response announces them (Iceberg
// clients since 1.7 call no other).
const char* const kEndpoints[] = {
    "GET /v1/{prefix}/namespaces",
    "POST /v1/{prefix}/namespaces",
    "GET /v1/{prefix}/namespaces/{namespace}",
    "HEAD /v1/{prefix}/namespaces/{namespace}",
    "DELETE /v1/{prefix}/namespaces/{namespace}",
    "GET /v1/{prefix}/namespaces/{namespace}/tables",
    "POST /v1/{prefix}/namespaces/{namespace}/tables",
    "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/metrics",
};

// An answer: a status and a JSON body (none for 204).
struct Reply {
  int status = 200;
  json body;
};

Reply Error(int code, std::string_view type, std::string_view message) {
  return {code, {{"error", {{"message", message}, {"type", type}, {"code", code}}}}};
}

// The spec's error for a status of ours. `missing` is the exception type of
// kNotFound here (NoSuchNamespaceException, NoSuchTableException).
Reply ErrorOf(const arrow::Status& st, std::string_view missing = "NotFoundException") {
  switch (KindOf(st)) {
    case ErrorKind::kNotFound:
      return Error(404, missing, st.message());
    case ErrorKind::kAlreadyExists:
      return Error(409, "AlreadyExistsException", st.message());
    case ErrorKind::kInvalid:
      return Error(400, "BadRequestException", st.message());
    case ErrorKind::kUnsupported:
      return Error(406, "UnsupportedOperationException", st.message());
    case ErrorKind::kConflict:
      return Error(409, "CommitFailedException", st.message());
    case ErrorKind::kStorage:
      if (IsRetryable(st)) return Error(503, "ServiceUnavailableException", st.message());
      return Error(500, "ServerErrorException", st.message());
    default:
      return Error(500, "ServerErrorException", st.message());
  }
}

class Catalog {
 public:
  Catalog(Lake lake, std::shared_ptr<internal::LakeState> state)
      : lake_(std::move(lake)), state_(std::move(state)) {}

  Reply Config() const {
    json endpoints = json::array();
    for (const char* e : kEndpoints) endpoints.push_back(e);
    return {200,
            {{"defaults", json::object()},
             {"overrides", json::object()},
             {"endpoints", endpoints}}};
  }

  Reply ListNamespaces(const std::string& parent) const {
    if (!parent.empty()) {
      auto ns = rest::DecodeNamespace(parent);
      if (!ns.ok()) return ErrorOf(ns.status(), "NoSuchNamespaceException");
      auto exists = NamespaceExists(*ns);
      if (!exists.ok()) return ErrorOf(exists.status());
      if (!*exists) return NoSuchNamespace(*ns);
      // One level: nothing below a namespace.
      return {200, {{"namespaces", json::array()}}};
    }
    auto names = Namespaces();
    if (!names.ok()) return ErrorOf(names.status());
    json out = json::array();
    for (const auto& n : *names) out.push_back(json::array({n}));
    return {200, {{"namespaces", out}}};
  }

  Reply CreateNamespace(const std::string& body) const {
    auto request = rest::ParseCreateNamespaceRequest(body);
    if (!request.ok()) return ErrorOf(request.status());
    if (!request->properties.empty()) {
      return Error(
          406, "UnsupportedOperationException",
          "createNamespace " + request->ns + ": Timelake namespaces have no properties");
    }
    auto exists = NamespaceExists(request->ns);
    if (!exists.ok()) return ErrorOf(exists.status());
    if (*exists) {
      return Error(409, "AlreadyExistsException",
                   "createNamespace: namespace " + request->ns + " already exists");
    }
    auto st = state_->store->Put(request->ns + "/" + kNamespaceMarker, "");
    if (!st.ok()) return ErrorOf(st);
    return {200,
            {{"namespace", json::array({request->ns})}, {"properties", json::object()}}};
  }

  Reply LoadNamespace(const std::string& segment, bool head) const {
    auto ns = rest::DecodeNamespace(segment);
    if (!ns.ok()) return ErrorOf(ns.status(), "NoSuchNamespaceException");
    auto exists = NamespaceExists(*ns);
    if (!exists.ok()) return ErrorOf(exists.status());
    if (!*exists) return NoSuchNamespace(*ns);
    if (head) return {204, nullptr};
    return {200, {{"namespace", json::array({*ns})}, {"properties", json::object()}}};
  }

  Reply DropNamespace(const std::string& segment) const {
    auto ns = rest::DecodeNamespace(segment);
    if (!ns.ok()) return ErrorOf(ns.status(), "NoSuchNamespaceException");
    auto tables = internal::ListTablesOf(*state_, *ns);
    if (!tables.ok()) return ErrorOf(tables.status());
    if (!tables->empty()) {
      return Error(409, "NamespaceNotEmptyException",
                   "dropping namespace " + *ns + ": it holds " +
                       std::to_string(tables->size()) + " tables");
    }
    auto exists = NamespaceExists(*ns);
    if (!exists.ok()) return ErrorOf(exists.status());
    if (!*exists) return NoSuchNamespace(*ns);
    auto st = state_->store->Delete(*ns + "/" + kNamespaceMarker);
    if (!st.ok()) return ErrorOf(st);
    return {204, nullptr};
  }

  Reply ListTables(const std::string& segment) const {
    auto ns = rest::DecodeNamespace(segment);
    if (!ns.ok()) return ErrorOf(ns.status(), "NoSuchNamespaceException");
    auto tables = internal::ListTablesOf(*state_, *ns);
    if (!tables.ok()) return ErrorOf(tables.status());
    if (tables->empty()) {
      auto exists = NamespaceExists(*ns);
      if (!exists.ok()) return ErrorOf(exists.status());
      if (!*exists) return NoSuchNamespace(*ns);
    }
    json ids = json::array();
    for (const auto& t : *tables) {
      ids.push_back({{"namespace", json::array({t.ns()})}, {"name", t.name()}});
    }
    return {200, {{"identifiers", ids}}};
  }

  Reply CreateTable(const std::string& segment, const std::string& body) const {
    auto ns = rest::DecodeNamespace(segment);
    if (!ns.ok()) return ErrorOf(ns.status(), "NoSuchNamespaceException");
    auto request = rest::ParseCreateTableRequest(body);
    if (!request.ok()) return ErrorOf(request.status());
    const std::string name = *ns + "." + request->name;
    const std::string context = "createTable " + name;
    if (request->stage_create) {
      return Error(406, "UnsupportedOperationException",
                   context + ": staged creates are not supported (create, then append)");
    }
    const std::string location = state_->store->Uri(*ns + "/" + request->name);
    if (request->location) {
      std::string given = *request->location;
      while (!given.empty() && given.back() == '/') given.pop_back();
      if (given != location) {
        return Error(400, "BadRequestException",
                     context + ": a table lives at " + location + ", not " + given);
      }
    }
    auto schema = format::IcebergToArrow(request->schema);
    if (!schema.ok())
      return Error(400, "BadRequestException",
                   context + ": " + schema.status().message());
    TableOptions options;
    for (const auto& [key, value] : request->properties) {
      const auto* setting = settings::Find(key);
      const std::string canonical = setting ? setting->PropertyKey() : key;
      if (canonical == "timelake.time-column") {
        options.time_column = value;
      } else if (canonical == "timelake.series-key") {
        for (size_t start = 0; start <= value.size();) {
          size_t comma = value.find(',', start);
          if (comma == std::string::npos) comma = value.size();
          if (comma > start)
            options.series_key.push_back(value.substr(start, comma - start));
          start = comma + 1;
        }
      } else if (canonical == "timelake.chunk-interval") {
        auto chunk = ParseChunk(value);
        if (!chunk.ok()) return ErrorOf(WithContext(chunk.status(), context));
        options.chunk = *chunk;
      } else {
        options.properties[key] = value;
      }
    }
    // A partition spec must be the one Timelake makes: none, or the hour,
    // day or month of the time column.
    if (request->partition_spec.is_object()) {
      const auto& fields = request->partition_spec.value("fields", json::array());
      if (!fields.is_array() || fields.size() > 1 ||
          (fields.size() == 1 && !options.time_column)) {
        return Error(400, "BadRequestException",
                     context +
                         ": Timelake partitions by the hour, day or month of the "
                         "time column (property timelake.time-column) only");
      }
      if (fields.size() == 1) {
        const auto& f = fields[0];
        const std::string transform =
            f.is_object() && f.value("transform", json()).is_string()
                ? f["transform"].get<std::string>()
                : "";
        auto chunk = ParseChunk(transform);
        int source = -1;
        if (f.is_object() && f.value("source-id", json()).is_number_integer()) {
          source = f["source-id"].get<int>();
        }
        std::optional<int> time_id;
        for (const auto& field : request->schema["fields"]) {
          if (field.is_object() && field.value("name", json()) == *options.time_column &&
              field.value("id", json()).is_number_integer()) {
            time_id = field["id"].get<int>();
          }
        }
        if (!chunk.ok() || time_id != source) {
          return Error(400, "BadRequestException",
                       context +
                           ": Timelake partitions by the hour, day or month of the "
                           "time column " +
                           *options.time_column + " only");
        }
        options.chunk = *chunk;
      }
    }
    auto table = lake_.CreateTable(name, **schema, options);
    if (!table.ok()) return ErrorOf(table.status(), "NoSuchNamespaceException");
    return LoadTable(*ns, request->name, false);
  }

  Reply LoadTable(const std::string& ns_segment, const std::string& table_segment,
                  bool head) const {
    auto name = NameOf(ns_segment, table_segment);
    if (!name.ok()) return ErrorOf(name.status(), "NoSuchTableException");
    if (head) {
      auto latest =
          versions::FindLatestVersion(*state_->store, internal::TableKey(*name));
      if (!latest.ok()) return ErrorOf(latest.status());
      if (!*latest) return NoSuchTable(*name);
      return {204, nullptr};
    }
    auto table = internal::LoadTableState(state_, *name);
    if (!table.ok()) return ErrorOf(table.status(), "NoSuchTableException");
    return {200, TableResult(**table, true)};
  }

  Reply DropTable(const std::string& ns_segment, const std::string& table_segment) const {
    auto name = NameOf(ns_segment, table_segment);
    if (!name.ok()) return ErrorOf(name.status(), "NoSuchTableException");
    auto st = lake_.DropTable(name->ToString());
    if (!st.ok()) return ErrorOf(st, "NoSuchTableException");
    return {204, nullptr};
  }

  Reply UpdateTable(const std::string& ns_segment, const std::string& table_segment,
                    const std::string& body) const {
    auto name = NameOf(ns_segment, table_segment);
    if (!name.ok()) return ErrorOf(name.status(), "NoSuchTableException");
    auto request = rest::ParseCommitTableRequest(body);
    if (!request.ok()) {
      // An update of a kind not carried out is the client's request we
      // cannot honour: 400, as the spec lists for updateTable.
      return Error(400, "BadRequestException", request.status().message());
    }
    const std::string context = "committing to " + name->ToString() + " (REST catalog)";
    auto base = internal::LoadTableState(state_, *name);
    if (!base.ok()) {
      if (KindOf(base.status()) == ErrorKind::kNotFound) {
        for (const auto& r : request->requirements) {
          if (r.kind == rest::Requirement::Kind::kAssertCreate) {
            return Error(406, "UnsupportedOperationException",
                         context + ": staged creates are not supported");
          }
        }
      }
      return ErrorOf(base.status(), "NoSuchTableException");
    }
    rest::TableCommitChange change(*request, context);
    commit::CommitOptions options;
    options.context = context;
    auto outcome = commit::Commit(*base, &change, options);
    if (!outcome.ok()) {
      const auto& st = outcome.status();
      if (KindOf(st) == ErrorKind::kStorage) {
        // The put may or may not have landed (commit.h).
        return Error(500, "CommitStateUnknownException", st.message());
      }
      if (KindOf(st) == ErrorKind::kUnsupported) {
        return Error(400, "BadRequestException", st.message());
      }
      return ErrorOf(st, "NoSuchTableException");
    }
    // The head object and version hint are written before the answer, so a
    // reader that goes by them (ours, a hadoop catalog) sees this commit at
    // once. (Flush waits for this process's other background writes too.)
    Flush();
    return {200, TableResult(*outcome->state, false)};
  }

 private:
  arrow::Result<TableName> NameOf(const std::string& ns_segment,
                                  const std::string& table_segment) const {
    TIMELAKE_ASSIGN_OR_RAISE(auto ns, rest::DecodeNamespace(ns_segment));
    TIMELAKE_ASSIGN_OR_RAISE(auto table, rest::DecodeTableName(table_segment));
    return TableName::Parse(ns + "." + table);
  }

  json TableResult(const internal::TableState& table, bool with_config) const {
    json out = {{"metadata-location", state_->store->Uri(table.metadata_key)},
                {"metadata", json::parse(table.metadata.Serialize())}};
    if (with_config) out["config"] = json::object();
    return out;
  }

  static Reply NoSuchNamespace(const std::string& ns) {
    return Error(404, "NoSuchNamespaceException", "namespace does not exist: " + ns);
  }
  static Reply NoSuchTable(const TableName& name) {
    return Error(404, "NoSuchTableException", "table does not exist: " + name.ToString());
  }

  arrow::Result<bool> NamespaceExists(const std::string& ns) const {
    TIMELAKE_ASSIGN_OR_RAISE(auto tables, internal::ListTablesOf(*state_, ns));
    if (!tables.empty()) return true;
    auto marker = state_->store->Head(ns + "/" + kNamespaceMarker);
    if (marker.ok()) return true;
    if (KindOf(marker.status()) == ErrorKind::kNotFound) return false;
    return marker.status();
  }

  // Namespaces with tables or a marker, sorted.
  arrow::Result<std::vector<std::string>> Namespaces() const {
    TIMELAKE_ASSIGN_OR_RAISE(auto with_tables, internal::ListNamespacesOf(*state_));
    TIMELAKE_ASSIGN_OR_RAISE(auto root, state_->store->List("", true));
    std::vector<std::string> out = with_tables;
    for (const auto& p : root.prefixes) {
      if (!ValidateNamePart(p, "namespace").ok()) continue;
      if (std::binary_search(with_tables.begin(), with_tables.end(), p)) continue;
      if (state_->store->Head(p + "/" + kNamespaceMarker).ok()) out.push_back(p);
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  Lake lake_;
  std::shared_ptr<internal::LakeState> state_;
};

// Compares without an early exit, so response times say nothing of where
// a wrong token differs.
bool SameToken(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) {
    diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
  }
  return diff == 0;
}

}  // namespace

struct CatalogServer::Impl {
  CatalogServerOptions options;
  std::unique_ptr<Catalog> catalog;
  httplib::Server http;
  std::thread thread;
  int port = 0;
  std::mutex log_mu;
  std::once_flag stopped;
  std::atomic<bool> listen_done{false};

  void Send(httplib::Response& res, const Reply& reply) {
    res.status = reply.status;
    if (reply.status != 204 && !reply.body.is_null()) {
      // Messages may quote what a client sent: bytes that are not UTF-8
      // are replaced rather than thrown on.
      res.set_content(reply.body.dump(-1, ' ', false, json::error_handler_t::replace),
                      "application/json");
    }
  }

  void Route() {
    using httplib::Request;
    using httplib::Response;
    auto& c = *catalog;
    http.Get("/v1/config", [&](const Request&, Response& res) { Send(res, c.Config()); });
    http.Get("/v1/namespaces", [&](const Request& req, Response& res) {
      Send(res, c.ListNamespaces(req.get_param_value("parent")));
    });
    http.Post("/v1/namespaces", [&](const Request& req, Response& res) {
      Send(res, c.CreateNamespace(req.body));
    });
    http.Get("/v1/namespaces/([^/]+)", [&](const Request& req, Response& res) {
      Send(res, c.LoadNamespace(req.matches[1], req.method == "HEAD"));
    });
    http.Delete("/v1/namespaces/([^/]+)", [&](const Request& req, Response& res) {
      Send(res, c.DropNamespace(req.matches[1]));
    });
    http.Post("/v1/namespaces/([^/]+)/properties", [&](const Request&, Response& res) {
      Send(res,
           Error(406, "UnsupportedOperationException",
                 "updateNamespaceProperties: Timelake namespaces have no properties"));
    });
    http.Get("/v1/namespaces/([^/]+)/tables", [&](const Request& req, Response& res) {
      Send(res, c.ListTables(req.matches[1]));
    });
    http.Post("/v1/namespaces/([^/]+)/tables", [&](const Request& req, Response& res) {
      Send(res, c.CreateTable(req.matches[1], req.body));
    });
    http.Get(
        "/v1/namespaces/([^/]+)/tables/([^/]+)", [&](const Request& req, Response& res) {
          Send(res, c.LoadTable(req.matches[1], req.matches[2], req.method == "HEAD"));
        });
    http.Post("/v1/namespaces/([^/]+)/tables/([^/]+)",
              [&](const Request& req, Response& res) {
                Send(res, c.UpdateTable(req.matches[1], req.matches[2], req.body));
              });
    http.Delete("/v1/namespaces/([^/]+)/tables/([^/]+)",
                [&](const Request& req, Response& res) {
                  Send(res, c.DropTable(req.matches[1], req.matches[2]));
                });
    // Clients report scans and commits; nothing is kept.
    http.Post("/v1/namespaces/([^/]+)/tables/([^/]+)/metrics",
              [&](const Request&, Response& res) { res.status = 204; });
    for (const char* path : {"/v1/namespaces/([^/]+)/register", "/v1/tables/rename",
                             "/v1/transactions/commit"}) {
      http.Post(path, [&](const Request& req, Response& res) {
        Send(res, Error(406, "UnsupportedOperationException",
                        req.path + " is not served by timelake serve (docs/engines.md)"));
      });
    }
  }

  void Guard() {
    using httplib::Request;
    using httplib::Response;
    // Before routing, and before a body is read.
    http.set_pre_routing_handler([this](const Request& req, Response& res) {
      auto refuse = [&](const Reply& reply) {
        Send(res, reply);
        res.set_header("Connection", "close");
        return httplib::Server::HandlerResponse::Handled;
      };
      if (!options.token.empty()) {
        const auto auth = req.get_header_value("Authorization");
        if (!SameToken(auth, "Bearer " + options.token)) {
          return refuse(Error(401, "NotAuthorizedException",
                              "a bearer token is required (Authorization: Bearer ...)"));
        }
      }
      if (rest::PathStepsOut(req.target)) {
        return refuse(Error(400, "BadRequestException",
                            "the path holds an encoded slash or a '.' or '..' segment"));
      }
      if (req.has_header("Transfer-Encoding")) {
        return refuse(Error(411, "BadRequestException",
                            "request bodies need a Content-Length (no chunked bodies)"));
      }
      if (req.has_header("Content-Length")) {
        const auto length =
            rest::ParseContentLength(req.get_header_value("Content-Length"));
        if (!length)
          return refuse(Error(400, "BadRequestException", "malformed Content-Length"));
        if (*length > static_cast<uint64_t>(options.max_body_bytes)) {
          return refuse(Error(413, "BadRequestException",
                              "the request body of " + std::to_string(*length) +
                                  " bytes is over the limit of " +
                                  std::to_string(options.max_body_bytes)));
        }
      }
      return httplib::Server::HandlerResponse::Unhandled;
    });
    http.set_error_handler([this](const Request& req, Response& res) {
      if (!res.body.empty()) return;
      if (res.status == 404) {
        Send(res,
             Error(404, "NoSuchEndpointException",
                   req.method + " " + req.path + " is not an endpoint of this catalog"));
      } else if (res.status == 413) {
        Send(res, Error(413, "BadRequestException", "the request body is too large"));
      } else {
        Send(res, Error(res.status, "BadRequestException", "bad request"));
      }
    });
    http.set_exception_handler([this](const Request&, Response& res, std::exception_ptr) {
      Send(res, Error(500, "ServerErrorException", "internal error"));
    });
    if (options.log) {
      http.set_logger([this](const Request& req, const Response& res) {
        std::lock_guard<std::mutex> lock(log_mu);
        options.log(req.method + " " + req.path + " " + std::to_string(res.status));
      });
    }
  }
};

CatalogServer::CatalogServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

CatalogServer::~CatalogServer() { Stop(); }

arrow::Result<std::unique_ptr<CatalogServer>> CatalogServer::Start(
    Lake lake, const CatalogServerOptions& options) {
  if (options.threads < 1) return Invalid("timelake serve: threads must be at least 1");
  if (options.max_body_bytes < 1) {
    return Invalid("timelake serve: the body limit must be at least 1 byte");
  }
  if (options.port < 0 || options.port > 65535) {
    return Invalid("timelake serve: port " + std::to_string(options.port) +
                   " is outside 0..65535");
  }
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  auto state = internal::LakeAccess::State(lake);
  impl->catalog = std::make_unique<Catalog>(std::move(lake), std::move(state));
  const int threads = options.threads;
  impl->http.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  impl->http.set_payload_max_length(static_cast<size_t>(options.max_body_bytes));
  impl->Guard();
  impl->Route();
  if (options.port == 0) {
    impl->port = impl->http.bind_to_any_port(options.host);
  } else if (impl->http.bind_to_port(options.host, options.port)) {
    impl->port = options.port;
  } else {
    impl->port = -1;
  }
  if (impl->port <= 0) {
    return MakeError(ErrorKind::kConfig,
                     "timelake serve: cannot listen on " + options.host + ":" +
                         std::to_string(options.port) +
                         " (taken, or not an address of this machine)");
  }
  Impl* raw = impl.get();
  impl->thread = std::thread([raw] {
    raw->http.listen_after_bind();
    raw->listen_done = true;
  });
  // Answer once the accept loop runs, so a caller may connect at once.
  while (!raw->http.is_running() && !raw->listen_done) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return std::unique_ptr<CatalogServer>(new CatalogServer(std::move(impl)));
}

int CatalogServer::port() const { return impl_->port; }

std::string CatalogServer::url() const {
  return "http://" + impl_->options.host + ":" + std::to_string(impl_->port);
}

void CatalogServer::Stop() {
  std::call_once(impl_->stopped, [this] {
    impl_->http.stop();
    if (impl_->thread.joinable()) impl_->thread.join();
  });
}

void CatalogServer::Wait() {
  while (!impl_->listen_done) std::this_thread::sleep_for(std::chrono::milliseconds(50));
}

}  // namespace timelake
