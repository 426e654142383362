// Files of the headless modes: where a screenshot goes (--screenshot OUT.png: a PNG, written whole or not
// at all) and whether a read-only view may open a history.
// QImage::save(path) opened, and so emptied, the file before it found that ".json" is no image
// format: `tessera --spec v.json --screenshot v.json` left the spec empty.
#pragma once

#include <QFileInfo>
#include <QImage>
#include <QSaveFile>
#include <QString>

namespace tessera::app {

/// Why `path` cannot take the picture ("" when it can): empty, not ending in .png, a directory.
inline QString picturePathProblem(const QString& path) {
  if (path.isEmpty()) return QStringLiteral("--screenshot needs a file name (OUT.png)");
  if (QFileInfo(path).suffix().compare(QLatin1String("png"), Qt::CaseInsensitive) != 0)
    return QStringLiteral("--screenshot %1: the picture is a PNG; give a file ending in .png").arg(path);
  if (QFileInfo(path).isDir()) return QStringLiteral("--screenshot %1 is a directory").arg(path);
  return {};
}

/// Why a command that only reads the history at `path` cannot ("" when it can): missing, no regular
/// file, or empty (opening an empty file makes it a history: a screenshot wrote 160 KiB into one).
inline QString readOnlyHistoryProblem(const QString& path) {
  const QFileInfo info(path);
  if (!info.exists())
    return QStringLiteral("no run history at %1 (runs launched with tessera-cli or the workbench create it; --db or "
                          "$TESSERA_DB names another file)")
        .arg(path);
  if (!info.isFile()) return QStringLiteral("history %1 is not a regular file").arg(path);
  if (info.size() == 0) return QStringLiteral("history %1 is empty, not a run history").arg(path);
  return {};
}

/// Writes `image` to `path` as a PNG through a temporary file renamed over it: an existing file is
/// replaced only by a whole picture. False with the reason in *error.
inline bool savePicture(const QImage& image, const QString& path, QString* error) {
  QSaveFile file(path);
  if (!file.open(QIODevice::WriteOnly) || !image.save(&file, "PNG") || !file.commit()) {
    *error = QStringLiteral("cannot write %1: %2").arg(path, file.errorString().isEmpty() ? QStringLiteral("the image did not encode")
                                                                                          : file.errorString());
    return false;
  }
  return true;
}

}  // namespace tessera::app
