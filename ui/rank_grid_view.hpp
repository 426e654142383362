// The rank grid view: nodes as frames, GPUs as tiles coloured by one parallel dimension. Hover
// names a rank and its coordinates; a click highlights every group of that rank, each kind outlined
// in its own line (TP solid, DP dashed, PP dotted...); groups that cross a node boundary are flagged. Paints from RankGridModel; geometry lives in RankGridLayout.
#pragma once

#include <vector>

#include <QWidget>

#include "rank_grid_layout.hpp"
#include "rank_grid_model.hpp"

namespace tessera::ui {

class RankGridView : public QWidget {
  Q_OBJECT
 public:
  explicit RankGridView(RankGridModel* model, QWidget* parent = nullptr);

  /// Colour tiles by this coordinate (RankGridModel::Node, TP, CP, EP, DP or PP).
  void setColorBy(RankGridModel::Column column);
  RankGridModel::Column colorBy() const { return color_by_; }
  /// Grey the view: it shows the last valid plan while the spec has a problem.
  void setStale(bool stale);
  void selectRank(int64_t rank);
  int64_t selectedRank() const { return selected_; }
  int64_t hoveredRank() const { return hovered_; }
  /// The rank under a widget position (-1 when none).
  int64_t rankAt(const QPointF& pos) const { return gridLayout().rankAt(pos); }
  /// The geometry for the current size (laid out again when the size or the model changed).
  const RankGridLayout& gridLayout() const;
  /// "rank 13 · node 1, GPU 5 · tp 5 cp 0 ep 0 dp 1 pp 1".
  QString describeRank(int64_t rank) const;
  /// The selected rank's groups that `rank` is in, outlined on the grid one line style each ("DP",
  /// "DP EP"); empty for the selected rank itself and for ranks outside them.
  QString groupsOf(int64_t rank) const;
  /// The header's second line for the selected rank at the view's width: the rank said whole
  /// (describeRank), or "rank 45" where that is too wide, then each group of two or more ranks with
  /// the line its members are outlined in ("TP ×8", "DP ×2 (crosses nodes)"; the crossing left out
  /// where even the short line is too wide; the first line names the kinds that cross).
  struct GroupsLine {
    QString lead;  ///< "rank 45 · node 5, GPU 5 · tp 5 … — groups:"
    std::vector<std::pair<Qt::PenStyle, QString>> groups;
  };
  GroupsLine selectedGroupsLine() const;
  /// The header's first line at the view's width: the layout ("64 GPUs on 8 nodes · TP 8 · CP 1 · EP 1
  /// · DP 2 · PP 4", without the dimensions of size 1 where the whole leaves too little room for what
  /// follows it, cut with "…" where even that is too wide), then which groups
  /// cross nodes, in parts: only TP, CP and EP are warned of ("⚠ EP" in red; DP and PP across nodes
  /// are normal and stay grey).
  struct LayoutLine {
    QString layout;
    std::vector<std::pair<QString, bool>> crossing;  ///< text, warned; "crosses nodes: ", "DP", ", ", "⚠ EP"
  };
  LayoutLine layoutLine() const;

  QSize sizeHint() const override { return {900, 600}; }

 signals:
  void rankHovered(qint64 rank);
  void rankSelected(qint64 rank);

 protected:
  void paintEvent(QPaintEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void leaveEvent(QEvent* event) override;
  void keyPressEvent(QKeyEvent* event) override;

 private:
  void updateMembership();
  /// The rank whose tile is drawn next below (direction +1) or above (-1) `rank`'s, nearest its
  /// column; `rank` itself where there is none.
  int64_t rankBeside(int64_t rank, int direction) const;
  QRect headerRect() const;
  /// The width of a group's line sample in the header.
  int sampleWidth() const;
  void paintHeader(QPainter& painter, const planner::RankGrid& grid);

  RankGridModel* model_;
  mutable RankGridLayout layout_;
  mutable QSize laid_out_for_;  ///< widget size of layout_; empty when it must be redone
  RankGridModel::Column color_by_ = RankGridModel::TP;
  int64_t hovered_ = -1, selected_ = -1;
  std::vector<uint8_t> member_;  ///< per rank: bit k set when in the selected rank's group of kind k
  bool stale_ = false;
};

}  // namespace tessera::ui
