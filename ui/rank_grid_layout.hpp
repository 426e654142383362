// Geometry of the rank grid view: nodes as frames in rows and columns, GPUs as square tiles inside,
// sized to the widget, with the level of detail (labels, padding) chosen by the tile size; maps a
// point to the rank under it. Separate from the view so that hit testing is tested.
#pragma once

#include <cstdint>

#include <QPointF>
#include <QRectF>

namespace tessera::ui {

class RankGridLayout {
 public:
  /// Lays out `world` ranks, `gpus_per_node` per node, inside `area`.
  void update(int64_t world, int64_t gpus_per_node, const QRectF& area);

  QRectF tileRect(int64_t rank) const;
  QRectF nodeRect(int64_t node) const;
  /// The rank whose tile contains `point`, or -1 (gaps, frames, outside).
  int64_t rankAt(const QPointF& point) const;

  double tileSize() const { return tile_; }
  int64_t nodeCount() const { return nodes_; }
  /// Node captions fit in the frames' headers.
  bool showNodeLabels() const { return header_ > 0; }
  /// Rank numbers fit in the tiles.
  bool showTileText() const { return tile_ >= 22; }
  /// Frames and gaps are drawn (off at the smallest level of detail).
  bool showFrames() const { return pad_ >= 2; }

 private:
  struct Spacing {
    double pad, header, node_gap, tile_gap;
  };
  void place(const Spacing& spacing, int64_t node_columns);
  double fitTile(const Spacing& spacing, int64_t node_columns) const;

  QRectF area_;
  int64_t world_ = 0, per_node_ = 1, nodes_ = 0;
  int64_t gpu_columns_ = 1, gpu_rows_ = 1, node_columns_ = 1;
  double tile_ = 0, pad_ = 0, header_ = 0, node_gap_ = 0, tile_gap_ = 0;
  double node_w_ = 0, node_h_ = 0;
  QPointF origin_;
};

}  // namespace tessera::ui
