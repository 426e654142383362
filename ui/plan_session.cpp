// The open document: spec edits as undo commands, re-planning after each, spec files.
#include "plan_session.hpp"

#include <cctype>
#include <chrono>
#include <set>
#include <fstream>

#include <QFileInfo>
#include <QSaveFile>
#include <QUndoCommand>

#include "spec/interop.hpp"

namespace tessera::ui {

namespace {

// How long the workbench waits for a pipe opened as a spec or a config to be written to: long enough
// for `tessera --spec <(jq …)`, short enough not to hang on a named pipe nobody writes to.
constexpr int kPipeWait_ms = 3000;

// One edit: the whole spec before and after (a spec is a few hundred bytes). The session's edits of
// one field, each begun within kMergeWithin of the last one's replan ending, are one step: arrows
// through the model preset list applied a preset at each press, each its own undo step. An edit
// after an undo is a step of its own (`sequence` is then not the next).
class SpecEdit : public QUndoCommand {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr auto kMergeWithin = std::chrono::milliseconds(1500);

  SpecEdit(PlanSession* session, int64_t sequence, spec::RunSpec before, spec::RunSpec after, const QString& text, QString field = {})
      : QUndoCommand(text), session_(session), sequence_(sequence), before_(std::move(before)), after_(std::move(after)),
        field_(std::move(field)), begun_(Clock::now()) {}
  void undo() override { session_->applySpec(before_); }
  void redo() override {
    session_->applySpec(after_);
    done_ = Clock::now();
  }
  int id() const override { return field_.isEmpty() ? -1 : 1; }
  bool mergeWith(const QUndoCommand* other) override {
    const auto* next = static_cast<const SpecEdit*>(other);  // id() 1 is SpecEdit's alone
    if (next->field_ != field_ || next->sequence_ != sequence_ + 1 || next->begun_ - done_ > kMergeWithin) return false;
    after_ = next->after_;
    sequence_ = next->sequence_;
    done_ = next->done_;
    setText(next->text());
    setObsolete(after_ == before_);  // browsed back to where it began: no step at all
    return true;
  }

 private:
  PlanSession* session_;
  int64_t sequence_;  ///< the session's count of edits at this one (the last merged in)
  spec::RunSpec before_, after_;
  QString field_;     ///< the field set, or empty for an edit of the whole spec (never merged)
  Clock::time_point begun_, done_;  ///< when the edit was made, and when its replan (redo) ended
};

QString messages(const std::vector<spec::FieldError>& errors) {
  QStringList lines;
  for (const auto& e : errors) lines << QString::fromStdString(e.message);
  return lines.join('\n');
}

}  // namespace

PlanSession::PlanSession(QObject* parent) : QObject(parent) {
  options_.record_events = true;
  connect(&undo_, &QUndoStack::cleanChanged, this, &PlanSession::fileChanged);
  spec_ = defaultSpec();
  replan();
}

spec::RunSpec PlanSession::defaultSpec() {
  static const spec::RunSpec spec = spec::parse_spec(nlohmann::json{
      {"name", "Llama-3-8B on one H100 node"},
      {"model", {{"preset", "llama3-8b"}}},
      {"parallel", {{"tp", 2}, {"sequence_parallel", true}, {"distributed_optimizer", true}}},
      {"training", {{"micro_batch_size", 1}, {"global_batch_size", 64}, {"recompute", "selective"}}},
      {"cluster", {{"gpu", "h100-sxm"}, {"nodes", 1}, {"gpus_per_node", 8}}}});
  return spec;
}

QString PlanSession::problemsText() const { return messages(errors_); }

QString PlanSession::errorFor(const QString& field) const {
  const std::string key = field.toStdString();
  for (const auto& e : errors_)
    if (e.field == key) return QString::fromStdString(e.message);
  return {};
}

namespace {

// The dotted fields a message names: whole paths ("model.num_attention_heads") and the fields of one
// section joined by "·" ("parallel.tp·pp·dp·cp" names parallel.tp, .pp, .dp and .cp).
std::set<std::string> fieldsNamedIn(const std::string& message) {
  const auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  const auto name_at = [&](size_t at) {
    size_t end = at;
    while (end < message.size() && word(message[end])) ++end;
    return message.substr(at, end - at);
  };
  static const std::string kJoin = "\u00B7";  // ·
  std::set<std::string> out;
  for (const std::string& section : spec::section_names()) {
    const std::string prefix = section + ".";
    for (size_t at = message.find(prefix); at != std::string::npos; at = message.find(prefix, at + 1)) {
      if (at > 0 && (word(message[at - 1]) || message[at - 1] == '.')) continue;  // "x.parallel.tp" is no field of ours
      for (size_t next = at + prefix.size();;) {
        const std::string name = name_at(next);
        if (name.empty()) break;
        out.insert(prefix + name);
        next += name.size();
        if (message.compare(next, kJoin.size(), kJoin) != 0) break;
        next += kJoin.size();
      }
    }
  }
  return out;
}

}  // namespace

QString PlanSession::relatedErrorFor(const QString& field) const {
  const auto it = related_.find(field.toStdString());
  return it == related_.end() ? QString() : it->second.join(QLatin1Char('\n'));
}

bool PlanSession::setField(const QString& path, const nlohmann::json& value, QString* error) {
  spec::RunSpec updated = spec_;
  try {
    spec::set_field(updated, path.toStdString(), value);
  } catch (const spec::SpecError& e) {
    if (error) *error = messages(e.errors());
    return false;
  }
  if (updated == spec_) return true;
  QString text = tr("Set %1 = %2").arg(path, value.is_string() ? QString::fromStdString(value.get<std::string>())
                                                               : QString::fromStdString(value.dump()));
  // A new layout that no longer matches an explicit dp derives dp again, in the same step (as the
  // layout overrides of tessera-cli do): trying TP 4 instead of 8 should not also need dp edited.
  static const QStringList layout = {"parallel.tp", "parallel.pp", "parallel.cp", "cluster.nodes", "cluster.gpus_per_node"};
  auto& p = updated.parallel;
  if (layout.contains(path) && p.dp > 0 && p.tp * p.pp * p.cp * p.dp != updated.world_size()) {
    p.dp = 0;
    text += tr(" (dp derived again)");
  }
  // Uneven stages after a new PP, VPP or model are set again in the same step, as the layout search
  // sets them (spec::fit_stage_split): evenly where PP·VPP divides the layers, else with the end
  // stages set apart. Where neither can be made the split stays, and its rule says why.
  static const QStringList splits = {"parallel.pp", "parallel.vpp", "model.num_layers", "model.preset"};
  if (splits.contains(path) && updated.sets_end_stages()) {
    const auto was = std::pair{p.first_stage_layers, p.last_stage_layers};
    if (spec::fit_stage_split(updated) && std::pair{p.first_stage_layers, p.last_stage_layers} != was)
      text += p.first_stage_layers == 0 ? tr(" (an even split of the layers)")
                                        : tr(" (end stages of %1 and %2 layers)").arg(p.first_stage_layers).arg(p.last_stage_layers);
  }
  // A name that spells the layout, the GPU count, the model or the GPU follows it, as `tessera-cli plan
  // --tp` relabels it (the same fields): "… on 64 H100 (TP8·PP4·DP2)" after TP 4 would name another
  // run than the one planned. Not while the layout does not divide the cluster (it would spell "DP0").
  static const QStringList labelled = {"parallel.tp", "parallel.pp", "parallel.dp", "parallel.cp", "parallel.ep", "parallel.vpp",
                                       "parallel.sequence_parallel", "parallel.zero_stage", "parallel.distributed_optimizer", "parallel.schedule",
                                       "cluster.nodes", "cluster.gpus_per_node", "cluster.gpu", "model.preset"};
  // While the layout does not divide the cluster, a new model or GPU is renamed all the same (fixing
  // the layout later compares with a spec that already has them).
  const bool model = path == QLatin1String("model.preset") || path == QLatin1String("cluster.gpu");
  if (labelled.contains(path) && (updated.data_parallel() > 0 || model)) {
    const std::string renamed = updated.data_parallel() > 0 ? spec::relabel_layout(updated.name, updated, spec_.world_size(), &spec_)
                                                            : spec::relabel_model(updated.name, updated, spec_);
    if (renamed != updated.name) {
      updated.name = renamed;
      text += tr(" (name relabelled)");
    }
  }
  undo_.push(new SpecEdit(this, ++edits_, spec_, std::move(updated), text, path));
  return true;
}

void PlanSession::replaceSpec(const spec::RunSpec& spec, const QString& description) {
  if (spec == spec_) return;
  undo_.push(new SpecEdit(this, ++edits_, spec_, spec, description));
}

bool PlanSession::importHuggingFace(const QString& path, QString* error, QStringList* notes) {
  try {
    // Read as tessera-cli import hf reads it: at most kMaxSpecFileBytes (/dev/zero filled the memory),
    // a NUL, deep nesting or a key given twice refused, a syntax error said where (a SpecError).
    const nlohmann::json config = spec::read_hf_config_file(path.toStdString(), kPipeWait_ms);
    std::vector<std::string> import_notes;
    const auto imported = spec::spec_from_hf_config(config, QFileInfo(path).fileName().toStdString(), &import_notes);
    spec::RunSpec updated = spec_;
    updated.model = spec::ModelSpec{};
    for (const auto& [key, value] : imported["model"].items()) spec::set_field(updated, "model." + key, value);
    // Fields the config leaves out take their spec defaults, as parse_spec would give them.
    if (updated.model.moe_ffn_hidden_size == 0) updated.model.moe_ffn_hidden_size = updated.model.ffn_hidden_size;
    updated.name = imported.value("name", updated.name);
    // Other layers split again, as after an edit of num_layers.
    if (updated.sets_end_stages() && updated.model.num_layers != spec_.model.num_layers) spec::fit_stage_split(updated);
    replaceSpec(updated, tr("Import %1").arg(QFileInfo(path).fileName()));
    if (notes)
      for (const auto& note : import_notes) notes->push_back(QString::fromStdString(note));
    return true;
  } catch (const spec::SpecError& e) {
    if (error) *error = messages(e.errors());
  } catch (const std::exception& e) {
    if (error) *error = QString::fromUtf8(e.what());
  }
  return false;
}

void PlanSession::applySpec(const spec::RunSpec& spec) {
  spec_ = spec;
  replan();
}

void PlanSession::setMemoryProfile(planner::MemoryProfile profile) {
  if (profile == options_.memory_profile) return;
  options_.memory_profile = profile;
  replan();
}

void PlanSession::replan() {
  const auto start = std::chrono::steady_clock::now();
  errors_ = spec::validate(spec_);
  if (errors_.empty()) {
    try {
      // The rank grid depends on the layout and the cluster only: an edit of the model or the
      // training keeps the grid the planner built last time (at 4,096 GPUs, most of a re-plan).
      GridPtr grid = grid_;
      if (!grid || grid_parallel_ != spec_.parallel || grid_cluster_ != spec_.cluster)
        grid = std::make_shared<const planner::RankGrid>(planner::make_rank_grid(spec_));
      planner::Plan plan = planner::make_plan(spec_, options_);
      plan.cross_node_groups = grid->cross_node_kinds();
      plan_ = std::make_shared<const planner::Plan>(std::move(plan));
      grid_ = std::move(grid);
      grid_parallel_ = spec_.parallel;
      grid_cluster_ = spec_.cluster;
    } catch (const spec::SpecError& e) {
      errors_ = e.errors();
    } catch (const std::exception& e) {
      errors_ = {{"", e.what()}};
    }
  }
  last_plan_s_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // Each message's named fields are read once a plan, not on every data() call of the designer.
  related_.clear();
  for (const auto& e : errors_)
    for (const auto& named : fieldsNamedIn(e.message))
      if (named != e.field) related_[named] << QString::fromStdString(e.message);
  emit changed();
}

PlanResult PlanSession::planWithSchedule(spec::Schedule schedule) const {
  spec::RunSpec other = spec_;
  other.parallel.schedule = schedule;
  if (schedule == spec::Schedule::interleaved) {
    if (other.parallel.vpp < 2) other.parallel.vpp = 2;
  } else {
    other.parallel.vpp = 1;
  }
  // Uneven stages that another VPP cannot hold (each stage a multiple of VPP): split as the search would.
  if (other.sets_end_stages() && !other.stages_split_layers()) spec::fit_stage_split(other);
  if (const auto problems = spec::validate(other); !problems.empty())
    return {nullptr, QString::fromStdString(problems.front().message)};
  try {
    return {std::make_shared<const planner::Plan>(planner::make_plan(other, options_)), {}};
  } catch (const std::exception& e) {
    return {nullptr, QString::fromUtf8(e.what())};
  }
}

void PlanSession::resetDocument(const spec::RunSpec& spec, const QString& path) {
  undo_.clear();
  path_ = path;
  applySpec(spec);
  undo_.setClean();
  emit fileChanged();
}

void PlanSession::newDocument() { resetDocument(defaultSpec(), {}); }

bool PlanSession::open(const QString& path, QString* error) {
  try {
    // Its rules are checked by replan(), like an edit's: the designer marks what breaks them.
    resetDocument(spec::load_spec_file(path.toStdString(), spec::PresetCatalog::builtin(), spec::Rules::none, kPipeWait_ms),
                  QFileInfo(path).absoluteFilePath());
    return true;
  } catch (const spec::SpecError& e) {
    if (error) *error = messages(e.errors());
    return false;
  }
}

bool PlanSession::save(const QString& path, QString* error) {
  // Written beside the file and renamed over it: a disk that filled while writing left the spec cut
  // short (std::ofstream had emptied it first), and the file no longer opened.
  QSaveFile out(path);
  out.setDirectWriteFallback(true);  // a writable spec in a folder that is not: written in place, as before
  const QByteArray text = QByteArray::fromStdString(spec::to_json(spec_).dump(2) + '\n');
  // flush() before commit(): a flush that fails inside commit()'s close is not seen by Qt 6.4, which
  // then renames the cut-short file over the spec all the same.
  if (!out.open(QIODevice::WriteOnly) || out.write(text) != text.size() || !out.flush() || !out.commit()) {
    if (error) *error = tr("cannot write %1: %2").arg(path, out.errorString());
    out.cancelWriting();
    return false;
  }
  path_ = QFileInfo(path).absoluteFilePath();
  undo_.setClean();
  emit fileChanged();
  return true;
}

}  // namespace tessera::ui
