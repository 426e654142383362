// The designer panel and the editors of its field tree.
#include "designer_panel.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <memory>

#include <QComboBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QPushButton>
#include <QScrollBar>
#include <QSpinBox>
#include <QStyledItemDelegate>
#include <QTextBrowser>
#include <QTimer>
#include <QVBoxLayout>

#include "plan_session.hpp"
#include "spec/presets.hpp"
#include "spec_field_model.hpp"
#include "theme.hpp"

namespace tessera::ui {

namespace {

// A choice field's editor. Its list opens at once, where arrows browse and Enter or a click chooses
// (on the closed box the first arrow press chose its neighbour and closed the editor); Esc or a click
// away closes the list and the edit with the value unchanged (it left the closed box open).
class ChoiceBox : public QComboBox {
 public:
  using QComboBox::QComboBox;
  bool chosen = false;            ///< an item was chosen (by the list, or by a typed letter on the box)
  std::function<void()> dropped;  ///< the list closed without a choice

  void hidePopup() override {
    QComboBox::hidePopup();
    // A choice is signalled after the list hides: whether one came is known a turn later (an editor
    // the view has closed meanwhile, by Esc or a click elsewhere, is hidden).
    QTimer::singleShot(0, this, [this] {
      if (!chosen && dropped && isVisible()) dropped();
    });
  }
};

// Editors by field kind: a list for choices, a spin box for integers, a checked line for numbers;
// a derived note as tall as its lines at its column's width, up to two.
class FieldDelegate : public QStyledItemDelegate {
 public:
  explicit FieldDelegate(QTreeView* view) : QStyledItemDelegate(view), view_(view) {}

  QSize sizeHint(const QStyleOptionViewItem& option, const QModelIndex& index) const override {
    QSize size = QStyledItemDelegate::sizeHint(option, index);
    if (index.column() != SpecFieldModel::NoteColumn) return size;
    // The column's width less the style's text margin on each side.
    const int width = std::max(1, view_->columnWidth(SpecFieldModel::NoteColumn) - 2 * itemTextMargin(view_));
    const QRect lines = option.fontMetrics.boundingRect(QRect(0, 0, width, 1 << 20), Qt::TextWordWrap, index.data().toString());
    // Two lines at the most: a field's problem (a longer text, listed whole under the tree and in the
    // cell's tooltip) ends its second line in "…" rather than making its row five lines tall.
    const int text_height = std::min(lines.height(), 2 * option.fontMetrics.lineSpacing());
    size.setHeight(std::max(size.height(), text_height + (size.height() - option.fontMetrics.height())));
    return size;
  }

  QWidget* createEditor(QWidget* parent, const QStyleOptionViewItem& option, const QModelIndex& index) const override {
    switch (index.data(SpecFieldModel::KindRole).toInt()) {
      case SpecFieldModel::Choice: {
        auto* box = new ChoiceBox(parent);
        box->addItems(index.data(SpecFieldModel::ChoicesRole).toStringList());
        auto* self = const_cast<FieldDelegate*>(this);
        connect(box, &QComboBox::activated, this, [self, box] {
          box->chosen = true;
          emit self->commitData(box);
          emit self->closeEditor(box);
        });
        box->dropped = [self, box] { emit self->closeEditor(box, QAbstractItemDelegate::RevertModelCache); };
        // Not where a letter typed to open the editor already chose an item.
        QTimer::singleShot(0, box, [box] {
          if (!box->chosen) box->showPopup();
        });
        return box;
      }
      case SpecFieldModel::Integer: {
        auto* spin = new QSpinBox(parent);
        spin->setRange(0, std::numeric_limits<int>::max());
        spin->setAccelerated(true);
        if (index.data(SpecFieldModel::PathRole).toString() == QLatin1String("parallel.dp"))
          spin->setSpecialValueText(tr("auto"));
        return spin;
      }
      // A number is typed freely and read by the model, which says why it refuses one ("0,001": a
      // validator's C locale took the comma for a thousands separator and made it 1.0).
      case SpecFieldModel::Number: return new QLineEdit(parent);
      default: return QStyledItemDelegate::createEditor(parent, option, index);
    }
  }

  void setEditorData(QWidget* editor, const QModelIndex& index) const override {
    const QVariant value = index.data(Qt::EditRole);
    if (auto* box = qobject_cast<QComboBox*>(editor)) box->setCurrentText(value.toString());
    else if (auto* spin = qobject_cast<QSpinBox*>(editor)) spin->setValue(static_cast<int>(value.toLongLong()));
    else if (auto* line = qobject_cast<QLineEdit*>(editor); line && index.data(SpecFieldModel::KindRole).toInt() == SpecFieldModel::Number)
      line->setText(QString::number(value.toDouble(), 'g', 10));
    else QStyledItemDelegate::setEditorData(editor, index);
  }

  void setModelData(QWidget* editor, QAbstractItemModel* model, const QModelIndex& index) const override {
    if (auto* box = qobject_cast<QComboBox*>(editor)) model->setData(index, box->currentText());
    else if (auto* spin = qobject_cast<QSpinBox*>(editor)) model->setData(index, qlonglong{spin->value()});
    else if (auto* line = qobject_cast<QLineEdit*>(editor); line && index.data(SpecFieldModel::KindRole).toInt() == SpecFieldModel::Number) {
      model->setData(index, line->text());
    } else QStyledItemDelegate::setModelData(editor, model, index);
  }

 private:
  QTreeView* view_;
};

void fill(QComboBox* box, const std::vector<std::string>& ids) {
  for (const auto& id : ids) box->addItem(QString::fromStdString(id), QString::fromStdString(id));
}

}  // namespace

DesignerPanel::DesignerPanel(PlanSession* session, SpecFieldModel* model, QWidget* parent)
    : QWidget(parent), session_(session), model_(model) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(8, 8, 8, 8);
  auto* form = new QFormLayout;
  form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
  name_ = new QLineEdit(this);
  name_->setPlaceholderText(tr("Name of the run"));
  model_preset_ = new QComboBox(this);
  fill(model_preset_, spec::PresetCatalog::builtin().model_ids());
  gpu_ = new QComboBox(this);
  for (const auto& [id, gpu] : spec::PresetCatalog::builtin().gpus())
    gpu_->addItem(QString::fromStdString(gpu.name), QString::fromStdString(id));
  form->addRow(tr("&Name"), name_);
  form->addRow(tr("&Model preset"), model_preset_);
  form->addRow(tr("&GPU"), gpu_);
  layout->addLayout(form);
  auto* buttons = new QHBoxLayout;
  auto* import = new QPushButton(tr("Import Hugging Face config.json…"), this);
  auto* search = new QPushButton(tr("Search Layouts…"), this);
  search->setToolTip(tr("The fastest layouts of this model, batch and cluster that fit in memory"));
  buttons->addWidget(import);
  buttons->addWidget(search);
  layout->addLayout(buttons);

  tree_ = new QTreeView(this);
  tree_->setModel(model_);
  tree_->setItemDelegate(new FieldDelegate(tree_));
  // Typing on a field edits it (F2, a click or a double-click too); arrows only move, never step a value.
  tree_->setEditTriggers(QAbstractItemView::AnyKeyPressed | QAbstractItemView::EditKeyPressed |
                         QAbstractItemView::SelectedClicked | QAbstractItemView::DoubleClicked);
  tree_->setAlternatingRowColors(true);
  // A derived note longer than its column breaks onto a second line (the row grows) rather than
  // ending in "…": up to 1366 px most notes were cut ("tp·pp·cp = 2 per repli…").
  tree_->setUniformRowHeights(false);
  tree_->setWordWrap(true);
  tree_->setAllColumnsShowFocus(true);
  tree_->expandAll();
  tree_->resizeColumnToContents(SpecFieldModel::FieldColumn);
  // Values as wide as the widest a field takes (a preset, a schedule, a GPU) in the tree's font: a
  // fixed 100 px cut "llama3-…" under a 1.5× font.
  int widest_value = 0;
  const QFontMetrics metrics = tree_->fontMetrics();
  for (int s = 0; s < model_->rowCount(); ++s) {
    const QModelIndex section = model_->index(s, 0);
    for (int f = 0; f < model_->rowCount(section); ++f) {
      const QModelIndex value = model_->index(f, SpecFieldModel::ValueColumn, section);
      QStringList texts = value.data(SpecFieldModel::ChoicesRole).toStringList();
      texts << value.data().toString();
      for (const QString& text : texts) widest_value = std::max(widest_value, metrics.horizontalAdvance(text));
    }
  }
  tree_->setColumnWidth(SpecFieldModel::ValueColumn, widest_value + 4 * itemTextMargin(tree_));
  // Derived takes what is left and ends in "…" when its note is longer (the whole note is the cell's
  // tooltip). A stretched last section never shrinks below the default section size (100 px), so at
  // 1280×800 it ran under a horizontal scrollbar, cut without a mark.
  tree_->header()->setStretchLastSection(false);
  tree_->header()->setSectionResizeMode(SpecFieldModel::NoteColumn, QHeaderView::Stretch);
  tree_->setMinimumWidth(364);  // the panel's least width: this, or its buttons' in a large font
  connect(tree_->header(), &QHeaderView::sectionResized, tree_, [this] { tree_->doItemsLayout(); });
  layout->addWidget(tree_, 1);
  // The keyboard always lands on a field's value, the one editable column.
  connect(tree_->selectionModel(), &QItemSelectionModel::currentChanged, this, [this](const QModelIndex& current) {
    if (current.isValid() && current.parent().isValid() && current.column() != SpecFieldModel::ValueColumn)
      tree_->setCurrentIndex(current.siblingAtColumn(SpecFieldModel::ValueColumn));
  });
  // Every problem, each a link to its field, in a list as tall as its lines up to a third of the
  // panel and scrolled beyond. A browser wraps its lines to the width its scroll bar leaves (a label
  // in a scroll area kept the width without it, and cut the lines' ends).
  problems_ = new QTextBrowser(this);
  problems_->setOpenLinks(false);
  problems_->setFrameShape(QFrame::NoFrame);
  problems_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  problems_->document()->setDocumentMargin(0);
  connect(problems_, &QTextBrowser::anchorClicked, this, [this](const QUrl& link) { focusField(link.toString()); });
  styleProblems();
  layout->addWidget(problems_);

  connect(import, &QPushButton::clicked, this, &DesignerPanel::importHuggingFaceRequested);
  connect(search, &QPushButton::clicked, this, &DesignerPanel::searchLayoutsRequested);
  connect(name_, &QLineEdit::editingFinished, this, [this] {
    spec::RunSpec updated = session_->spec();
    updated.name = name_->text().toStdString();
    session_->replaceSpec(updated, tr("Rename to %1").arg(name_->text()));
  });
  connect(model_preset_, &QComboBox::activated, this,
          [this] { session_->setField(QStringLiteral("model.preset"), model_preset_->currentData().toString().toStdString()); });
  connect(gpu_, &QComboBox::activated, this,
          [this] { session_->setField(QStringLiteral("cluster.gpu"), gpu_->currentData().toString().toStdString()); });
  connect(session_, &PlanSession::changed, this, &DesignerPanel::refresh);
  refresh();
}

void DesignerPanel::refresh() {
  const auto& s = session_->spec();
  if (!name_->hasFocus()) {
    name_->setText(QString::fromStdString(s.name));
    name_->setCursorPosition(0);
  }
  const int preset = model_preset_->findData(QString::fromStdString(s.model.preset));
  model_preset_->setCurrentIndex(preset);
  if (preset < 0) model_preset_->setPlaceholderText(tr("custom"));
  gpu_->setCurrentIndex(gpu_->findData(QString::fromStdString(s.cluster.gpu)));
  // Every problem in full under the tree, where the Derived column cuts the rules of a narrow designer:
  // the fields' first, each a link to its field, then those that name no field of the tree (the name,
  // a section, the document).
  QStringList fields, loose;
  for (const auto& e : session_->errors()) {
    const QString field = QString::fromStdString(e.field), message = QString::fromStdString(e.message).toHtmlEscaped();
    if (!model_->indexOfField(field).isValid())
      loose << QStringLiteral("⚠ ") + message;
    else
      fields << QStringLiteral("⚠ <a href=\"%1\" style=\"color:%2\">%3</a>").arg(field.toHtmlEscaped(), colors::warning().name(), message);
  }
  problems_->setHtml((fields + loose).join(QStringLiteral("<br>")));
  problems_->setVisible(!fields.isEmpty() || !loose.isEmpty());
  fitProblems();
}

void DesignerPanel::fitProblems() {
  // As tall as the problems' lines at the list's width, at most a third of the panel (at least three
  // lines): the tree keeps the rest. It stopped at four field problems, however tall the window.
  if (problems_->document()->isEmpty()) return;
  // Laid out at the width a scroll bar would leave, whether one shows yet or not.
  const std::unique_ptr<QTextDocument> measure(problems_->document()->clone());
  measure->setTextWidth(std::max(problems_->width() - problems_->verticalScrollBar()->sizeHint().width(), 100));
  const int wanted = static_cast<int>(std::ceil(measure->size().height())) + 2 * problems_->frameWidth();
  const int most = std::max(height() / 3, 3 * fontMetrics().lineSpacing());
  problems_->setFixedHeight(std::clamp(wanted, 0, most));
}

void DesignerPanel::styleProblems() {
  // From the panel's palette, whichever is in force: set once, the light one's grey stayed under the
  // dark one's light red (about 2:1).
  QPalette pal = palette();
  pal.setColor(QPalette::Text, colors::warning());
  pal.setColor(QPalette::Base, pal.color(QPalette::Window));
  problems_->setPalette(pal);
}

void DesignerPanel::changeEvent(QEvent* event) {
  QWidget::changeEvent(event);
  if (event->type() != QEvent::PaletteChange) return;
  styleProblems();
  refresh();  // the links carry the warning colour in their markup
}

void DesignerPanel::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  fitProblems();
}

QString DesignerPanel::problemsShown() const { return problems_->toPlainText(); }

void DesignerPanel::focusField(const QString& path) {
  const QModelIndex index = model_->indexOfField(path);
  if (!index.isValid()) return;
  tree_->setCurrentIndex(index);
  tree_->scrollTo(index);
  tree_->setFocus();
}

}  // namespace tessera::ui
