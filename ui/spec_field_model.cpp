// The designer's tree model over the run spec.
#include "spec_field_model.hpp"

#include <QBrush>
#include <QColor>
#include <QFont>

#include "format.hpp"
#include "plan_session.hpp"
#include "spec/presets.hpp"
#include "theme.hpp"

namespace tessera::ui {

namespace {

using nlohmann::ordered_json;

// Internal ids: 0 for a section row, section index + 1 for a field row.
constexpr quintptr kSectionId = 0;

const std::vector<std::string>& sections() { return spec::section_names(); }

QString sectionTitle(const std::string& section) {
  if (section == "model") return QObject::tr("Model");
  if (section == "parallel") return QObject::tr("Parallelism");
  if (section == "training") return QObject::tr("Training");
  return QObject::tr("Cluster");
}

template <typename E>
QStringList spellings() {
  QStringList out;
  for (const auto& name : spec::enum_spellings<E>()) out << QString::fromStdString(name);
  return out;
}

QStringList ids(const std::vector<std::string>& list) {
  QStringList out;
  for (const auto& id : list) out << QString::fromStdString(id);
  return out;
}

}  // namespace

SpecFieldModel::SpecFieldModel(PlanSession* session, QObject* parent) : QAbstractItemModel(parent), session_(session) {
  document_ = spec::to_json(session_->spec());
  connect(session_, &PlanSession::changed, this, &SpecFieldModel::refresh);
}

void SpecFieldModel::refresh() {
  // Fields present in the document can change (t5's encoder/decoder layers): rows come from
  // field_names(), which never changes, so only the data changes.
  document_ = spec::to_json(session_->spec());
  for (int s = 0; s < static_cast<int>(sections().size()); ++s) {
    const int rows = rowCount(index(s, 0));
    if (rows > 0) emit dataChanged(index(0, FieldColumn, index(s, 0)), index(rows - 1, NoteColumn, index(s, 0)));  // a mark colours the name too
  }
}

QModelIndex SpecFieldModel::indexOfField(const QString& dotted, int column) const {
  const auto dot = dotted.indexOf('.');
  if (dot < 0) return {};
  const std::string section = dotted.left(dot).toStdString(), field = dotted.mid(dot + 1).toStdString();
  for (int s = 0; s < static_cast<int>(sections().size()); ++s) {
    if (sections()[s] != section) continue;
    const auto& names = spec::field_names(section);
    for (int r = 0; r < static_cast<int>(names.size()); ++r)
      if (names[r] == field) return index(r, column, index(s, 0));
  }
  return {};
}

QModelIndex SpecFieldModel::index(int row, int column, const QModelIndex& parent) const {
  if (!hasIndex(row, column, parent)) return {};
  if (!parent.isValid()) return createIndex(row, column, kSectionId);
  return createIndex(row, column, static_cast<quintptr>(parent.row() + 1));
}

QModelIndex SpecFieldModel::parent(const QModelIndex& child) const {
  if (!child.isValid() || child.internalId() == kSectionId) return {};
  return createIndex(static_cast<int>(child.internalId() - 1), 0, kSectionId);
}

int SpecFieldModel::rowCount(const QModelIndex& parent) const {
  if (!parent.isValid()) return static_cast<int>(sections().size());
  if (parent.internalId() != kSectionId || parent.column() != 0) return 0;
  return static_cast<int>(spec::field_names(sections()[parent.row()]).size());
}

int SpecFieldModel::columnCount(const QModelIndex&) const { return ColumnCount; }

QString SpecFieldModel::path(const QModelIndex& index) const {
  const auto& section = sections()[index.internalId() - 1];
  return QString::fromStdString(section + "." + spec::field_names(section)[index.row()]);
}

const ordered_json& SpecFieldModel::value(const QModelIndex& index) const {
  static const ordered_json absent;
  const auto& section = sections()[index.internalId() - 1];
  const auto& field = spec::field_names(section)[index.row()];
  const auto& body = document_[section];
  auto it = body.find(field);
  return it == body.end() ? absent : *it;
}

SpecFieldModel::FieldKind SpecFieldModel::kind(const QString& path, const ordered_json& value) const {
  if (!choices(path).isEmpty()) return Choice;
  if (value.is_boolean()) return Boolean;
  if (value.is_number_integer()) return Integer;
  if (value.is_number()) return Number;
  if (path == "parallel.dp" || path == "model.encoder_layers" || path == "model.decoder_layers" ||
      path == "model.decoder_seq_length" || path == "parallel.first_stage_layers" || path == "parallel.last_stage_layers")
    return Integer;
  return Text;
}

QStringList SpecFieldModel::choices(const QString& path) const {
  if (path == "model.preset") return ids(spec::PresetCatalog::builtin().model_ids());
  if (path == "cluster.gpu") return ids(spec::PresetCatalog::builtin().gpu_ids());
  if (path == "model.arch") return spellings<spec::Arch>();
  if (path == "model.normalization") return spellings<spec::Normalization>();
  if (path == "model.activation") return spellings<spec::Activation>();
  if (path == "model.position_embedding") return spellings<spec::PositionEmbedding>();
  if (path == "parallel.schedule") return spellings<spec::Schedule>();
  if (path == "training.precision") return spellings<spec::Precision>();
  if (path == "training.recompute") return spellings<spec::Recompute>();
  return {};
}

// Values derived from the spec (and, where current, its plan) shown next to their inputs.
QString SpecFieldModel::note(const QString& path) const {
  const auto& s = session_->spec();
  const PlanPtr plan = session_->stale() ? nullptr : session_->plan();
  const int64_t dp = s.data_parallel();
  if (path == "model.preset" && plan) return tr("%1 parameters").arg(formatCount(static_cast<double>(plan->params.total)));
  if (path == "model.num_layers" && s.parallel.pp > 0 && s.stages_split_layers()) {
    // "8 × 14" kept on one line when the note wraps.
    if (s.uneven_stages())
      return tr("%1 by stage").arg(QString::fromStdString(s.stage_layers_text()).replace(QStringLiteral(" × "), QStringLiteral("\u00A0×\u00A0")));
    return tr("%1 per stage").arg(s.model.num_layers / s.parallel.pp);
  }
  if (path == "model.num_attention_heads" && s.model.num_attention_heads > 0)
    return tr("head dim %1").arg(s.model.hidden_size / s.model.num_attention_heads);
  if (path == "parallel.dp") {
    if (dp <= 0) return tr("cannot be derived");
    return s.parallel.dp == 0 ? tr("→ %1, derived from %2 GPUs").arg(dp).arg(s.world_size()) : QString();
  }
  if (path == "parallel.first_stage_layers" || path == "parallel.last_stage_layers") {
    const bool first = path == "parallel.first_stage_layers";
    const int64_t own = first ? s.parallel.first_stage_layers : s.parallel.last_stage_layers;
    if (own == 0 && s.parallel.pp > 1 && s.stages_split_layers())
      return tr("→ %1, an even share").arg(s.stage_layers(first ? 0 : s.parallel.pp - 1));
    return {};
  }
  if (path == "parallel.tp" && dp > 0)
    return tr("tp·pp·cp = %1 per replica").arg(s.parallel.tp * s.parallel.pp * s.parallel.cp);
  if (path == "parallel.zero_stage" && s.effective_zero_stage() != s.parallel.zero_stage)
    return tr("→ %1 (distributed optimizer)").arg(s.effective_zero_stage());
  if (path == "training.global_batch_size" && s.num_microbatches() > 0)
    return tr("%1 microbatches · %2 tokens/step")
        .arg(s.num_microbatches())
        .arg(formatCount(static_cast<double>(s.training.global_batch_size * s.model.seq_length)));
  if (path == "cluster.nodes") return formatDevices(s.world_size(), s.cluster.gpu == "cpu");
  if (path == "cluster.gpu") {
    if (const auto* gpu = spec::PresetCatalog::builtin().gpu(s.cluster.gpu))
      return tr("%1 · %2").arg(formatGiB(gpu->memory_bytes), formatFlopRate(gpu->peak_tflops(s.training.precision)));
  }
  return {};
}

QString SpecFieldModel::withoutFieldPrefix(const QString& rule, const QString& path) {
  // "PATH " or "PATH=VALUE " where VALUE is a word or a quoted string ("cluster.gpu=\"my gpu\" is …").
  qsizetype rest = -1;
  if (rule.startsWith(path + QLatin1Char(' '))) {
    rest = path.size() + 1;
  } else if (rule.startsWith(path + QLatin1Char('='))) {
    const qsizetype value = path.size() + 1;
    const qsizetype close = rule.mid(value, 1) == QLatin1String("\"") ? rule.indexOf(QLatin1Char('"'), value + 1) : value;
    const qsizetype space = close < 0 ? -1 : rule.indexOf(QLatin1Char(' '), close);
    if (space > 0) rest = space + 1;
  }
  return rest > 0 && rest < rule.size() ? rule.mid(rest) : rule;
}

QVariant SpecFieldModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid()) return {};
  if (index.internalId() == kSectionId) {
    if (index.column() != FieldColumn) return {};
    if (role == Qt::DisplayRole) return sectionTitle(sections()[index.row()]);
    if (role == Qt::FontRole) {
      QFont font;
      font.setBold(true);
      return font;
    }
    return {};
  }
  const QString p = path(index);
  const ordered_json& v = value(index);
  const QString error = session_->errorFor(p);
  // Another field's rule that names this one ("parallel.vpp=2 needs parallel.schedule=interleaved"):
  // marked too, more lightly, since changing either fixes it.
  const QString related = error.isEmpty() ? session_->relatedErrorFor(p) : QString();
  const QString rule = error.isEmpty() ? related : error;
  switch (role) {
    case PathRole: return p;
    case KindRole: return kind(p, v);
    case ChoicesRole: return choices(p);
    case ErrorRole: return error;
    case RelatedErrorRole: return related;
    case Qt::ToolTipRole:
      if (!rule.isEmpty()) return rule;
      if (index.column() == NoteColumn) return keepUnitsWithNumbers(note(p));  // the note may be cut short by the column
      return p;
    default: break;
  }
  if (index.column() == FieldColumn) {
    if (role == Qt::DisplayRole) return p.mid(p.indexOf('.') + 1);
    if (role == Qt::ForegroundRole && !rule.isEmpty()) return QBrush(colors::warning());
    return {};
  }
  if (index.column() == ValueColumn) {
    if (v.is_boolean()) {
      if (role == Qt::CheckStateRole) return v.get<bool>() ? Qt::Checked : Qt::Unchecked;
      if (role == Qt::EditRole) return v.get<bool>();
      return {};
    }
    if (role == Qt::DisplayRole) {
      if (v.is_null()) return p == "parallel.dp" ? tr("auto") : QString();
      if (v.is_string()) return QString::fromStdString(v.get<std::string>());
      if (v.is_number_integer()) return QString::number(v.get<int64_t>());
      return QString::number(v.get<double>(), 'g', 6);
    }
    if (role == Qt::EditRole) {
      if (v.is_null()) return qlonglong{0};
      if (v.is_string()) return QString::fromStdString(v.get<std::string>());
      if (v.is_number_integer()) return qlonglong{v.get<int64_t>()};
      return v.get<double>();
    }
    if (role == Qt::BackgroundRole && !rule.isEmpty()) {
      QColor tint = colors::warning();
      tint.setAlpha(error.isEmpty() ? 20 : 48);
      return QBrush(tint);
    }
    return {};
  }
  // NoteColumn: the field's own rule without the "parallel.tp=3 " or "parallel.sequence_parallel " it
  // starts with, which the row's name and value say (a narrow column showed only "parallel.t…"); the
  // tooltip keeps the whole of it. The cell wraps (two lines), each number kept with its unit.
  if (role == Qt::DisplayRole)
    return keepUnitsWithNumbers(rule.isEmpty() ? note(p) : error.isEmpty() ? rule : withoutFieldPrefix(rule, p));
  if (role == Qt::ForegroundRole) return rule.isEmpty() ? QVariant() : QBrush(colors::warning());
  return {};
}

bool SpecFieldModel::setData(const QModelIndex& index, const QVariant& value, int role) {
  if (!index.isValid() || index.internalId() == kSectionId || index.column() != ValueColumn) return false;
  const QString p = path(index);
  nlohmann::json v;
  switch (kind(p, this->value(index))) {
    case Boolean:
      if (role == Qt::CheckStateRole) v = value.toInt() == Qt::Checked;
      else if (role == Qt::EditRole) v = value.toBool();
      else return false;
      break;
    case Integer: {
      bool ok = false;
      const qlonglong n = value.toLongLong(&ok);
      if (!ok || role != Qt::EditRole) return false;
      v = static_cast<int64_t>(n);
      break;
    }
    case Number: {
      if (role != Qt::EditRole) return false;
      bool ok = false;
      double d = 0;
      if (value.typeId() == QMetaType::QString) ok = parseTypedNumber(value.toString(), &d);
      else d = value.toDouble(&ok);
      if (!ok) {
        rejection_ = tr("%1=\"%2\" is not a number: write it with a point for decimals and no thousands separators (0.001, 3e-4)")
                         .arg(p, value.toString());
        emit editRejected(rejection_);
        return false;
      }
      v = d;
      break;
    }
    case Text:
    case Choice:
      if (role != Qt::EditRole) return false;
      v = value.toString().toStdString();
      break;
  }
  QString message;
  if (!session_->setField(p, v, &message)) {
    rejection_ = message;
    emit editRejected(message);
    return false;
  }
  return true;
}

Qt::ItemFlags SpecFieldModel::flags(const QModelIndex& index) const {
  if (!index.isValid()) return Qt::NoItemFlags;
  Qt::ItemFlags f = Qt::ItemIsEnabled | Qt::ItemIsSelectable;
  if (index.internalId() == kSectionId || index.column() != ValueColumn) return f;
  if (value(index).is_boolean()) return f | Qt::ItemIsUserCheckable;
  return f | Qt::ItemIsEditable;
}

QVariant SpecFieldModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case FieldColumn: return tr("Field");
    case ValueColumn: return tr("Value");
    case NoteColumn: return tr("Derived");
    default: return {};
  }
}

}  // namespace tessera::ui
