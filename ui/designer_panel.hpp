// The designer: the run's name, preset pickers for the model and the GPU, "Import Hugging Face
// config.json…" and "Search Layouts…", and the spec's fields by section (Model, Parallelism, Training, Cluster) with
// derived values beside them, invalid fields (and fields their rules name) marked with the planner's
// message, and every problem in full under the tree, each a link to its field (a list up to a third
// of the panel tall, scrolled beyond).
#pragma once

#include <QComboBox>
#include <QLabel>
#include <QLineEdit>
#include <QTextBrowser>
#include <QTreeView>
#include <QWidget>

namespace tessera::ui {

class PlanSession;
class SpecFieldModel;

class DesignerPanel : public QWidget {
  Q_OBJECT
 public:
  DesignerPanel(PlanSession* session, SpecFieldModel* model, QWidget* parent = nullptr);

  QTreeView* fieldView() const { return tree_; }
  QComboBox* modelPresetPicker() const { return model_preset_; }
  QComboBox* gpuPicker() const { return gpu_; }
  /// Selects and scrolls to a field ("parallel.tp"), ready to edit.
  void focusField(const QString& path);
  /// The problems listed under the field tree, as plain text (one per line; empty when it plans).
  QString problemsShown() const;
  /// The problems' list: as tall as they are, up to a third of the panel, scrolled beyond.
  QTextBrowser* problemsList() const { return problems_; }

 signals:
  void importHuggingFaceRequested();
  void searchLayoutsRequested();

 protected:
  void resizeEvent(QResizeEvent* event) override;
  void changeEvent(QEvent* event) override;

 private:
  void refresh();
  /// The problems' list in the panel's palette: its window colour behind the warning red.
  void styleProblems();
  /// The problems' list sized to its lines and the panel's height.
  void fitProblems();

  PlanSession* session_;
  SpecFieldModel* model_;
  QLineEdit* name_;
  QComboBox* model_preset_;
  QComboBox* gpu_;
  QTreeView* tree_;
  QTextBrowser* problems_;
};

}  // namespace tessera::ui
