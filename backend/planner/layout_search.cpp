// Layout search: enumerates the space's combinations by index (mixed radix), plans them on worker
// threads, and keeps each worker's fastest; the calling thread reports progress and merges.
#include "planner/layout_search.hpp"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

namespace tessera::planner {

namespace {

using Clock = std::chrono::steady_clock;

template <typename T>
void add_unique(std::vector<T>& values, T value) {
  if (std::find(values.begin(), values.end(), value) == values.end()) values.push_back(value);
}

std::vector<int64_t> divisors(int64_t n) {
  std::vector<int64_t> out;
  for (int64_t d = 1; d <= n; ++d)
    if (n % d == 0) out.push_back(d);
  return out;
}

// The pipeline part of a layout. The spec names some combinations as meaningless rather than wrong
// (a schedule without pipeline, virtual stages without interleaving, ZeRO-2/3 with a pipeline), so
// they are left out of the space instead of counted as invalid.
struct PipelineChoice {
  int64_t pp = 1, vpp = 1;
  spec::Schedule schedule = spec::Schedule::one_f_one_b;
  int zero_stage = 0;
};

std::vector<PipelineChoice> pipeline_choices(const SearchSpace& space) {
  std::vector<PipelineChoice> out;
  for (int64_t pp : space.pp) {
    std::vector<std::pair<spec::Schedule, int64_t>> schedules;  // (schedule, vpp)
    if (pp == 1) {
      // One stage: every schedule but interleaving runs the same; 1F1B holds the least.
      const bool has_1f1b = std::count(space.schedule.begin(), space.schedule.end(), spec::Schedule::one_f_one_b) > 0;
      for (auto s : space.schedule)
        if (s != spec::Schedule::interleaved && (!has_1f1b || s == spec::Schedule::one_f_one_b)) {
          schedules.emplace_back(s, 1);
          break;
        }
    } else {
      for (auto s : space.schedule) {
        if (s != spec::Schedule::interleaved) {
          schedules.emplace_back(s, 1);
          continue;
        }
        for (int64_t vpp : space.vpp)
          if (vpp >= 2) schedules.emplace_back(s, vpp);
      }
    }
    for (const auto& [schedule, vpp] : schedules)
      for (int zero : space.zero_stage)
        if (pp == 1 || zero <= 1) out.push_back({pp, vpp, schedule, zero});
  }
  return out;
}

// Index i of the space ↔ one spec: tp is the most significant digit, recompute the least, so that
// among equally fast layouts the one with the lower index is the simpler (smaller TP, CP, PP, ZeRO
// stage and micro-batch, less recompute: search_layouts sorts the space's numbers).
class Enumeration {
 public:
  Enumeration(const spec::RunSpec& base, const SearchSpace& space)
      : base_(base), space_(space), pipelines_(pipeline_choices(space)) {
    radix_ = {static_cast<int64_t>(space.tp.size()), static_cast<int64_t>(space.cp.size()),
              static_cast<int64_t>(pipelines_.size()), static_cast<int64_t>(space.ep.size()),
              static_cast<int64_t>(space.micro_batch_size.size()), static_cast<int64_t>(space.recompute.size())};
    size_ = 1;  // capped just above the most a search plans, so that the product cannot overflow
    for (int64_t r : radix_) size_ = std::min(size_ * r, kMaxSearchCandidates + 1);
  }

  int64_t size() const { return size_; }

  spec::RunSpec at(int64_t index) const {
    int64_t digit[6];
    for (int i = 5; i >= 0; --i) {
      digit[i] = index % radix_[i];
      index /= radix_[i];
    }
    spec::RunSpec s = base_;
    auto& p = s.parallel;
    p.tp = space_.tp[digit[0]];
    p.cp = space_.cp[digit[1]];
    const auto& pipe = pipelines_[digit[2]];
    p.pp = pipe.pp;
    p.vpp = pipe.vpp;
    p.schedule = pipe.schedule;
    if (pipe.zero_stage != base_.effective_zero_stage()) {
      p.zero_stage = pipe.zero_stage;
      p.distributed_optimizer = false;
    }
    p.ep = space_.ep[digit[3]];
    p.sequence_parallel = p.tp > 1 && s.model.seq_length % p.tp == 0;
    p.dp = 0;  // derived; an explicit dp is written back for the layouts returned
    s.training.micro_batch_size = space_.micro_batch_size[digit[4]];
    s.training.recompute = space_.recompute[digit[5]];
    return s;
  }

 private:
  const spec::RunSpec& base_;
  const SearchSpace& space_;
  std::vector<PipelineChoice> pipelines_;
  std::vector<int64_t> radix_;
  int64_t size_ = 0;
};

struct Scored {
  double tokens_per_s = 0;
  int64_t peak_bytes = 0;
  int64_t index = 0;
  double iteration_time_s = 0, mfu = 0, bubble_fraction = 0;
};

// Ties (symmetric layouts, a DP reduction hidden either way) go to the simpler layout: the lower index.
bool faster(const Scored& a, const Scored& b) {
  if (a.tokens_per_s != b.tokens_per_s) return a.tokens_per_s > b.tokens_per_s;
  return a.index < b.index;
}

// What one worker found.
struct Tally {
  std::vector<Scored> best;  // at most `top`, kept as a heap (slowest on top)
  int64_t invalid = 0, over_memory = 0, fitting = 0, faster_than_given = 0;
  std::map<std::string, int64_t> invalid_fields;

  void keep(const Scored& s, size_t top) {
    if (top == 0) return;
    if (best.size() < top) {
      best.push_back(s);
      std::push_heap(best.begin(), best.end(), faster);
    } else if (faster(s, best.front())) {
      std::pop_heap(best.begin(), best.end(), faster);
      best.back() = s;
      std::push_heap(best.begin(), best.end(), faster);
    }
  }
};

RankedLayout ranked(spec::RunSpec spec, const Plan& plan) {
  return {std::move(spec), plan.prediction.iteration_time_s, plan.prediction.tokens_per_s, plan.prediction.mfu,
          plan.prediction.bubble_fraction, plan.memory.peak_bytes};
}

}  // namespace

SearchSpace default_search_space(const spec::RunSpec& spec) {
  const auto& m = spec.model;
  const auto& p = spec.parallel;
  const int64_t world = spec.world_size();
  SearchSpace space;
  space.tp = divisors(spec.cluster.gpus_per_node);
  add_unique(space.tp, p.tp);
  space.cp = {1};
  for (int64_t cp = 2; cp <= world && m.seq_length % (2 * cp) == 0 && m.seq_length / cp >= 1024; cp *= 2)
    space.cp.push_back(cp);
  add_unique(space.cp, p.cp);
  for (int64_t pp : divisors(m.num_layers))
    if (world % pp == 0) space.pp.push_back(pp);
  add_unique(space.pp, p.pp);
  space.vpp = {2, 4, 8};
  if (p.vpp > 1) add_unique(space.vpp, p.vpp);
  space.ep = m.is_moe() ? divisors(m.num_experts) : std::vector<int64_t>{1};
  add_unique(space.ep, p.ep);
  space.zero_stage = {0, 1, 2, 3};
  space.micro_batch_size = {1, 2, 4, 8};
  add_unique(space.micro_batch_size, spec.training.micro_batch_size);
  space.recompute = {spec::Recompute::none, spec::Recompute::selective, spec::Recompute::full};
  space.schedule = {spec::Schedule::one_f_one_b, spec::Schedule::interleaved, spec::Schedule::zb_h1};
  add_unique(space.schedule, p.schedule);
  for (auto* values : {&space.tp, &space.cp, &space.pp, &space.vpp, &space.ep, &space.micro_batch_size})
    std::sort(values->begin(), values->end());
  return space;
}

void check_search_space(const SearchSpace& space) {
  std::vector<spec::FieldError> errors;
  auto positive = [&](const char* name, const std::vector<int64_t>& values) {
    const std::string field = std::string("search.") + name;
    if (values.empty()) errors.push_back({field, field + " must list at least one value"});
    for (int64_t v : values)
      if (v < 1) {
        errors.push_back({field, field + "=" + std::to_string(v) + " must be a positive integer"});
        break;
      }
  };
  positive("tp", space.tp);
  positive("cp", space.cp);
  positive("pp", space.pp);
  positive("vpp", space.vpp);
  positive("ep", space.ep);
  positive("micro_batch_size", space.micro_batch_size);
  if (space.zero_stage.empty()) errors.push_back({"search.zero_stage", "search.zero_stage must list at least one value"});
  for (int z : space.zero_stage)
    if (z < 0 || z > 3) {
      errors.push_back({"search.zero_stage", "search.zero_stage=" + std::to_string(z) + " must be 0, 1, 2 or 3"});
      break;
    }
  if (space.recompute.empty()) errors.push_back({"search.recompute", "search.recompute must list at least one value"});
  if (space.schedule.empty()) errors.push_back({"search.schedule", "search.schedule must list at least one value"});
  if (!errors.empty()) throw spec::SpecError(std::move(errors));
}

SearchResult search_layouts(const spec::RunSpec& spec, const SearchSpace& space, const SearchOptions& options) {
  const auto start = Clock::now();
  spec::require_valid(spec);
  check_search_space(space);
  if (!(options.memory_fraction > 0) || options.memory_fraction > 1)
    throw spec::SpecError({{"search.memory_fraction", "search.memory_fraction=" + std::to_string(options.memory_fraction) +
                                                          " must be greater than 0 and at most 1"}});

  SearchResult result;
  spec::RunSpec base = spec;
  if (base.training.global_batch_size == 0)
    base.training.global_batch_size = base.training.micro_batch_size * base.data_parallel();
  result.global_batch_size = base.training.global_batch_size;

  PlanOptions plan_options = options.plan;
  plan_options.include_grid = false;
  plan_options.record_events = false;
  const auto* gpu = spec::PresetCatalog::builtin().gpu(base.cluster.gpu);
  const int64_t capacity = gpu ? gpu->memory_bytes : 0;
  result.memory_limit_bytes = static_cast<int64_t>(static_cast<double>(capacity) * options.memory_fraction);
  const auto fits = [&](const Plan& plan) { return capacity == 0 || plan.memory.peak_bytes <= result.memory_limit_bytes; };

  const Plan given = make_plan(base, plan_options);
  result.given = ranked(spec, given);
  result.given_fits = fits(given);

  // Each value once, numbers ascending (the enumeration's order is the tie-break's).
  SearchSpace ordered = space;
  const auto sort_unique = [](auto& values) {
    std::sort(values.begin(), values.end());
    values.erase(std::unique(values.begin(), values.end()), values.end());
  };
  for (auto* values : {&ordered.tp, &ordered.cp, &ordered.pp, &ordered.vpp, &ordered.ep, &ordered.micro_batch_size})
    sort_unique(*values);
  sort_unique(ordered.zero_stage);
  sort_unique(ordered.recompute);
  ordered.schedule.clear();
  for (auto s : space.schedule) add_unique(ordered.schedule, s);

  const Enumeration space_index(base, ordered);
  if (space_index.size() > kMaxSearchCandidates)
    throw spec::SpecError({{"search", "the search space has more than " + std::to_string(kMaxSearchCandidates) +
                                          " layouts; give fewer values for some choices"}});
  result.candidates = space_index.size();

  const int hardware = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int64_t chunk = 64;
  result.threads = static_cast<int>(std::clamp<int64_t>((result.candidates + chunk - 1) / chunk, 1,
                                                        options.threads > 0 ? options.threads : hardware));
  std::atomic<int64_t> next{0}, planned{0};
  std::vector<Tally> tallies(result.threads);
  std::mutex mutex;
  std::condition_variable done_cv;
  int finished = 0;
  const auto stopped = [&] { return options.cancel && options.cancel->load(std::memory_order_relaxed); };
  const double given_tokens = result.given->tokens_per_s;

  auto work = [&](Tally& tally) {
    for (int64_t first; !stopped() && (first = next.fetch_add(chunk)) < result.candidates;) {
      const int64_t last = std::min(first + chunk, result.candidates);
      for (int64_t i = first; i < last; ++i) {
        const spec::RunSpec s = space_index.at(i);
        auto errors = spec::validate(s);
        if (!errors.empty()) {
          ++tally.invalid;
          ++tally.invalid_fields[errors.front().field];
          continue;
        }
        const Plan plan = make_plan(s, plan_options);
        if (!fits(plan)) {
          ++tally.over_memory;
          continue;
        }
        ++tally.fitting;
        const auto& pr = plan.prediction;
        if (pr.tokens_per_s > given_tokens) ++tally.faster_than_given;
        tally.keep({pr.tokens_per_s, plan.memory.peak_bytes, i, pr.iteration_time_s, pr.mfu, pr.bubble_fraction},
                   options.top);
      }
      planned.fetch_add(last - first, std::memory_order_relaxed);
    }
    std::lock_guard lock(mutex);
    ++finished;
    done_cv.notify_all();
  };

  std::vector<std::jthread> workers;
  workers.reserve(result.threads);
  for (int t = 0; t < result.threads; ++t) workers.emplace_back(work, std::ref(tallies[t]));
  {
    std::unique_lock lock(mutex);
    while (!done_cv.wait_for(lock, std::chrono::milliseconds(100), [&] { return finished == result.threads; })) {
      if (!options.progress) continue;
      lock.unlock();
      options.progress(planned.load(), result.candidates);
      lock.lock();
    }
  }
  workers.clear();  // joined

  std::vector<Scored> best;
  std::map<std::string, int64_t> fields;
  for (const auto& t : tallies) {
    result.invalid += t.invalid;
    result.over_memory += t.over_memory;
    result.fitting += t.fitting;
    result.given_place += t.faster_than_given;
    best.insert(best.end(), t.best.begin(), t.best.end());
    for (const auto& [field, count] : t.invalid_fields) fields[field] += count;
  }
  result.given_place += 1;
  result.planned = planned.load();
  result.cancelled = result.planned < result.candidates;
  std::sort(best.begin(), best.end(), faster);
  if (best.size() > options.top) best.resize(options.top);
  for (const auto& s : best) {
    spec::RunSpec layout = space_index.at(s.index);
    if (spec.parallel.dp != 0) layout.parallel.dp = layout.data_parallel();
    result.best.push_back({std::move(layout), s.iteration_time_s, s.tokens_per_s, s.mfu, s.bubble_fraction, s.peak_bytes});
  }
  result.invalid_fields.assign(fields.begin(), fields.end());
  std::stable_sort(result.invalid_fields.begin(), result.invalid_fields.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  if (options.progress) options.progress(result.planned, result.candidates);
  result.elapsed_s = std::chrono::duration<double>(Clock::now() - start).count();
  return result;
}

}  // namespace tessera::planner
