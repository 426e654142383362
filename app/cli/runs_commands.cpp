// tessera-cli runs list | show | compare | export | import | tag | note | delete: the run history.
// Every command takes --db (else $TESSERA_DB, else the XDG data directory); a run is named by its
// id, a unique id prefix, or its name. Store errors the user can fix exit with 2, others with 1.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>

#include "cli/commands.hpp"
#include "cli/text_table.hpp"
#include "store/errors.hpp"
#include "store/history.hpp"
#include "store/location.hpp"

namespace tessera::cli {

namespace {

using store::History;
using ojson = nlohmann::ordered_json;

/// Runs a command body, turning the store's user errors into UsageError (exit code 2).
template <class F>
std::function<void()> guarded(F body) {
  return [body] {
    try {
      body();
    } catch (const store::StoreError& e) {
      if (e.is_user_error()) throw UsageError(e.what());
      throw;
    }
  };
}

std::string short_id(const std::string& id) { return id.substr(0, 12); }

/// A run's name in a message, quoted and printable (an escape sequence in a name must not reach the terminal).
std::string quoted_name(const std::string& name) { return "'" + printable(name) + "'"; }

/// What chose the history file resolve_history_path(db) gives: "--db", "$TESSERA_DB", or "" for the
/// default location.
std::string history_chooser(const std::string& db) {
  if (!db.empty()) return "--db";
  const char* env_db = std::getenv("TESSERA_DB");
  return env_db && *env_db ? "$TESSERA_DB" : "";
}

}  // namespace

std::string writable_history_path(const std::string& db) {
  const std::string path = store::resolve_history_path(db);
  if (const auto problem = store::non_regular_history_problem(path); !problem.empty()) {
    const std::string chooser = history_chooser(db);
    throw UsageError(problem + " (" + (chooser.empty() ? "--db or $TESSERA_DB" : chooser) + " names another file)");
  }
  return path;
}

namespace {

/// The history file a command reads: one that exists, not a mistyped --db made into an empty history.
std::string existing_history(const std::string& db) {
  const std::string path = store::resolve_history_path(db);
  std::string chooser = history_chooser(db);
  if (chooser.empty()) chooser = "--db or $TESSERA_DB";
  if (const auto problem = store::read_only_history_problem(path); !problem.empty())
    throw UsageError(problem + " (tessera-cli launch and the workbench create a history; " + chooser + " names another file)");
  return path;
}

std::string join(const std::vector<std::string>& items, const std::string& separator = ", ") {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : separator) + item;
  return out;
}

/// "2025-01-02 03:04" (UTC), to the minute, for tables.
std::string minute_utc(int64_t ms) {
  const auto text = store::format_time_utc(ms);
  return text.substr(0, 10) + " " + text.substr(11, 5);
}

std::string duration_text(int64_t ms) {
  const int64_t s = ms / 1000;
  char buffer[48];
  if (s >= 3600)
    std::snprintf(buffer, sizeof buffer, "%lldh %02lldm %02llds", static_cast<long long>(s / 3600), static_cast<long long>(s / 60 % 60),
                  static_cast<long long>(s % 60));
  else
    std::snprintf(buffer, sizeof buffer, "%lldm %02llds", static_cast<long long>(s / 60), static_cast<long long>(s % 60));
  return buffer;
}

/// "nan", "inf" or "-inf" for a value that is not finite, as the history's CSV and bundles write them.
std::optional<std::string> non_finite_text(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  return std::nullopt;
}

std::string optional_number(const std::optional<double>& value, int decimals) {
  if (!value) return "-";
  if (const auto text = non_finite_text(*value)) return *text;
  return format_fixed(*value, decimals);
}

/// JSON for a summary value: null when absent, "nan", "inf" or "-inf" when not finite (JSON has none).
ojson json_number(const std::optional<double>& value) {
  if (!value) return nullptr;
  if (const auto text = non_finite_text(*value)) return *text;
  return *value;
}

/// "989 TFLOP/s", "42.1 GFLOP/s" (below 1 TFLOP/s: CPU ranks).
std::string flop_rate_text(double tflops) {
  return tflops >= 1.0 ? format_fixed(tflops, 0) + " TFLOP/s" : format_fixed(tflops * 1e3, 1) + " GFLOP/s";
}

std::string counts_text(const store::RunCounts& c) {
  return format_count(c.points) + " metric points, " + format_count(c.events) + " timeline events, " + format_count(c.log_lines) +
         " log lines, " + format_count(c.artifacts) + " artifacts";
}

std::vector<std::string> summary_cells(const store::RunSummary& s) {
  return {s.last_step ? std::to_string(*s.last_step) : "-",
          optional_number(s.final_loss, 4),
          optional_number(s.min_loss, 4),
          optional_number(s.mean_mfu ? std::optional(*s.mean_mfu * 100) : std::nullopt, 1),
          optional_number(s.mean_bubble ? std::optional(*s.mean_bubble * 100) : std::nullopt, 1),
          s.peak_memory_bytes ? format_bytes(*s.peak_memory_bytes) : "-",
          s.mean_tokens_per_s ? non_finite_text(*s.mean_tokens_per_s).value_or(format_si(*s.mean_tokens_per_s, "")) : "-"};
}
const std::vector<std::string> kSummaryHeader = {"last step", "final loss", "min loss", "MFU %", "bubble %", "peak memory", "tokens/s"};

ojson summary_json(const store::RunSummary& s) {
  return {{"points", s.points},
          {"last_step", s.last_step ? ojson(*s.last_step) : ojson(nullptr)},
          {"final_loss", json_number(s.final_loss)},
          {"min_loss", json_number(s.min_loss)},
          {"mean_mfu", json_number(s.mean_mfu)},
          {"mfu_peak_tflops", json_number(s.mfu_peak_tflops)},
          {"mean_bubble", json_number(s.mean_bubble)},
          {"mean_tokens_per_s", json_number(s.mean_tokens_per_s)},
          {"peak_memory_bytes", s.peak_memory_bytes ? ojson(*s.peak_memory_bytes) : ojson(nullptr)}};
}

/// A spec value for a table cell: strings without quotes, "-" when the run lacks the field.
std::string cell(const std::optional<ojson>& value) {
  if (!value) return "-";
  return value->is_string() ? value->get<std::string>() : value->dump();
}

void add_db_option(CLI::App* command, std::string& db) {
  command->add_option("--db", db, "History file (default: $TESSERA_DB, else $XDG_DATA_HOME/tessera/history.sqlite)")
      ->check(non_empty());
}

struct ListOptions {
  std::string db, status, name, since, until;
  std::optional<std::string> tag;  ///< set when --tag was given, even as an empty string (refused)
  std::vector<std::string> where;
  bool json = false;
};

void list_runs(const ListOptions& o) {
  store::RunFilter filter;
  if (!o.status.empty()) filter.status = store::parse_run_status(o.status);
  if (o.tag) {
    // An empty or padded tag can never have been stored: it would list nothing, or (empty) everything.
    if (const auto problem = store::tag_problem(*o.tag); !problem.empty())
      throw store::StoreError(store::ErrorKind::invalid, "--tag: " + problem);
    filter.tag = *o.tag;
  }
  filter.name_contains = o.name;
  if (!o.since.empty()) filter.created_from_ms = store::parse_time_utc(o.since);
  if (!o.until.empty()) filter.created_before_ms = store::parse_time_utc(o.until);
  if (filter.created_from_ms && filter.created_before_ms && *filter.created_before_ms <= *filter.created_from_ms)
    throw UsageError("--until " + o.until + " is not after --since " + o.since + ": no run could match");
  for (const auto& condition : o.where) filter.spec.push_back(store::SpecCondition::parse(condition));
  // Before the first run the default history (neither --db nor $TESSERA_DB chose one) does not exist
  // yet: nothing to list, nothing created.
  if (const std::string path = store::resolve_history_path(o.db); history_chooser(o.db).empty() && !std::filesystem::exists(path)) {
    if (o.json) std::cout << "[]\n";
    else std::cout << "no runs yet (no history at " << path << ")\n";
    return;
  }
  History history(existing_history(o.db));
  const auto runs = history.runs(filter);
  if (o.json) {
    ojson out = ojson::array();
    for (const auto& r : runs)
      out.push_back({{"id", r.id},
                     {"name", r.name},
                     {"status", store::to_string(r.status)},
                     {"created", store::format_time_utc(r.created_ms)},
                     {"started", r.started_ms ? ojson(store::format_time_utc(*r.started_ms)) : ojson(nullptr)},
                     {"ended", r.ended_ms ? ojson(store::format_time_utc(*r.ended_ms)) : ojson(nullptr)},
                     {"exit_reason", r.exit_reason},
                     {"tags", r.tags},
                     {"notes", r.notes}});
    std::cout << out.dump(2) << "\n";
    return;
  }
  if (runs.empty()) {
    std::cout << "no runs" << (o.status.empty() && !o.tag && o.name.empty() && o.since.empty() && o.until.empty() && o.where.empty()
                                   ? " in "
                                   : " match in ")
              << history.path() << "\n";
    return;
  }
  TextTable table({"id", "name", "status", "created (UTC)", "tags"}, {false, false, false, false, false});
  // Free text capped as the workbench's history table caps it: a 300-character name would push every
  // other column off the terminal.
  constexpr size_t kTextColumns = 48;
  for (const auto& r : runs)
    table.add_row({short_id(r.id), table_cell(r.name, kTextColumns), std::string(store::to_string(r.status)), minute_utc(r.created_ms),
                   table_cell(join(r.tags), kTextColumns)});
  std::cout << table.str();
}

void show_run(const std::string& db, const std::string& reference) {
  History history(existing_history(db));
  const auto id = history.resolve(reference);
  const auto run = history.run(id);
  // Continuation lines (multi-line notes, an exit reason with the rank's output) under the value,
  // so that they do not read as fields of their own.
  auto line = [](const std::string& key, const std::string& value) {
    if (value.empty()) return;
    std::cout << key << std::string(10 - key.size(), ' ');
    for (const char c : printable(value, /*keep_newlines=*/true)) {
      std::cout << c;
      if (c == '\n') std::cout << std::string(10, ' ');
    }
    std::cout << "\n";
  };
  line("id", run.id);
  line("name", run.name);
  line("status", std::string(store::to_string(run.status)) + (run.exit_reason.empty() ? "" : " (" + run.exit_reason + ")"));
  line("created", store::format_time_utc(run.created_ms));
  if (run.started_ms) line("started", store::format_time_utc(*run.started_ms));
  if (run.ended_ms)
    line("ended", store::format_time_utc(*run.ended_ms) + (run.started_ms ? " (took " + duration_text(*run.ended_ms - *run.started_ms) + ")" : ""));
  line("hosts", join(run.hosts));
  line("tags", join(run.tags));
  line("notes", run.notes);
  line("tessera", run.tessera_version);
  line("stored", counts_text(history.counts(id)));

  const auto totals = history.summary(id);
  TextTable summary(kSummaryHeader);
  summary.add_row(summary_cells(totals));
  std::cout << "\n" << summary.str();
  if (totals.mfu_peak_tflops && std::isfinite(*totals.mfu_peak_tflops))
    std::cout << "MFU is a share of " << flop_rate_text(*totals.mfu_peak_tflops) << " (the runtime's peak)\n";

  const auto series = history.series(id);
  if (!series.empty()) {
    TextTable table({"metric", "rank", "points", "first step", "last step"});
    for (const auto& s : series)
      table.add_row({s.metric, std::to_string(s.rank), format_count(s.points), std::to_string(s.first_step), std::to_string(s.last_step)});
    std::cout << "\n" << table.str();
  }
  const auto artifacts = history.artifacts(id);
  if (!artifacts.empty()) {
    TextTable table({"artifact", "step", "size", "path"}, {false, true, true, false});
    for (const auto& a : artifacts) table.add_row({a.kind, std::to_string(a.step), format_bytes(a.size_bytes), a.path});
    std::cout << "\n" << table.str();
  }
}

void compare_runs(const std::string& db, const std::vector<std::string>& references, bool json) {
  if (references.size() < 2) throw UsageError("runs compare needs at least two runs");
  History history(existing_history(db));
  std::vector<std::string> ids;
  for (const auto& reference : references) {
    ids.push_back(history.resolve(reference));
    if (std::count(ids.begin(), ids.end(), ids.back()) > 1)
      throw UsageError("run " + short_id(ids.back()) + " is named twice ('" + reference + "'); compare different runs");
  }
  std::vector<store::RunRecord> runs;
  for (const auto& id : ids) runs.push_back(history.run(id));
  const auto diff = history.config_diff(ids);
  if (json) {
    ojson out{{"runs", ojson::array()}, {"config_diff", ojson::array()}};
    for (const auto& run : runs)
      out["runs"].push_back({{"id", run.id}, {"name", run.name}, {"status", store::to_string(run.status)}, {"summary", summary_json(history.summary(run.id))}});
    for (const auto& row : diff) {
      ojson values = ojson::array();
      for (const auto& v : row.values) values.push_back(v ? *v : ojson(nullptr));
      out["config_diff"].push_back({{"path", row.path}, {"values", values}});
    }
    std::cout << out.dump(2) << "\n";
    return;
  }
  std::vector<std::string> header = {"run", "name", "status"};
  header.insert(header.end(), kSummaryHeader.begin(), kSummaryHeader.end());
  TextTable table(header, std::vector<bool>{false, false, false, true, true, true, true, true, true, true});
  std::vector<store::RunSummary> summaries;
  for (const auto& run : runs) {
    summaries.push_back(history.summary(run.id));
    std::vector<std::string> row = {short_id(run.id), run.name, std::string(store::to_string(run.status))};
    const auto cells = summary_cells(summaries.back());
    row.insert(row.end(), cells.begin(), cells.end());
    table.add_row(row);
  }
  std::cout << table.str();
  // MFU is a share of each run's own peak: a CPU rank times its GEMM at start-up (two runs of one
  // spec on one machine measured 42 and 58 GFLOP/s), so MFU of runs with other peaks do not compare.
  bool one_peak = true;
  std::string list;
  for (size_t i = 0; i < runs.size(); ++i) {
    for (size_t j = 0; j < i; ++j) one_peak = one_peak && store::same_mfu_peak(summaries[i], summaries[j]);
    if (const auto& peak = summaries[i].mfu_peak_tflops; peak && std::isfinite(*peak))
      list += (list.empty() ? "" : ", ") + short_id(runs[i].id) + " " + flop_rate_text(*peak);
  }
  if (!one_peak) std::cout << "note: MFU is a share of each run's own peak (" << list << "); compare tokens/s instead\n";
  std::cout << "\n";
  if (diff.empty()) {
    std::cout << "the specs are the same\n";
    return;
  }
  std::vector<std::string> diff_header = {"spec field"};
  for (const auto& run : runs) diff_header.push_back(run.name);
  TextTable diff_table(diff_header, std::vector<bool>(diff_header.size(), false));
  for (const auto& row : diff) {
    std::vector<std::string> cells = {row.path};
    for (const auto& v : row.values) cells.push_back(cell(v));
    diff_table.add_row(cells);
  }
  std::cout << diff_table.str();
}

void export_run(const std::string& db, const std::string& reference, const std::string& csv_dir, const std::string& json_file) {
  History history(existing_history(db));
  const auto id = history.resolve(reference);
  const auto run = history.run(id);
  const std::string what = short_id(id) + " " + quoted_name(run.name) + " (" + counts_text(history.counts(id)) + ")";
  if (!csv_dir.empty()) {
    std::error_code ec;
    if (std::filesystem::exists(csv_dir, ec) && !std::filesystem::is_directory(csv_dir, ec))
      throw UsageError("--csv " + csv_dir + " is a file; --csv names a directory for the run's CSV files");
    history.export_csv(id, csv_dir);
    std::cerr << "exported run " << what << " to " << csv_dir << "\n";
  } else if (!json_file.empty() && json_file != "-") {  // "--json -" is standard output, as with no option
    if (std::filesystem::exists(json_file)) throw UsageError(json_file + " already exists; remove it or choose another name");
    const std::string partial = json_file + ".part";
    {
      std::ofstream out(partial, std::ios::binary);
      if (!out) throw UsageError("cannot create " + json_file + ": " + std::strerror(errno));
      try {
        history.export_json(id, out);
      } catch (...) {
        std::filesystem::remove(partial);
        throw;
      }
    }
    std::filesystem::rename(partial, json_file);
    std::cerr << "exported run " << what << " to " << json_file << "\n";
  } else {
    history.export_json(id, std::cout);
  }
}

}  // namespace

void add_runs_commands(CLI::App& app) {
  auto* runs = app.add_subcommand("runs", "The run history: list, show, compare, export, import, tag, note, delete");
  runs->require_subcommand(1);

  auto list_options = std::make_shared<ListOptions>();
  auto* list = runs->add_subcommand("list", "List runs, newest first");
  add_db_option(list, list_options->db);
  list->add_option("--status", list_options->status, "Only runs in this status (planned, starting, running, done, failed, stopped, lost)");
  list->add_option("--tag", list_options->tag, "Only runs with this tag");
  list->add_option("--name", list_options->name, "Only runs whose name contains this (any case)");
  list->add_option("--since", list_options->since, "Only runs created at or after this UTC time (2025-01-31 or 2025-01-31T12:00)");
  list->add_option("--until", list_options->until, "Only runs created before this UTC time");
  list->add_option("--where", list_options->where, "Only runs whose spec has PATH=VALUE (model.num_layers=32); repeatable");
  list->add_flag("--json", list_options->json, "Print a JSON array");
  list->callback(guarded([list_options] { list_runs(*list_options); }));

  struct ShowOptions {
    std::string db, id;
  };
  auto show_options = std::make_shared<ShowOptions>();
  auto* show = runs->add_subcommand("show", "Show one run: metadata, summary, series, artifacts");
  add_db_option(show, show_options->db);
  show->add_option("id", show_options->id, "Run id, unique id prefix, or name")->required();
  show->callback(guarded([show_options] { show_run(show_options->db, show_options->id); }));

  struct CompareOptions {
    std::string db;
    std::vector<std::string> ids;
    bool json = false;
  };
  auto compare_options = std::make_shared<CompareOptions>();
  auto* compare = runs->add_subcommand("compare", "Compare runs: summaries and the spec fields that differ");
  add_db_option(compare, compare_options->db);
  compare->add_option("ids", compare_options->ids, "Two or more runs (ids, id prefixes or names)")->required();
  compare->add_flag("--json", compare_options->json, "Print JSON");
  compare->callback(guarded([compare_options] { compare_runs(compare_options->db, compare_options->ids, compare_options->json); }));

  struct ExportOptions {
    std::string db, id, csv, json;
  };
  auto export_options = std::make_shared<ExportOptions>();
  auto* exporter = runs->add_subcommand("export", "Export a run as a bundle (JSON on stdout unless --csv or --json)");
  add_db_option(exporter, export_options->db);
  exporter->add_option("id", export_options->id, "Run id, unique id prefix, or name")->required();
  auto* csv = exporter->add_option("--csv", export_options->csv, "Write run.json and CSV files into this directory");
  exporter->add_option("--json", export_options->json, "Write one JSON file ('-': standard output)")->excludes(csv);
  exporter->callback(guarded([export_options] {
    export_run(export_options->db, export_options->id, export_options->csv, export_options->json);
  }));

  struct ImportOptions {
    std::string db, path, name;
  };
  auto import_options = std::make_shared<ImportOptions>();
  auto* importer = runs->add_subcommand("import", "Import a bundle (JSON file, CSV directory) or a tessera-train --out directory");
  add_db_option(importer, import_options->db);
  importer->add_option("path", import_options->path, "Bundle file or directory")->required();
  importer->add_option("--name", import_options->name, "Store the run under this name");
  importer->callback(guarded([import_options] {
    History history(writable_history_path(import_options->db));
    const auto imported = history.import_run(import_options->path, {import_options->name});
    std::cout << "imported run " << short_id(imported.run.id) << " " << quoted_name(imported.run.name) << " from a " << imported.format
              << ": " << counts_text(imported.counts) << "\n";
  }));

  struct TagOptions {
    std::string db, id, tag;
    bool remove = false;
  };
  auto tag_options = std::make_shared<TagOptions>();
  auto* tag = runs->add_subcommand("tag", "Add a tag to a run (or --remove it)");
  add_db_option(tag, tag_options->db);
  tag->add_option("id", tag_options->id, "Run id, unique id prefix, or name")->required();
  tag->add_option("tag", tag_options->tag, "Tag")->required();
  tag->add_flag("--remove", tag_options->remove, "Remove the tag instead");
  tag->callback(guarded([tag_options] {
    History history(existing_history(tag_options->db));
    const auto id = history.resolve(tag_options->id);
    if (tag_options->remove) {
      if (!history.remove_tag(id, tag_options->tag))
        throw UsageError("run " + short_id(id) + " has no tag " + quoted_name(tag_options->tag));
    } else {
      history.add_tag(id, tag_options->tag);
    }
    const auto run = history.run(id);
    std::cout << short_id(id) << " " << quoted_name(run.name) << " tags: " << (run.tags.empty() ? "(none)" : printable(join(run.tags)))
              << "\n";
  }));

  struct NoteOptions {
    std::string db, id, text;
  };
  auto note_options = std::make_shared<NoteOptions>();
  auto* note = runs->add_subcommand("note", "Set a run's notes (replacing them; \"\" clears)");
  add_db_option(note, note_options->db);
  note->add_option("id", note_options->id, "Run id, unique id prefix, or name")->required();
  note->add_option("text", note_options->text, "Notes")->required();
  note->callback(guarded([note_options] {
    History history(existing_history(note_options->db));
    const auto id = history.resolve(note_options->id);
    history.set_notes(id, note_options->text);
    std::cout << "notes of " << short_id(id) << " " << quoted_name(history.run(id).name) << " set\n";
  }));

  struct DeleteOptions {
    std::string db, id;
    bool force = false;
  };
  auto delete_options = std::make_shared<DeleteOptions>();
  auto* remove = runs->add_subcommand("delete", "Delete a run and everything recorded for it");
  add_db_option(remove, delete_options->db);
  remove->add_option("id", delete_options->id, "Run id, unique id prefix, or name")->required();
  remove->add_flag("--force", delete_options->force,
                   "Delete a starting or running run too (one whose workbench went away; its ranks are not stopped)");
  remove->callback(guarded([delete_options] {
    History history(existing_history(delete_options->db));
    const auto [run, counts] = history.delete_run(history.resolve(delete_options->id), delete_options->force);
    std::cout << "deleted run " << run.id << " " << quoted_name(run.name) << ": " << counts_text(counts) << "\n";
  }));
}

}  // namespace tessera::cli
