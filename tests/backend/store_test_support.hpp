// Helpers shared by the store test suites: small valid specs, runs, and raw SQL counts.
#pragma once

#include <cmath>
#include <string>

#include "store/sqlite.hpp"
#include "store/types.hpp"

namespace store_test {

/// A valid tiny-gpt spec on 2 CPU ranks: 512 tokens per step (global batch 8 × seq 64).
inline nlohmann::ordered_json tiny_spec(const std::string& name, int tp = 1, double lr = 3e-4, int64_t train_steps = 100) {
  return {{"name", name},
          {"model", {{"preset", "tiny-gpt"}}},
          {"parallel", {{"tp", tp}}},
          {"training", {{"micro_batch_size", 2}, {"global_batch_size", 8}, {"lr", lr}, {"train_steps", train_steps}}},
          {"cluster", {{"gpu", "cpu"}, {"nodes", 1}, {"gpus_per_node", 2}}}};
}

inline tessera::store::RunRecord tiny_run(const std::string& name, int tp = 1, double lr = 3e-4) {
  tessera::store::RunRecord run;
  run.name = name;
  run.spec = tiny_spec(name, tp, lr);
  return run;
}

/// One integer from SQL on a fresh connection (no pragmas, no migration).
inline int64_t sql_int(const std::string& path, const std::string& sql) {
  tessera::store::Connection connection(path, false);
  tessera::store::Statement statement(connection, sql);
  return statement.step("test query") ? statement.column_int(0) : -1;
}

inline std::string sql_text(const std::string& path, const std::string& sql) {
  tessera::store::Connection connection(path, false);
  tessera::store::Statement statement(connection, sql);
  return statement.step("test query") ? statement.column_text(0) : "";
}

/// Equal as stored: same bits for numbers, NaN equals NaN.
inline bool same(double a, double b) { return (std::isnan(a) && std::isnan(b)) || (a == b && std::signbit(a) == std::signbit(b)); }

}  // namespace store_test
