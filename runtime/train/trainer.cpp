// The training loop of one rank.
#include "runtime/train/trainer.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <stdexcept>

#include <torch/cuda.h>
#include <torch/torch.h>

#include "planner/flops.hpp"
#include "planner/memory.hpp"
#include "planner/params.hpp"
#include "planner/plan.hpp"
#include "planner/schedule.hpp"
#include "protocol/endpoint.hpp"
#include "protocol/records.hpp"
#ifdef TESSERA_WITH_REPORTER
#include "protocol/reporter.hpp"
#endif
#include "runtime/comm/gloo_world.hpp"
#include "runtime/metrics/counting_allocator.hpp"
#include "runtime/metrics/device_metrics.hpp"
#include "runtime/model/transformer.hpp"
#include "runtime/parallel/parallel_state.hpp"
#include "runtime/train/batches.hpp"
#include "runtime/train/checkpoint.hpp"
#include "runtime/train/gradient_reducer.hpp"
#include "runtime/train/optimizer.hpp"
#include "runtime/train/pipeline_executor.hpp"

namespace tessera::runtime {

int cuda_device_of(int local_rank, int visible_gpus) {
  if (visible_gpus < 1) throw std::invalid_argument("--device cuda: no CUDA device is visible to this process");
  if (visible_gpus == 1) return 0;
  if (local_rank < visible_gpus) return local_rank;
  throw std::invalid_argument("LOCAL_RANK=" + std::to_string(local_rank) + " but this process sees " +
                              std::to_string(visible_gpus) +
                              " GPUs: more ranks on this node than GPUs would share one; start at most " +
                              std::to_string(visible_gpus) + " ranks on this node, or make one GPU visible to "
                              "each rank (CUDA_VISIBLE_DEVICES)");
}

namespace {

using Clock = std::chrono::steady_clock;
// fp32 gradients per data-parallel reduction. On GPUs Megatron-LM's default, max(40M, 1M x dp) values
// (160 MiB and up): few large NCCL calls reach the links' bandwidth and leave the backward its SMs
// (2^20 values made ~1,260 calls per step at 1.3B). On the CPU 2^20 (4 MiB), which Gloo reduces on its
// worker thread while the next buckets fill, and which the small test models still split into several.
int64_t bucket_elements(const at::Device& device, int64_t dp) {
  return device.is_cuda() ? std::max<int64_t>(40'000'000, 1'000'000 * dp) : int64_t{1} << 20;
}

// "nan", "inf", "1e+300", "0.0003": a value in a message, the shortest text that reads back as it.
std::string number_text(double value) {
  if (std::isnan(value)) return "nan";  // to_chars writes "-nan" for x86's default NaN
  char text[32];
  const auto [end, ec] = std::to_chars(text, text + sizeof text, value);
  return std::string(text, end);
}

int env_int(const char* name, int fallback) {
  const char* value = std::getenv(name);
  if (!value) return fallback;
  char* end = nullptr;
  errno = 0;
  const long parsed = std::strtol(value, &end, 10);
  // 2^31 and more would wrap to another rank (RANK=4294967296 ran as rank 0).
  if (*value == '\0' || *end != '\0' || parsed < 0 || errno == ERANGE || parsed > std::numeric_limits<int>::max())
    throw std::invalid_argument(std::string("environment variable ") + name + "=\"" + value +
                                "\" must be an integer from 0 to " + std::to_string(std::numeric_limits<int>::max()));
  return static_cast<int>(parsed);
}

// Replaces `path` by `text` whole, as checkpoints are written (write_synced): on a failure (a full disk)
// the file is as it was and the temporary removed.
void replace_file(const std::string& path, const std::string& text) {
  write_synced(path, path, [&](const ByteSink& write) { write(text.data(), text.size()); }, "it is as it was");
}

// One line per record, appended with a single write() so ranks sharing the file do not interleave;
// under an agent (TESSERA_REPORT_ENDPOINT set) each record also goes to it (docs/protocol.md).
class MetricsFile {
 public:
  explicit MetricsFile(std::string path) : path_(std::move(path)) {
#ifdef TESSERA_WITH_REPORTER
    reporter_ = protocol::Reporter::from_environment();
#endif
  }
  /// Opens the file for appending: once a resume has cut it back to its checkpoint (it is replaced
  /// then, and a descriptor opened before would write to the file replaced).
  void open() {
    if (path_.empty() || fd_ >= 0) return;
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd_ < 0) throw std::runtime_error("cannot write " + path_ + ": " + std::strerror(errno));
  }
  ~MetricsFile() {
    if (fd_ >= 0) ::close(fd_);
  }
  void write(const nlohmann::ordered_json& record) {
#ifdef TESSERA_WITH_REPORTER
    if (fd_ < 0 && !reporter_) return;
    std::string line = record.dump();
    if (reporter_) reporter_->send(line);
#else
    if (fd_ < 0) return;
    std::string line = record.dump();
#endif
    if (fd_ < 0) return;
    line += "\n";
    // One write() as a rule; the rest of a short one (a disk filling) again, so that its error is the
    // one said: a short write sets no errno ("writing metrics: Success").
    for (const char* next = line.data(); next < line.data() + line.size();) {
      const ssize_t written = ::write(fd_, next, line.data() + line.size() - next);
      if (written < 0 && errno == EINTR) continue;
      if (written <= 0) throw std::runtime_error("cannot write " + path_ + ": " + std::strerror(written < 0 ? errno : EIO));
      next += written;
    }
  }

 private:
#ifdef TESSERA_WITH_REPORTER
  std::unique_ptr<protocol::Reporter> reporter_;  ///< delivers what it holds when the trainer ends
#endif
  std::string path_;
  int fd_ = -1;
};

std::unique_ptr<TokenSource> make_token_source(const spec::RunSpec& spec, const std::string& data) {
  if (data == "synthetic") return std::make_unique<SyntheticTokens>(spec.training.seed, spec.model.vocab_size, spec.model.seq_length);
  return std::make_unique<FileTokens>(data, spec.training.seed, spec.model.vocab_size, spec.model.seq_length,
                                      spec.training.global_batch_size);
}

Placement placement_of(const spec::RunSpec& spec, const TrainOptions& options, const RankEnvironment& env) {
  Placement placement;
  if (options.device == "cuda")
    placement.device = at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(cuda_device_of(
                                                 env.local_rank, static_cast<int>(torch::cuda::device_count()))));
  if (spec.training.precision == spec::Precision::bf16) placement.model_dtype = at::kBFloat16;
  return placement;
}

class Trainer {
 public:
  Trainer(const spec::RunSpec& spec, const TrainOptions& options, const RankEnvironment& env, const Placement& placement)
      : spec_(spec), options_(options), world_(WorldOptions{env.rank, env.world_size, env.master_addr, env.master_port}),
        placement_(placement),
        state_(make_parallel_state(world_, spec, placement_.device,
                                   options.directed_pipeline_links ? PipelineLinks::directed : PipelineLinks::group)),
        store_(spec.training.seed, state_.coord.tp, state_.tp, placement_),
        model_(spec, state_.coord.pp, TensorParallel{state_.tp_group.get(), state_.sequence_parallel}, store_,
               options.fused_kernels),
        executor_(model_, state_,
                  planner::make_schedule(spec.parallel.schedule, static_cast<int>(state_.pp), static_cast<int>(state_.vpp),
                                         static_cast<int>(spec.num_microbatches())),
                  {spec.model.seq_length / (state_.sequence_parallel ? state_.tp : 1), spec.training.micro_batch_size,
                   spec.model.hidden_size},
                  store_.model_options()),
        data_(make_token_source(spec, options.data)),
        layout_{spec.training.global_batch_size, spec.training.micro_batch_size, state_.dp, state_.coord.dp},
        metrics_(options.out_dir.empty() ? "" : options.out_dir + "/metrics.jsonl") {
    distributed_optimizer_ = spec.effective_zero_stage() >= 1 && state_.dp > 1;
    store_.finalise(distributed_optimizer_ ? state_.dp : 1, distributed_optimizer_ ? state_.coord.dp : 0);
    shard_numel_ = store_.master_numel();
    shard_offset_ = store_.master_offset();
    // Which elements decay and which count in the global norm, as ranges of the flat buffer.
    std::vector<ElementRange> decay, in_norm;
    const auto& params = store_.params();
    for (size_t i = 0; i < params.size(); ++i) {
      const auto& p = params[i];
      const ElementRange range{store_.offsets()[i], p.value.numel()};
      if (p.weight_decay) decay.push_back(range);
      // Each parameter counts once in the global norm: replicated ones on tp rank 0, tied copies not.
      if (!p.tied_copy && (!p.tp_replicated || state_.coord.tp == 0)) in_norm.push_back(range);
    }
    // Under the distributed optimizer (ZeRO-1) this rank keeps the state of its shard only.
    optimizer_ = std::make_unique<AdamW>(spec.training, shard_numel_, clip_ranges(decay, shard_offset_, shard_numel_),
                                         placement_.device, options.fused_kernels);
    norm_ranges_ = clip_ranges(in_norm, shard_offset_, shard_numel_);
    norm_counts_all_ = norm_ranges_.size() == 1 && norm_ranges_[0].length == shard_numel_;
    reducer_ = std::make_unique<GradientReducer>(store_, state_, distributed_optimizer_,
                                                  bucket_elements(placement_.device, state_.dp));
  }

  /// The parameter elements of this rank (its shard of the model, in the model's dtype).
  int64_t parameters_held() const { return store_.numel(); }
  /// The attention kernel scaled_dot_product_attention picks for this rank's model.
  std::string attention_backend() const {
    return model_.attention_backend(at::TensorOptions().device(placement_.device).dtype(placement_.model_dtype));
  }

  /// `resumed_wall_s`: on rank 0 of a resumed run, its clock at the end of the step resumed from.
  /// `resumed_files`: on rank 0 of a resumed run, the output files as the checkpoint leaves them,
  /// written once every rank has read its checkpoint (a damaged rank file leaves them as they were).
  void run(double measured_peak_tflops, const std::string& peak_source, double resumed_wall_s = 0,
           const std::vector<std::pair<std::string, std::string>>& resumed_files = {}) {
    const double model_flops = planner::iteration_flops(spec_, /*causal=*/false).model_per_iteration;
    const at::Device device = placement_.device;
    const double peak_tflops = run_peak_tflops(measured_peak_tflops);
    if (world_.rank() == 0) {
      if (device.is_cuda())
        std::printf("peak %.3g TFLOP/s from %s\n", peak_tflops, peak_source.c_str());
      else
        std::printf("peak %.3g TFLOP/s: the median over the ranks of %s (rank 0: %.3g)\n", peak_tflops, peak_source.c_str(),
                    measured_peak_tflops);
      std::fflush(stdout);
    }
    reset_memory_peak(device);  // CUDA: the peak of training, not of building the model
    // A resumed run's clock goes on from rank 0's at the step resumed from (every rank's, through the
    // store), not from 0 again: its step records' wall_time_s keep rising across the sessions, so the
    // wall-time axis and an imported run's duration span both.
    const double clock_origin_s =
        options_.resume ? static_cast<double>(world_.store_gather("resumed-wall-clock", std::llround(resumed_wall_s * 1e6)).at(0)) / 1e6
                        : 0.0;
    const auto start = Clock::now() - std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(clock_origin_s));
    const int64_t tokens_per_step = spec_.training.global_batch_size * spec_.model.seq_length;
    int64_t first_step = 1;
    if (options_.resume) {
      const int64_t saved_step = resumable_step(options_.out_dir, spec_, options_.uncut_warmup_steps);
      RankState state = rank_state();
      load_rank_state(options_.out_dir, saved_step, world_.rank(), state);
      optimizer_->set_steps_taken(state.optimizer_steps);
      refresh_model_values();
      first_step = saved_step + 1;
      // Every rank holds its checkpoint, checksums checked: only now are the step records after it
      // dropped and the spec replaced (a damaged rank file lost the records of the steps after it).
      world_.store_gather("resume-loaded", 1);
      if (world_.rank() == 0)
        for (const auto& [path, text] : resumed_files) replace_file(path, text);
      world_.store_gather("resume-files-written", 1);
      if (world_.rank() == 0) std::printf("resumed from %s\n", checkpoint_dir(options_.out_dir, saved_step).c_str());
    }
    metrics_.open();
    for (int64_t step = first_step; step <= spec_.training.train_steps; ++step) {
      const auto step_start = Clock::now();
      const double comm_before = comm_seconds();
      store_.grads().zero_();
      const auto microbatches = make_microbatches(*data_, layout_, step - 1);
      reducer_->begin_step(static_cast<int64_t>(microbatches.size()));
      const PipelineResult pipeline = executor_.run(microbatches);
      at::Tensor grads = reducer_->finish();
      const double grad_norm = global_grad_norm(grads);
      // Clipping is a factor the optimizer applies as it reads each gradient (no pass of its own).
      const float grad_scale = spec_.training.grad_clip > 0 && grad_norm > spec_.training.grad_clip
                                   ? static_cast<float>(spec_.training.grad_clip / (grad_norm + 1e-6))
                                   : 1.0f;
      const double lr = learning_rate(spec_.training, step);
      const double loss = global_loss(pipeline.loss_sum, static_cast<double>(microbatches.size()));
      // A NaN or infinite loss or gradient norm (the same on every rank: both are reduced) ends the run
      // once its step is recorded, the weights left as they were, as Megatron-LM's
      // check_for_nan_in_loss_and_grad does: it trained on to the end in NaN and exited 0.
      const bool diverged = !std::isfinite(loss) || !std::isfinite(grad_norm);
      if (!diverged) {
        at::NoGradGuard no_grad;
        // Tessera's kernel writes the bf16 model copy in the same pass; otherwise it is cast from the masters.
        const bool wrote_model =
            optimizer_->step(store_.master(), grads, lr, store_.model_values().narrow(0, shard_offset_, shard_numel_), grad_scale);
        refresh_model_values(/*cast=*/!wrote_model);
      }
      const MemoryReading memory = read_memory(device);
      const auto now = Clock::now();

      protocol::StepRecord record;
      record.step = step;
      record.rank = world_.rank();
      record.wall_time_s = std::chrono::duration<double>(now - start).count();
      record.loss = loss;
      record.grad_norm = grad_norm;
      record.lr = lr;
      record.step_time_s = std::chrono::duration<double>(now - step_start).count();
      record.tokens_per_s = static_cast<double>(tokens_per_step) / record.step_time_s;
      record.comm_s = comm_seconds() - comm_before;
      record.peak_tflops = peak_tflops;
      record.model_tflops = model_flops / static_cast<double>(world_.world_size()) / record.step_time_s / 1e12;
      record.mfu = record.model_tflops / peak_tflops;
      record.bubble = pipeline.bubble;
      record.peak_memory_bytes = memory.peak_bytes;
      record.live_memory_bytes = memory.live_bytes;
      record.peak_reserved_bytes = memory.peak_reserved_bytes;
      metrics_.write(protocol::to_json(record));
      for (const auto& op : pipeline.timeline) {
        metrics_.write(protocol::to_json(protocol::TimelineRecord{
            step, world_.rank(), state_.coord.pp, std::string(planner::op_kind_name(op.op.kind)), op.op.microbatch,
            op.op.chunk, op.start_s, op.end_s}));
      }
      if (world_.rank() == 0) {
        std::printf(
            "step %4lld/%lld | loss %.4f | grad norm %.3f | lr %.2e | %.0f tokens/s | MFU %.1f%% of %.0f GFLOP/s | "
            "bubble %.0f%% | peak %.1f MiB%s | %.3f s (comm %.3f s)\n",
            static_cast<long long>(step), static_cast<long long>(spec_.training.train_steps), loss, grad_norm, lr,
            record.tokens_per_s, 100 * record.mfu, 1e3 * peak_tflops, 100 * record.bubble,
            static_cast<double>(record.peak_memory_bytes) / (1 << 20), reserved_note(record).c_str(), record.step_time_s,
            record.comm_s);
        std::fflush(stdout);
      }
      if (diverged)
        throw std::runtime_error("step " + std::to_string(step) + ": the loss is " + number_text(loss) + " and the grad norm " +
                                 number_text(grad_norm) + ": the run diverged (training.lr=" + number_text(spec_.training.lr) +
                                 "); this step was not applied and no checkpoint was written");
      const bool last = step == spec_.training.train_steps;
      if (!options_.out_dir.empty() && options_.checkpoint &&
          (last || (options_.save_every > 0 && step % options_.save_every == 0))) {
        const SavedFile saved = save_rank_state(options_.out_dir, step, world_.rank(), rank_state());
        // Sizes and checksums go through the store: on several nodes rank 0 does not see the other
        // nodes' files.
        const auto sizes = world_.store_gather("checkpoint-" + std::to_string(step), saved.bytes);
        std::vector<uint64_t> checksums;
        for (const int64_t sum : world_.store_gather("checkpoint-sum-" + std::to_string(step), static_cast<int64_t>(saved.checksum)))
          checksums.push_back(static_cast<uint64_t>(sum));
        if (world_.rank() == 0) {
          write_manifest(options_.out_dir, step, spec_, options_.uncut_warmup_steps, sizes, checksums);
          // Reported once complete, so that the history lists the checkpoints a run can resume from.
          const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                     std::chrono::system_clock::now().time_since_epoch())
                                     .count();
          metrics_.write(protocol::to_json(checkpoint_record(options_.out_dir, step, sizes, now_ms,
                                                             std::chrono::duration<double>(Clock::now() - start).count())));
        }
      }
    }
    world_.finish();
  }

 private:
  // The CUDA allocator's reserved peak next to the allocated one; the CPU path holds no cache.
  std::string reserved_note(const protocol::StepRecord& record) const {
    if (!placement_.device.is_cuda()) return "";
    char note[48];
    std::snprintf(note, sizeof(note), " (reserved %.1f MiB)", static_cast<double>(record.peak_reserved_bytes) / (1 << 20));
    return note;
  }

  RankState rank_state() {
    return {store_.master(), optimizer_->exp_avg(), optimizer_->exp_avg_sq(), optimizer_->steps_taken()};
  }

  // The model's weights from this rank's updated (or loaded) fp32 shard, and under the distributed
  // optimizer the other replicas' shards, gathered in the model's dtype (half the bytes under bf16).
  void refresh_model_values(bool cast = true) {
    at::NoGradGuard no_grad;
    if (cast) store_.refresh_model_values();
    at::Tensor& model = store_.model_values();
    if (distributed_optimizer_) state_.dp_group->all_gather(model, model.narrow(0, shard_offset_, shard_numel_).clone());
  }

  double comm_seconds() const {
    double total = 0;
    for (const auto* g : state_.all_groups()) total += g->busy_s();
    return total;
  }

  // Over every parameter once: tp and pp partition the model; dp partitions it too under ZeRO-1.
  double global_grad_norm(const at::Tensor& grads) {
    // One fused pass when every local element counts (no tp replicas, no tied copy).
    at::Tensor sum;
    if (norm_counts_all_) {
      sum = at::linalg_vector_norm(grads).square().to(at::kDouble).reshape({1});
    } else {
      sum = at::zeros({1}, grads.options().dtype(at::kDouble));
      for (const auto& r : norm_ranges_) sum += at::linalg_vector_norm(grads.narrow(0, r.offset, r.length)).square().to(at::kDouble);
    }
    state_.tp_group->all_reduce(sum);
    state_.pp_group->all_reduce(sum);
    if (distributed_optimizer_) state_.dp_group->all_reduce(sum);
    return std::sqrt(sum.item<double>());
  }

  // The mean over the global batch, known on every rank: the last stage's value summed over the
  // pipeline (other stages add 0), averaged over data-parallel replicas.
  double global_loss(const at::Tensor& loss_sum, double microbatches) {
    at::Tensor value = state_.last_stage() ? (loss_sum.to(at::kDouble) / microbatches).reshape({1})
                                           : at::zeros({1}, at::TensorOptions().dtype(at::kDouble).device(placement_.device));
    state_.pp_group->all_reduce(value);
    state_.dp_group->all_reduce(value);
    return value.item<double>() / static_cast<double>(state_.dp);
  }

  spec::RunSpec spec_;
  TrainOptions options_;
  /// The peak every rank's MFU is a share of. A GPU's comes from its preset (a GEMM on a GPU without
  /// one), the same on every rank of one GPU type; a CPU rank times its own GEMM, and ranks sharing a
  /// few cores measure up to 3x apart (a tiny-3d run: 58-156 GFLOP/s), so the ranks agree on the
  /// median of their timings (in steps of one MFLOP/s) and a run's ranks report one MFU scale.
  double run_peak_tflops(double measured_tflops) {
    if (placement_.device.is_cuda()) return measured_tflops;
    auto mflops = world_.store_gather("peak-mflops", std::llround(measured_tflops * 1e6));
    std::sort(mflops.begin(), mflops.end());
    const size_t n = mflops.size();
    const double median = n % 2 ? static_cast<double>(mflops[n / 2]) : 0.5 * static_cast<double>(mflops[n / 2 - 1] + mflops[n / 2]);
    return median > 0 ? median / 1e6 : measured_tflops;
  }

  GlooWorld world_;
  Placement placement_;
  ParallelState state_;
  ParamStore store_;
  Transformer model_;
  PipelineExecutor executor_;
  std::unique_ptr<TokenSource> data_;
  BatchLayout layout_;
  MetricsFile metrics_;
  bool distributed_optimizer_ = false;
  int64_t shard_numel_ = 0, shard_offset_ = 0;
  std::vector<ElementRange> norm_ranges_;  // of this rank's shard
  bool norm_counts_all_ = false;
  std::unique_ptr<GradientReducer> reducer_;
  std::unique_ptr<AdamW> optimizer_;
};

}  // namespace

std::string default_data_path() {
  const auto exe = std::filesystem::read_symlink("/proc/self/exe");
  return (exe.parent_path().parent_path() / "resources" / "corpus" / "kjv.tokens").string();
}

RankEnvironment rank_environment_from_env() {
  RankEnvironment env;
  const bool any = std::getenv("RANK") || std::getenv("WORLD_SIZE");
  if (!any) return env;
  for (const char* required : {"RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"})
    if (!std::getenv(required))
      throw std::invalid_argument(std::string("environment variable ") + required +
                                  " is not set (RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT go together)");
  env.rank = env_int("RANK", 0);
  env.world_size = env_int("WORLD_SIZE", 1);
  env.local_rank = env_int("LOCAL_RANK", env.rank);
  env.local_world_size = env_int("LOCAL_WORLD_SIZE", env.world_size);
  env.master_addr = std::getenv("MASTER_ADDR");
  env.master_port = env_int("MASTER_PORT", 0);
  // RANK first: LOCAL_RANK and LOCAL_WORLD_SIZE default to it and WORLD_SIZE, so their rule would name
  // variables the user never set.
  if (env.world_size < 1 || env.rank >= env.world_size)
    throw std::invalid_argument("RANK=" + std::to_string(env.rank) + " must be below WORLD_SIZE=" +
                                std::to_string(env.world_size));
  if (env.local_world_size < 1 || env.local_rank >= env.local_world_size)
    throw std::invalid_argument("LOCAL_RANK=" + std::to_string(env.local_rank) + " must be below LOCAL_WORLD_SIZE=" +
                                std::to_string(env.local_world_size) + " (the ranks on this machine, at least 1)");
  if (env.master_port < 1 || env.master_port > 65535)
    throw std::invalid_argument("MASTER_PORT=" + std::to_string(env.master_port) + " must be a TCP port (1-65535)");
  if (const auto problem = protocol::host_syntax_problem(env.master_addr); !problem.empty())
    throw std::invalid_argument("MASTER_ADDR=\"" + env.master_addr + "\" is not a host name or address: " + problem);
  return env;
}

void train(const spec::RunSpec& spec, const TrainOptions& options, const RankEnvironment& env) {
  at::set_num_threads(options.threads);
  double resumed_wall_s = 0;  // rank 0's clock at the end of the step resumed from
  std::vector<std::pair<std::string, std::string>> resumed_files;  // rank 0, resuming: path and contents
  if (!options.out_dir.empty() && env.rank == 0) {
    // Rank 0 prepares the metrics file before the rendezvous (no rank writes to it until then):
    // afresh, or on resume without the records of steps after the checkpoint.
    const std::string metrics = options.out_dir + "/metrics.jsonl";
    if (options.resume) {
      const int64_t saved_step = resumable_step(options.out_dir, spec, options.uncut_warmup_steps);
      std::ifstream in(metrics);
      std::string line, kept;
      bool reported = false;        // the checkpoint resumed from has its artifact record
      double saved_step_wall_s = 0;  // rank 0's clock at the end of that step
      for (int64_t number = 1; std::getline(in, line); ++number) {
        // A record cut short (the disk filled, the run was killed mid-write) is dropped with a word,
        // not left to stop the resume: its step is written again after the checkpoint anyway. So is a
        // line holding NUL bytes (a file's unwritten blocks read as zeros after a crash): nlohmann's
        // parser ends its input at the first one, so `{...}\0\0` read as whole and was kept, NULs and
        // all, in a metrics file the workbench then refused to import.
        const bool zeros = line.find('\0') != std::string::npos;
        const auto record = zeros ? nlohmann::json(nlohmann::json::value_t::discarded)
                                  : nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
        if (!record.is_object() || !record.contains("step") || !record["step"].is_number_integer()) {
          std::fprintf(stderr, "--resume: dropping line %lld of %s, not a whole record%s: %.80s\n",
                       static_cast<long long>(number), metrics.c_str(), zeros ? " (it holds NUL bytes)" : "", line.c_str());
          continue;
        }
        if (record["step"].get<int64_t>() > saved_step) continue;
        kept += line + "\n";
        if (record["step"].get<int64_t>() != saved_step) continue;
        const std::string type = record.contains("type") && record["type"].is_string() ? record["type"].get<std::string>() : "step";
        reported = reported || type == "artifact";
        if (type == "step" && record.contains("rank") && record["rank"] == 0 && record.contains("wall_time_s") &&
            record["wall_time_s"].is_number())
          saved_step_wall_s = record["wall_time_s"].get<double>();
      }
      // The run died between the checkpoint's manifest and its record: the record, from the manifest.
      if (!reported)
        kept += protocol::to_json(checkpoint_record_from_manifest(options.out_dir, saved_step, saved_step_wall_s)).dump() + "\n";
      // Written by the trainer once every rank has read its checkpoint.
      resumed_files = {{metrics, std::move(kept)}, {options.out_dir + "/spec.json", spec::to_json(spec).dump(2) + "\n"}};
      resumed_wall_s = saved_step_wall_s;
    } else {
      std::filesystem::remove(metrics);
      replace_file(options.out_dir + "/spec.json", spec::to_json(spec).dump(2) + "\n");
    }
  }
  // A run killed while it wrote a checkpoint left a temporary as large as its rank file.
  if (!options.out_dir.empty()) remove_checkpoint_temporaries(options.out_dir, static_cast<int>(env.rank));
  const auto placement = placement_of(spec, options, env);
  if (placement.device.is_cuda()) set_current_cuda_device(placement.device.index());
  std::string peak_source;
  const double peak = peak_tflops(placement.device, placement.model_dtype, &peak_source);
  if (env.rank == 0) {
    if (spec.parallel.pp > 1)
      std::printf("pipeline sends and receives: %s\n", options.directed_pipeline_links
                                                         ? "one group per direction between neighbouring stages"
                                                         : "through the pp group");
    // What the planner predicts, to read next to the measured peak of every step record.
    const auto plan = planner::make_plan(spec, planner::PlanOptions{});
    std::printf("planner (tessera profile for cluster.gpu=%s: %s) predicts per-GPU peak memory:", spec.cluster.gpu.c_str(),
                planner::plans_fused_kernels(spec) ? "fused kernels" : "ATen's ops");
    for (const auto& stage : plan.memory.stages)
      std::printf(" stage %lld %.1f MiB", static_cast<long long>(stage.stage), static_cast<double>(stage.total_bytes()) / (1 << 20));
    std::printf("\n");
    std::fflush(stdout);
  }
  CountingAllocator::install();  // before the first tensor of the run (after the GEMM's), so every byte is counted
  Trainer trainer(spec, options, env, placement);
  if (env.rank == 0)  // the GPU check compares it with the PyTorch reference's count
    std::printf("rank 0 holds %lld parameters (the model has %lld); attention: %s\n",
                static_cast<long long>(trainer.parameters_held()),
                static_cast<long long>(planner::count_parameters(spec.model).total), trainer.attention_backend().c_str());
  trainer.run(peak, peak_source, resumed_wall_s, resumed_files);
}

}  // namespace tessera::runtime
