// Rank grid of a 2x2x2x2 layout (tp, cp, dp, pp) with ep=2 on two nodes of 8, checked by hand; the
// plan's node-crossing kinds without the grid against the grid's on aligned and unaligned nodes.
#include <QtTest/QtTest>

#include "planner/grid.hpp"
#include "planner/plan.hpp"

using namespace tessera;
using Groups = std::vector<std::vector<int64_t>>;

namespace {
Groups ranks_of(const planner::RankGrid& grid, const std::string& kind) {
  Groups out;
  for (const auto& g : grid.groups.at(kind)) out.push_back(g.ranks);
  return out;
}
planner::RankGrid tiny_grid() {
  nlohmann::json doc = {{"model", {{"preset", "tiny-moe"}}},
                        {"parallel", {{"tp", 2}, {"cp", 2}, {"pp", 2}, {"ep", 2}}},
                        {"cluster", {{"gpu", "h100-sxm"}, {"nodes", 2}, {"gpus_per_node", 8}}}};
  return planner::make_rank_grid(spec::parse_spec(doc));
}
}  // namespace

class TestGrid : public QObject {
  Q_OBJECT
 private slots:
  void coordinatesInMegatronOrder() {
    const auto grid = tiny_grid();
    QCOMPARE(grid.world, int64_t{16});
    QCOMPARE(grid.dp, int64_t{2});
    // rank 13 = 1 + 2*(0 + 2*(1 + 2*1)): tp 1, cp 0, dp 1, pp 1, on node 1 as local GPU 5.
    const auto& c = grid.ranks[13];
    QCOMPARE(c.tp, int64_t{1});
    QCOMPARE(c.cp, int64_t{0});
    QCOMPARE(c.dp, int64_t{1});
    QCOMPARE(c.pp, int64_t{1});
    QCOMPARE(c.node, int64_t{1});
    QCOMPARE(c.local, int64_t{5});
    QCOMPARE(c.ep, int64_t{0});  // (cp + 2*dp) % 2
    QVERIFY(planner::rank_coord(13, 2, 2, 2, 2, 2, 8) == c);
  }

  void groupsByHand() {
    const auto grid = tiny_grid();
    QCOMPARE(ranks_of(grid, "tp"), (Groups{{0, 1}, {2, 3}, {4, 5}, {6, 7}, {8, 9}, {10, 11}, {12, 13}, {14, 15}}));
    QCOMPARE(ranks_of(grid, "cp"), (Groups{{0, 2}, {1, 3}, {4, 6}, {5, 7}, {8, 10}, {9, 11}, {12, 14}, {13, 15}}));
    QCOMPARE(ranks_of(grid, "dp"), (Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}, {8, 12}, {9, 13}, {10, 14}, {11, 15}}));
    QCOMPARE(ranks_of(grid, "dp_cp"), (Groups{{0, 2, 4, 6}, {1, 3, 5, 7}, {8, 10, 12, 14}, {9, 11, 13, 15}}));
    QCOMPARE(ranks_of(grid, "pp"), (Groups{{0, 8}, {1, 9}, {2, 10}, {3, 11}, {4, 12}, {5, 13}, {6, 14}, {7, 15}}));
    // ep folds into dp*cp: with cp = 2 and ep = 2 the experts are spread over the cp pairs.
    QCOMPARE(ranks_of(grid, "ep"), ranks_of(grid, "cp"));
    QCOMPARE(ranks_of(grid, "expert_dp"), ranks_of(grid, "dp"));
    QCOMPARE(ranks_of(grid, "embedding"), ranks_of(grid, "pp"));
  }

  void nodeCrossingFlagged() {
    const auto grid = tiny_grid();
    QCOMPARE(grid.cross_node_kinds(), (std::vector<std::string>{"pp", "embedding"}));
    QVERIFY(grid.group_of("pp", 3)->crosses_node);
    QVERIFY(!grid.group_of("tp", 3)->crosses_node);
    QVERIFY(planner::any_group_crosses_node(8, 2, 16, 8));   // pp: ranks 0 and 8
    QVERIFY(!planner::any_group_crosses_node(1, 8, 16, 8));  // tp 8 on nodes of 8
    QVERIFY(!planner::any_group_crosses_node(1, 1, 16, 8));
    // 6 GPUs a node, TP 4: the first group {0..3} stays on node 0, the second {4..7} does not.
    QVERIFY(planner::any_group_crosses_node(1, 4, 12, 6));
    QVERIFY(!planner::any_group_crosses_node(1, 3, 12, 6));
  }

  void crossingWithoutTheGridAgreesWithTheGrid() {
    // plan without --grid names the kinds that cross from strides alone; the full grid checks every
    // group of every kind. Aligned and unaligned nodes, MoE folding, CP and pipelines.
    struct Layout {
      const char* model;
      int64_t tp, cp, ep, pp, nodes, gpus_per_node;
    };
    const std::vector<Layout> layouts = {{"tiny-moe", 2, 2, 2, 2, 2, 8}, {"tiny-gpt", 4, 1, 1, 1, 2, 6},
                                         {"tiny-gpt", 2, 1, 1, 2, 3, 4},  {"tiny-moe", 1, 1, 4, 1, 2, 4},
                                         {"tiny-moe", 2, 1, 2, 2, 4, 6},  {"tiny-gpt", 1, 2, 1, 4, 2, 8},
                                         {"tiny-gpt", 2, 2, 1, 1, 1, 8}};
    for (const auto& l : layouts) {
      nlohmann::json doc = {{"model", {{"preset", l.model}}},
                            {"parallel", {{"tp", l.tp}, {"cp", l.cp}, {"ep", l.ep}, {"pp", l.pp}}},
                            {"training", {{"global_batch_size", 48}, {"micro_batch_size", 1}}},
                            {"cluster", {{"gpu", "h100-sxm"}, {"nodes", l.nodes}, {"gpus_per_node", l.gpus_per_node}}}};
      const auto spec = spec::parse_spec(doc);
      const auto without = planner::make_plan(spec, {}).cross_node_groups;
      planner::PlanOptions with_grid;
      with_grid.include_grid = true;
      QCOMPARE(without, planner::make_plan(spec, with_grid).grid->cross_node_kinds());
    }
    nlohmann::json unaligned = {{"model", {{"preset", "tiny-gpt"}}},
                                {"parallel", {{"tp", 4}}},
                                {"training", {{"global_batch_size", 48}}},
                                {"cluster", {{"gpu", "h100-sxm"}, {"nodes", 2}, {"gpus_per_node", 6}}}};
    QCOMPARE(planner::make_plan(spec::parse_spec(unaligned), {}).cross_node_groups,
             (std::vector<std::string>{"tp", "dp", "dp_cp", "expert_dp"}));
  }
};

QTEST_APPLESS_MAIN(TestGrid)
#include "test_grid.moc"
