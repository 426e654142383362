// The Search Layouts dialog: fields of the space, the worker thread, the result and Apply.
#include "layout_search_dialog.hpp"

#include <algorithm>
#include <limits>
#include <memory>

#include <QApplication>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QGridLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QScrollBar>
#include <QMetaObject>
#include <QRegularExpression>
#include <QSortFilterProxyModel>
#include <QVBoxLayout>

#include "format.hpp"
#include "row_activation.hpp"
#include "sort_header.hpp"
#include "theme.hpp"

namespace tessera::ui {

namespace {

constexpr int64_t kMaxInt = std::numeric_limits<int>::max();  // a progress bar counts in int

QString qs(std::string_view text) { return QString::fromUtf8(text.data(), static_cast<qsizetype>(text.size())); }

template <typename T>
QString joined(const std::vector<T>& values) {
  QStringList parts;
  for (const auto& v : values) parts << QString::number(v);
  return parts.join(QStringLiteral(", "));
}

// "1, 2, 4" or "1 2 4": each value an integer from `least` to `most`; the problem names `label`.
std::optional<std::vector<int64_t>> parseList(const QString& text, const QString& label, int64_t least, int64_t most,
                                              QString* problem) {
  std::vector<int64_t> out;
  for (const QString& part : text.split(QRegularExpression(QStringLiteral("[,\\s]+")), Qt::SkipEmptyParts)) {
    bool ok = false;
    const qlonglong value = part.toLongLong(&ok);
    if (!ok || value < least || value > most) {
      *problem = QObject::tr("%1: “%2” is not a whole number from %3 to %4").arg(label, part).arg(least).arg(most);
      return std::nullopt;
    }
    out.push_back(value);
  }
  if (out.empty()) {
    *problem = QObject::tr("%1: give at least one value").arg(label);
    return std::nullopt;
  }
  return out;
}

struct ListField {
  const char* name;
  const char* label;
  const char* tip;
  int64_t least, most;
};

const ListField kListFields[] = {
    {"tp", "TP", "Tensor-parallel sizes (default: the divisors of the GPUs per node)", 1, 1 << 16},
    {"cp", "CP", "Context-parallel sizes (default: powers of two that keep 1024 tokens or more on a rank)", 1, 1 << 16},
    {"pp", "PP", "Pipeline-parallel sizes (default: the divisors of the world that split the layers, evenly or with "
           "the end stages set apart)", 1, 1 << 16},
    {"vpp", "VPP (interleaved)", "Virtual stages per rank, tried with the interleaved schedule", 2, 1 << 16},
    {"ep", "EP", "Expert-parallel sizes (default: the divisors of the experts; 1 for a dense model)", 1, 1 << 16},
    {"micro_batch_size", "Micro-batch", "Micro-batch sizes (default: 1, 2, 4, 8)", 1, 1 << 20},
    {"zero_stage", "ZeRO", "ZeRO stages (2 and 3 only without a pipeline)", 0, 3},
};

}  // namespace

LayoutSearchDialog::LayoutSearchDialog(PlanSession* session, QWidget* parent) : QDialog(parent), session_(session) {
  setWindowTitle(tr("Search Layouts"));
  const auto& s = session_->spec();
  auto* layout = new QVBoxLayout(this);

  const bool cpu = s.cluster.gpu == "cpu";
  const auto* gpu = spec::PresetCatalog::builtin().gpu(s.cluster.gpu);
  auto* intro = new QLabel(tr("Every layout of %1 on %2 (%3) with a global batch of %4 × %5 tokens, planned and ranked by "
                              "predicted tokens/s among those that fit. Model, batch, precision and cluster stay as they "
                              "are; sequence parallelism is on wherever TP > 1.")
                               .arg(s.model.preset.empty() ? tr("the model") : qs(s.model.preset),
                                    formatDevices(s.world_size(), cpu), formatNodes(s.cluster.nodes))
                               .arg(s.training.global_batch_size)
                               .arg(s.model.seq_length),
                           this);
  intro->setWordWrap(true);
  layout->addWidget(intro);

  auto* space = space_ = new QGroupBox(tr("Layouts to try"), this);
  // Two columns of fields, then the runtime's box across both (in a column it set the dialog's least width).
  auto* columns = new QGridLayout(space);
  auto* left = new QFormLayout;
  auto* right = new QFormLayout;
  columns->addLayout(left, 0, 0);
  columns->addLayout(right, 0, 1);
  int n = 0;
  for (const auto& f : kListFields) {
    auto* edit = new QLineEdit(space);
    edit->setToolTip(tr(f.tip));
    edit->setObjectName(QString::fromLatin1(f.name));
    lists_[QString::fromLatin1(f.name)] = edit;
    (n++ < 4 ? left : right)->addRow(tr(f.label), edit);
  }
  auto* recompute = new QHBoxLayout;
  for (auto r : {spec::Recompute::none, spec::Recompute::selective, spec::Recompute::full}) {
    recompute_[r] = new QCheckBox(qs(spec::to_string(r)), space);
    recompute->addWidget(recompute_[r]);
  }
  recompute->addStretch();
  right->addRow(tr("Recompute"), recompute);
  auto* schedules = new QHBoxLayout;
  for (auto sc : {spec::Schedule::one_f_one_b, spec::Schedule::interleaved, spec::Schedule::zb_h1, spec::Schedule::gpipe}) {
    schedules_[sc] = new QCheckBox(qs(spec::to_string(sc)), space);
    schedules->addWidget(schedules_[sc]);
  }
  schedules->addStretch();
  left->addRow(tr("Schedules"), schedules);
  memory_percent_ = new QSpinBox(space);
  memory_percent_->setRange(10, 100);
  memory_percent_->setValue(100);
  memory_percent_->setSuffix(tr(" % of %1").arg(formatBytes(gpu ? gpu->memory_bytes : 0)));
  memory_percent_->setToolTip(tr("A layout fits when its peak memory is at most this share of the %1's memory")
                                  .arg(cpu ? tr("rank") : tr("GPU")));
  right->addRow(tr("Memory limit"), memory_percent_);
  tessera_train_ = new QCheckBox(tr("Only layouts tessera-train runs (no CP, EP, ZB-H1 or ZeRO-2/3)"), space);
  tessera_train_->setToolTip(tr("The bundled runtime's limits; the other layouts are for Megatron-LM and its kin. "
                                "Ticked for a CPU cluster, which only tessera-train runs."));
  tessera_train_->setChecked(cpu);
  columns->addWidget(tessera_train_, 1, 0, 1, 2);
  layout->addWidget(space);
  // Tab goes down the left column, then down the right one (it zigzagged: ZeRO, Recompute on the
  // right, Schedules on the left, then the memory limit on the right).
  QList<QWidget*> tab_chain{lists_.at("tp"), lists_.at("cp"), lists_.at("pp"), lists_.at("vpp")};
  for (auto sc : {spec::Schedule::one_f_one_b, spec::Schedule::interleaved, spec::Schedule::zb_h1, spec::Schedule::gpipe})
    tab_chain << schedules_.at(sc);
  tab_chain << lists_.at("ep") << lists_.at("micro_batch_size") << lists_.at("zero_stage");
  for (auto r : {spec::Recompute::none, spec::Recompute::selective, spec::Recompute::full}) tab_chain << recompute_.at(r);
  tab_chain << memory_percent_ << tessera_train_;
  for (qsizetype i = 1; i < tab_chain.size(); ++i) setTabOrder(tab_chain[i - 1], tab_chain[i]);

  problem_ = new QLabel(this);
  problem_->setWordWrap(true);
  problem_->setStyleSheet(QStringLiteral("color: %1").arg(colors::warning().name()));
  problem_->hide();
  layout->addWidget(problem_);

  auto* controls = new QHBoxLayout;
  search_ = new QPushButton(tr("&Search"), this);
  search_->setDefault(true);
  stop_ = new QPushButton(tr("S&top"), this);
  stop_->setEnabled(false);
  progress_ = new QProgressBar(this);
  progress_->setValue(0);
  controls->addWidget(search_);
  controls->addWidget(stop_);
  controls->addWidget(progress_, 1);
  layout->addLayout(controls);

  summary_ = new QLabel(this);
  summary_->setWordWrap(true);
  layout->addWidget(summary_);
  model_ = new LayoutSearchModel(this);
  // Sorted by any column's number (ValueRole) through a proxy; "#" keeps the place by speed.
  sorted_ = new QSortFilterProxyModel(this);
  sorted_->setSourceModel(model_);
  sorted_->setSortRole(LayoutSearchModel::ValueRole);
  table_ = new QTableView(this);
  table_->setModel(sorted_);
  auto* header = SortHeader::install(table_);
  table_->setSortingEnabled(true);
  table_->sortByColumn(LayoutSearchModel::Place, Qt::AscendingOrder);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->verticalHeader()->hide();
  table_->setTabKeyNavigation(false);  // Tab leaves the table for the fields and buttons (it walked the cells)
  header->setStretchLastSection(false);
  // A column the user drags to a width keeps it: from then on a resize no longer shares the width out
  // (it undid the drag), until the next result is measured.
  connect(header, &QHeaderView::sectionResized, this, [this, header] {
    if (!fitting_ && !header->growingForIndicator()) user_sized_ = true;
  });
  // The sorted column alone keeps room for the indicator: another sort measures the columns again.
  connect(header, &QHeaderView::sortIndicatorChanged, this, [this] {
    if (!user_sized_ && !content_widths_.empty()) measureColumns();
  });
  table_->setAlternatingRowColors(true);
  layout->addWidget(table_, 1);
  given_ = new QLabel(this);
  given_->setWordWrap(true);
  layout->addWidget(given_);

  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
  apply_ = buttons->addButton(tr("&Apply Layout"), QDialogButtonBox::AcceptRole);
  apply_->setEnabled(false);
  apply_->setToolTip(tr("Put the selected layout into the designer (Undo takes it back)"));
  layout->addWidget(buttons);

  connect(search_, &QPushButton::clicked, this, [this] { startSearch(); });
  connect(stop_, &QPushButton::clicked, this, [this] { stopSearch(); });
  connect(apply_, &QPushButton::clicked, this, [this] { applySelected(); });
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  // A double-click or Enter on a row applies it (Enter would otherwise search again); a single click
  // only selects, whatever the style says.
  onRowOpened(table_, [this](const QModelIndex&, OpenedBy) { applySelected(); });
  connect(table_->selectionModel(), &QItemSelectionModel::selectionChanged, this,
          [this] { apply_->setEnabled(!isSearching() && !table_->selectionModel()->selectedRows().isEmpty()); });

  // A layout that does not suit the cluster is what a search mends; other problems are not.
  if (const QString problem = specProblem(); !problem.isEmpty()) {
    problem_->setText(problem);
    problem_->show();
    search_->setEnabled(false);
    tessera_train_->setEnabled(false);
  } else {
    fillFields(planner::default_search_space(s, tessera_train_->isChecked()));
  }
  // The box governs CP, EP, ZeRO and ZB-H1 only: those refill, edits elsewhere stay.
  connect(tessera_train_, &QCheckBox::toggled, this, [this](bool on) {
    const auto space = planner::default_search_space(session_->spec(), on);
    lists_.at("cp")->setText(joined(space.cp));
    lists_.at("ep")->setText(joined(space.ep));
    lists_.at("zero_stage")->setText(joined(space.zero_stage));
    schedules_.at(spec::Schedule::zb_h1)->setChecked(std::count(space.schedule.begin(), space.schedule.end(), spec::Schedule::zb_h1) > 0);
  });
  resize(980, 640);
  search_->setFocus();
}

LayoutSearchDialog::~LayoutSearchDialog() {
  cancel_ = true;
  if (worker_.joinable()) worker_.join();
}

QString LayoutSearchDialog::specProblem() const {
  const auto errors = spec::validate(session_->spec(), spec::PresetCatalog::builtin(), spec::Rules::except_layout);
  if (errors.empty()) return {};
  return tr("The spec has a problem besides its layout (%1); fix it in the designer first.").arg(qs(errors.front().message));
}

void LayoutSearchDialog::fillFields(const planner::SearchSpace& space) {
  lists_.at("tp")->setText(joined(space.tp));
  lists_.at("cp")->setText(joined(space.cp));
  lists_.at("pp")->setText(joined(space.pp));
  lists_.at("vpp")->setText(joined(space.vpp));
  lists_.at("ep")->setText(joined(space.ep));
  lists_.at("micro_batch_size")->setText(joined(space.micro_batch_size));
  lists_.at("zero_stage")->setText(joined(space.zero_stage));
  for (auto& [r, box] : recompute_) box->setChecked(std::count(space.recompute.begin(), space.recompute.end(), r) > 0);
  for (auto& [sc, box] : schedules_) box->setChecked(std::count(space.schedule.begin(), space.schedule.end(), sc) > 0);
}

std::optional<planner::SearchSpace> LayoutSearchDialog::spaceFromFields(QString* problem) const {
  planner::SearchSpace space;
  std::map<QString, std::vector<int64_t>> lists;
  for (const auto& f : kListFields) {
    auto values = parseList(lists_.at(QString::fromLatin1(f.name))->text(), tr(f.label), f.least, f.most, problem);
    if (!values) return std::nullopt;
    lists[QString::fromLatin1(f.name)] = std::move(*values);
  }
  space.tp = lists["tp"];
  space.cp = lists["cp"];
  space.pp = lists["pp"];
  space.vpp = lists["vpp"];
  space.ep = lists["ep"];
  space.micro_batch_size = lists["micro_batch_size"];
  for (int64_t z : lists["zero_stage"]) space.zero_stage.push_back(static_cast<int>(z));
  for (const auto& [r, box] : recompute_)
    if (box->isChecked()) space.recompute.push_back(r);
  for (const auto& [sc, box] : schedules_)
    if (box->isChecked()) space.schedule.push_back(sc);
  if (space.recompute.empty()) *problem = tr("Recompute: tick at least one");
  else if (space.schedule.empty()) *problem = tr("Schedules: tick at least one");
  if (!problem->isEmpty()) return std::nullopt;
  return space;
}

bool LayoutSearchDialog::startSearch() {
  if (isSearching()) return false;
  QString problem = specProblem();
  auto space = problem.isEmpty() ? spaceFromFields(&problem) : std::nullopt;
  problem_->setText(problem);
  problem_->setVisible(!problem.isEmpty());
  if (!space) return false;
  if (worker_.joinable()) worker_.join();

  planner::SearchOptions options;
  options.top = 100;
  options.memory_fraction = memory_percent_->value() / 100.0;
  options.plan.memory_profile = session_->memoryProfile();
  options.cancel = &cancel_;
  options.tessera_train = tessera_train_->isChecked();
  // Progress comes on the worker thread; the dialog waits for the worker before it is destroyed, so
  // the posted updates never outlive it.
  options.progress = [this](int64_t planned, int64_t candidates) {
    QMetaObject::invokeMethod(
        this, [this, planned, candidates] { showProgress(planned, candidates); },
        Qt::QueuedConnection);
  };
  cancel_ = false;
  finished_ = false;
  search_->setEnabled(false);
  stop_->setEnabled(true);
  apply_->setEnabled(false);
  model_->setResult({});  // no row of an earlier search to apply while this one runs
  progress_->setRange(0, 0);  // busy until the first report
  summary_->setText(tr("Planning…"));
  given_->clear();
  worker_ = std::thread([this, spec = session_->spec(), space = *space, options] {
    auto result = std::make_shared<planner::SearchResult>();
    auto error = std::make_shared<QString>();
    try {
      *result = planner::search_layouts(spec, space, options);
    } catch (const spec::SpecError& e) {
      *error = qs(e.errors().front().message);
    } catch (const std::exception& e) {
      *error = qs(e.what());
    }
    QMetaObject::invokeMethod(
        this, [this, result, error] {
          finished_ = true;
          search_->setEnabled(true);
          stop_->setEnabled(false);
          if (!error->isEmpty()) {
            summary_->clear();
            progress_->setRange(0, 1);  // out of its busy state
            progress_->setValue(0);
            problem_->setText(*error);
            problem_->show();
          } else {
            showResult(std::move(*result));
          }
          emit searchFinished();
        },
        Qt::QueuedConnection);
  });
  return true;
}

void LayoutSearchDialog::stopSearch() { cancel_ = true; }

void LayoutSearchDialog::showProgress(int64_t planned, int64_t candidates) {
  const QLocale locale;
  progress_->setMaximum(static_cast<int>(std::min<int64_t>(candidates, kMaxInt)));
  progress_->setValue(static_cast<int>(std::min<int64_t>(planned, kMaxInt)));
  progress_->setFormat(tr("%1 of %2 layouts").arg(locale.toString(qlonglong(planned)), locale.toString(qlonglong(candidates))));
}

void LayoutSearchDialog::showResult(planner::SearchResult r) {
  const QLocale locale;
  // "(field count, …)": the three fields most often first to fail.
  const auto fieldList = [&](const std::vector<std::pair<std::string, int64_t>>& counts) {
    QStringList parts;
    for (size_t i = 0; i < counts.size() && i < 3; ++i)
      parts << tr("%1 %2").arg(qs(counts[i].first), locale.toString(qlonglong(counts[i].second)));
    if (counts.size() > 3) parts << QStringLiteral("…");
    return parts.isEmpty() ? QString() : tr(" (%1)").arg(parts.join(QStringLiteral(", ")));
  };
  QString broken = fieldList(r.invalid_fields);
  if (r.unsupported > 0)
    broken += tr(", %1 are beyond tessera-train%2").arg(locale.toString(qlonglong(r.unsupported)), fieldList(r.unsupported_fields));
  QString summary = tr("%1 layouts: %2 break a rule of the spec%3, %4 need more than %5, %6 fit — planned in %7 on %8.")
                        .arg(locale.toString(qlonglong(r.candidates)), locale.toString(qlonglong(r.invalid)), broken,
                             locale.toString(qlonglong(r.over_memory)), formatBytes(r.memory_limit_bytes),
                             locale.toString(qlonglong(r.fitting)), formatDuration(r.elapsed_s),
                             r.threads == 1 ? tr("1 thread") : tr("%1 threads").arg(r.threads));
  if (r.cancelled)
    summary += tr(" Stopped after %1 of them: the table holds the fastest of those.").arg(locale.toString(qlonglong(r.planned)));
  if (r.best.empty() && r.invalid + r.unsupported == r.planned)
    summary += r.unsupported > 0
                   ? tr(" None keeps the spec's rules and tessera-train's limits for this model, batch and cluster: other "
                        "values for the fields named may.")
                   : tr(" None keeps the spec's rules for this model, batch and cluster: other values for the fields named may.");
  else if (r.best.empty()) {
    // What may help, less what this search tried already.
    QStringList remedies{tr("more GPUs"), tr("a smaller global batch")};
    if (!recompute_.at(spec::Recompute::full)->isChecked()) remedies << tr("full recompute");
    if (memory_percent_->value() < memory_percent_->maximum()) remedies << tr("a higher memory limit");
    const QString last = remedies.takeLast();
    summary += tr(" None fits: %1 or %2 may.").arg(remedies.join(QStringLiteral(", ")), last);
  }
  summary_->setText(summary);
  showProgress(r.planned, r.candidates);

  QString given;
  if (!r.given) {
    given = tr("The spec's own layout is not valid here: %1").arg(qs(r.given_problem));
  } else {
    const auto& g = *r.given;
    const auto& gs = g.spec;
    given = tr("The spec's own layout (%1, %2, ZeRO-%3, micro-batch %4, recompute %5): ")
                .arg(qs(gs.layout_label()), qs(spec::to_string(gs.parallel.schedule)))
                .arg(gs.effective_zero_stage())
                .arg(gs.training.micro_batch_size)
                .arg(qs(spec::to_string(gs.training.recompute)));
    if (!r.given_fits) {
      given += tr("needs %1, more than %2.").arg(formatBytes(g.peak_bytes), formatBytes(r.memory_limit_bytes));
    } else {
      // Not one of the space's layouts, it is placed beside those that fit, and the reason is said.
      const QString outside = r.given_outside.empty() ? tr("it is not in the space searched")
                                                      : tr("it is not in the space searched: %1").arg(qs(r.given_outside));
      given += tr("place %1 of %2%3, %4 a step, %5 tokens/s")
                   .arg(locale.toString(qlonglong(r.given_place)), locale.toString(qlonglong(r.given_among())),
                        r.given_searched ? QString() : tr(" (itself and the %1 that fit; %2)").arg(locale.toString(qlonglong(r.fitting)), outside),
                        formatDuration(g.iteration_time_s), formatCount(g.tokens_per_s));
      if (!r.best.empty() && r.best.front().tokens_per_s > g.tokens_per_s)
        given += tr("; the fastest is %1× its tokens/s").arg(r.best.front().tokens_per_s / g.tokens_per_s, 0, 'f', 2);
      given += QLatin1Char('.');
    }
  }
  given_->setText(given);

  model_->setResult(std::move(r));
  user_sized_ = false;
  measureColumns();
  if (model_->rowCount() > 0) {
    table_->selectRow(0);
    // The table takes the keys (Enter applies the row), unless the user went on to edit the space:
    // focus taken from a field made the next typed "8" pick row 85 and Enter apply it.
    const QWidget* focus = focusWidget();  // the dialog's, also while another application is active
    const bool editing = focus && space_->isAncestorOf(focus);
    if (!editing) table_->setFocus();
  }
}

bool LayoutSearchDialog::applySelected() {
  const auto rows = table_->selectionModel()->selectedRows();
  const auto* layout = rows.isEmpty() ? nullptr : model_->layoutAt(sorted_->mapToSource(rows.front()).row());
  if (!layout || isSearching()) return false;
  spec::RunSpec chosen = layout->spec;
  // The run's name (a rename since the search kept) with the layout it spells made the new one's.
  chosen.name = spec::relabel_layout(session_->spec().name, chosen, session_->spec().world_size(), &session_->spec());
  session_->replaceSpec(chosen, tr("Apply layout %1").arg(qs(chosen.layout_label())));
  accept();
  return true;
}

void LayoutSearchDialog::measureColumns() {
  fitting_ = true;
  table_->resizeColumnsToContents();
  fitting_ = false;
  content_widths_.clear();
  for (int c = 0; c < table_->model()->columnCount(); ++c) content_widths_.push_back(table_->columnWidth(c));
  fitColumns();
}

void LayoutSearchDialog::fitColumns() {
  const int columns = static_cast<int>(content_widths_.size());
  if (columns == 0 || user_sized_) return;
  // The width without scroll bars, less a vertical one's, whether it shows yet or not: a long result
  // gets one after this runs, and the columns must not then need a horizontal one.
  int used = 0;
  for (const int w : content_widths_) used += w;
  const int spare = std::max(0, table_->maximumViewportSize().width() - table_->verticalScrollBar()->sizeHint().width() - used);
  fitting_ = true;
  for (int c = 0; c < columns; ++c) table_->setColumnWidth(c, content_widths_[c] + spare / columns + (c < spare % columns));
  fitting_ = false;
}

void LayoutSearchDialog::resizeEvent(QResizeEvent* event) {
  QDialog::resizeEvent(event);
  fitColumns();  // the contents measured once per result: a resize only shares out the width again
}

}  // namespace tessera::ui
