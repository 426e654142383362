// History: opening, run records, id resolution, filters, tags, notes, deletion and per-run rows.
#include "store/history.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <locale>
#include <string>

#include "spec/json_nesting.hpp"
#include "spec/run_spec.hpp"
#include "spec/utf8.hpp"
#include "store/errors.hpp"
#include "store/schema.hpp"

namespace tessera::store {

namespace {

constexpr const char* kRunColumns =
    "key, id, name, status, created_ms, started_ms, ended_ms, exit_reason, spec_json, plan_json, hosts_json, notes, "
    "tessera_version";

nlohmann::ordered_json parse_stored_json(const std::string& text, const std::string& path, const std::string& what) {
  try {
    return nlohmann::ordered_json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw StoreError(ErrorKind::corrupt, "history " + path + ": " + what + " is not valid JSON (" + spec::json_error_reason(e.what()) + ")");
  }
}

RunRecord read_run(Connection& connection, Statement& row) {
  RunRecord run;
  run.id = row.column_text(1);
  run.name = row.column_text(2);
  try {
    run.status = parse_run_status(row.column_text(3));
  } catch (const StoreError&) {
    throw StoreError(ErrorKind::corrupt, "history " + connection.path() + ": run " + run.id + " has an unknown status");
  }
  run.created_ms = row.column_int(4);
  run.started_ms = row.column_optional_int(5);
  run.ended_ms = row.column_optional_int(6);
  run.exit_reason = row.column_text(7);
  run.spec = parse_stored_json(row.column_text(8), connection.path(), "the spec of run " + run.id);
  run.plan = parse_stored_json(row.column_text(9), connection.path(), "the plan of run " + run.id);
  for (const auto& host : parse_stored_json(row.column_text(10), connection.path(), "the hosts of run " + run.id))
    run.hosts.push_back(host.get<std::string>());
  run.notes = row.column_text(11);
  run.tessera_version = row.column_text(12);
  Statement tags(connection, "SELECT tag FROM run_tags WHERE run = ? ORDER BY tag");
  tags.bind_int(1, row.column_int(0));
  while (tags.step("reading tags")) run.tags.push_back(tags.column_text(0));
  return run;
}

bool is_hex(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); });
}

std::string lower(std::string_view text) {
  std::string out(text);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Case-folded for matching names: every letter Unicode lower-cases (Ü, Ω), through the C.UTF-8
// locale's tables (ASCII only where the C library has none), and the full foldings of German sharp s
// (ß, ẞ: "ss") and Greek final sigma (ς: σ), so that "STRASSE" finds "Straße"; invalid UTF-8 is
// compared as bytes. Not normalized: a precomposed "é" and "e" with a combining accent differ.
std::wstring folded(std::string_view text) {
  static const std::ctype<wchar_t>* ctype = []() -> const std::ctype<wchar_t>* {
    try {
      static const std::locale utf8("C.UTF-8");
      return &std::use_facet<std::ctype<wchar_t>>(utf8);
    } catch (const std::exception&) {
      return nullptr;
    }
  }();
  std::wstring out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const auto c = spec::utf8_decode(text.substr(i));
    if (!c) {
      out.push_back(static_cast<wchar_t>(0xdc00 + static_cast<unsigned char>(text[i])));  // a lone byte stays itself
      ++i;
      continue;
    }
    const auto wide = static_cast<wchar_t>(c->value);
    const wchar_t lowered = ctype ? ctype->tolower(wide)
                                  : (c->value < 0x80 ? static_cast<wchar_t>(std::tolower(static_cast<int>(c->value))) : wide);
    if (lowered == 0xdf || lowered == 0x1e9e) {  // ß, ẞ
      out += L"ss";
    } else {
      out.push_back(lowered == 0x3c2 ? wchar_t{0x3c3} : lowered);  // ς → σ
    }
    i += c->length;
  }
  return out;
}

const nlohmann::ordered_json* find_path(const nlohmann::ordered_json& document, const std::string& dotted) {
  const nlohmann::ordered_json* node = &document;
  size_t start = 0;
  while (start <= dotted.size()) {
    const size_t dot = dotted.find('.', start);
    const std::string part = dotted.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!node->is_object()) return nullptr;
    const auto it = node->find(part);
    if (it == node->end()) return nullptr;
    node = &*it;
    if (dot == std::string::npos) return node;
    start = dot + 1;
  }
  return nullptr;
}

}  // namespace

SpecCondition SpecCondition::parse(std::string_view text) {
  const size_t eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0)
    throw StoreError(ErrorKind::invalid, "spec condition '" + std::string(text) + "' is not PATH=VALUE (e.g. model.num_layers=32)");
  SpecCondition condition;
  condition.path = std::string(text.substr(0, eq));
  const std::string value(text.substr(eq + 1));
  if (auto error = spec::json_text_error(value, "spec condition '" + condition.path + "'"))
    throw StoreError(ErrorKind::invalid, *error);
  // A path no spec has would match no run, silently: refused with the field meant ("tp" ->
  // parallel.tp). "name" and a whole section ("cluster") are paths too.
  const auto& sections = spec::section_names();
  const size_t dot = condition.path.find('.');
  const auto contains = [](const std::vector<std::string>& names, const std::string& name) {
    return std::find(names.begin(), names.end(), name) != names.end();
  };
  const bool known = condition.path == "name" || contains(sections, condition.path) ||
                     (dot != std::string::npos &&
                      contains(spec::field_names(condition.path.substr(0, dot)), condition.path.substr(dot + 1)));
  if (!known) {
    std::string message = "spec condition " + condition.path + "=…: " + condition.path + " is not a spec field";
    const std::string near = spec::nearest_field_path(condition.path);
    message += near.empty() ? " (a path is SECTION.FIELD as in a spec: parallel.tp, model.num_layers)" : " (did you mean " + near + "?)";
    throw StoreError(ErrorKind::invalid, message);
  }
  condition.value = nlohmann::json::accept(value) ? nlohmann::json::parse(value) : nlohmann::json(value);
  // A value the field cannot hold matches nothing, silently ("02", "True" or "abc" for an integer, a
  // flag or a choice): refused with the field's own rule, as a spec file would be.
  if (condition.path == "name" || condition.path == "model.preset") {
    // Text, even "7"; "\"my run\"" is the name without its quotes. A preset is matched as stored,
    // whether or not this build still knows it.
    if (!condition.value.is_string()) condition.value = value;
  } else if (dot == std::string::npos) {
    if (!condition.value.is_object())
      throw StoreError(ErrorKind::invalid, "spec condition " + condition.path + "=" + value + ": " + condition.path +
                                               " is a whole section; give one of its fields (" + condition.path + "." +
                                               spec::field_names(condition.path).front() + "=…) or a JSON object");
  } else {
    const auto accepts = [&](const nlohmann::json& candidate) -> std::string {
      spec::RunSpec probe;
      try {
        spec::set_field(probe, condition.path, candidate);
        return {};
      } catch (const spec::SpecError& error) {
        return error.what();
      }
    };
    if (const std::string problem = accepts(condition.value); !problem.empty()) {
      // A text field given something that reads as a number or a flag ("cluster.gpu=7") is text.
      if (condition.value.is_string() || !accepts(nlohmann::json(value)).empty())
        throw StoreError(ErrorKind::invalid, "spec condition " + condition.path + "=" + value + ": " + problem);
      condition.value = value;
    }
  }
  return condition;
}

nlohmann::ordered_json effective_spec(const nlohmann::ordered_json& stored) {
  try {
    return spec::to_json(spec::parse_stored_spec(nlohmann::json::parse(stored.dump())));
  } catch (const std::exception&) {
    return stored;  // a spec this build cannot read (older, newer, partial) is compared as stored
  }
}

History::History(const std::string& path) : connection_(open_history(path)) {}

int64_t History::key_of(const std::string& id) const {
  Statement statement(connection_, "SELECT key FROM runs WHERE id = ?");
  if (!statement.bind_text(1, id).step("looking up a run"))
    throw StoreError(ErrorKind::not_found, "no run " + id + " in history " + path());
  return statement.column_int(0);
}

std::string History::resolve(std::string_view reference) const {
  if (reference.empty()) throw StoreError(ErrorKind::invalid, "an empty run id");
  const std::string ref(reference);
  // Every run the reference could mean: its id, its name, or (hex) a prefix of its id. A name of 8 or
  // more characters that is another run's id prefix ("4e5493433511", as runs list shows ids) is said
  // to be ambiguous: it made runs delete remove the run whose id it was. A shorter name ("42", "bf16")
  // is the run's: most would be some id's start in a history of a few dozen runs.
  std::vector<std::pair<std::string, std::string>> found;  // (id, name), each run once, by id
  {
    Statement matches(connection_,
                      "SELECT id, name FROM runs WHERE id = ?1 OR name = ?1 OR (?2 AND substr(id, 1, ?3) = ?4) ORDER BY id");
    matches.bind_text(1, ref).bind_int(2, is_hex(ref) ? 1 : 0).bind_int(3, static_cast<int64_t>(ref.size())).bind_text(4, lower(ref));
    while (matches.step("looking up a run")) found.emplace_back(matches.column_text(0), matches.column_text(1));
  }
  if (found.size() == 1) return found.front().first;
  if (ref.size() < 8)
    for (const auto& [id, name] : found)
      if (name == ref) return id;
  // A whole id is that run's (a name cannot be a run id; in an older history one may be).
  if (is_run_id(ref))
    for (const auto& [id, name] : found)
      if (id == ref) return id;
  if (found.empty()) throw StoreError(ErrorKind::not_found, "no run with id or name '" + ref + "' in history " + path());
  std::string list;
  for (size_t i = 0; i < found.size() && i < 5; ++i)
    list += (i ? ", " : "") + found[i].first.substr(0, 12) + " (" + found[i].second + ")";
  if (found.size() > 5) list += ", …";
  const bool a_name = std::any_of(found.begin(), found.end(), [&](const auto& run) { return run.second == ref; });
  throw StoreError(ErrorKind::ambiguous, "'" + ref + "' matches " + std::to_string(found.size()) + " runs: " + list +
                                             (a_name ? "; it is the name of one and the start of the other's id: give the whole id"
                                                     : "; give more of the id"));
}

RunRecord History::run(const std::string& id) const {
  Statement row(connection_, std::string("SELECT ") + kRunColumns + " FROM runs WHERE id = ?");
  if (!row.bind_text(1, id).step("reading a run")) throw StoreError(ErrorKind::not_found, "no run " + id + " in history " + path());
  return read_run(connection_, row);
}

std::vector<RunRecord> History::runs(const RunFilter& filter) const {
  std::string sql = std::string("SELECT ") + kRunColumns + " FROM runs WHERE 1";
  if (filter.status) sql += " AND status = :status";
  if (filter.tag) sql += " AND EXISTS(SELECT 1 FROM run_tags WHERE run_tags.run = runs.key AND tag = :tag)";
  if (filter.created_from_ms) sql += " AND created_ms >= :from";
  if (filter.created_before_ms) sql += " AND created_ms < :before";
  sql += " ORDER BY created_ms DESC, key DESC";
  Statement rows(connection_, sql);
  int index = 1;  // parameters are numbered in the order they appear
  if (filter.status) rows.bind_text(index++, to_string(*filter.status));
  if (filter.tag) rows.bind_text(index++, *filter.tag);
  if (filter.created_from_ms) rows.bind_int(index++, *filter.created_from_ms);
  if (filter.created_before_ms) rows.bind_int(index++, *filter.created_before_ms);
  std::vector<RunRecord> out;
  const std::wstring name_part = folded(filter.name_contains);  // matched here: SQLite's lower() is ASCII only
  while (rows.step("listing runs")) {
    RunRecord run = read_run(connection_, rows);
    if (!name_part.empty() && folded(run.name).find(name_part) == std::wstring::npos) continue;
    if (!filter.spec.empty()) {
      const auto spec = effective_spec(run.spec);
      const bool all = std::all_of(filter.spec.begin(), filter.spec.end(), [&](const SpecCondition& c) {
        const auto* value = find_path(spec, c.path);
        return value && nlohmann::json::parse(value->dump()) == c.value;
      });
      if (!all) continue;
    }
    out.push_back(std::move(run));
  }
  return out;
}

void History::add_tag(const std::string& id, const std::string& tag) {
  if (const auto problem = tag_problem(tag); !problem.empty()) throw StoreError(ErrorKind::invalid, problem);
  Statement insert(connection_, "INSERT OR IGNORE INTO run_tags(run, tag) VALUES(?, ?)");
  insert.bind_int(1, key_of(id)).bind_text(2, tag).run("tagging a run");
}

bool History::remove_tag(const std::string& id, const std::string& tag) {
  Statement remove(connection_, "DELETE FROM run_tags WHERE run = ? AND tag = ?");
  remove.bind_int(1, key_of(id)).bind_text(2, tag).run("removing a tag");
  return connection_.changes() > 0;
}

void History::set_notes(const std::string& id, const std::string& notes) {
  if (const auto problem = text_problem("the note", notes); !problem.empty()) throw StoreError(ErrorKind::invalid, problem);
  Statement update(connection_, "UPDATE runs SET notes = ? WHERE key = ?");
  update.bind_text(1, notes).bind_int(2, key_of(id)).run("setting notes");
}

RunCounts History::counts(const std::string& id) const {
  const int64_t key = key_of(id);
  auto count = [&](const char* sql) {
    Statement statement(connection_, sql);
    statement.bind_int(1, key).step("counting rows");
    return statement.column_int(0);
  };
  RunCounts counts;
  counts.points = count("SELECT coalesce(sum(n), 0) FROM metric_blocks WHERE series IN (SELECT id FROM series WHERE run = ?)");
  counts.events = count("SELECT count(*) FROM timeline WHERE run = ?");
  counts.log_lines = count("SELECT count(*) FROM logs WHERE run = ?");
  counts.artifacts = count("SELECT count(*) FROM artifacts WHERE run = ?");
  return counts;
}

std::pair<RunRecord, RunCounts> History::delete_run(const std::string& id, bool even_if_active) {
  Transaction transaction(connection_);
  RunRecord record = run(id);
  if (!even_if_active && (record.status == RunStatus::starting || record.status == RunStatus::running))
    throw StoreError(ErrorKind::invalid, "run " + record.id.substr(0, 8) + " '" + record.name + "' is " +
                                             std::string(to_string(record.status)) + ": stop it first (tessera-cli runs stop " +
                                             record.id.substr(0, 8) + "; runs delete --force deletes a run nothing runs any more)");
  const RunCounts removed = counts(id);
  const int64_t key = key_of(id);
  for (const char* table : {"metrics", "metric_blocks"}) {
    Statement remove(connection_, std::string("DELETE FROM ") + table + " WHERE series IN (SELECT id FROM series WHERE run = ?)");
    remove.bind_int(1, key).run(std::string("deleting a run's ") + table);
  }
  for (const char* table : {"series", "timeline", "logs", "artifacts", "stream_positions", "run_tags"}) {
    Statement remove(connection_, std::string("DELETE FROM ") + table + " WHERE run = ?");
    remove.bind_int(1, key).run(std::string("deleting a run's ") + table);
  }
  Statement remove(connection_, "DELETE FROM runs WHERE key = ?");
  remove.bind_int(1, key).run("deleting a run");
  transaction.commit();
  return {std::move(record), removed};
}

std::vector<TimelineEvent> History::timeline(const std::string& id) const {
  Statement rows(connection_,
                 "SELECT step, rank, stage, op, microbatch, chunk, start_s, end_s FROM timeline WHERE run = ? "
                 "ORDER BY step, rank, start_s, op, microbatch, chunk");
  rows.bind_int(1, key_of(id));
  std::vector<TimelineEvent> out;
  while (rows.step("reading the timeline"))
    out.push_back({rows.column_int(0), rows.column_int(1), rows.column_int(2), rows.column_text(3), rows.column_int(4),
                   rows.column_int(5), rows.column_real(6), rows.column_real(7)});
  return out;
}

std::vector<TimelineEvent> History::timeline_of_step(const std::string& id, int64_t step) const {
  Statement rows(connection_,
                 "SELECT step, rank, stage, op, microbatch, chunk, start_s, end_s FROM timeline WHERE run = ? AND step = ? "
                 "ORDER BY rank, start_s, op, microbatch, chunk");
  rows.bind_int(1, key_of(id)).bind_int(2, step);
  std::vector<TimelineEvent> out;
  while (rows.step("reading the timeline of a step"))
    out.push_back({rows.column_int(0), rows.column_int(1), rows.column_int(2), rows.column_text(3), rows.column_int(4),
                   rows.column_int(5), rows.column_real(6), rows.column_real(7)});
  return out;
}

std::optional<int64_t> History::last_timeline_step(const std::string& id) const {
  Statement row(connection_, "SELECT max(step) FROM timeline WHERE run = ?");
  row.bind_int(1, key_of(id)).step("reading the last timeline step");
  return row.column_optional_int(0);
}

std::vector<LogLine> History::logs_after(const std::string& id, int64_t skip) const {
  Statement rows(connection_, "SELECT rank, stream, time_s, line FROM logs WHERE run = ? ORDER BY rowid LIMIT -1 OFFSET ?");
  rows.bind_int(1, key_of(id)).bind_int(2, std::max<int64_t>(0, skip));
  std::vector<LogLine> out;
  while (rows.step("reading logs")) out.push_back({rows.column_int(0), rows.column_text(1), rows.column_real(2), rows.column_text(3)});
  return out;
}

std::vector<LogLine> History::logs(const std::string& id) const {
  Statement rows(connection_, "SELECT rank, stream, time_s, line FROM logs WHERE run = ? ORDER BY rowid");
  rows.bind_int(1, key_of(id));
  std::vector<LogLine> out;
  while (rows.step("reading logs")) out.push_back({rows.column_int(0), rows.column_text(1), rows.column_real(2), rows.column_text(3)});
  return out;
}

std::vector<StreamPosition> History::stream_positions(const std::string& id) const {
  Statement rows(connection_, "SELECT node, seq FROM stream_positions WHERE run = ? ORDER BY node");
  rows.bind_int(1, key_of(id));
  std::vector<StreamPosition> out;
  while (rows.step("reading stream positions")) out.push_back({rows.column_int(0), rows.column_int(1)});
  return out;
}

std::map<int64_t, double> History::last_wall_times(const std::string& id) const {
  // One index seek per series (its last step), not a scan of the run's points.
  Statement rows(connection_,
                 "SELECT s.rank, (SELECT wall_time_s FROM metrics WHERE series = s.id ORDER BY step DESC LIMIT 1) "
                 "FROM series s WHERE s.run = ?");
  rows.bind_int(1, key_of(id));
  std::map<int64_t, double> out;
  while (rows.step("reading the ranks' last wall times")) {
    const double wall_s = rows.column_real(1);
    if (std::isnan(wall_s)) continue;  // a series without points
    const auto [at, fresh] = out.try_emplace(rows.column_int(0), wall_s);
    if (!fresh) at->second = std::max(at->second, wall_s);
  }
  return out;
}

std::vector<Artifact> History::artifacts(const std::string& id) const {
  Statement rows(connection_,
                 "SELECT kind, path, step, size_bytes, created_ms FROM artifacts WHERE run = ? ORDER BY step, path");
  rows.bind_int(1, key_of(id));
  std::vector<Artifact> out;
  while (rows.step("reading artifacts"))
    out.push_back({rows.column_text(0), rows.column_text(1), rows.column_int(2), rows.column_int(3), rows.column_int(4)});
  return out;
}

}  // namespace tessera::store
