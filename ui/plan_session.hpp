// The open document of the workbench: the run spec being edited, its undo stack and file, the
// planner's problems with it, and the last valid plan (made by backend/planner, never here).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <QObject>
#include <QString>
#include <QStringList>
#include <QUndoStack>

#include <nlohmann/json.hpp>

#include "planner/plan.hpp"
#include "spec/run_spec.hpp"

namespace tessera::ui {

using PlanPtr = std::shared_ptr<const planner::Plan>;
using GridPtr = std::shared_ptr<const planner::RankGrid>;

/// A plan or the planner's first problem with the spec it was asked for.
struct PlanResult {
  PlanPtr plan;
  QString error;
};

class PlanSession : public QObject {
  Q_OBJECT
 public:
  explicit PlanSession(QObject* parent = nullptr);

  /// The spec a new document starts from: Llama-3-8B on one H100 node.
  static spec::RunSpec defaultSpec();

  const spec::RunSpec& spec() const { return spec_; }
  /// Problems validate() or make_plan() found with the current spec (empty when it plans).
  const std::vector<spec::FieldError>& errors() const { return errors_; }
  /// Every problem of errors(), one per line.
  QString problemsText() const;
  /// The message for one dotted field ("" when the field has no problem).
  QString errorFor(const QString& field) const;
  /// The messages of other fields' problems that name this dotted field as a whole ("parallel.vpp=2
  /// needs parallel.schedule=interleaved" names parallel.schedule; "parallel.tp·pp·dp·cp" names each of
  /// the four), one per line; "" when none does.
  QString relatedErrorFor(const QString& field) const;
  /// The last valid plan; when stale() it belongs to an earlier spec. Its rank grid is grid().
  PlanPtr plan() const { return plan_; }
  /// The rank grid of plan(): every rank and process group (built again only when the layout changes).
  GridPtr grid() const { return grid_; }
  bool stale() const { return !errors_.empty(); }
  /// Wall time of the last call to the planner (validation and make_plan).
  double lastPlanSeconds() const { return last_plan_s_; }

  /// Edits one field through spec::set_field as an undoable step. A value set_field rejects
  /// changes nothing and returns false with its message in *error.
  bool setField(const QString& path, const nlohmann::json& value, QString* error = nullptr);
  /// Replaces the whole spec (a rename, an import) as one undoable step.
  void replaceSpec(const spec::RunSpec& spec, const QString& description);
  /// Replaces the model section with one read from a Hugging Face config.json (layout, training and
  /// cluster stay), as one undoable step; false with the reason in *error. What the import changed
  /// to plan the model (a sliding window planned as the sequence) is appended to *notes.
  bool importHuggingFace(const QString& path, QString* error, QStringList* notes = nullptr);
  QUndoStack* undoStack() { return &undo_; }

  planner::MemoryProfile memoryProfile() const { return options_.memory_profile; }
  void setMemoryProfile(planner::MemoryProfile profile);
  /// Plans the current spec with another pipeline schedule (vpp 2 for interleaved, 1 otherwise).
  PlanResult planWithSchedule(spec::Schedule schedule) const;

  // Files.
  QString filePath() const { return path_; }
  bool isModified() const { return !undo_.isClean(); }
  void newDocument();
  /// Opens a spec file; false with every problem in *error when it does not parse (not JSON, a field
  /// of the wrong type, an unknown field or preset). A spec that parses but breaks rules opens with
  /// them in errors(), as after an edit.
  bool open(const QString& path, QString* error);
  bool save(const QString& path, QString* error);

  /// Applies a spec without touching the undo stack (used by the undo commands).
  void applySpec(const spec::RunSpec& spec);

 signals:
  /// The spec, its problems or the plan changed (one signal: views refresh together).
  void changed();
  void fileChanged();

 private:
  void replan();
  void resetDocument(const spec::RunSpec& spec, const QString& path);

  spec::RunSpec spec_;
  std::vector<spec::FieldError> errors_;
  std::map<std::string, QStringList> related_;  ///< per dotted field, the messages of errors_ naming it but not at it
  PlanPtr plan_;
  planner::PlanOptions options_;
  GridPtr grid_;  ///< the grid of plan_, and the layout it was built for
  spec::ParallelSpec grid_parallel_;
  spec::ClusterSpec grid_cluster_;
  QUndoStack undo_;
  int64_t edits_ = 0;  ///< edits pushed so far: an edit merges only with the one just before it
  QString path_;
  double last_plan_s_ = 0;
};

}  // namespace tessera::ui
