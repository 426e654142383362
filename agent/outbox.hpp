// The per-run outbox of an agent: every data frame it has sent or will send, kept until the workbench
// acknowledges it. The newest frames stay in memory up to a byte bound; older ones are spilled to a file
// in the run directory and read back when a reconnecting workbench asks to resend them. The spill file
// is bounded too: once it cannot take the oldest in-memory frame (no room under its cap, or a write that
// failed), the outbox is full() and the agent
// stops taking records from the run's ranks (they block: back-pressure) until acknowledgements make
// room. Nothing unacknowledged is ever dropped.
#pragma once

#include <cstdint>
#include <cstdio>
#include <deque>
#include <map>
#include <string>

namespace tessera::agent {

class Outbox {
 public:
  /// Spills to `spill_path` (created on first spill) once more than `memory_bytes` wait in memory; the
  /// file never grows past `disk_bytes`.
  Outbox(std::string spill_path, int64_t memory_bytes, int64_t disk_bytes);
  ~Outbox();
  Outbox(const Outbox&) = delete;
  Outbox& operator=(const Outbox&) = delete;

  /// Adds the frame of sequence number last_seq() + 1.
  void push(std::string frame);
  /// Drops every frame up to `seq` (the workbench committed them). Older acks are ignored.
  void acknowledge(int64_t seq);
  /// The frame of `seq` (acked() < seq <= last_seq()), from memory or from the spill file.
  std::string frame(int64_t seq) const;

  int64_t last_seq() const { return last_seq_; }
  int64_t acked() const { return acked_; }
  int64_t pending() const { return last_seq_ - acked_; }
  int64_t memory_bytes() const { return memory_used_; }
  int64_t spilled_frames() const { return static_cast<int64_t>(spilled_.size()); }
  int64_t spill_file_bytes() const { return spill_end_; }
  /// Memory is over its bound and the spill file has no room for the oldest frame in memory: the
  /// producer must stop adding frames until acknowledge() makes room.
  bool full() const { return memory_used_ > memory_limit_ && memory_.size() > 1; }
  /// Why the last spill failed (the file could not be created or written: a full disk), "" when the
  /// last attempt succeeded. Such an outbox keeps the frame in memory and is full() until room is made.
  const std::string& spill_error() const { return spill_error_; }

 private:
  struct Spilled {
    int64_t offset = 0, size = 0;
  };
  void spill_oldest();
  void spill_what_fits();

  std::string spill_path_;
  int64_t memory_limit_, disk_limit_;
  int64_t memory_used_ = 0;
  int64_t last_seq_ = 0, acked_ = 0;
  std::map<int64_t, Spilled> spilled_;                  ///< the oldest unacked frames, on disk
  std::deque<std::pair<int64_t, std::string>> memory_;  ///< the newest, in sequence order
  std::FILE* spill_ = nullptr;
  int64_t spill_end_ = 0;
  std::string spill_error_;
};

}  // namespace tessera::agent
