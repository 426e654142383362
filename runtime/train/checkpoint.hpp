// Checkpoints: one file per rank (its flat parameters and optimizer shard) in
// DIR/checkpoints/step_NNNNNNNN/, each written to a temporary name and renamed, and a manifest that
// rank 0 writes last, after every rank has renamed its file — a directory without a manifest is
// incomplete and never resumed from. Resuming needs the same layout (resharding is not supported).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "protocol/records.hpp"
#include "spec/run_spec.hpp"

namespace tessera::runtime {

class CheckpointError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Writes `path` through a temporary beside it, synced and then renamed. `fill` writes the contents
/// through the function it is given, which takes every byte and says each was written: a failed write
/// (a full disk) is reported once the contents are whole, since LibTorch's archive writer throwing
/// ends the process from its destructor (std::terminate) before any handler runs. A failure throws
/// std::runtime_error "cannot write NAMED: reason (INCOMPLETE)" and leaves no temporary.
using ByteSink = std::function<size_t(const void*, size_t)>;
void write_synced(const std::string& path, const std::string& named, const std::function<void(const ByteSink&)>& fill,
                  const std::string& incomplete);

/// What a rank's file holds, in order.
struct RankState {
  at::Tensor values, exp_avg, exp_avg_sq;
  int64_t optimizer_steps = 0;
};

std::string checkpoint_dir(const std::string& out_dir, int64_t step);

/// A 64-bit checksum of a rank file's bytes, fed in pieces of any size: FNV-1a's multiply-xor over
/// 8-byte little-endian words (a word at a time: hashing a byte at a time would slow the write of a
/// GPU checkpoint of tens of GB), then the trailing bytes and the length.
class FileChecksum {
 public:
  void add(const void* data, size_t bytes);
  uint64_t value() const;

 private:
  static constexpr uint64_t kPrime = 0x100000001b3ULL;
  void mix(uint64_t word) { hash_ = (hash_ ^ word) * kPrime; }
  uint64_t hash_ = 0xcbf29ce484222325ULL, length_ = 0;
  unsigned char tail_[8] = {};
  size_t pending_ = 0;
};

/// What a rank wrote of a checkpoint: its file's size and checksum.
struct SavedFile {
  int64_t bytes = 0;
  uint64_t checksum = 0;
};

/// Writes this rank's file of checkpoint `step` (temporary name, synced, then renamed); returns its
/// size. A failed write (a full disk) throws std::runtime_error naming the file and the reason, and
/// leaves no temporary behind.
SavedFile save_rank_state(const std::string& out_dir, int64_t step, int rank, const RankState& state);
/// Rank 0, after all ranks saved: the manifest (layout, the training settings a resumed run keeps,
/// step, size of every rank's file, as each rank reported it: on several nodes without a shared
/// filesystem the files are in each node's directory), written last; a failed write throws
/// std::runtime_error and leaves no manifest. `uncut_warmup_steps`: TrainOptions'.
void write_manifest(const std::string& out_dir, int64_t step, const spec::RunSpec& spec, int64_t uncut_warmup_steps,
                    const std::vector<int64_t>& rank_file_bytes, const std::vector<uint64_t>& rank_file_checksums);

/// The step of the newest complete checkpoint under DIR/checkpoints, checked against `spec` (same
/// layout and training settings but the length, every rank file present with the size the manifest
/// records). Throws CheckpointError with the reason (none found, another layout or lr, a truncated
/// file). `uncut_warmup_steps`: TrainOptions'.
int64_t resumable_step(const std::string& out_dir, const spec::RunSpec& spec, int64_t uncut_warmup_steps = 0);

/// The directory name (step_NNNNNNNN) of the newest complete checkpoint under DIR/checkpoints, if any.
std::optional<std::string> newest_checkpoint(const std::string& out_dir);

/// Removes what a killed run left of `rank`'s checkpoint writes in `out_dir`: its rank files' temporaries
/// (as large as the rank files), and on rank 0 the manifests'. Returns how many were removed.
int remove_checkpoint_temporaries(const std::string& out_dir, int rank);

/// What rank 0 reports of complete checkpoint `step` (docs/runtime.md): kind "checkpoint", the
/// directory's absolute path, the bytes of every rank's file, `created_ms` (Unix ms) and
/// `wall_time_s` (the step records' clock).
protocol::ArtifactRecord checkpoint_record(const std::string& out_dir, int64_t step,
                                           const std::vector<int64_t>& rank_file_bytes, int64_t created_ms,
                                           double wall_time_s);
/// The record of checkpoint `step` from its manifest (written when the manifest was), for a resume
/// that finds no record of the checkpoint it continues from (the run died between the two).
protocol::ArtifactRecord checkpoint_record_from_manifest(const std::string& out_dir, int64_t step, double wall_time_s);

/// Reads this rank's file into `state` (tensors of the same sizes), checked against the checksum the
/// manifest records for it (when it records one). Throws CheckpointError.
void load_rank_state(const std::string& out_dir, int64_t step, int rank, RankState& state);

}  // namespace tessera::runtime
