// Checkpoint files and the manifest.
#include "runtime/train/checkpoint.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <set>
#include <sstream>

#include <torch/torch.h>

#include "spec/json_nesting.hpp"

namespace tessera::runtime {

namespace fs = std::filesystem;

namespace {

std::string rank_file(const std::string& dir, int rank) {
  char name[32];
  std::snprintf(name, sizeof(name), "rank_%05d.pt", rank);
  return dir + "/" + name;
}

// The fields that fix which shard of which tensor each rank holds. The model's preset is only the
// name its fields came from: a spec giving the same fields without it resumes the same model.
nlohmann::json layout_of(const spec::RunSpec& spec) {
  const auto& p = spec.parallel;
  auto model = spec::to_json(spec)["model"];
  model.erase("preset");
  nlohmann::json layout = {{"world_size", spec.world_size()}, {"tp", p.tp}, {"pp", p.pp}, {"dp", spec.data_parallel()}, {"vpp", p.vpp},
                           {"distributed_optimizer", spec.effective_zero_stage() >= 1}, {"model", std::move(model)}};
  // Which layers each stage's files hold: written for uneven stages only, so that the checkpoints of
  // an even split, before and since, however the spec spells it, compare equal.
  if (spec.uneven_stages()) {
    std::vector<int64_t> layers;
    for (int64_t stage = 0; stage < p.pp; ++stage) layers.push_back(spec.stage_layers(stage));
    layout["stage_layers"] = layers;
  }
  return layout;
}

// What a resumed run must train with as the checkpoint's run did: the learning-rate schedule (its
// length aside: --steps extends a run), the optimizer's settings, the seed (initialisation and data
// order) and the batch. Another lr on --resume trained on and replaced spec.json without a word.
// The warm-up as the spec wrote it: --steps N cuts a longer one to N, and a run extended with a
// larger --steps would otherwise read as another warm-up.
nlohmann::json training_of(const spec::RunSpec& spec, int64_t uncut_warmup_steps) {
  const auto& t = spec.training;
  return {{"lr", t.lr},
          {"min_lr", t.min_lr},
          {"warmup_steps", uncut_warmup_steps > 0 ? uncut_warmup_steps : t.warmup_steps},
          {"weight_decay", t.weight_decay},
          {"grad_clip", t.grad_clip},
          {"seed", t.seed},
          {"global_batch_size", t.global_batch_size}};
}

// A manifest's layout as layout_of writes it now (checkpoints written before kept the preset's name).
nlohmann::json comparable_layout(nlohmann::json saved) {
  if (saved.is_object() && saved.contains("model") && saved["model"].is_object()) saved["model"].erase("preset");
  return saved;
}

// The first field (dotted, e.g. model.hidden_size) whose value differs between the two layouts.
std::string describe_difference(const nlohmann::json& saved, const nlohmann::json& now, const std::string& prefix = "") {
  const auto show = [](const nlohmann::json* value) { return value ? value->dump() : std::string("absent"); };
  std::set<std::string> keys;
  for (const auto& [key, value] : now.items()) keys.insert(key);
  for (const auto& [key, value] : saved.items()) keys.insert(key);
  for (const auto& key : keys) {
    const nlohmann::json* was = saved.contains(key) ? &saved[key] : nullptr;
    const nlohmann::json* is = now.contains(key) ? &now[key] : nullptr;
    if (was && is && *was == *is) continue;
    if (was && is && was->is_object() && is->is_object()) return describe_difference(*was, *is, prefix + key + ".");
    return prefix + key + " = " + show(was) + " in the checkpoint, " + show(is) + " now";
  }
  return "layout differs";
}

}  // namespace

std::string checkpoint_dir(const std::string& out_dir, int64_t step) {
  char name[32];
  std::snprintf(name, sizeof(name), "step_%08lld", static_cast<long long>(step));
  return out_dir + "/checkpoints/" + name;
}

namespace {

// The system's reason for errno `error`.
std::string reason(int error) { return std::strerror(error != 0 ? error : EIO); }

// The manifest's text of a checksum: 16 hexadecimal digits (JSON integers are signed).
std::string checksum_text(uint64_t value) {
  char text[17];
  std::snprintf(text, sizeof(text), "%016llx", static_cast<unsigned long long>(value));
  return text;
}

}  // namespace

void write_synced(const std::string& path, const std::string& named, const std::function<void(const ByteSink&)>& fill,
                  const std::string& incomplete) {
  const std::string temp = path + ".tmp";
  const auto failed = [&](const std::string& why) {
    return std::runtime_error("cannot write " + named + ": " + why + " (" + incomplete + ")");
  };
  std::FILE* file = std::fopen(temp.c_str(), "wb");
  if (!file) throw failed(reason(errno));
  int error = 0;
  std::error_code ec;
  try {
    fill([&](const void* data, size_t bytes) -> size_t {
      if (error == 0 && std::fwrite(data, 1, bytes, file) != bytes) error = errno != 0 ? errno : EIO;
      return bytes;
    });
  } catch (const c10::Error& e) {
    std::fclose(file);
    fs::remove(temp, ec);
    throw failed(e.what_without_backtrace());
  }
  if (std::fflush(file) != 0 && error == 0) error = errno;
  if (::fsync(::fileno(file)) != 0 && error == 0) error = errno;
  if (std::fclose(file) != 0 && error == 0) error = errno;
  if (error == 0) fs::rename(temp, path, ec);
  if (error != 0 || ec) {
    fs::remove(temp, ec);
    throw failed(error != 0 ? reason(error) : ec.message());
  }
}

void FileChecksum::add(const void* data, size_t bytes) {
  const auto* p = static_cast<const unsigned char*>(data);
  length_ += bytes;
  while (bytes > 0) {
    if (pending_ == 0 && bytes >= 8) {  // whole words straight from the buffer
      uint64_t word;
      std::memcpy(&word, p, 8);
      mix(word);
      p += 8;
      bytes -= 8;
      continue;
    }
    tail_[pending_++] = *p++;
    --bytes;
    if (pending_ == 8) {
      uint64_t word;
      std::memcpy(&word, tail_, 8);
      mix(word);
      pending_ = 0;
    }
  }
}

uint64_t FileChecksum::value() const {
  uint64_t h = hash_;
  for (size_t i = 0; i < pending_; ++i) h = (h ^ tail_[i]) * kPrime;
  return (h ^ length_) * kPrime;
}


SavedFile save_rank_state(const std::string& out_dir, int64_t step, int rank, const RankState& state) {
  const std::string dir = checkpoint_dir(out_dir, step);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw std::runtime_error("cannot write checkpoint directory " + dir + ": " + ec.message());
  const std::string path = rank_file(dir, rank);
  FileChecksum checksum;  // of the bytes as written, checked when the file is read back on --resume
  write_synced(
      path, "checkpoint file " + path + ".tmp",
      [&](const ByteSink& write) {
        // Host copies: a file is the same whether the run trained on the CPU or on a GPU.
        torch::save(std::vector<at::Tensor>{state.values.cpu(), state.exp_avg.cpu(), state.exp_avg_sq.cpu(),
                                            at::full({1}, state.optimizer_steps, at::kLong)},
                    ByteSink([&](const void* data, size_t bytes) {
                      checksum.add(data, bytes);
                      return write(data, bytes);
                    }));
      },
      "the checkpoint of step " + std::to_string(step) + " is incomplete: it has no manifest and is never resumed from");
  return {static_cast<int64_t>(fs::file_size(path)), checksum.value()};
}

void write_manifest(const std::string& out_dir, int64_t step, const spec::RunSpec& spec, int64_t uncut_warmup_steps,
                    const std::vector<int64_t>& rank_file_bytes, const std::vector<uint64_t>& rank_file_checksums) {
  nlohmann::json checksums = nlohmann::json::array();
  for (const uint64_t sum : rank_file_checksums) checksums.push_back(checksum_text(sum));
  const nlohmann::json manifest = {{"format", "tessera-checkpoint"}, {"version", 1}, {"step", step},
                                   {"layout", layout_of(spec)}, {"training", training_of(spec, uncut_warmup_steps)},
                                   {"rank_file_bytes", rank_file_bytes},
                                   {"rank_file_checksums", checksums}};
  const std::string text = manifest.dump(2) + "\n";
  // No manifest on failure: the checkpoint stays incomplete (an empty manifest.json passed for a complete one).
  const std::string path = checkpoint_dir(out_dir, step) + "/manifest.json";
  write_synced(
      path, path, [&](const ByteSink& write) { write(text.data(), text.size()); },
      "the checkpoint of step " + std::to_string(step) + " is incomplete and is never resumed from");
}

int64_t resumable_step(const std::string& out_dir, const spec::RunSpec& spec, int64_t uncut_warmup_steps) {
  const std::string root = out_dir + "/checkpoints";
  const auto newest_name = newest_checkpoint(out_dir);
  if (!newest_name) throw CheckpointError("--resume: no complete checkpoint (a step directory with manifest.json) in " + root);
  const std::string newest = root + "/" + *newest_name;
  const std::string manifest_path = newest + "/manifest.json";
  nlohmann::json manifest;
  try {
    std::ifstream in(manifest_path);
    manifest = nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    throw CheckpointError("--resume: " + manifest_path + " is unreadable: " + spec::json_error_reason(e.what()));
  }
  // What the manifest must hold, each refusal naming the field (a hand-edited or foreign file).
  const auto bad = [&](const std::string& rule) { return CheckpointError("--resume: " + manifest_path + ": " + rule); };
  if (!manifest.is_object()) throw bad("not a JSON object");
  const auto step = manifest.find("step");
  if (step == manifest.end() || !step->is_number_integer() || step->get<int64_t>() < 0)
    throw bad("step must be a non-negative integer");
  if (checkpoint_dir(out_dir, step->get<int64_t>()) != newest)
    throw bad("step " + step->dump() + " is not the step of its directory " + *newest_name);
  const auto sizes = manifest.find("rank_file_bytes");
  if (sizes == manifest.end() || !sizes->is_array() ||
      !std::all_of(sizes->begin(), sizes->end(), [](const nlohmann::json& b) { return b.is_number_integer() && b.get<int64_t>() >= 0; }))
    throw bad("rank_file_bytes must list the bytes of each rank's file");
  // The layout before the count of rank files: another world size is another layout, said so.
  const auto now = layout_of(spec);
  const auto layout = manifest.find("layout");
  if (layout != manifest.end() && !layout->is_object()) throw bad("layout must be a JSON object");
  const auto saved = layout != manifest.end() ? comparable_layout(*layout) : nlohmann::json();
  if (layout == manifest.end() || saved != now)
    throw CheckpointError("--resume: the checkpoint " + newest + " was written by another layout (" +
                          (saved.is_object() ? describe_difference(saved, now) : "its manifest has no layout") +
                          "); resharding is not supported");
  // Checkpoints written before the manifest kept these resume without the check; of the settings, those
  // the manifest holds are compared (one written by a later version may hold more, or fewer).
  if (const auto training = manifest.find("training"); training != manifest.end()) {
    if (!training->is_object()) throw bad("training must be a JSON object");
    nlohmann::json now_training = training_of(spec, uncut_warmup_steps);
    for (auto it = now_training.begin(); it != now_training.end();) {
      if (training->contains(it.key())) ++it;
      else it = now_training.erase(it);
    }
    if (*training != now_training)
      throw CheckpointError("--resume: the checkpoint " + newest + " was written with other training settings (" +
                            describe_difference(*training, now_training, "training.") +
                            "): a resumed run keeps its schedule, seed and batch (--steps may change its length); "
                            "give another --out for a new run");
  }
  // --steps below the checkpoint would train nothing and record a spec of fewer steps than were taken.
  if (step->get<int64_t>() > spec.training.train_steps)
    throw CheckpointError("--resume: the checkpoint " + newest + " is of step " + step->dump() + ", after the run's last step " +
                          std::to_string(spec.training.train_steps) + " (training.train_steps, or --steps): give --steps " +
                          step->dump() + " or more");
  if (static_cast<int64_t>(sizes->size()) != spec.world_size())
    throw bad("rank_file_bytes must list the bytes of each of the " + std::to_string(spec.world_size()) + " ranks' files");
  for (int r = 0; r < spec.world_size(); ++r) {
    const std::string file = rank_file(newest, r);
    std::error_code ec;
    const auto bytes = fs::file_size(file, ec);
    const int64_t recorded = (*sizes)[static_cast<size_t>(r)].get<int64_t>();
    std::error_code kind_ec;
    if (fs::exists(file, kind_ec) && !fs::is_regular_file(file, kind_ec))
      throw CheckpointError("--resume: " + file + " is not a regular file");
    if (ec || static_cast<int64_t>(bytes) != recorded)
      throw CheckpointError("--resume: " + file + (ec ? " is missing" : " is truncated (" + std::to_string(bytes) +
                                                                          " bytes, the manifest records " +
                                                                          std::to_string(recorded) + ")"));
  }
  return step->get<int64_t>();
}

int remove_checkpoint_temporaries(const std::string& out_dir, int rank) {
  std::error_code ec;
  const std::string root = out_dir + "/checkpoints";
  if (!fs::is_directory(root, ec)) return 0;
  int removed = 0;
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    if (!entry.is_directory(ec)) continue;
    std::vector<std::string> temporaries{rank_file(entry.path().string(), rank) + ".tmp"};
    if (rank == 0) temporaries.push_back(entry.path().string() + "/manifest.json.tmp");
    for (const auto& temporary : temporaries) removed += fs::remove(temporary, ec) ? 1 : 0;
  }
  return removed;
}

std::optional<std::string> newest_checkpoint(const std::string& out_dir) {
  const std::string root = out_dir + "/checkpoints";
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return std::nullopt;
  // Only the directories checkpoint_dir() names, by their step: a copy beside them ("step_00000003.bak")
  // was taken for the newest and refused, and from step 10^8 on (nine digits) the names do not sort.
  std::optional<std::string> newest;
  int64_t newest_step = -1;
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    const std::string name = entry.path().filename().string();
    int64_t step = -1;
    if (name.size() <= 5 || name.compare(0, 5, "step_") != 0) continue;
    const auto parsed = std::from_chars(name.data() + 5, name.data() + name.size(), step);
    if (parsed.ec != std::errc() || parsed.ptr != name.data() + name.size() || step < 0 ||
        checkpoint_dir(out_dir, step) != root + "/" + name)
      continue;
    if (fs::exists(entry.path() / "manifest.json") && step > newest_step) newest = name, newest_step = step;
  }
  return newest;
}

protocol::ArtifactRecord checkpoint_record(const std::string& out_dir, int64_t step,
                                           const std::vector<int64_t>& rank_file_bytes, int64_t created_ms,
                                           double wall_time_s) {
  protocol::ArtifactRecord record;
  record.kind = "checkpoint";
  record.path = fs::absolute(checkpoint_dir(out_dir, step)).lexically_normal().string();
  record.step = step;
  for (const int64_t bytes : rank_file_bytes) record.size_bytes += bytes;
  record.created_ms = created_ms;
  record.wall_time_s = wall_time_s;
  return record;
}

protocol::ArtifactRecord checkpoint_record_from_manifest(const std::string& out_dir, int64_t step, double wall_time_s) {
  const std::string manifest_path = checkpoint_dir(out_dir, step) + "/manifest.json";
  std::ifstream in(manifest_path);
  const auto manifest = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  std::vector<int64_t> sizes;
  if (manifest.is_object() && manifest.contains("rank_file_bytes") && manifest["rank_file_bytes"].is_array())
    for (const auto& bytes : manifest["rank_file_bytes"])
      if (bytes.is_number_integer()) sizes.push_back(bytes.get<int64_t>());
  struct stat info {};
  const int64_t written_ms = ::stat(manifest_path.c_str(), &info) == 0
                                 ? static_cast<int64_t>(info.st_mtim.tv_sec) * 1000 + info.st_mtim.tv_nsec / 1000000
                                 : 0;
  return checkpoint_record(out_dir, step, sizes, written_ms, wall_time_s);
}

void load_rank_state(const std::string& out_dir, int64_t step, int rank, RankState& state) {
  const std::string dir = checkpoint_dir(out_dir, step), path = rank_file(dir, rank);
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  std::ifstream in(path, std::ios::binary);
  if (ec || !in) throw CheckpointError("--resume: cannot read " + path + ": " + (ec ? ec.message() : reason(errno)));
  std::string bytes(size, '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(size));
  if (static_cast<uint64_t>(in.gcount()) != size) throw CheckpointError("--resume: cannot read " + path + ": " + reason(errno));
  // LibTorch's reader does not check its archive's checksums: a damaged file of the right size
  // loaded and trained on (to a NaN loss). Manifests written before checksums have none to check.
  const auto manifest = nlohmann::json::parse(std::ifstream(dir + "/manifest.json"), nullptr, /*allow_exceptions=*/false);
  if (manifest.is_object() && manifest.contains("rank_file_checksums") && manifest["rank_file_checksums"].is_array() &&
      static_cast<size_t>(rank) < manifest["rank_file_checksums"].size()) {
    FileChecksum checksum;
    checksum.add(bytes.data(), bytes.size());
    const auto& recorded = manifest["rank_file_checksums"][static_cast<size_t>(rank)];
    if (!recorded.is_string() || recorded.get<std::string>() != checksum_text(checksum.value()))
      throw CheckpointError("--resume: " + path + " is damaged: its checksum is " + checksum_text(checksum.value()) +
                            ", the manifest records " + recorded.dump());
  }
  std::vector<at::Tensor> saved;
  try {
    std::istringstream archive(bytes);
    torch::load(saved, archive);
  } catch (const c10::Error& e) {
    throw CheckpointError("--resume: cannot read " + path + ": " + e.what_without_backtrace());
  }
  if (saved.size() != 4 || !saved[0].sizes().equals(state.values.sizes()) ||
      !saved[1].sizes().equals(state.exp_avg.sizes()))
    throw CheckpointError("--resume: " + path + " does not hold this rank's shard");
  at::NoGradGuard no_grad;
  state.values.copy_(saved[0]);
  state.exp_avg.copy_(saved[1]);
  state.exp_avg_sq.copy_(saved[2]);
  state.optimizer_steps = saved[3].item<int64_t>();
}

}  // namespace tessera::runtime
