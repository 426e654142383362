// The --size WIDTHxHEIGHT of a headless screenshot, read once for every view: each side from 100 to
// 8192 pixels (an 8192² image is 256 MiB; a larger one fails to paint and read as "cannot write").
#pragma once

#include <optional>

#include <QRegularExpression>
#include <QSize>
#include <QString>

namespace tessera::app {

inline constexpr int kMinScreenSide = 100;
inline constexpr int kMaxScreenSide = 8192;

/// The size `text` spells, or nullopt and the rule it breaks in *error.
inline std::optional<QSize> parseScreenSize(const QString& text, QString* error) {
  const auto match = QRegularExpression(QStringLiteral("^(\\d+)x(\\d+)$")).match(text);
  if (!match.hasMatch()) {
    *error = QStringLiteral("--size must be WIDTHxHEIGHT, got \"%1\"").arg(text);
    return std::nullopt;
  }
  for (int i : {1, 2}) {
    const QString side = match.captured(i);  // any number of digits: compared as text beyond int
    if (side.size() > 5 || side.toInt() < kMinScreenSide || side.toInt() > kMaxScreenSide) {
      *error = QStringLiteral("--size %1: each side must be %2 to %3 pixels").arg(text).arg(kMinScreenSide).arg(kMaxScreenSide);
      return std::nullopt;
    }
  }
  return QSize(match.captured(1).toInt(), match.captured(2).toInt());
}

}  // namespace tessera::app
