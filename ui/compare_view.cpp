// Laying out the comparison and wiring its controls and exports.
#include "compare_view.hpp"

#include <algorithm>
#include <cmath>

#include <QApplication>
#include <QCoreApplication>
#include <QIcon>
#include <QPainter>
#include <QPixmap>
#include <QStyledItemDelegate>
#include <QTimer>
#include <QSaveFile>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QMessageBox>
#include <QPushButton>
#include <QScrollBar>
#include <QSplitter>
#include <QVBoxLayout>

#include "store/errors.hpp"
#include "theme.hpp"

namespace tessera::ui {

namespace {

// A summary cell as two sub-columns: the value right-aligned in the width of the column's widest
// value, its delta left-aligned after it. The baseline's values lined up with nothing: right-aligned
// whole, "2.6744" sat under the others' deltas, not under their "2.2943".
class ValueDeltaDelegate : public QStyledItemDelegate {
 public:
  using QStyledItemDelegate::QStyledItemDelegate;

  void paint(QPainter* painter, const QStyleOptionViewItem& option, const QModelIndex& index) const override {
    QStyleOptionViewItem opt = option;
    initStyleOption(&opt, index);
    const QWidget* widget = option.widget;
    QStyle* style = widget ? widget->style() : QApplication::style();
    // The style draws a cell's text a margin inside each side of this rectangle.
    const QRect text = style->subElementRect(QStyle::SE_ItemViewItemText, &opt, widget).adjusted(itemTextMargin(widget), 0, -itemTextMargin(widget), 0);
    if (index.column() == 0) {
      // The name cut in its middle, the baseline's mark kept ("tiny-3d-tp2… (baseline)" hid which run).
      const QString name = index.data(CompareSummaryModel::RunNameRole).toString();
      opt.text = CompareView::fittedRunName(name, opt.text.mid(name.size()), opt.fontMetrics, text.width());
      style->drawControl(QStyle::CE_ItemViewItem, &opt, painter, widget);
      return;
    }
    opt.text.clear();
    style->drawControl(QStyle::CE_ItemViewItem, &opt, painter, widget);  // the background, without text
    const auto [value_width, delta_width] = widths(opt.fontMetrics, index);
    const int value_room = std::min(value_width, text.width());
    painter->save();
    painter->setFont(opt.font);
    painter->setPen(opt.palette.color(QPalette::Text));
    const QFontMetrics& fm = opt.fontMetrics;
    painter->drawText(QRect(text.left(), text.top(), value_room, text.height()), Qt::AlignRight | Qt::AlignVCenter,
                      fm.elidedText(index.data(CompareSummaryModel::ValueTextRole).toString(), Qt::ElideRight, value_room));
    const QRect delta(text.left() + value_room + gap(fm), text.top(), text.right() - text.left() - value_room - gap(fm), text.height());
    if (delta.width() > 0)
      painter->drawText(delta, Qt::AlignLeft | Qt::AlignVCenter,
                        fm.elidedText(index.data(CompareSummaryModel::DeltaTextRole).toString(), Qt::ElideRight, delta.width()));
    painter->restore();
  }

  QSize sizeHint(const QStyleOptionViewItem& option, const QModelIndex& index) const override {
    QSize size = QStyledItemDelegate::sizeHint(option, index);
    if (index.column() == 0) return size;
    const auto [value_width, delta_width] = widths(option.fontMetrics, index);
    size.setWidth(value_width + (delta_width > 0 ? gap(option.fontMetrics) + delta_width : 0) + 2 * itemTextMargin(option.widget) + 1);
    return size;
  }

 private:
  /// The column's widest value and widest delta.
  static std::pair<int, int> widths(const QFontMetrics& fm, const QModelIndex& index) {
    int value = 0, delta = 0;
    const auto* model = index.model();
    for (int row = 0; row < model->rowCount(); ++row) {
      const QModelIndex cell = model->index(row, index.column());
      // A pixel over each text's advance: elidedText cut "13.0 k" to "13…" in exactly its own width.
      value = std::max(value, fm.horizontalAdvance(cell.data(CompareSummaryModel::ValueTextRole).toString()) + 1);
      delta = std::max(delta, fm.horizontalAdvance(cell.data(CompareSummaryModel::DeltaTextRole).toString()) + 1);
    }
    return {value, delta};
  }
  static int gap(const QFontMetrics& fm) { return fm.horizontalAdvance(QStringLiteral("  ")); }
};

}  // namespace

CompareView::CompareView(store::History* history, QWidget* parent) : QWidget(parent), history_(history) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(6, 6, 6, 6);
  // Ends in "…" where the runs' names are longer than the window is wide (whole in its tooltip): a
  // long name made it the window's minimum width (1159 px for three runs).
  title_ = new ElidedLabel(tr("Select two or more runs in the history and press Compare."), this);
  title_->setMinimumWidth(1);
  QFont bold = title_->font();
  bold.setBold(true);
  title_->setFont(bold);
  layout->addWidget(title_);

  auto* controls = new QHBoxLayout;
  controls->addWidget(new QLabel(tr("Baseline:"), this));
  baseline_ = new QComboBox(this);
  // As wide as the longest name where there is room, at least 12 characters where there is not (the
  // longest name's width was the window's least).
  baseline_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  baseline_->setMinimumWidth(12 * fontMetrics().averageCharWidth());
  controls->addWidget(baseline_);
  controls->addSpacing(12);
  controls->addWidget(new QLabel(tr("X axis:"), this));
  x_axis_ = new QComboBox(this);
  x_axis_->addItem(tr("step"), int(XAxis::step));
  x_axis_->addItem(tr("tokens"), int(XAxis::tokens));
  x_axis_->addItem(tr("wall time"), int(XAxis::wall_time_s));
  controls->addWidget(x_axis_);
  controls->addSpacing(12);
  controls->addWidget(new QLabel(tr("Smoothing:"), this));
  smoothing_ = new QSlider(Qt::Horizontal, this);
  smoothing_->setRange(0, 99);
  smoothing_->setFixedWidth(80);  // the row fits an 800 px window
  controls->addWidget(smoothing_);
  smoothing_label_ = new QLabel(this);
  smoothing_label_->setMinimumWidth(32);
  controls->addWidget(smoothing_label_);
  controls->addStretch(1);
  auto* csv = new QPushButton(tr("Export summary CSV…"), this);
  auto* plots = new QPushButton(tr("Export plots…"), this);
  plots->setToolTip(tr("All panels as one PNG or PDF"));
  controls->addWidget(csv);
  controls->addWidget(plots);
  layout->addLayout(controls);

  // Plots on top, the summary (one row per run) under them, the config diff at the bottom.
  splitter_ = new QSplitter(Qt::Vertical, this);
  plot_ = new ComparePlot(splitter_);
  splitter_->addWidget(plot_);
  summary_view_ = new QTableView(splitter_);
  summary_view_->setModel(&summary_model_);
  summary_view_->setItemDelegate(new ValueDeltaDelegate(summary_view_));
  summary_view_->verticalHeader()->hide();
  summary_view_->setSelectionMode(QAbstractItemView::NoSelection);
  summary_view_->horizontalHeader()->setStretchLastSection(true);
  summary_view_->setTextElideMode(Qt::ElideMiddle);
  summary_view_->setWordWrap(false);
  splitter_->addWidget(summary_view_);
  auto* diff_box = new QWidget(splitter_);
  auto* diff_layout = new QVBoxLayout(diff_box);
  diff_layout->setContentsMargins(0, 0, 0, 0);
  only_differences_ = new QCheckBox(tr("Only differences"), diff_box);
  only_differences_->setChecked(true);
  diff_layout->addWidget(only_differences_);
  diff_view_ = new QTableView(diff_box);
  diff_view_->setModel(&diff_model_);
  diff_view_->verticalHeader()->hide();
  diff_view_->horizontalHeader()->setStretchLastSection(true);
  diff_view_->setTextElideMode(Qt::ElideMiddle);
  // Its header and a row at the least, so that the summary above keeps its rows in a short window.
  diff_view_->setMinimumHeight(diff_view_->horizontalHeader()->sizeHint().height() + diff_view_->verticalHeader()->defaultSectionSize() +
                               2 * diff_view_->frameWidth());
  diff_layout->addWidget(diff_view_);
  splitter_->addWidget(diff_box);
  splitter_->setStretchFactor(0, 4);
  splitter_->setStretchFactor(1, 1);
  splitter_->setStretchFactor(2, 1);
  layout->addWidget(splitter_, 1);

  smoothing_->setValue(static_cast<int>(std::lround(plot_->smoothing() * 100)));
  updateSmoothingLabel();
  connect(baseline_, &QComboBox::activated, this, [this](int index) { setBaseline(index); });
  connect(x_axis_, &QComboBox::activated, this, [this](int index) { setXAxis(static_cast<XAxis>(x_axis_->itemData(index).toInt())); });
  connect(smoothing_, &QSlider::valueChanged, this, [this](int value) {
    plot_->setSmoothing(value / 100.0);
    updateSmoothingLabel();
  });
  connect(only_differences_, &QCheckBox::toggled, this, [this](bool on) { diff_model_.setOnlyDifferences(on); });
  connect(csv, &QPushButton::clicked, this, &CompareView::exportCsvInteractively);
  connect(plots, &QPushButton::clicked, this, &CompareView::exportPlotsInteractively);
}

CompareView::~CompareView() {
  // The models and the plot point into the comparison: detach them before it goes.
  summary_model_.setComparison(nullptr);
  diff_model_.setComparison(nullptr);
  plot_->setComparison(nullptr);
}

bool CompareView::setRuns(const QStringList& references, QString* error) {
  std::vector<std::string> refs;
  for (const QString& r : references) refs.push_back(r.trimmed().toStdString());
  std::unique_ptr<RunComparison> next;
  try {
    next = std::make_unique<RunComparison>(history_, refs);
  } catch (const std::exception& e) {
    if (error) *error = QString::fromUtf8(e.what());
    return false;
  }
  summary_model_.setComparison(nullptr);
  diff_model_.setComparison(nullptr);
  plot_->setComparison(nullptr);
  comparison_ = std::move(next);
  baseline_->clear();
  QStringList names;
  // Each run with its colour, as in the plots and the table: a name cut to the picker's width still
  // says which run it is.
  const int swatch = fontMetrics().height() - 4;
  for (int i = 0; i < comparison_->runCount(); ++i) {
    names << QString::fromStdString(comparison_->run(i).name);
    QPixmap colour(swatch, swatch);
    colour.fill(colors::category(i, comparison_->runCount()));
    baseline_->addItem(QIcon(colour), names.back());
    baseline_->setItemData(i, names.back(), Qt::ToolTipRole);
  }
  title_->setText(tr("Comparing %1 runs: %2").arg(comparison_->runCount()).arg(names.join(QStringLiteral(" · "))));
  summary_model_.setComparison(comparison_.get());
  diff_model_.setComparison(comparison_.get());
  plot_->setComparison(comparison_.get());
  fit_pending_ = true;
  fitTables();
  return true;
}

QString CompareView::fittedRunName(const QString& name, const QString& mark, const QFontMetrics& metrics, int room) {
  if (metrics.horizontalAdvance(name + mark) <= room) return name + mark;
  return metrics.elidedText(name, Qt::ElideMiddle, room - metrics.horizontalAdvance(mark)) + mark;
}

void CompareView::showEvent(QShowEvent* event) {
  QWidget::showEvent(event);
  if (fit_pending_) QTimer::singleShot(0, this, [this] { fitTables(); });  // once the splitter has its size
}

void CompareView::setBaseline(int run) {
  if (!comparison_ || run < 0 || run >= comparison_->runCount()) return;
  comparison_->setBaseline(run);  // the view owns the comparison; the models only read it
  baseline_->setCurrentIndex(run);
  summary_model_.setComparison(comparison_.get());
  diff_model_.setComparison(comparison_.get());
  fitColumns();
}

void CompareView::fitColumns() {
  // The last column stretches into spare room only: stretched into too little it was cut ("+1.7 MiB
  // (…") with no scroll bar to reach the rest.
  summary_view_->horizontalHeader()->setStretchLastSection(false);
  summary_view_->resizeColumnsToContents();
  diff_view_->resizeColumnsToContents();
  // A long run name takes at most a quarter of its table, cut in the middle (whole in its tooltip):
  // the summary's figures went behind a scroll bar at 1600 px.
  const auto cap = [](QTableView* view, int column) {
    const int most = std::max(160, view->viewport()->width() / 4);
    if (view->columnWidth(column) > most) view->setColumnWidth(column, most);
  };
  cap(summary_view_, 0);
  for (int c = 1; c < diff_model_.columnCount(); ++c) cap(diff_view_, c);
  summary_view_->horizontalHeader()->setStretchLastSection(summary_view_->horizontalHeader()->length() < summary_view_->viewport()->width());
}

void CompareView::setXAxis(XAxis axis) {
  x_axis_->setCurrentIndex(x_axis_->findData(int(axis)));
  plot_->setXAxis(axis);
}

void CompareView::setSmoothing(double weight) {
  smoothing_->setValue(static_cast<int>(std::lround(std::clamp(weight, 0.0, 0.99) * 100)));
}

void CompareView::setOnlyDifferences(bool only) { only_differences_->setChecked(only); }

void CompareView::updateSmoothingLabel() { smoothing_label_->setText(QString::number(smoothing_->value() / 100.0, 'f', 2)); }

bool CompareView::exportSummaryCsv(const QString& path, QString* error) const {
  if (!comparison_) {
    if (error) *error = tr("nothing to export: no runs are compared");
    return false;
  }
  QSaveFile file(path);
  if (!file.open(QIODevice::WriteOnly | QIODevice::Truncate)) {
    if (error) *error = tr("cannot write %1: %2").arg(path, file.errorString());
    return false;
  }
  const QByteArray text = comparison_->summaryCsv().toUtf8();
  if (file.write(text) != text.size() || !file.flush() || !file.commit()) {  // flush(): see PlanSession::save
    if (error) *error = tr("cannot write %1: %2").arg(path, file.errorString());
    return false;
  }
  return true;
}

bool CompareView::exportPlots(const QString& path, QString* error) {
  const int w = std::max(plot_->width(), 1200), h = std::max(plot_->height(), 700);
  bool ok = false;
  if (path.endsWith(QLatin1String(".pdf"), Qt::CaseInsensitive)) ok = plot_->savePdf(path, w, h);
  // At the screen's scale (a 2× screen's picture was half the resolution of what it showed).
  else if (path.endsWith(QLatin1String(".png"), Qt::CaseInsensitive)) ok = plot_->savePng(path, w, h, plot_->devicePixelRatioF());
  else {
    if (error) *error = tr("%1: the plots export as .png or .pdf").arg(path);
    return false;
  }
  if (!ok && error) *error = tr("cannot write %1").arg(path);
  return ok;
}

void CompareView::exportCsvInteractively() {
  const QString path = QFileDialog::getSaveFileName(this, tr("Export summary"), QStringLiteral("compare.csv"), tr("CSV (*.csv)"));
  if (path.isEmpty()) return;
  QString error;
  if (!exportSummaryCsv(path, &error)) QMessageBox::critical(this, tr("Export summary"), error);
}

void CompareView::exportPlotsInteractively() {
  const QString path = QFileDialog::getSaveFileName(this, tr("Export plots"), QStringLiteral("compare.png"),
                                                    tr("PNG image (*.png);;PDF document (*.pdf)"));
  if (path.isEmpty()) return;
  QString error;
  if (!exportPlots(path, &error)) QMessageBox::critical(this, tr("Export plots"), error);
}

void CompareView::fitTables() {
  // Hidden (the Compare tab before it is first shown), the splitter has no height of its own yet:
  // sizes given then collapsed the tables for good (QSplitter keeps a pane given 0 collapsed).
  if (!isVisible() || splitter_->height() <= plot_->minimumHeight()) return;
  fit_pending_ = false;
  fitColumns();
  // The summary as tall as its rows; the diff its rows up to a quarter; the plots the rest.
  auto tableHeight = [](QTableView* view, int rows) {
    // With the scroll bar its columns need (it is shown a moment after the columns were fitted).
    const bool scrolls = view->horizontalHeader()->length() > view->viewport()->width();
    return view->horizontalHeader()->height() + rows * view->verticalHeader()->defaultSectionSize() + 2 * view->frameWidth() +
           (scrolls ? view->horizontalScrollBar()->sizeHint().height() : 0) + 6;  // and the frame's slack: at +2 a scroll bar showed for three rows
  };
  // The plots keep at least half; the summary gets its rows before the diff (at 800 × 600 it had one
  // and a half of three).
  const int total = splitter_->height();
  const int summary = tableHeight(summary_view_, summary_model_.rowCount());
  const int diff = std::min(total / 4, only_differences_->sizeHint().height() + tableHeight(diff_view_, diff_model_.rowCount()));
  const int plots = std::max({total - summary - diff, total / 2, plot_->minimumHeight()}), tables = total - plots;
  splitter_->setSizes({plots, std::max(1, std::min(summary, tables)), std::max(1, tables - summary)});
}

}  // namespace tessera::ui
