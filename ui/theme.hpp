// Colours of the workbench: the light and dark application palettes (following the system unless
// the user picks one), the data colours the views share (op kinds, memory parts, categories), and
// the focus frame of the custom-painted views.
#pragma once

#include <cstdint>
#include <optional>

#include <QColor>
#include <QPalette>
#include <QStringView>

class QCustomPlot;
class QPainter;
class QWidget;

namespace tessera::ui {

enum class ThemeChoice { system, light, dark };

/// The choice a name spells ("system", "light", "dark"); nullopt for any other name.
std::optional<ThemeChoice> themeFromName(QStringView name);
/// Applies Fusion with the light or dark palette; `system` picks by the platform palette's lightness.
void applyTheme(ThemeChoice choice);
/// Whether the application palette currently in force is dark.
bool isDarkPalette(const QPalette& palette);
/// The room a view item's text keeps from each side of its cell, as QCommonStyle draws it
/// (PM_FocusFrameHMargin + 1): what a delegate that measures or draws a cell's text leaves.
int itemTextMargin(const QWidget* widget);
/// Made at the top of a custom-painted view's paintEvent: when the view has keyboard focus, a frame
/// in the palette's highlight colour is drawn 2 px inside its edge as the event ends, whichever way
/// it returns (the rank grid and the timeline took arrows and +/− with nothing to show they would).
class FocusFrame {
 public:
  FocusFrame(QPainter& painter, const QWidget* view) : painter_(painter), view_(view) {}
  ~FocusFrame();
  FocusFrame(const FocusFrame&) = delete;
  FocusFrame& operator=(const FocusFrame&) = delete;

  /// While one lives, no frame is drawn: a view exported to PNG or PDF, or a --screenshot, is a
  /// picture of the view, not of where the keyboard is.
  class Hidden {
   public:
    Hidden() { ++hidden_; }
    ~Hidden() { --hidden_; }
    Hidden(const Hidden&) = delete;
    Hidden& operator=(const Hidden&) = delete;
  };

 private:
  static inline int hidden_ = 0;  // GUI thread only
  QPainter& painter_;
  const QWidget* view_;
};
/// A plot in the widget palette's colours: its background, every axis rect's axes and grids, its
/// text elements (titles) and legends. The memory view, the comparison and the dashboard share it.
void applyPlotPalette(QCustomPlot* plot, const QPalette& palette);

namespace colors {
QColor forward();
QColor backward();
QColor backwardInput();
QColor backwardWeight();
QColor weights();
QColor gradients();
QColor optimizer();
QColor dataParallel();  ///< a data-parallel collective on the timeline's communication strip
QColor activations();
QColor buffers();
/// Red for what fails or differs, lighter where the application palette is dark.
QColor warning();
QColor ok();
/// A distinct colour for value `index` of `count` (qualitative up to 10, then evenly spaced hues).
QColor category(int64_t index, int64_t count);
/// `c` faded into `base`, `share` of it left (1: c; 0: base): what a stale view paints, so that a text
/// colour can be chosen for the colour as shown (painting at an opacity faded the text with it).
QColor faded(const QColor& c, const QColor& base, float share);
/// WCAG 2 contrast ratio of two colours (1 to 21).
double contrast(const QColor& a, const QColor& b);
/// The text colour for numbers on `fill`: near-black or white, whichever contrasts more (white on
/// the qualitative orange was 2.4:1; the lightness rule it replaces picked it).
QColor inkOn(const QColor& fill);
/// How much of its colours a stale view (the spec has a problem: the last valid plan) shows.
inline constexpr float kStaleShare = 0.35f;
}  // namespace colors

}  // namespace tessera::ui
