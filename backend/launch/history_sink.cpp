// HistorySink: record → store rows, then the frame's stream position.
#include "launch/history_sink.hpp"

#include <cmath>

#include "store/errors.hpp"

namespace tessera::launch {

namespace {

bool is_int(const nlohmann::json& r, const char* key) {
  const auto it = r.find(key);
  return it != r.end() && it->is_number_integer() && it->get<int64_t>() >= 0;
}

double number_or(const nlohmann::json& r, const char* key, double fallback) {
  const auto it = r.find(key);
  return it != r.end() && it->is_number() ? it->get<double>() : fallback;
}

}  // namespace

HistorySink::HistorySink(store::Writer& writer, store::RunHandle run, const std::vector<store::StreamPosition>& stored)
    : writer_(writer), run_(std::move(run)) {
  for (const auto& position : stored) durable_[position.node] = position.seq;
  writer_.flush();
  base_ = writer_.committed().records;
}

int64_t HistorySink::durable_seq(int64_t node) { return durable_[node]; }

void HistorySink::records(int64_t node, int64_t seq, const nlohmann::json& records) {
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
    weight_ += n;
  } catch (const store::StoreError& e) {
    if (e.kind() != store::ErrorKind::invalid) throw;
    for (auto& point : frame_points_) {  // the group was refused whole: keep the good points
      try {
        writer_.append(run_, std::move(point));
        ++points_;
        ++weight_;
      } catch (const store::StoreError& each) {
        if (each.kind() != store::ErrorKind::invalid) throw;
        ++skipped_;
      }
    }
  }
  frame_points_.clear();
  writer_.append(run_, store::StreamPosition{node, seq});
  ++weight_;
  marks_.push_back({node, seq, weight_});
}

void HistorySink::add(const nlohmann::json& r) {
  if (!r.is_object() || !r.contains("type") || !r["type"].is_string()) {
    ++skipped_;
    return;
  }
  const auto& type = r["type"].get_ref<const std::string&>();
  if (type == "step") {
    // Every other numeric field of a step record is a metric of that name (docs/store.md).
    if (!is_int(r, "step") || !is_int(r, "rank")) return void(++skipped_);
    const int64_t step = r["step"].get<int64_t>(), rank = r["rank"].get<int64_t>();
    const double wall = number_or(r, "wall_time_s", 0);
    for (const auto& [key, value] : r.items()) {
      if (key == "type" || key == "step" || key == "rank" || key == "wall_time_s" || !value.is_number()) continue;
      frame_points_.push_back({key, rank, step, wall, value.get<double>()});
    }
    if (on_step) on_step(r);
  } else if (type == "metric") {
    if (!is_int(r, "step") || !is_int(r, "rank") || !r.contains("name") || !r["name"].is_string() ||
        r["name"].get_ref<const std::string&>().empty() || !r.contains("value") || !r["value"].is_number())
      return void(++skipped_);
    frame_points_.push_back({r["name"].get<std::string>(), r["rank"].get<int64_t>(), r["step"].get<int64_t>(),
                             number_or(r, "wall_time_s", 0), r["value"].get<double>()});
  } else if (type == "timeline") {
    if (!is_int(r, "step") || !is_int(r, "rank") || !r.contains("op") || !r["op"].is_string()) return void(++skipped_);
    writer_.append(run_, store::TimelineEvent{r["step"].get<int64_t>(), r["rank"].get<int64_t>(), r.value("stage", int64_t{0}),
                                              r["op"].get<std::string>(), r.value("microbatch", int64_t{0}),
                                              r.value("chunk", int64_t{0}), number_or(r, "start_s", 0), number_or(r, "end_s", 0)});
    ++weight_;
  } else if (type == "log") {
    if (!is_int(r, "rank") || !r.contains("line") || !r["line"].is_string()) return void(++skipped_);
    const std::string stream = r.value("stream", std::string("stdout"));
    writer_.append(run_, store::LogLine{r["rank"].get<int64_t>(), stream == "stderr" ? "stderr" : "stdout",
                                        number_or(r, "time_s", 0), r["line"].get<std::string>()});
    ++weight_;
  } else if (type == "rank_exit") {
    if (!is_int(r, "rank")) return void(++skipped_);
    writer_.append(run_, store::LogLine{r["rank"].get<int64_t>(), "stderr", number_or(r, "time_s", 0),
                                        "tessera-agent: rank " + std::to_string(r["rank"].get<int64_t>()) + " " +
                                            r.value("description", std::string("exited"))});
    ++weight_;
  } else if (type != "run_end") {
    ++skipped_;  // run_end is the session's; anything else is unknown
  }
}

void HistorySink::sync(bool wait) {
  if (wait) writer_.flush();
  // The writer commits in queue order, so once its count covers a frame's mark, the frame is stored.
  const int64_t committed = writer_.committed().records - base_;
  while (!marks_.empty() && marks_.front().weight <= committed) {
    durable_[marks_.front().node] = marks_.front().seq;
    marks_.pop_front();
  }
}

}  // namespace tessera::launch
