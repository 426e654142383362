// The Launch dialog: agents, inventories, fit check, run metadata.
#include "launch_dialog.hpp"

#include <algorithm>

#include <QApplication>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QMetaObject>
#include <QPointer>
#include <QSettings>
#include <QVBoxLayout>

#include "format.hpp"
#include "launch/agent_connection.hpp"
#include "launch/local_agent.hpp"
#include "protocol/endpoint.hpp"
#include "launch/run_session.hpp"
#include "protocol/keys.hpp"
#include "store/types.hpp"
#include "theme.hpp"

namespace tessera::ui {

namespace {

enum Column { Use, Agent, Host, Cores, Memory, Gpus, FreeRanks, ColumnCount };

}  // namespace

std::string endpointProblem(const std::string& endpoint) {
  try {
    launch::endpoint_host(endpoint);  // checks the scheme, the host and the port 1-65535
  } catch (const std::exception& e) {
    // Its message names the address (control characters shown as '?') and the rule: said once, in
    // the dialog's words, with the likely fix for a bare HOST:PORT.
    std::string problem = e.what();
    const std::string prefix = "agent endpoint ";
    if (problem.rfind(prefix, 0) == 0) problem = "agent address " + problem.substr(prefix.size());
    const bool printable = std::none_of(endpoint.begin(), endpoint.end(), protocol::is_blank_or_control);
    const bool bare = printable && endpoint.find("://") == std::string::npos && endpoint.find(':') != std::string::npos;
    return bare ? problem + " — did you mean tcp://" + endpoint + "?" : problem;
  }
  return {};
}

LaunchDialog::LaunchDialog(const spec::RunSpec& spec, nlohmann::ordered_json spec_json, const QString& db_path, QWidget* parent)
    : QDialog(parent), spec_(spec), spec_json_(std::move(spec_json)), db_path_(db_path) {
  setWindowTitle(tr("Launch %1").arg(QString::fromStdString(spec.name)));
  auto* root = new QVBoxLayout(this);

  auto* agents_box = new QGroupBox(tr("Agents (one per node, in node order)"));
  auto* ab = new QVBoxLayout(agents_box);
  agents_ = new QTableWidget(0, ColumnCount);
  agents_->setHorizontalHeaderLabels({tr("Use"), tr("Agent"), tr("Host"), tr("CPU cores"), tr("Memory"), tr("GPUs"), tr("Free ranks")});
  agents_->horizontalHeader()->setSectionResizeMode(Agent, QHeaderView::Stretch);
  agents_->verticalHeader()->hide();
  agents_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  agents_->setTabKeyNavigation(false);  // Tab leaves the table (it walked the cells for ever); arrows move in it
  ab->addWidget(agents_);
  auto* add_row = new QHBoxLayout;
  address_ = new QLineEdit;
  address_->setPlaceholderText(tr("tcp://gpu-node-1:7070"));
  key_ = new QLineEdit;
  key_->setPlaceholderText(tr("agent public key (40 Z85 characters, from agent.pub)"));
  auto* add = new QPushButton(tr("A&dd agent"));
  auto* check = new QPushButton(tr("C&heck agents"));
  add_row->addWidget(address_, 2);
  add_row->addWidget(key_, 3);
  add_row->addWidget(add);
  add_row->addWidget(check);
  ab->addLayout(add_row);
  fit_ = new QLabel(tr("Press Check agents to read each node's inventory."));
  fit_->setWordWrap(true);
  ab->addWidget(fit_);
  root->addWidget(agents_box);

  auto* meta = new QGroupBox(tr("Run"));
  auto* form = new QFormLayout(meta);
  name_ = new QLineEdit;
  // The same default as the run controller's: the spec's name, or "run" for a spec without one.
  name_->setPlaceholderText(tr("default: %1 and the id's first digits")
                                .arg(spec.name.empty() ? QStringLiteral("run") : QString::fromStdString(spec.name)));
  tags_ = new QLineEdit;
  tags_->setPlaceholderText(tr("comma separated: baseline, tp-sweep"));
  notes_ = new QPlainTextEdit;
  notes_->setMaximumHeight(70);
  notes_->setTabChangesFocus(true);  // Tab moves on to the buttons (it typed a tab into the notes)
  naming_ = new QLabel;
  naming_->setWordWrap(true);
  naming_->setStyleSheet(QStringLiteral("color: %1").arg(colors::warning().name()));
  naming_->hide();
  form->addRow(tr("&Name"), name_);
  form->addRow(tr("&Tags"), tags_);
  form->addRow(QString(), naming_);
  form->addRow(tr("N&otes"), notes_);
  // The spec's own label (with CP, EP, VPP and SP where they apply: a MoE's EP2 was left out).
  form->addRow(tr("Layout"), new QLabel(tr("%1 — %2 ranks on %3, %4 per node")
                                            .arg(QString::fromStdString(spec.layout_label()))
                                            .arg(spec.world_size())
                                            .arg(formatNodes(spec.cluster.nodes))
                                            .arg(spec.cluster.gpus_per_node)));
  form->addRow(tr("History"), new QLabel(db_path));
  root->addWidget(meta);

  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Cancel);
  launch_ = buttons->addButton(tr("&Launch"), QDialogButtonBox::AcceptRole);
  launch_->setEnabled(false);
  root->addWidget(buttons);
  connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);

  auto addRow = [this](const QString& endpoint, bool checked) {
    const int row = agents_->rowCount();
    agents_->insertRow(row);
    auto* use = new QTableWidgetItem;
    use->setFlags(Qt::ItemIsUserCheckable | Qt::ItemIsEnabled);
    use->setCheckState(checked ? Qt::Checked : Qt::Unchecked);
    agents_->setItem(row, Use, use);
    auto* agent = new QTableWidgetItem(endpoint.isEmpty() ? tr("local agent (this machine)") : endpoint);
    agent->setData(Qt::UserRole, endpoint);
    agents_->setItem(row, Agent, agent);
  };
  addRow(QString(), spec.cluster.nodes == 1);
  for (const QString& entry : QSettings().value(QLatin1String(kAgentsKey)).toStringList())
    addRow(entry.section(QLatin1Char(' '), 0, 0), false);
  connect(add, &QPushButton::clicked, this, [this] {
    QString error;
    if (!addAgent(address_->text().trimmed(), key_->text().trimmed(), &error)) {
      fit_->setText(error);
      fit_->setStyleSheet(QStringLiteral("color: %1").arg(colors::warning().name()));
      return;
    }
    address_->clear();
    key_->clear();
  });
  connect(check, &QPushButton::clicked, this, &LaunchDialog::checkAgents);
  connect(name_, &QLineEdit::textChanged, this, &LaunchDialog::updateLaunchable);
  connect(tags_, &QLineEdit::textChanged, this, &LaunchDialog::updateLaunchable);
  connect(agents_, &QTableWidget::itemChanged, this, [this](QTableWidgetItem* item) {
    if (item->column() == Use) launch_->setEnabled(false);  // check again after changing the agents
  });
  resize(820, 520);
  // The first thing to type is the run's name (with the agents' table first, its current cell's
  // focus frame looked like an empty field beside the check box).
  name_->setFocus();
}

LaunchDialog::~LaunchDialog() {
  if (checker_.joinable()) checker_.join();
}

bool LaunchDialog::addAgent(const QString& endpoint, const QString& key, QString* error) {
  if (const auto problem = endpointProblem(endpoint.toStdString()); !problem.empty()) {
    if (error) *error = QString::fromStdString(problem);
    return false;
  }
  if (!key.isEmpty() && !protocol::is_z85_key(key.toStdString())) {
    if (error) *error = tr("agent key: \"%1\" is not a 40-character Z85 public key").arg(key);
    return false;
  }
  if (key.isEmpty() && !protocol::is_loopback_endpoint(endpoint.toStdString())) {
    if (error) *error = tr("agent key: %1 is not on this machine; give its public key (agent.pub) to pin").arg(endpoint);
    return false;
  }
  try {
    if (!key.isEmpty())
      protocol::KnownAgents(launch::Credentials::from_config_dir().known_agents_path).pin(endpoint.toStdString(), key.toStdString());
  } catch (const std::exception& e) {
    if (error) *error = tr("cannot pin the key: %1").arg(QString::fromStdString(e.what()));
    return false;
  }
  const int row = agents_->rowCount();
  agents_->insertRow(row);
  auto* use = new QTableWidgetItem;
  use->setFlags(Qt::ItemIsUserCheckable | Qt::ItemIsEnabled);
  use->setCheckState(Qt::Checked);
  agents_->setItem(row, Use, use);
  auto* agent = new QTableWidgetItem(endpoint);
  agent->setData(Qt::UserRole, endpoint);
  agents_->setItem(row, Agent, agent);
  saveAgents();
  launch_->setEnabled(false);
  return true;
}

void LaunchDialog::saveAgents() const {
  QStringList entries;
  for (int row = 0; row < agents_->rowCount(); ++row) {
    const QString endpoint = agents_->item(row, Agent)->data(Qt::UserRole).toString();
    if (!endpoint.isEmpty()) entries << endpoint;
  }
  QSettings().setValue(QLatin1String(kAgentsKey), entries);
}

std::vector<std::string> LaunchDialog::chosenEndpoints() const {
  std::vector<std::string> out;
  for (int row = 0; row < agents_->rowCount(); ++row)
    if (agents_->item(row, Use)->checkState() == Qt::Checked)
      out.push_back(agents_->item(row, Agent)->data(Qt::UserRole).toString().toStdString());
  return out;
}

void LaunchDialog::checkAgents() {
  if (checker_.joinable()) checker_.join();
  fit_->setText(tr("Asking the agents…"));
  fit_->setStyleSheet(QString());
  launch_->setEnabled(false);
  const auto endpoints = chosenEndpoints();
  QPointer<LaunchDialog> self(this);
  checker_ = std::thread([self, endpoints] {
    std::vector<nlohmann::json> inventories;
    QStringList errors;
    try {
      const auto credentials = launch::Credentials::from_config_dir();
      zmq::context_t context;
      for (const auto& e : endpoints) {
        try {
          const std::string endpoint = e.empty() ? launch::ensure_local_agent(credentials) : e;
          launch::AgentConnection connection(context, endpoint, credentials);
          inventories.push_back(connection.request("hello", {{"client", "tessera"}}, "inventory", std::chrono::milliseconds(3000)));
          inventories.back()["endpoint"] = endpoint;
        } catch (const std::exception& error) {
          errors << QString::fromStdString((e.empty() ? std::string("local agent") : e) + ": " + error.what());
        }
      }
    } catch (const std::exception& error) {
      errors << QString::fromStdString(error.what());
    }
    QMetaObject::invokeMethod(
        qApp, [self, inventories, errors] {
          if (self) self->showInventories(inventories, errors);
        },
        Qt::QueuedConnection);
  });
}

void LaunchDialog::showInventories(const std::vector<nlohmann::json>& inventories, const QStringList& errors) {
  size_t next = 0;
  for (int row = 0; row < agents_->rowCount(); ++row) {
    if (agents_->item(row, Use)->checkState() != Qt::Checked || next >= inventories.size()) continue;
    const auto& inv = inventories[next++];
    QStringList gpus;
    if (inv.contains("gpus") && inv["gpus"].is_array())
      for (const auto& g : inv["gpus"]) gpus << QString::fromStdString(g.value("name", std::string("GPU")));
    const int64_t free_ranks = inv.value("max_ranks", int64_t{0}) - inv.value("ranks_in_use", int64_t{0});
    const QStringList cells = {QString::fromStdString(inv.value("hostname", std::string())),
                               QString::number(inv.value("cpu_cores", int64_t{0})),
                               formatGiB(inv.value("memory_bytes", int64_t{0})),
                               gpus.isEmpty() ? tr("none") : tr("%1 × %2").arg(gpus.size()).arg(gpus.front()),
                               QString::number(free_ranks)};
    for (int c = 0; c < cells.size(); ++c) agents_->setItem(row, Host + c, new QTableWidgetItem(cells[c]));
  }
  QStringList problems = errors;
  if (errors.isEmpty())
    for (const auto& p : launch::fit_problems(spec_, inventories)) problems << QString::fromStdString(p);
  fits_ = problems.isEmpty();
  resolved_.clear();
  for (const auto& inv : inventories) resolved_.push_back(inv.value("endpoint", std::string()));
  fit_->setText(fits_ ? tr("✓ The layout fits: %1 ranks on %2.").arg(spec_.world_size()).arg(formatNodes(static_cast<int64_t>(inventories.size())))
                      : problems.join(QLatin1Char('\n')));
  fit_->setStyleSheet(QStringLiteral("color: %1").arg(fits_ ? colors::ok().name() : colors::warning().name()));
  updateLaunchable();
  emit inventoriesChecked();
}

QString LaunchDialog::namingProblem() const {
  const auto request = this->request();
  if (!request.name.empty())
    if (const auto problem = store::run_name_problem(request.name); !problem.empty()) return tr("Name: %1").arg(QString::fromStdString(problem));
  for (const auto& tag : request.tags)
    if (const auto problem = store::tag_problem(tag); !problem.empty()) return tr("Tags: %1").arg(QString::fromStdString(problem));
  return {};
}

void LaunchDialog::updateLaunchable() {
  const QString problem = namingProblem();
  naming_->setText(problem);
  naming_->setVisible(!problem.isEmpty());
  launch_->setEnabled(fits_ && problem.isEmpty());
}

LaunchRequest LaunchDialog::request() const {
  LaunchRequest r;
  r.spec = spec_;
  r.spec_json = spec_json_;
  const auto chosen = chosenEndpoints();
  if (chosen.size() == 1 && chosen.front().empty()) {
    r.agents.clear();  // the local agent alone: the controller starts it if it exited meanwhile
  } else if (resolved_.size() == chosen.size()) {
    r.agents = resolved_;  // the local agent among others: at the endpoint the check found
  } else {
    for (const auto& e : chosen)
      if (!e.empty()) r.agents.push_back(e);
  }
  r.name = name_->text().trimmed().toStdString();
  for (const QString& tag : tags_->text().split(QLatin1Char(','), Qt::SkipEmptyParts))
    if (!tag.trimmed().isEmpty()) r.tags.push_back(tag.trimmed().toStdString());
  r.notes = notes_->toPlainText().toStdString();
  r.db_path = db_path_.toStdString();
  return r;
}

}  // namespace tessera::ui
