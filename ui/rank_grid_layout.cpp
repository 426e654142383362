// Geometry and hit testing of the rank grid.
#include "rank_grid_layout.hpp"

#include <algorithm>
#include <cmath>

namespace tessera::ui {

namespace {
constexpr double kMaxTile = 64;
}

double RankGridLayout::fitTile(const Spacing& s, int64_t nc) const {
  const int64_t nr = (nodes_ + nc - 1) / nc;
  const double w = area_.width() - (nc - 1) * s.node_gap - nc * (2 * s.pad + (gpu_columns_ - 1) * s.tile_gap);
  const double h = area_.height() - (nr - 1) * s.node_gap - nr * (s.header + 2 * s.pad + (gpu_rows_ - 1) * s.tile_gap);
  return std::min(w / (nc * gpu_columns_), h / (nr * gpu_rows_));
}

void RankGridLayout::place(const Spacing& s, int64_t nc) {
  pad_ = s.pad;
  header_ = s.header;
  node_gap_ = s.node_gap;
  tile_gap_ = s.tile_gap;
  node_columns_ = nc;
  tile_ = std::floor(std::clamp(fitTile(s, nc), 1.0, kMaxTile));
  node_w_ = gpu_columns_ * tile_ + (gpu_columns_ - 1) * tile_gap_ + 2 * pad_;
  node_h_ = header_ + gpu_rows_ * tile_ + (gpu_rows_ - 1) * tile_gap_ + 2 * pad_;
  const int64_t nr = (nodes_ + nc - 1) / nc;
  const double used_w = nc * node_w_ + (nc - 1) * node_gap_;
  const double used_h = nr * node_h_ + (nr - 1) * node_gap_;
  origin_ = {std::floor(area_.left() + std::max(0.0, (area_.width() - used_w) / 2)),
             std::floor(area_.top() + std::max(0.0, std::min(used_h * 0.1, (area_.height() - used_h) / 2)))};
}

void RankGridLayout::update(int64_t world, int64_t gpus_per_node, const QRectF& area) {
  area_ = area;
  world_ = world;
  per_node_ = std::max<int64_t>(1, gpus_per_node);
  nodes_ = (world_ + per_node_ - 1) / per_node_;
  gpu_columns_ = std::min<int64_t>(per_node_, 8);
  gpu_rows_ = (per_node_ + gpu_columns_ - 1) / gpu_columns_;
  if (nodes_ == 0) return;
  // Coarser spacing as tiles shrink: labelled frames, plain frames, then tiles only.
  const Spacing levels[] = {{6, 18, 10, 3}, {2, 0, 4, 1}, {1, 0, 2, 0}};
  const double min_tile[] = {16, 5, 0};
  for (int level = 0; level < 3; ++level) {
    int64_t best_columns = 1;
    double best = -1;
    for (int64_t nc = 1; nc <= nodes_; ++nc) {
      const double t = fitTile(levels[level], nc);
      if (t > best) best = t, best_columns = nc;
    }
    if (best >= min_tile[level] || level == 2) {
      place(levels[level], best_columns);
      return;
    }
  }
}

QRectF RankGridLayout::nodeRect(int64_t node) const {
  const int64_t col = node % node_columns_, row = node / node_columns_;
  return {origin_.x() + col * (node_w_ + node_gap_), origin_.y() + row * (node_h_ + node_gap_), node_w_, node_h_};
}

QRectF RankGridLayout::tileRect(int64_t rank) const {
  const QRectF node = nodeRect(rank / per_node_);
  const int64_t local = rank % per_node_;
  const int64_t col = local % gpu_columns_, row = local / gpu_columns_;
  return {node.left() + pad_ + col * (tile_ + tile_gap_), node.top() + header_ + pad_ + row * (tile_ + tile_gap_), tile_, tile_};
}

int64_t RankGridLayout::rankAt(const QPointF& p) const {
  if (nodes_ == 0) return -1;
  const double x = p.x() - origin_.x(), y = p.y() - origin_.y();
  if (x < 0 || y < 0) return -1;
  const auto col = static_cast<int64_t>(x / (node_w_ + node_gap_));
  const auto row = static_cast<int64_t>(y / (node_h_ + node_gap_));
  if (col >= node_columns_) return -1;
  const int64_t node = row * node_columns_ + col;
  if (node >= nodes_) return -1;
  const double nx = x - col * (node_w_ + node_gap_) - pad_;
  const double ny = y - row * (node_h_ + node_gap_) - header_ - pad_;
  if (nx < 0 || ny < 0) return -1;
  const auto gc = static_cast<int64_t>(nx / (tile_ + tile_gap_));
  const auto gr = static_cast<int64_t>(ny / (tile_ + tile_gap_));
  if (gc >= gpu_columns_ || gr >= gpu_rows_) return -1;
  if (nx - gc * (tile_ + tile_gap_) >= tile_ || ny - gr * (tile_ + tile_gap_) >= tile_) return -1;
  const int64_t local = gr * gpu_columns_ + gc;
  if (local >= per_node_) return -1;
  const int64_t rank = node * per_node_ + local;
  return rank < world_ ? rank : -1;
}

}  // namespace tessera::ui
