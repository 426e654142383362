// Files of the headless modes: where a screenshot goes (--screenshot OUT.png: a PNG of the --size asked,
// written whole or not at all) and whether a read-only view may open a history (store::read_only_history_problem).
// QImage::save(path) opened, and so emptied, the file before it found that ".json" is no image
// format: `tessera --spec v.json --screenshot v.json` left the spec empty.
#pragma once

#include <algorithm>

#include <QFileInfo>
#include <QImage>
#include <QSaveFile>
#include <QSize>
#include <QString>

#include "store/location.hpp"

namespace tessera::app {

/// Why `path` cannot take the picture ("" when it can): empty, not ending in .png, a directory.
inline QString picturePathProblem(const QString& path) {
  if (path.isEmpty()) return QStringLiteral("--screenshot needs a file name (OUT.png)");
  if (QFileInfo(path).suffix().compare(QLatin1String("png"), Qt::CaseInsensitive) != 0)
    return QStringLiteral("--screenshot %1: the picture is a PNG; give a file ending in .png").arg(path);
  if (QFileInfo(path).isDir()) return QStringLiteral("--screenshot %1 is a directory").arg(path);
  return {};
}

/// store::read_only_history_problem() of `path`, with where a history comes from ("" when it opens).
inline QString readOnlyHistoryProblem(const QString& path) {
  const std::string problem = store::read_only_history_problem(path.toStdString());
  if (problem.empty()) return {};
  return QString::fromStdString(problem) +
         QStringLiteral(" (runs launched with tessera-cli or the workbench create one; --db or $TESSERA_DB names another file)");
}

/// Writes `image` to `path` as a PNG through a temporary file renamed over it: an existing file is
/// replaced only by a whole picture. "" when written, else why not.
inline QString savePicture(const QImage& image, const QString& path) {
  QSaveFile file(path);
  if (file.open(QIODevice::WriteOnly) && image.save(&file, "PNG") && file.commit()) return {};
  return QStringLiteral("cannot write %1: %2").arg(path, file.errorString().isEmpty() ? QStringLiteral("the image did not encode")
                                                                                      : file.errorString());
}

/// A picture larger than --size asked would be a surprise in a script: the views' minimum sizes win over
/// a small window (--size 100x100 gave 715x457). "" when the picture is no larger than asked.
inline QString pictureSizeProblem(const QImage& picture, const QSize& asked) {
  const QSize drawn = picture.deviceIndependentSize().toSize();
  if (drawn.width() <= asked.width() && drawn.height() <= asked.height()) return {};
  return QStringLiteral("--size %1x%2 is smaller than this view can be drawn: it needs at least %3x%4")
      .arg(asked.width())
      .arg(asked.height())
      .arg(std::max(drawn.width(), asked.width()))
      .arg(std::max(drawn.height(), asked.height()));
}

/// Writes `picture`, drawn for a window of `asked`, to `out`: "" when written, else why not.
inline QString writePicture(const QImage& picture, const QSize& asked, const QString& out) {
  if (QString problem = pictureSizeProblem(picture, asked); !problem.isEmpty()) return problem;
  return savePicture(picture, out);
}

}  // namespace tessera::app
