// RunFeed: incremental reads of one run from the history.
#include "run_feed.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "planner/grid.hpp"

namespace tessera::ui {

namespace {

constexpr int64_t kMaxMemoryRanks = 256;  ///< more ranks than this: memory of the first rank per stage only
const std::string kExitPrefix = "tessera-agent: rank ";

}  // namespace

const char* to_string(RankState state) {
  switch (state) {
    case RankState::starting: return "starting";
    case RankState::running: return "running";
    case RankState::done: return "done";
    case RankState::failed: return "failed";
    case RankState::stopped: return "stopped";
    case RankState::lost: return "lost";
  }
  return "unknown";
}

const std::vector<std::string>& RunFeed::runMetrics() {
  static const std::vector<std::string> metrics = {store::metric_name::loss,         store::metric_name::grad_norm,
                                                   store::metric_name::lr,           store::metric_name::tokens_per_s,
                                                   "model_tflops",                   store::metric_name::mfu,
                                                   store::metric_name::bubble,       store::metric_name::peak_memory_bytes};
  return metrics;
}

RunFeed::RunFeed(const std::string& db_path, const std::string& run_id) : history_(db_path) {
  run_ = history_.run(history_.resolve(run_id));
  try {
    spec_ = spec::parse_stored_spec(nlohmann::json::parse(run_.spec.dump()));
    tokens_per_step_ = spec_->training.global_batch_size * spec_->model.seq_length;
  } catch (const std::exception&) {
    spec_.reset();  // plotted by step and wall time only
  }
}

int64_t RunFeed::worldSize() const {
  if (spec_) return spec_->world_size();
  int64_t world = 0;
  for (const auto& [key, data] : series_) world = std::max(world, key.second + 1);
  return world;
}

int64_t RunFeed::stageOf(int64_t rank) const {
  if (!spec_) return 0;
  const auto& p = spec_->parallel;
  return planner::rank_coord(rank, p.tp, p.cp, p.ep, spec_->data_parallel(), p.pp, spec_->cluster.gpus_per_node).pp;
}

bool RunFeed::wanted(const std::string& metric) const {
  const auto& metrics = runMetrics();
  return std::find(metrics.begin(), metrics.end(), metric) != metrics.end();
}

FeedUpdate RunFeed::poll() {
  FeedUpdate update;
  const auto before = run_;
  run_ = history_.run(run_.id);
  update.run_changed = run_.status != before.status || run_.exit_reason != before.exit_reason ||
                       run_.ended_ms != before.ended_ms;

  // Which series to read: per metric the lowest rank, per stage for bubble (and memory when the
  // world is large), every rank for memory.
  std::map<std::string, int64_t> lowest;
  std::map<std::pair<std::string, int64_t>, int64_t> lowest_in_stage;
  const auto infos = history_.series(run_.id);
  for (const auto& info : infos) {
    if (!wanted(info.metric)) continue;
    auto [it, inserted] = lowest.emplace(info.metric, info.rank);
    if (!inserted) it->second = std::min(it->second, info.rank);
    auto [st, fresh] = lowest_in_stage.emplace(std::pair{info.metric, stageOf(info.rank)}, info.rank);
    if (!fresh) st->second = std::min(st->second, info.rank);
  }
  for (const auto& info : infos) {
    if (!wanted(info.metric)) continue;
    bool read = false;
    if (info.metric == store::metric_name::peak_memory_bytes && worldSize() <= kMaxMemoryRanks) read = true;
    else if (info.metric == store::metric_name::bubble || info.metric == store::metric_name::peak_memory_bytes)
      read = lowest_in_stage.at({info.metric, stageOf(info.rank)}) == info.rank;
    else read = lowest.at(info.metric) == info.rank;
    if (!read) continue;
    SeriesData& data = series_[{info.metric, info.rank}];
    if (!data.steps.empty() && info.last_step <= data.steps.back()) continue;
    const auto points = history_.points_after(run_.id, info.metric, info.rank, data.steps.empty() ? -1 : data.steps.back());
    if (points.empty()) continue;
    update.grown.push_back({{info.metric, info.rank}, data.size()});
    for (const auto& p : points) {
      if (start_wall_s_ == 0 || (p.wall_time_s > 0 && p.wall_time_s < start_wall_s_)) start_wall_s_ = p.wall_time_s;
      data.steps.push_back(p.step);
      data.wall_time_s.push_back(p.wall_time_s);
      data.values.push_back(p.value);
      last_step_ = std::max(last_step_, p.step);
    }
  }

  // The peak the MFU is a share of, as the MFU's rank recorded it (a preset, or on CPU a GEMM it
  // measured at start-up): read once, when that rank's first MFU arrives.
  if (!mfu_peak_tflops_ && lowest.count(store::metric_name::mfu)) {
    const auto peaks = history_.points_after(run_.id, "peak_tflops", lowest.at(store::metric_name::mfu), -1);
    if (!peaks.empty() && peaks.back().value > 0) mfu_peak_tflops_ = peaks.back().value;
  }

  update.logs_before = logs_.size();
  for (auto& line : history_.logs_after(run_.id, static_cast<int64_t>(logs_.size()))) {
    noteLog(line);
    logs_.push_back(std::move(line));
  }

  // A handful of rows (one per checkpoint), read whole, in step order (History::artifacts' order).
  auto artifacts = history_.artifacts(run_.id);
  update.artifacts_changed = artifacts != artifacts_;
  if (update.artifacts_changed) artifacts_ = std::move(artifacts);

  const auto timeline_step = history_.last_timeline_step(run_.id);
  // The latest step is complete once a later one started or the run ended.
  update.timeline_changed = timeline_step != last_timeline_step_;
  last_timeline_step_ = timeline_step;
  return update;
}

void RunFeed::noteLog(const store::LogLine& line) {
  // The history sink records each rank's exit as "tessera-agent: rank N <description>".
  if (line.line.rfind(kExitPrefix, 0) != 0) return;
  const std::string rest = line.line.substr(kExitPrefix.size());
  const auto space = rest.find(' ');
  if (space == std::string::npos) return;
  try {
    exits_[std::stoll(rest.substr(0, space))] = rest.substr(space + 1);
  } catch (const std::exception&) {
    // Not an exit line after all.
  }
}

const SeriesData* RunFeed::find(const std::string& metric, int64_t rank) const {
  const auto it = series_.find({metric, rank});
  return it == series_.end() ? nullptr : &it->second;
}

std::optional<int64_t> RunFeed::firstRankOf(const std::string& metric) const {
  const auto it = series_.lower_bound({metric, std::numeric_limits<int64_t>::min()});
  if (it == series_.end() || it->first.first != metric) return std::nullopt;
  return it->first.second;
}

std::vector<store::TimelineEvent> RunFeed::timeline(int64_t step) const { return history_.timeline_of_step(run_.id, step); }

std::string RunFeed::rankExit(int64_t rank) const {
  const auto it = exits_.find(rank);
  return it == exits_.end() ? std::string() : it->second;
}

RankState RunFeed::rankState(int64_t rank) const {
  if (const auto it = exits_.find(rank); it != exits_.end()) {
    if (it->second == "exited with code 0") return RankState::done;
    // The run names its first failing rank ("rank 3 killed by signal 9"); the others were stopped.
    if (run_.exit_reason.rfind("rank " + std::to_string(rank) + " ", 0) == 0) return RankState::failed;
    return run_.status == store::RunStatus::running ? RankState::failed : RankState::stopped;
  }
  switch (run_.status) {
    case store::RunStatus::planned:
    case store::RunStatus::starting: return RankState::starting;
    case store::RunStatus::running: {
      for (const auto& [key, data] : series_)
        if (key.second == rank && !data.steps.empty()) return RankState::running;
      return RankState::starting;
    }
    case store::RunStatus::done: return RankState::done;
    case store::RunStatus::lost: return RankState::lost;
    case store::RunStatus::failed:
      return run_.exit_reason.rfind("rank " + std::to_string(rank) + " ", 0) == 0 ? RankState::failed : RankState::stopped;
    case store::RunStatus::stopped: return RankState::stopped;
  }
  return RankState::lost;
}

}  // namespace tessera::ui
