// tessera-cli presets | validate: the planning commands.
#include <iostream>

#include "cli/commands.hpp"
#include "cli/text_table.hpp"
#include "planner/params.hpp"
#include "spec/run_spec.hpp"

namespace tessera::cli {

namespace {

void print_presets() {
  const auto& catalog = spec::PresetCatalog::builtin();
  TextTable models({"model preset", "arch", "layers", "hidden", "heads", "parameters", "description"},
                   {false, false, true, true, true, true, false});
  for (const auto& [id, preset] : catalog.models()) {
    nlohmann::json doc = {{"model", {{"preset", id}}}, {"cluster", {{"gpu", "cpu"}, {"nodes", 1}, {"gpus_per_node", 1}}}};
    const auto s = spec::parse_spec(doc);
    models.add_row({id, std::string(spec::to_string(s.model.arch)), std::to_string(s.model.num_layers),
                    std::to_string(s.model.hidden_size), std::to_string(s.model.num_attention_heads),
                    format_count(planner::count_parameters(s.model).total), preset.description});
  }
  std::cout << models.str() << "\n";
  TextTable gpus({"gpu preset", "bf16 TFLOP/s", "memory GiB", "HBM GB/s", "intra-node GB/s", "inter-node GB/s", "name"},
                 {false, true, true, true, true, true, false});
  for (const auto& [id, g] : catalog.gpus())
    gpus.add_row({id, format_fixed(g.peak_tflops_bf16, 1), format_gib(g.memory_bytes), format_fixed(g.hbm_bandwidth_GBps, 0),
                  format_fixed(g.intra_node_bandwidth_GBps, 0), format_fixed(g.inter_node_bandwidth_GBps, 1), g.name});
  std::cout << gpus.str();
}

}  // namespace

void add_plan_commands(CLI::App& app) {
  app.add_subcommand("presets", "List the model and GPU presets")->callback(print_presets);

  auto* validate = app.add_subcommand("validate", "Check a run spec; every problem names its field and rule");
  static std::string validate_path;
  validate->add_option("spec", validate_path, "Run spec (JSON)")->required();
  validate->callback([] {
    const auto s = spec::load_spec_file(validate_path);
    std::cout << validate_path << ": valid (world size " << s.world_size() << ", dp " << s.data_parallel() << ", "
              << s.num_microbatches() << " microbatches per step)\n";
  });
}

}  // namespace tessera::cli
