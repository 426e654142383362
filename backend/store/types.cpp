// Run statuses, run ids, the rules stored values meet, and UTC time formatting/parsing for the history.
#include "store/types.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <random>

#include "spec/utf8.hpp"
#include "store/csv.hpp"
#include "store/errors.hpp"

namespace tessera::store {

namespace {
constexpr std::string_view kStatusNames[] = {"planned", "starting", "running", "done", "failed", "stopped", "lost"};
}

std::string_view to_string(RunStatus status) { return kStatusNames[static_cast<size_t>(status)]; }

bool has_ended(RunStatus status) {
  return status == RunStatus::done || status == RunStatus::failed || status == RunStatus::stopped;
}

std::string text_problem(std::string_view what, std::string_view text) {
  // Bytes that are not UTF-8 would be stored as they are and break every JSON view of the history
  // (runs list --json failed for all runs), or come back as U+FFFD from an export.
  if (const size_t bad = spec::invalid_utf8_at(text); bad != std::string_view::npos)
    return std::string(what) + " is not UTF-8 text (" + spec::byte_at(text, bad) + ")";
  return {};
}

namespace {
// "" or "byte 0x0A at offset 3": the first control character of `text`, named.
std::string control_character_in(std::string_view text) {
  const size_t at = spec::control_character_at(text);
  return at == std::string_view::npos ? std::string() : spec::byte_at(text, at);
}

// "" or "U+202E at offset 3": the first bidirectional override of `text`, named.
std::string bidi_control_in(std::string_view text) {
  const size_t at = spec::bidi_control_at(text);
  return at == std::string_view::npos ? std::string() : spec::code_point_at(text, at);
}
}  // namespace

std::string run_name_problem(std::string_view name) {
  if (name.empty()) return "a run name cannot be empty";
  if (auto problem = text_problem("a run name", name); !problem.empty()) return problem;
  if (name.size() > kMaxRunNameBytes)
    return "a run name is at most " + std::to_string(kMaxRunNameBytes) + " bytes, this one " + std::to_string(name.size());
  if (const auto at = control_character_in(name); !at.empty())
    return "a run name is one line, without control characters (" + at + ")";
  if (const auto at = bidi_control_in(name); !at.empty())
    return "a run name must not hold a bidirectional override (" + at + "): it would make the name read as other text";
  // In any case: references are read as ids in any case.
  if (name.size() == 32 && std::all_of(name.begin(), name.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); }))
    return "a run name cannot be a run id (32 hex digits): '" + std::string(name) + "' would mean that run";
  return {};
}

std::string tag_problem(std::string_view tag) {
  if (tag.empty()) return "a tag cannot be empty";
  if (auto problem = text_problem("a tag", tag); !problem.empty()) return problem;
  if (tag.size() > kMaxTagBytes)
    return "a tag is at most " + std::to_string(kMaxTagBytes) + " bytes, this one " + std::to_string(tag.size());
  // Tags are edited comma-separated and trimmed in the workbench: a blank or padded tag would show
  // as nothing there, or as another tag.
  if (tag.find_first_not_of(" \t\n\r\f\v") == std::string_view::npos) return "a tag cannot be blank";
  if (const auto at = control_character_in(tag); !at.empty()) return "a tag is one line, without control characters (" + at + ")";
  if (const auto at = bidi_control_in(tag); !at.empty())
    return "a tag must not hold a bidirectional override (" + at + "): it would make the tag read as other text";
  if (std::isspace(static_cast<unsigned char>(tag.front())) || std::isspace(static_cast<unsigned char>(tag.back())))
    return "tag '" + std::string(tag) + "' starts or ends with a space: give it without";
  if (tag.find(',') != std::string_view::npos)
    return "tag '" + std::string(tag) + "' has a comma: tags are listed and edited comma-separated; give each tag on its own";
  return {};
}

std::string wall_time_problem(double wall_time_s) {
  // 1e300 made a run of the year 10850, whose export could not be imported again.
  if (wall_time_s >= 0 && wall_time_s < kYear3000Ms / 1000.0) return {};
  return "wall_time_s must be from 0 to 32503680000 (the year 3000), got " + format_number(wall_time_s);
}

std::string timeline_event_problem(const TimelineEvent& event) {
  for (const auto& [field, value] : {std::pair{"step", event.step}, {"rank", event.rank}, {"stage", event.stage},
                                     {"microbatch", event.microbatch}, {"chunk", event.chunk}})
    if (value < 0) return std::string(field) + " must not be negative, got " + std::to_string(value);
  if (event.op.empty() || event.op.size() > 64) return "op must be 1 to 64 bytes (F, B, Bi, W or a phase's name), got " +
                                                       std::to_string(event.op.size());
  if (const auto at = control_character_in(event.op); !at.empty()) return "op is one line, without control characters (" + at + ")";
  if (!std::isfinite(event.start_s)) return "start_s must be a finite number, got " + format_number(event.start_s);
  if (!std::isfinite(event.end_s) || event.end_s < event.start_s)
    return "end_s must be a finite number at or after start_s (got " + format_number(event.start_s) + " to " +
           format_number(event.end_s) + ")";
  return {};
}

std::string one_line_problem(std::string_view what, std::string_view text) {
  if (auto problem = text_problem(what, text); !problem.empty()) return problem;
  if (const auto at = control_character_in(text); !at.empty())
    return std::string(what) + " is one line, without control characters (" + at + ")";
  return {};
}

std::string metric_name_problem(std::string_view name) {
  if (name.empty()) return "a metric name cannot be empty";
  if (name.size() > kMaxMetricNameBytes)
    return "a metric name is at most " + std::to_string(kMaxMetricNameBytes) + " bytes, this one " + std::to_string(name.size());
  return one_line_problem("a metric name", name);
}

std::string artifact_problem(const Artifact& artifact) {
  if (artifact.kind.empty()) return "kind must not be empty (checkpoint, ...)";
  if (artifact.path.empty()) return "path must not be empty";
  if (auto problem = one_line_problem("kind", artifact.kind); !problem.empty()) return problem;
  if (auto problem = one_line_problem("path", artifact.path); !problem.empty()) return problem;
  if (artifact.step < 0) return "step must not be negative, got " + std::to_string(artifact.step);
  if (artifact.size_bytes < 0) return "size_bytes must not be negative, got " + std::to_string(artifact.size_bytes);
  if (artifact.created_ms < 0 || artifact.created_ms >= kYear3000Ms)
    return "created_ms must be Unix milliseconds before the year 3000, got " + std::to_string(artifact.created_ms);
  return {};
}

std::string log_line_problem(const LogLine& line) {
  if (line.rank < 0) return "rank must not be negative, got " + std::to_string(line.rank);
  if (line.stream != "stdout" && line.stream != "stderr") return "stream '" + line.stream + "' must be stdout or stderr";
  // NaN failed as SQLite's "NOT NULL constraint failed: logs.time_s".
  if (!(line.time_s >= 0 && line.time_s < kYear3000Ms / 1000.0))
    return "time_s must be Unix seconds from 0 to 32503680000 (the year 3000), got " + format_number(line.time_s);
  return {};
}

RunStatus parse_run_status(std::string_view text) {
  for (size_t i = 0; i < std::size(kStatusNames); ++i)
    if (kStatusNames[i] == text) return static_cast<RunStatus>(i);
  throw StoreError(ErrorKind::invalid, "unknown run status '" + std::string(text) +
                                           "' (expected planned, starting, running, done, failed, stopped or lost)");
}

std::string new_run_id() {
  std::random_device device;  // /dev/urandom on Linux
  std::string id;
  id.reserve(32);
  for (int word = 0; word < 4; ++word) {
    char buffer[9];
    std::snprintf(buffer, sizeof buffer, "%08x", static_cast<unsigned>(device()));
    id += buffer;
  }
  return id;
}

bool is_run_id(std::string_view text) {
  if (text.size() != 32) return false;
  for (char c : text)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

int64_t now_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

std::string format_time_utc(int64_t unix_ms) {
  using namespace std::chrono;
  const sys_time<milliseconds> t{milliseconds{unix_ms}};
  const auto day = floor<days>(t);
  const year_month_day ymd{day};
  const hh_mm_ss hms{t - day};
  char buffer[40];
  std::snprintf(buffer, sizeof buffer, "%04d-%02u-%02uT%02d:%02d:%02d.%03dZ", static_cast<int>(ymd.year()),
                static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()), static_cast<int>(hms.hours().count()),
                static_cast<int>(hms.minutes().count()), static_cast<int>(hms.seconds().count()),
                static_cast<int>(hms.subseconds().count()));
  return buffer;
}

int64_t parse_time_utc(std::string_view text) {
  using namespace std::chrono;
  const std::string s(text);
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, sec = 0, ms = 0;
  char sep = 0;
  int consumed = 0;
  bool ok = std::sscanf(s.c_str(), "%4d-%2d-%2d%n", &y, &mo, &d, &consumed) == 3 && consumed == 10;
  size_t pos = 10;
  if (ok && pos < s.size()) {
    ok = std::sscanf(s.c_str() + pos, "%c%2d:%2d%n", &sep, &h, &mi, &consumed) == 3 && consumed == 6 &&
         (sep == 'T' || sep == ' ');
    pos += 6;
    if (ok && pos < s.size() && s[pos] == ':') {
      ok = std::sscanf(s.c_str() + pos, ":%2d%n", &sec, &consumed) == 1 && consumed == 3;
      pos += 3;
      if (ok && pos < s.size() && s[pos] == '.') {
        ok = std::sscanf(s.c_str() + pos, ".%3d%n", &ms, &consumed) == 1 && consumed == 4;
        pos += 4;
      }
    }
    if (ok && pos < s.size() && s[pos] == 'Z') ++pos;
    ok = ok && pos == s.size();
  }
  const year_month_day ymd{year{y}, month{static_cast<unsigned>(mo)}, day{static_cast<unsigned>(d)}};
  if (!ok || !ymd.ok() || h > 23 || mi > 59 || sec > 60)
    throw StoreError(ErrorKind::invalid, "'" + s + "' is not a UTC time like 2025-01-02 or 2025-01-02T03:04:05Z");
  const auto t = sys_days{ymd} + hours{h} + minutes{mi} + seconds{sec} + milliseconds{ms};
  return duration_cast<milliseconds>(t.time_since_epoch()).count();
}

std::string_view tessera_version() { return TESSERA_VERSION; }

}  // namespace tessera::store
