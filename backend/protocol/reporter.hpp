// The rank side of metric streaming: a training rank sends each record (one JSON object, the same text
// as its metrics.jsonl line) to its agent over the ZeroMQ endpoint the agent put in
// TESSERA_REPORT_ENDPOINT. Qt-free and small, so the runtime can call it directly.
#pragma once

#include <memory>
#include <string>
#include <string_view>

namespace tessera::protocol {

class Reporter {
 public:
  /// Connects a PUSH socket to `endpoint` (ipc:// or tcp://). While the agent does not take records,
  /// up to `queue_records` wait, then send() blocks (back-pressure): a rank never runs far ahead of
  /// its agent, so little is queued when it exits.
  explicit Reporter(const std::string& endpoint, int queue_records = 10000);
  /// Delivers what is queued, waiting at most kDeliverAtExit_ms for the agent, then closes.
  ~Reporter();
  static constexpr int kDeliverAtExit_ms = 60000;
  Reporter(const Reporter&) = delete;
  Reporter& operator=(const Reporter&) = delete;

  /// A reporter for the endpoint in TESSERA_REPORT_ENDPOINT, or null when it is not set.
  static std::unique_ptr<Reporter> from_environment();

  /// Sends one record: a JSON object as text, at most kMaxRecordBytes (larger ones throw).
  void send(std::string_view json_object);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera::protocol
