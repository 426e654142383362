// The Launch dialog: which agents run the nodes (the local agent by default; remote ones by address and
// pinned key, remembered in settings), each node's inventory as its agent reports it, a check that the
// layout fits the nodes, and the run's name, tags and notes. It produces a LaunchRequest; the
// RunController launches it.
#pragma once

#include <string>
#include <thread>
#include <vector>

#include <QDialog>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QTableWidget>

#include <nlohmann/json.hpp>

#include "run_controller.hpp"

namespace tessera::ui {

/// "tcp://host:port" check; "" when fine, else the rule it breaks.
std::string endpointProblem(const std::string& endpoint);

class LaunchDialog : public QDialog {
  Q_OBJECT
 public:
  /// The settings key holding the remembered remote agents ("ENDPOINT KEY" strings).
  static constexpr const char* kAgentsKey = "launch/remoteAgents";

  LaunchDialog(const spec::RunSpec& spec, nlohmann::ordered_json spec_json, const QString& db_path,
               QWidget* parent = nullptr);
  ~LaunchDialog() override;

  /// The request for the agents ticked, in table order (valid after accept()).
  LaunchRequest request() const;
  /// Adds a remote agent (pinning `key`, a Z85 public key, when given); false with the reason.
  bool addAgent(const QString& endpoint, const QString& key, QString* error);
  /// Asks every ticked agent for its inventory (on a worker thread) and runs the fit check.
  void checkAgents();
  QString fitText() const { return fit_->text(); }
  /// Why the name or a tag typed cannot be recorded ("" when they can): said under them, and Launch
  /// stays off, before any agent is started.
  QString namingProblem() const;
  bool launchEnabled() const { return launch_->isEnabled(); }
  QLineEdit* nameField() const { return name_; }
  QLineEdit* tagsField() const { return tags_; }
  QTableWidget* agentTable() const { return agents_; }
  QPlainTextEdit* notesField() const { return notes_; }

 signals:
  void inventoriesChecked();

 private:
  void showInventories(const std::vector<nlohmann::json>& inventories, const QStringList& errors);
  std::vector<std::string> chosenEndpoints() const;  ///< "" = the local agent
  void saveAgents() const;
  void updateLaunchable();

  spec::RunSpec spec_;
  nlohmann::ordered_json spec_json_;
  QString db_path_;
  QTableWidget* agents_ = nullptr;
  QLineEdit* address_ = nullptr;
  QLineEdit* key_ = nullptr;
  QLabel* fit_ = nullptr;
  QLineEdit* name_ = nullptr;
  QLineEdit* tags_ = nullptr;
  QLabel* naming_ = nullptr;  ///< namingProblem(), when there is one
  QPlainTextEdit* notes_ = nullptr;
  QPushButton* launch_ = nullptr;
  std::thread checker_;
  bool fits_ = false;
  std::vector<std::string> resolved_;  ///< the checked agents' endpoints (the local agent's included)
};

}  // namespace tessera::ui
