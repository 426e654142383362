// Run bundles: export of a run as one JSON document or a directory of CSV files + run.json, and the
// atomic import of those and of `tessera-train --out` directories (spec.json + metrics.jsonl).
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <ostream>
#include <sys/stat.h>

#include "spec/json_keys.hpp"
#include "spec/json_nesting.hpp"
#include "store/csv.hpp"
#include "store/errors.hpp"
#include "store/history.hpp"
#include "store/ingest.hpp"

namespace tessera::store {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

namespace {

constexpr int kBundleFormat = 1;

// JSON text of a value, bytes that are not UTF-8 (a hand-edited history can hold them)
// as U+FFFD: an export never stops half-written on a type_error.
std::string json_text(const ojson& value, int indent = -1) {
  return value.dump(indent, ' ', false, ojson::error_handler_t::replace);
}
const std::vector<std::string> kMetricsHeader = {"name", "rank", "step", "wall_time_s", "value"};
const std::vector<std::string> kTimelineHeader = {"step", "rank", "stage", "op", "microbatch", "chunk", "start_s", "end_s"};
const std::vector<std::string> kLogsHeader = {"rank", "stream", "time_s", "line"};
const std::vector<std::string> kArtifactsHeader = {"kind", "path", "step", "size_bytes", "created"};

std::string join(const std::vector<std::string>& parts) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : ",") + p;
  return out;
}

ojson time_or_null(const std::optional<int64_t>& ms) { return ms ? ojson(format_time_utc(*ms)) : ojson(nullptr); }

ojson run_to_json(const RunRecord& run) {
  return ojson{{"id", run.id},
               {"name", run.name},
               {"status", to_string(run.status)},
               {"created", format_time_utc(run.created_ms)},
               {"started", time_or_null(run.started_ms)},
               {"ended", time_or_null(run.ended_ms)},
               {"exit_reason", run.exit_reason},
               {"spec", run.spec},
               {"plan", run.plan},
               {"hosts", run.hosts},
               {"tags", run.tags},
               {"notes", run.notes},
               {"tessera_version", run.tessera_version}};
}

// Reading JSON values with errors that name where they are.
const ojson& field(const ojson& object, const char* key, const std::string& where) {
  if (!object.is_object()) throw StoreError(ErrorKind::invalid, where + " must be an object");
  const auto it = object.find(key);
  if (it == object.end()) throw StoreError(ErrorKind::invalid, where + "." + key + " is missing");
  return *it;
}

std::string get_string(const ojson& value, const std::string& where) {
  if (!value.is_string()) throw StoreError(ErrorKind::invalid, where + " must be a string");
  return value.get<std::string>();
}

int64_t get_integer(const ojson& value, const std::string& where) {
  if (!value.is_number_integer()) throw StoreError(ErrorKind::invalid, where + " must be an integer");
  // 2^63 and above parse as unsigned: read as int64 they wrapped to a negative number.
  if (value.is_number_unsigned() && value.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    throw StoreError(ErrorKind::invalid, where + " = " + value.dump() + " is out of range (at most 2^63 - 1)");
  return value.get<int64_t>();
}

/// A number, or "nan"/"inf"/"-inf", or null (NaN): how bundles and metrics.jsonl write values.
double get_value(const ojson& value, const std::string& where) {
  if (const auto number = metric_value(value)) return *number;
  // Of strings only the three a JSON number cannot spell: "5" read as 5 hid a bundle written wrong.
  if (value.is_string())
    throw StoreError(ErrorKind::invalid, where + " must be a number (or \"nan\", \"inf\", \"-inf\"), got the string " + value.dump());
  throw StoreError(ErrorKind::invalid, where + " must be a number");
}

std::optional<int64_t> get_optional_time(const ojson& object, const char* key, const std::string& where) {
  const auto& value = field(object, key, where);
  if (value.is_null()) return std::nullopt;
  return parse_time_utc(get_string(value, where + "." + key));
}

RunRecord run_from_json(const ojson& object, const std::string& where) {
  RunRecord run;
  run.id = get_string(field(object, "id", where), where + ".id");
  if (!is_run_id(run.id)) throw StoreError(ErrorKind::invalid, where + ".id '" + run.id + "' is not 32 lowercase hex digits");
  run.name = get_string(field(object, "name", where), where + ".name");
  run.status = parse_run_status(get_string(field(object, "status", where), where + ".status"));
  run.created_ms = parse_time_utc(get_string(field(object, "created", where), where + ".created"));
  run.started_ms = get_optional_time(object, "started", where);
  run.ended_ms = get_optional_time(object, "ended", where);
  run.exit_reason = get_string(field(object, "exit_reason", where), where + ".exit_reason");
  run.spec = field(object, "spec", where);
  if (!run.spec.is_object()) throw StoreError(ErrorKind::invalid, where + ".spec must be an object");
  run.plan = field(object, "plan", where);
  for (const char* list : {"hosts", "tags"}) {
    const auto& values = field(object, list, where);
    if (!values.is_array()) throw StoreError(ErrorKind::invalid, where + "." + list + " must be an array of strings");
    auto& target = std::string_view(list) == "hosts" ? run.hosts : run.tags;
    for (size_t i = 0; i < values.size(); ++i)
      target.push_back(get_string(values[i], where + "." + list + "[" + std::to_string(i) + "]"));
  }
  run.notes = get_string(field(object, "notes", where), where + ".notes");
  run.tessera_version = get_string(field(object, "tessera_version", where), where + ".tessera_version");
  return run;
}

// The store's rules for values from outside (types.hpp), applied by every import whatever the file (a
// bundle or tessera-train's metrics.jsonl) as the live writer applies them: what the history holds
// reads back and exports again (docs/store.md, "Importing").
void refuse_problem(const std::string& problem, const std::string& where) {
  if (!problem.empty()) throw StoreError(ErrorKind::invalid, where + ": " + problem);
}

double checked_wall_time_s(double wall_time_s, const std::string& where) {
  refuse_problem(wall_time_problem(wall_time_s), where);
  return wall_time_s;
}

const Artifact& checked(const Artifact& artifact, const std::string& where) {
  refuse_problem(artifact_problem(artifact), where);
  return artifact;
}

const LogLine& checked(const LogLine& line, const std::string& where) {
  refuse_problem(log_line_problem(line), where);
  return line;
}

const TimelineEvent& checked(const TimelineEvent& event, const std::string& where) {
  refuse_problem(timeline_event_problem(event), where);
  return event;
}

// A bundle's run: it does not end before it started, a planned one has neither, its tags are ones
// `runs tag` would take. (Its start may precede its creation: the agent's clock is not the
// workbench's.) One exported while it was starting or running comes in lost: no process here writes
// it, and the next writer to open the history took it for one whose writer had died.
void check_run(RunRecord& run, const std::string& where) {
  if (run.status == RunStatus::planned && (run.started_ms || run.ended_ms))
    throw StoreError(ErrorKind::invalid, where + ".status is planned, but the run has " +
                                             (run.started_ms ? where + ".started" : where + ".ended") +
                                             ": a planned run has not started");
  if (run.status == RunStatus::starting || run.status == RunStatus::running) {
    run.exit_reason = std::string(to_string(run.status)) + " when it was exported; imported as lost (no process here writes it)";
    run.status = RunStatus::lost;
  }
  for (const auto& [field, ms] : {std::pair{"created", std::optional<int64_t>(run.created_ms)}, {"started", run.started_ms},
                                  {"ended", run.ended_ms}})
    if (ms && (*ms < 0 || *ms >= kYear3000Ms))
      throw StoreError(ErrorKind::invalid, where + "." + field + " (" + format_time_utc(*ms) + ") must be from 1970 to the year 3000");
  if (run.started_ms && run.ended_ms && *run.ended_ms < *run.started_ms)
    throw StoreError(ErrorKind::invalid, where + ".ended (" + format_time_utc(*run.ended_ms) + ") is before " + where + ".started (" +
                                             format_time_utc(*run.started_ms) + ")");
  for (size_t i = 0; i < run.tags.size(); ++i)
    if (const auto problem = tag_problem(run.tags[i]); !problem.empty())
      throw StoreError(ErrorKind::invalid, where + ".tags[" + std::to_string(i) + "]: " + problem);
  for (size_t i = 0; i < run.hosts.size(); ++i)
    if (const auto problem = one_line_problem("a host", run.hosts[i]); !problem.empty())
      throw StoreError(ErrorKind::invalid, where + ".hosts[" + std::to_string(i) + "]: " + problem);
}

void check_bundle_header(const ojson& document, const std::string& file) {
  if (!document.is_object() || !document.contains("tessera_bundle"))
    throw StoreError(ErrorKind::invalid, file + " is not a Tessera run bundle (no \"tessera_bundle\" field)");
  const auto& format = document["tessera_bundle"];
  if (!format.is_number_integer() || format.get<int64_t>() < 1)
    throw StoreError(ErrorKind::invalid, file + ": \"tessera_bundle\" must be a positive integer");
  if (format.get<int64_t>() > kBundleFormat)
    throw StoreError(ErrorKind::invalid, file + " is bundle format " + std::to_string(format.get<int64_t>()) +
                                             ", newer than this Tessera reads (" + std::to_string(kBundleFormat) + ")");
}

/// `path` opened for reading; `hint` follows the reason it cannot be. A directory opens as an empty
/// file (a directory named metrics.jsonl imported as a run without steps), a pipe blocks the import.
std::ifstream open_file(const fs::path& path, const std::string& hint = {}) {
  std::error_code ec;
  const auto status = fs::status(path, ec);
  if (fs::is_directory(status)) throw StoreError(ErrorKind::invalid, path.string() + " is a directory, not a file" + hint);
  if (fs::exists(status) && !fs::is_regular_file(status))
    throw StoreError(ErrorKind::invalid, path.string() + " is not a regular file" + hint);
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw StoreError(ErrorKind::invalid, "cannot read " + path.string() + (errno != 0 ? std::string(": ") + std::strerror(errno) : "") + hint);
  return in;
}

// "gives \"step\" twice (which one is meant?)": nlohmann keeps the last of two equal keys without a
// word, so a metrics line {"step":1,"step":200} was imported as step 200.
std::string gives_twice(const std::string& dotted_key) {
  return "gives \"" + spec::shown_key_path(dotted_key) + "\" twice (which one is meant?)";
}

ojson read_json_file(const fs::path& path) {
  std::ifstream in = open_file(path);
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (auto error = spec::json_text_error(text, path.string())) throw StoreError(ErrorKind::invalid, *error);
  std::optional<std::string> duplicate;
  ojson document;
  try {
    document = spec::parse_json_unique_keys<ojson>(text, duplicate);
  } catch (const nlohmann::json::exception& e) {  // syntax, and numbers out of range (1e400)
    throw StoreError(ErrorKind::invalid, path.string() + " is not valid JSON: " + spec::json_error_reason(e.what()));
  }
  if (duplicate) throw StoreError(ErrorKind::invalid, path.string() + " " + gives_twice(*duplicate));
  return document;
}

/// Runs `insert`, prefixing an invalid-data error with where it happened.
template <class F>
void at(const std::string& where, F&& insert) {
  try {
    insert();
  } catch (const StoreError& e) {
    if (e.kind() != ErrorKind::invalid) throw;
    const std::string message = e.what();
    throw StoreError(ErrorKind::invalid, message.rfind(where, 0) == 0 ? message : where + ": " + message);
  }
}

std::ofstream create_file(const fs::path& path) {
  std::ofstream out(path, std::ios::binary);
  if (!out) throw StoreError(ErrorKind::io, "cannot create " + path.string());
  out.precision(17);
  return out;
}

void close_file(std::ofstream& out, const fs::path& path) {
  out.close();
  if (!out) throw StoreError(ErrorKind::io, "cannot write " + path.string() + " (disk full?)");
}

}  // namespace

void History::export_json(const std::string& id, std::ostream& out) const {
  const RunRecord record = run(id);
  const int64_t key = key_of(id);
  out << "{\n\"tessera_bundle\": " << kBundleFormat << ",\n\"run\": " << json_text(run_to_json(record)) << ",\n\"metrics\": [";
  {
    Statement rows(connection_,
                   "SELECT n.name, s.id, s.rank, m.step, m.wall_time_s, m.value FROM series s JOIN metric_names n ON n.id = s.metric "
                   "JOIN metrics m ON m.series = s.id WHERE s.run = ? ORDER BY s.id, m.step");
    rows.bind_int(1, key);
    int64_t series = -1;
    bool first_series = true, first_point = true;
    while (rows.step("exporting metrics")) {
      if (rows.column_int(1) != series) {
        series = rows.column_int(1);
        const int64_t rank = rows.column_int(2);
        out << (first_series ? "\n" : "]},\n") << "{\"name\": " << json_text(ojson(rows.column_text(0))) << ", \"rank\": " << rank
            << ", \"points\": [";
        first_series = false;
        first_point = true;
      }
      const double value = rows.column_real(5);
      out << (first_point ? "" : ",") << "[" << rows.column_int(3) << "," << format_number(rows.column_real(4)) << ","
          << (std::isfinite(value) ? format_number(value) : "\"" + format_number(value) + "\"") << "]";
      first_point = false;
    }
    if (!first_series) out << "]}\n";
  }
  out << "],\n\"timeline\": [";
  const auto events = timeline(id);
  for (size_t i = 0; i < events.size(); ++i) {
    const auto& e = events[i];
    out << (i ? ",\n" : "\n") << "{\"step\": " << e.step << ", \"rank\": " << e.rank << ", \"stage\": " << e.stage
        << ", \"op\": " << json_text(ojson(e.op)) << ", \"microbatch\": " << e.microbatch << ", \"chunk\": " << e.chunk
        << ", \"start_s\": " << format_number(e.start_s) << ", \"end_s\": " << format_number(e.end_s) << "}";
  }
  out << "],\n\"logs\": [";
  const auto lines = logs(id);
  for (size_t i = 0; i < lines.size(); ++i) {
    const auto& l = lines[i];
    out << (i ? ",\n" : "\n") << "{\"rank\": " << l.rank << ", \"stream\": " << json_text(ojson(l.stream))
        << ", \"time_s\": " << format_number(l.time_s) << ", \"line\": " << json_text(ojson(l.line)) << "}";
  }
  out << "],\n\"artifacts\": [";
  const auto files = artifacts(id);
  for (size_t i = 0; i < files.size(); ++i) {
    const auto& a = files[i];
    out << (i ? ",\n" : "\n")
        << json_text(ojson{{"kind", a.kind}, {"path", a.path}, {"step", a.step}, {"size_bytes", a.size_bytes}, {"created", format_time_utc(a.created_ms)}});
  }
  out << "]\n}\n";
  if (!out) throw StoreError(ErrorKind::io, "writing the bundle of run " + id + " failed (disk full?)");
}

void History::export_csv(const std::string& id, const std::string& directory) const {
  const fs::path dir(directory);
  std::error_code ec;
  for (const char* file : {"run.json", "metrics.csv", "timeline.csv", "logs.csv", "artifacts.csv"})
    if (fs::exists(dir / file, ec))
      throw StoreError(ErrorKind::invalid, directory + " already holds " + file + "; choose another directory");
  fs::create_directories(dir, ec);
  if (ec) throw StoreError(ErrorKind::io, "cannot create directory " + directory + ": " + ec.message());
  const RunRecord record = run(id);

  {
    auto out = create_file(dir / "metrics.csv");
    write_csv_row(out, kMetricsHeader);
    Statement rows(connection_,
                   "SELECT n.name, s.rank, m.step, m.wall_time_s, m.value FROM series s JOIN metric_names n ON n.id = s.metric "
                   "JOIN metrics m ON m.series = s.id WHERE s.run = ? ORDER BY s.id, m.step");
    rows.bind_int(1, key_of(id));
    while (rows.step("exporting metrics"))
      write_csv_row(out, {rows.column_text(0), std::to_string(rows.column_int(1)), std::to_string(rows.column_int(2)),
                          format_number(rows.column_real(3)), format_number(rows.column_real(4))});
    close_file(out, dir / "metrics.csv");
  }
  {
    auto out = create_file(dir / "timeline.csv");
    write_csv_row(out, kTimelineHeader);
    for (const auto& e : timeline(id))
      write_csv_row(out, {std::to_string(e.step), std::to_string(e.rank), std::to_string(e.stage), e.op,
                          std::to_string(e.microbatch), std::to_string(e.chunk), format_number(e.start_s), format_number(e.end_s)});
    close_file(out, dir / "timeline.csv");
  }
  {
    auto out = create_file(dir / "logs.csv");
    write_csv_row(out, kLogsHeader);
    for (const auto& l : logs(id)) write_csv_row(out, {std::to_string(l.rank), l.stream, format_number(l.time_s), l.line});
    close_file(out, dir / "logs.csv");
  }
  {
    auto out = create_file(dir / "artifacts.csv");
    write_csv_row(out, kArtifactsHeader);
    for (const auto& a : artifacts(id))
      write_csv_row(out, {a.kind, a.path, std::to_string(a.step), std::to_string(a.size_bytes), format_time_utc(a.created_ms)});
    close_file(out, dir / "artifacts.csv");
  }
  {  // run.json last: its presence marks a complete bundle
    auto out = create_file(dir / "run.json");
    out << json_text(ojson{{"tessera_bundle", kBundleFormat}, {"run", run_to_json(record)}}, 2) << "\n";
    close_file(out, dir / "run.json");
  }
}

namespace {

RunCounts import_json_bundle(Connection& connection, const fs::path& file, const ImportOptions& options, RunRecord& run) {
  const ojson document = read_json_file(file);
  const std::string name = file.filename().string();
  check_bundle_header(document, name);
  run = run_from_json(field(document, "run", name), "run");
  check_run(run, "run");
  if (!options.name.empty()) run.name = options.name;
  const int64_t key = insert_run(connection, run);
  Ingest ingest(connection, Ingest::OnDuplicate::fail);
  RunCounts counts;
  auto array = [&](const char* key_name) -> const ojson& {
    const auto& value = field(document, key_name, name);
    if (!value.is_array()) throw StoreError(ErrorKind::invalid, std::string(key_name) + " must be an array");
    return value;
  };
  const auto& metrics = array("metrics");
  for (size_t i = 0; i < metrics.size(); ++i) {
    const std::string where = "metrics[" + std::to_string(i) + "]";
    const auto& series = metrics[i];
    int64_t metric = 0;
    at(where + ".name", [&] { metric = ingest.metric_id(get_string(field(series, "name", where), where + ".name")); });
    int64_t series_id = 0;
    at(where, [&] { series_id = ingest.series_id(key, metric, get_integer(field(series, "rank", where), where + ".rank")); });
    const auto& points = field(series, "points", where);
    if (!points.is_array()) throw StoreError(ErrorKind::invalid, where + ".points must be an array");
    for (size_t j = 0; j < points.size(); ++j) {
      const std::string at_point = where + ".points[" + std::to_string(j) + "]";
      const auto& p = points[j];
      if (!p.is_array() || p.size() != 3) throw StoreError(ErrorKind::invalid, at_point + " must be [step, wall_time_s, value]");
      at(at_point, [&] {
        ingest.metric(series_id, get_integer(p[0], at_point + "[0]"),
                      checked_wall_time_s(get_value(p[1], at_point + "[1]"), at_point), get_value(p[2], at_point + "[2]"));
      });
      ++counts.points;
    }
  }
  const auto& events = array("timeline");
  for (size_t i = 0; i < events.size(); ++i) {
    const std::string where = "timeline[" + std::to_string(i) + "]";
    const auto& e = events[i];
    at(where, [&] {
      ingest.event(key, checked(TimelineEvent{get_integer(field(e, "step", where), where + ".step"),
                                              get_integer(field(e, "rank", where), where + ".rank"),
                                              get_integer(field(e, "stage", where), where + ".stage"),
                                              get_string(field(e, "op", where), where + ".op"),
                                              get_integer(field(e, "microbatch", where), where + ".microbatch"),
                                              get_integer(field(e, "chunk", where), where + ".chunk"),
                                              get_value(field(e, "start_s", where), where + ".start_s"),
                                              get_value(field(e, "end_s", where), where + ".end_s")},
                                where));
    });
    ++counts.events;
  }
  const auto& lines = array("logs");
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string where = "logs[" + std::to_string(i) + "]";
    const auto& l = lines[i];
    at(where, [&] {
      ingest.log(key, checked(LogLine{get_integer(field(l, "rank", where), where + ".rank"),
                                      get_string(field(l, "stream", where), where + ".stream"),
                                      get_value(field(l, "time_s", where), where + ".time_s"),
                                      get_string(field(l, "line", where), where + ".line")},
                              where));
    });
    ++counts.log_lines;
  }
  const auto& files = array("artifacts");
  for (size_t i = 0; i < files.size(); ++i) {
    const std::string where = "artifacts[" + std::to_string(i) + "]";
    const auto& a = files[i];
    at(where, [&] {
      ingest.artifact(key, checked(Artifact{get_string(field(a, "kind", where), where + ".kind"),
                                            get_string(field(a, "path", where), where + ".path"),
                                            get_integer(field(a, "step", where), where + ".step"),
                                            get_integer(field(a, "size_bytes", where), where + ".size_bytes"),
                                            parse_time_utc(get_string(field(a, "created", where), where + ".created"))},
                                   where));
    });
    ++counts.artifacts;
  }
  ingest.finish();
  return counts;
}

/// Reads every row of one CSV file of a bundle after checking its header.
template <class F>
int64_t for_each_csv_row(const fs::path& directory, const std::string& name, const std::vector<std::string>& header, F&& row) {
  const fs::path path = directory / name;
  std::ifstream in =
      open_file(path, " (a CSV bundle holds run.json, metrics.csv, timeline.csv, logs.csv and artifacts.csv)");
  CsvReader reader(in, name);
  std::vector<std::string> fields;
  if (!reader.next(fields) || fields != header)
    throw StoreError(ErrorKind::invalid, name + ": the first line must be the header " + join(header));
  int64_t rows = 0;
  while (reader.next(fields)) {
    if (fields.size() == 1 && fields[0].empty()) continue;  // blank line
    if (fields.size() != header.size())
      throw StoreError(ErrorKind::invalid, reader.where() + ": " + std::to_string(fields.size()) + " fields, expected " +
                                               std::to_string(header.size()) + " (" + join(header) + ")");
    // The history holds UTF-8 text, as everything the agents and tessera-train write is: a field of
    // another encoding is refused here, not stored and exported later as U+FFFD.
    for (size_t i = 0; i < fields.size(); ++i)
      if (const auto problem = text_problem(header[i], fields[i]); !problem.empty())
        throw StoreError(ErrorKind::invalid, reader.where() + ": " + problem);
    at(reader.where(), [&] { row(fields, reader.where()); });
    ++rows;
  }
  return rows;
}

RunCounts import_csv_bundle(Connection& connection, const fs::path& directory, const ImportOptions& options, RunRecord& run) {
  const ojson document = read_json_file(directory / "run.json");
  check_bundle_header(document, "run.json");
  run = run_from_json(field(document, "run", "run.json"), "run");
  check_run(run, "run");
  if (!options.name.empty()) run.name = options.name;
  const int64_t key = insert_run(connection, run);
  Ingest ingest(connection, Ingest::OnDuplicate::fail);
  RunCounts counts;
  counts.points = for_each_csv_row(directory, "metrics.csv", kMetricsHeader, [&](const auto& f, const std::string& where) {
    ingest.metric(ingest.series_id(key, ingest.metric_id(f[0]), parse_integer(f[1], where + " rank")), parse_integer(f[2], where + " step"),
                  checked_wall_time_s(parse_number(f[3], where + " wall_time_s"), where), parse_number(f[4], where + " value"));
  });
  counts.events = for_each_csv_row(directory, "timeline.csv", kTimelineHeader, [&](const auto& f, const std::string& where) {
    ingest.event(key, checked(TimelineEvent{parse_integer(f[0], where + " step"), parse_integer(f[1], where + " rank"),
                                            parse_integer(f[2], where + " stage"), f[3], parse_integer(f[4], where + " microbatch"),
                                            parse_integer(f[5], where + " chunk"), parse_number(f[6], where + " start_s"),
                                            parse_number(f[7], where + " end_s")},
                              where));
  });
  counts.log_lines = for_each_csv_row(directory, "logs.csv", kLogsHeader, [&](const auto& f, const std::string& where) {
    ingest.log(key, checked(LogLine{parse_integer(f[0], where + " rank"), f[1], parse_number(f[2], where + " time_s"), f[3]}, where));
  });
  counts.artifacts = for_each_csv_row(directory, "artifacts.csv", kArtifactsHeader, [&](const auto& f, const std::string& where) {
    ingest.artifact(key, checked(Artifact{f[0], f[1], parse_integer(f[2], where + " step"), parse_integer(f[3], where + " size_bytes"),
                                          parse_time_utc(f[4])},
                                 where));
  });
  ingest.finish();
  return counts;
}

int64_t file_mtime_ms(const fs::path& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) return now_ms();
  return static_cast<int64_t>(info.st_mtim.tv_sec) * 1000 + info.st_mtim.tv_nsec / 1000000;
}

RunCounts import_train_output(Connection& connection, const fs::path& directory, const ImportOptions& options, RunRecord& run) {
  run.id = new_run_id();
  auto normal = fs::absolute(directory).lexically_normal();
  if (normal.filename().empty()) normal = normal.parent_path();  // "out/" names the run "out"
  run.name = options.name.empty() ? normal.filename().string() : options.name;
  run.spec = read_json_file(directory / "spec.json");
  if (!run.spec.is_object()) throw StoreError(ErrorKind::invalid, (directory / "spec.json").string() + " must hold a JSON object");
  run.created_ms = file_mtime_ms(directory / "spec.json");
  run.tessera_version = tessera_version();
  const int64_t key = insert_run(connection, run);

  const fs::path metrics_path = directory / "metrics.jsonl";
  std::ifstream in = open_file(metrics_path);
  Ingest ingest(connection, Ingest::OnDuplicate::fail);
  RunCounts counts;
  std::optional<double> first_wall_s, last_wall_s;
  std::optional<double> origin_from_artifact_s;  // Unix seconds of wall_time_s 0, from an artifact record
  int64_t last_step = -1;
  int64_t cut_line = 0;  // a last line the file ends inside (no newline, its JSON unfinished): a rank killed mid-write
  std::string line;
  for (int64_t number = 1; std::getline(in, line); ++number) {
    const std::string where = "metrics.jsonl line " + std::to_string(number);
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    if (auto error = spec::json_text_error(line, where)) throw StoreError(ErrorKind::invalid, *error);
    ojson object;
    std::optional<std::string> duplicate;
    try {
      object = spec::parse_json_unique_keys<ojson>(line, duplicate);
    } catch (const nlohmann::json::exception& e) {  // syntax, and numbers out of range (1e400)
      // A last line (no newline after it) that the parser found ended early: the file ends inside it,
      // and what was written before it is the run. A last line of junk, or a whole one that breaks
      // a rule (1e400, "} x"), is refused as any other line is.
      const auto* syntax = dynamic_cast<const nlohmann::json::parse_error*>(&e);
      if (in.eof() && syntax && syntax->byte > line.size()) {
        cut_line = number;
        break;
      }
      throw StoreError(ErrorKind::invalid, where + " is not valid JSON: " + spec::json_error_reason(e.what()));
    }
    if (duplicate) throw StoreError(ErrorKind::invalid, where + " " + gives_twice(*duplicate));
    if (!object.is_object()) throw StoreError(ErrorKind::invalid, where + " must be a JSON object");
    // tessera-train writes typed records (docs/runtime.md): "step" lines are metrics, "timeline" lines
    // the measured pipeline operations; lines without a type are plain metric lines.
    // A "type" that is no string was stored as a metric named type.
    if (object.contains("type") && !object["type"].is_string())
      throw StoreError(ErrorKind::invalid, where + ": type must be a string (step, timeline, artifact, ...), got " + object["type"].dump());
    const std::string type = object.contains("type") ? object["type"].get<std::string>() : "step";
    if (type == "timeline") {
      TimelineEvent event;
      event.step = get_integer(field(object, "step", where), where + ": step");
      event.rank = get_integer(field(object, "rank", where), where + ": rank");
      event.stage = object.contains("stage") ? get_integer(object["stage"], where + ": stage") : 0;
      const auto& op = field(object, "op", where);
      if (!op.is_string()) throw StoreError(ErrorKind::invalid, where + ": op must be a string");
      event.op = op.get<std::string>();
      event.microbatch = object.contains("microbatch") ? get_integer(object["microbatch"], where + ": microbatch") : 0;
      event.chunk = object.contains("chunk") ? get_integer(object["chunk"], where + ": chunk") : 0;
      for (auto [name, target] : {std::pair{"start_s", &event.start_s}, std::pair{"end_s", &event.end_s}}) {
        const auto& value = field(object, name, where);
        if (!value.is_number()) throw StoreError(ErrorKind::invalid, where + ": " + name + " must be a number");
        *target = value.get<double>();
      }
      at(where, [&] { ingest.event(key, checked(event, where)); });
      ++counts.events;
      continue;
    }
    if (type == "artifact") {  // a checkpoint tessera-train wrote
      Artifact artifact;
      for (auto [name, target] : {std::pair{"kind", &artifact.kind}, std::pair{"path", &artifact.path}}) {
        const auto& value = field(object, name, where);
        if (!value.is_string() || value.get_ref<const std::string&>().empty())
          throw StoreError(ErrorKind::invalid, where + ": " + name + " must be a non-empty string");
        *target = value.get<std::string>();
      }
      artifact.step = get_integer(field(object, "step", where), where + ": step");
      artifact.size_bytes = object.contains("size_bytes") ? get_integer(object["size_bytes"], where + ": size_bytes") : 0;
      artifact.created_ms = object.contains("created_ms") ? get_integer(object["created_ms"], where + ": created_ms")
                                                          : file_mtime_ms(metrics_path);
      checked(artifact, where);
      // Its Unix time beside the step records' clock places the run exactly (the file's mtime is
      // later by the time the checkpoint took to write).
      if (object.contains("created_ms") && object.contains("wall_time_s") && object["wall_time_s"].is_number())
        origin_from_artifact_s = static_cast<double>(artifact.created_ms) / 1000.0 - object["wall_time_s"].get<double>();
      at(where, [&] { ingest.artifact(key, artifact); });
      ++counts.artifacts;
      continue;
    }
    if (type != "step") continue;  // other record types (run_end, log) carry no metric points
    const int64_t step = get_integer(field(object, "step", where), where + ": step");
    const int64_t rank = get_integer(field(object, "rank", where), where + ": rank");
    const auto& wall = field(object, "wall_time_s", where);
    if (!wall.is_number()) throw StoreError(ErrorKind::invalid, where + ": wall_time_s must be a number");
    const double wall_time_s = checked_wall_time_s(wall.get<double>(), where);
    for (const auto& [name, value] : object.items()) {
      if (name == "step" || name == "rank" || name == "wall_time_s") continue;
      const auto number = metric_value(value);
      if (!number) continue;  // other fields are annotations, not metrics
      at(where, [&] { ingest.metric(ingest.series_id(key, ingest.metric_id(name), rank), step, wall_time_s, *number); });
      ++counts.points;
    }
    first_wall_s = first_wall_s ? std::min(*first_wall_s, wall_time_s) : wall_time_s;
    last_wall_s = last_wall_s ? std::max(*last_wall_s, wall_time_s) : wall_time_s;
    last_step = std::max(last_step, step);
  }
  ingest.finish();

  // The run's times and status from what the directory holds (docs/store.md, "tessera-train --out").
  const auto spec = effective_spec(run.spec);
  const auto* train_steps = spec.contains("training") && spec["training"].contains("train_steps") ? &spec["training"]["train_steps"] : nullptr;
  const int64_t planned_steps = train_steps && train_steps->is_number_integer() ? train_steps->get<int64_t>() : -1;
  if (first_wall_s) {
    // Unix seconds, or (as tessera-train writes them) seconds since the rank started training: then the
    // run ended when metrics.jsonl was last written and started last_wall_s before that.
    constexpr double kYear2000_s = 946684800.0;
    const double origin_s = *first_wall_s >= kYear2000_s ? 0.0
                            : origin_from_artifact_s
                                ? *origin_from_artifact_s
                                : static_cast<double>(file_mtime_ms(metrics_path)) / 1000.0 - *last_wall_s;
    run.started_ms = std::llround((origin_s + *first_wall_s) * 1000);
    run.created_ms = *run.started_ms;
    run.ended_ms = std::llround((origin_s + *last_wall_s) * 1000);
  }
  if (planned_steps > 0 && last_step >= planned_steps && cut_line == 0) {
    run.status = RunStatus::done;
  } else {
    run.status = RunStatus::lost;
    run.exit_reason = "imported from " + directory.string() + ": metrics end at step " + std::to_string(std::max<int64_t>(last_step, 0)) +
                      (planned_steps > 0 ? " of " + std::to_string(planned_steps) : "");
    if (cut_line > 0)
      run.exit_reason += "; metrics.jsonl line " + std::to_string(cut_line) + " is cut off (the file ends inside it) and was left out";
  }
  Statement update(connection, "UPDATE runs SET status = ?, exit_reason = ?, created_ms = ?, started_ms = ?, ended_ms = ? WHERE key = ?");
  update.bind_text(1, to_string(run.status))
      .bind_text(2, run.exit_reason)
      .bind_int(3, run.created_ms)
      .bind_optional_int(4, run.started_ms)
      .bind_optional_int(5, run.ended_ms)
      .bind_int(6, key)
      .run("recording the imported run's status");
  return counts;
}

}  // namespace

ImportedRun History::import_run(const std::string& path, const ImportOptions& options) {
  const fs::path source(path);
  std::error_code ec;
  ImportedRun result;
  Transaction transaction(connection_);
  if (fs::is_directory(source, ec)) {
    if (fs::exists(source / "run.json", ec)) {
      result.format = "csv bundle";
      result.counts = import_csv_bundle(connection_, source, options, result.run);
    } else if (fs::exists(source / "spec.json", ec) && fs::exists(source / "metrics.jsonl", ec)) {
      result.format = "tessera-train output";
      result.counts = import_train_output(connection_, source, options, result.run);
    } else {
      throw StoreError(ErrorKind::invalid, path + " is neither a CSV run bundle (run.json) nor a tessera-train --out "
                                                  "directory (spec.json + metrics.jsonl)");
    }
  } else if (fs::exists(source, ec)) {
    result.format = "json bundle";
    result.counts = import_json_bundle(connection_, source, options, result.run);
  } else {
    throw StoreError(ErrorKind::invalid, "no such file or directory: " + path);
  }
  transaction.commit();
  result.run = run(result.run.id);
  return result;
}

}  // namespace tessera::store
