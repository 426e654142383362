// tessera --compare ID,ID[,…] | --history [--db FILE] [--screenshot OUT.png]: the run-history window
// comparing stored runs, or on its run list; headless to a PNG with --screenshot.
#pragma once

#include <QSize>
#include <QString>

#include "theme.hpp"

namespace tessera::app {

struct HistoryCommand {
  QString runs;        ///< "ID,ID[,…]": ids, id prefixes or names to compare; "" = the run list
  QString db;          ///< history file ("" = $TESSERA_DB, else the XDG data directory)
  QString screenshot;  ///< PNG to write; "" = open the window
  QSize size{1600, 1000};  ///< of the screenshot (--size, read and checked by the caller)
  ui::ThemeChoice palette = ui::ThemeChoice::system;  ///< --palette
};

/// The exit code: 0 on success, 2 with a message on stderr for what the user can fix (fewer than two
/// runs, an unknown id, a missing history file), 1 for an unwritable output.
int runHistoryCommand(const HistoryCommand& command);

}  // namespace tessera::app
