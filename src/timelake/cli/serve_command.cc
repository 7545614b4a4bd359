// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// `timelake serve`: the warehouse as an Iceberg REST catalog
// (timelake/catalog_server.h) until SIGINT or SIGTERM. The first line on
// stdout names the URL, so a script (or a test) that started it with port
// 0 learns the port; one line per request goes to stderr, without headers,
// query strings or bodies.

#include <csignal>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <string>

#include <pthread.h>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "timelake/catalog_server.h"
#include "timelake/cli/commands.h"
#include "timelake/cli/util.h"

namespace timelake::cli {
namespace {

class ServeCommand : public Command {
 public:
  void AddOptions(CLI::App* app) override {
    app->add_option("--host", options_.host,
                    "Address to listen on (anything but loopback serves the network: "
                    "give --token then)")
        ->capture_default_str();
    app->add_option("--port", options_.port, "Port (0: any free one, printed at start)")
        ->capture_default_str()
        ->check(CLI::Range(0, 65535));
    app->add_option("--token", options_.token,
                    "Bearer token every request must carry (default: none; also "
                    "$TIMELAKE_SERVE_TOKEN)");
    app->add_option("--max-body-bytes", options_.max_body_bytes,
                    "Refuse request bodies larger than this (413)")
        ->capture_default_str()
        ->check(CLI::PositiveNumber);
    app->add_flag("--quiet", quiet_, "No line per request on stderr");
  }

  arrow::Status Run(const GlobalArgs& global) override {
    TIMELAKE_ASSIGN_OR_RAISE(Lake lake, OpenLake(global, WarehouseUse::kExisting));
    if (options_.token.empty()) {
      if (const char* env = std::getenv("TIMELAKE_SERVE_TOKEN")) options_.token = env;
    }
    if (!quiet_) {
      options_.log = [](const std::string& line) {
        std::cerr << "timelake serve: " << line << std::endl;
      };
    }
    // SIGINT and SIGTERM are taken by sigwait below, in this thread: the
    // server's threads, started after, inherit the blocked mask.
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
    const std::string warehouse = lake.url();
    auto server = CatalogServer::Start(std::move(lake), options_);
    if (!server.ok()) return server.status();
    std::cout << "timelake serve: the Iceberg REST catalog of " << warehouse << " at "
              << (*server)->url() << std::endl;
    int signal = 0;
    sigwait(&stop_signals, &signal);
    (*server)->Stop();
    std::cerr << "timelake serve: stopped" << std::endl;
    return arrow::Status::OK();
  }

 private:
  CatalogServerOptions options_;
  bool quiet_ = false;
};

}  // namespace

std::unique_ptr<Command> MakeServeCommand() { return std::make_unique<ServeCommand>(); }

}  // namespace timelake::cli
