// HistorySink: record → store rows, then the frame's stream position.
#include "launch/history_sink.hpp"

#include <algorithm>
#include <cmath>

#include "planner/plan.hpp"
#include "store/csv.hpp"
#include "store/errors.hpp"

namespace tessera::launch {

namespace {

using protocol::Record;

bool is_int(const Record& r, std::string_view key) {
  const auto* value = r.find(key);
  return value && value->is_number_integer() && value->get<int64_t>() >= 0;
}

bool is_string(const Record& r, std::string_view key) {
  const auto* value = r.find(key);
  return value && value->is_string();
}

double number_or(const Record& r, std::string_view key, double fallback) {
  const auto* value = r.find(key);
  return value && value->is_number() ? value->get<double>() : fallback;
}

// As nlohmann's value(): the field converted to T (throwing on the wrong type), or the fallback.
template <typename T>
T value_or(const Record& r, std::string_view key, T fallback) {
  const auto* value = r.find(key);
  return value ? value->get<T>() : fallback;
}

}  // namespace

store::RunRecord launch_record(const spec::RunSpec& spec, nlohmann::ordered_json spec_json,
                               const std::vector<std::string>& endpoints, const std::string& name,
                               const std::string& base_name) {
  store::RunRecord record;
  record.id = store::new_run_id();
  record.name = name.empty() ? base_name + " " + record.id.substr(0, 8) : name;
  record.spec = std::move(spec_json);
  try {
    record.plan = planner::plan_to_json(planner::make_plan(spec));
  } catch (const std::exception&) {
    // A spec the planner cannot time (an unknown GPU) still runs; its prediction stays empty.
  }
  record.hosts = endpoints;
  record.status = store::RunStatus::starting;
  return record;
}

HistorySink::HistorySink(store::Writer& writer, store::RunHandle run, const std::vector<store::StreamPosition>& stored,
                         std::map<int64_t, double> last_wall_s)
    : writer_(writer), run_(std::move(run)), last_wall_s_(std::move(last_wall_s)) {
  for (const auto& position : stored) durable_[position.node] = position.seq;
}

int64_t HistorySink::durable_seq(int64_t node) { return durable_[node]; }

void HistorySink::records(int64_t node, int64_t seq, const std::vector<protocol::Record>& records) {
  try {
    store_records(node, seq, records);
  } catch (const store::StoreError& e) {
    if (e.kind() == store::ErrorKind::not_found) throw RunGone(e.what());  // deleted while followed
    throw;
  }
}

void HistorySink::store_records(int64_t node, int64_t seq, const std::vector<protocol::Record>& records) {
  for (const auto& record : records) {
    try {
      add(record);
    } catch (const store::StoreError& e) {
      if (e.kind() != store::ErrorKind::invalid) throw;  // a broken history stops the follower
      ++skipped_;
    } catch (const nlohmann::json::exception&) {
      ++skipped_;
    }
  }
  // A frame's metric points go to the writer as one group (one queue entry, one lock).
  const auto n = static_cast<int64_t>(frame_points_.size());
  try {
    if (n > 0) writer_.append(run_, std::move(frame_points_));
    points_ += n;
  } catch (const store::StoreError& e) {
    if (e.kind() != store::ErrorKind::invalid) throw;
    for (auto& point : frame_points_) {  // the group was refused whole: keep the good points
      try {
        writer_.append(run_, std::move(point));
        ++points_;
      } catch (const store::StoreError& each) {
        if (each.kind() != store::ErrorKind::invalid) throw;
        ++skipped_;
      }
    }
  }
  frame_points_.clear();
  marks_.push_back({node, seq, writer_.append(run_, store::StreamPosition{node, seq})});
}

void HistorySink::add(const Record& r) {
  const std::string_view type = r.type();
  if (type.empty()) {
    ++skipped_;
    return;
  }
  const auto index = [&](std::string_view key) { return r.find(key)->get<int64_t>(); };
  if (type == "step") {
    // Every other numeric field of a step record is a metric of that name (docs/store.md).
    if (!is_int(r, "step") || !is_int(r, "rank")) return void(++skipped_);
    const int64_t step = index("step"), rank = index("rank");
    const double wall = wall_time_s(r, rank);
    for (const auto& [key, value] : r.fields) {
      if (key == "type" || key == "step" || key == "rank" || key == "wall_time_s") continue;
      if (r.find(key) != &value) continue;  // a repeated key: its last value counts
      // As runs import reads metrics.jsonl: a diverged step's loss (null, "nan") is a NaN point.
      if (const auto number = store::metric_value(value)) frame_points_.push_back({key, rank, step, wall, *number});
    }
    if (on_step) on_step(r.to_json());
  } else if (type == "metric") {
    const auto* name = r.find("name");
    const auto* value = r.find("value");
    if (!is_int(r, "step") || !is_int(r, "rank") || !name || !name->is_string() ||
        name->get_ref<const std::string&>().empty() || !value || !value->is_number())
      return void(++skipped_);
    frame_points_.push_back({name->get<std::string>(), index("rank"), index("step"), wall_time_s(r, index("rank")),
                             value->get<double>()});
  } else if (type == "timeline") {
    if (!is_int(r, "step") || !is_int(r, "rank") || !is_string(r, "op")) return void(++skipped_);
    writer_.append(run_, store::TimelineEvent{index("step"), index("rank"), value_or(r, "stage", int64_t{0}),
                                              r.find("op")->get<std::string>(), value_or(r, "microbatch", int64_t{0}),
                                              value_or(r, "chunk", int64_t{0}), number_or(r, "start_s", 0),
                                              number_or(r, "end_s", 0)});
  } else if (type == "log") {
    if (!is_int(r, "rank") || !is_string(r, "line")) return void(++skipped_);
    const std::string stream = value_or(r, "stream", std::string("stdout"));
    writer_.append(run_, store::LogLine{index("rank"), stream == "stderr" ? "stderr" : "stdout", number_or(r, "time_s", 0),
                                        r.find("line")->get<std::string>()});
  } else if (type == "artifact") {
    // A checkpoint rank 0 wrote (docs/runtime.md); the same path again replaces the entry.
    if (!is_string(r, "kind") || !is_string(r, "path") || !is_int(r, "step") ||
        r.find("kind")->get_ref<const std::string&>().empty() || r.find("path")->get_ref<const std::string&>().empty())
      return void(++skipped_);
    int64_t created_ms = value_or(r, "created_ms", int64_t{-1});
    if (created_ms < 0 || created_ms >= store::kYear3000Ms) created_ms = store::now_ms();  // before the year 3000, or now
    writer_.append(run_, store::Artifact{r.find("kind")->get<std::string>(), r.find("path")->get<std::string>(), index("step"),
                                         std::max<int64_t>(0, value_or(r, "size_bytes", int64_t{0})), created_ms});
  } else if (type == "rank_exit") {
    if (!is_int(r, "rank")) return void(++skipped_);
    writer_.append(run_, store::LogLine{index("rank"), "stderr", number_or(r, "time_s", 0),
                                        "tessera-agent: rank " + std::to_string(index("rank")) + " " +
                                            value_or(r, "description", std::string("exited"))});
  } else if (type != "run_end") {
    ++skipped_;  // run_end is the session's; anything else is unknown
  }
}

double HistorySink::wall_time_s(const Record& r, int64_t rank) {
  const auto* value = r.find("wall_time_s");
  if (value && value->is_number() && store::wall_time_problem(value->get<double>()).empty())
    return last_wall_s_[rank] = value->get<double>();
  const auto last = last_wall_s_.find(rank);
  return last != last_wall_s_.end() ? last->second : 0;
}

void HistorySink::sync(bool wait) {
  if (wait) writer_.flush();
  // The writer commits in queue order: once it committed a frame's stream position, the frame is stored.
  const int64_t committed = writer_.committed_sequence();
  while (!marks_.empty() && marks_.front().sequence <= committed) {
    durable_[marks_.front().node] = marks_.front().seq;
    marks_.pop_front();
  }
}

}  // namespace tessera::launch
