// Assembles a plan from the planner's parts and writes its JSON form.
#include "planner/plan.hpp"

#include <charconv>
#include <cmath>
#include <string>

namespace tessera::planner {

namespace {

// Group kinds that cross a node boundary without building the grid, in group_kinds() order (what the
// full grid's cross_node_kinds() gives).
std::vector<std::string> crossing_kinds(const spec::RunSpec& spec) {
  const auto& p = spec.parallel;
  const int64_t dp = spec.data_parallel(), world = spec.world_size(), gpn = spec.cluster.gpus_per_node;
  std::vector<std::string> out;
  auto check = [&](const char* kind, int64_t stride, int64_t size) {
    if (any_group_crosses_node(stride, size, world, gpn)) out.emplace_back(kind);
  };
  check("tp", 1, p.tp);
  check("cp", p.tp, p.cp);
  check("dp", p.tp * p.cp, dp);
  check("dp_cp", p.tp, dp * p.cp);
  check("ep", p.tp, p.ep);
  check("expert_dp", p.tp * p.ep, dp * p.cp / p.ep);
  check("pp", p.tp * p.cp * dp, p.pp);
  check("embedding", p.tp * p.cp * dp, p.pp);  // a pp group's first and last rank: apart when it crosses
  return out;
}

}  // namespace

Plan make_plan(const spec::RunSpec& spec, const PlanOptions& options) {
  spec::require_valid(spec);
  Plan plan;
  plan.spec = spec;
  plan.params = count_parameters(spec.model);
  plan.stage_params = stage_parameters(spec, plan.params, spec.parallel.tp);
  plan.flops = iteration_flops(spec, options.causal_flops);
  plan.schedule = make_schedule(spec.parallel.schedule, static_cast<int>(spec.parallel.pp),
                                static_cast<int>(spec.parallel.vpp), static_cast<int>(spec.num_microbatches()));
  plan.memory = estimate_memory(spec, plan.params, plan.schedule, options.memory_profile);
  if (options.predict_within_bytes > 0 && plan.memory.peak_bytes > options.predict_within_bytes) return plan;
  plan.prediction = predict(spec, plan.stage_params, plan.schedule, plan.flops, options.constants, options.record_events);
  if (options.include_grid) {
    plan.grid = make_rank_grid(spec);
    plan.cross_node_groups = plan.grid->cross_node_kinds();
  } else {
    plan.cross_node_groups = crossing_kinds(spec);
  }
  return plan;
}

nlohmann::ordered_json grid_to_json(const RankGrid& grid) {
  nlohmann::ordered_json out;
  auto& ranks = out["ranks"] = nlohmann::ordered_json::array();
  for (const auto& r : grid.ranks)
    ranks.push_back({{"rank", r.rank}, {"node", r.node}, {"local", r.local}, {"tp", r.tp}, {"cp", r.cp},
                     {"ep", r.ep}, {"dp", r.dp}, {"pp", r.pp}});
  auto& groups = out["groups"] = nlohmann::ordered_json::object();
  for (const auto& kind : group_kinds()) {
    auto it = grid.groups.find(kind);
    if (it == grid.groups.end()) continue;
    auto& list = groups[kind] = nlohmann::ordered_json::array();
    for (const auto& g : it->second) list.push_back(g.ranks);
  }
  out["cross_node"] = grid.cross_node_kinds();
  return out;
}

nlohmann::ordered_json plan_to_json(const Plan& plan) {
  nlohmann::ordered_json out;
  out["world_size"] = plan.spec.world_size();
  auto& parameters = out["parameters"];
  parameters["total"] = plan.params.total;
  parameters["active_per_token"] = plan.params.active_per_token;
  parameters["per_stage"] = nlohmann::ordered_json::array();
  for (const auto& st : plan.stage_params) parameters["per_stage"].push_back(st.total);
  // The layers each stage holds (all its chunks), in model order: uneven stages show here.
  parameters["layers_per_stage"] = nlohmann::ordered_json::array();
  for (const auto& st : plan.stage_params) parameters["layers_per_stage"].push_back(st.layers.size());

  auto& memory = out["memory"];
  memory["profile"] = std::string(memory_profile_name(plan.memory.profile));
  memory["stages"] = nlohmann::ordered_json::array();
  for (const auto& st : plan.memory.stages)
    memory["stages"].push_back({{"stage", st.stage},
                                {"weights_bytes", st.weights_bytes},
                                {"gradients_bytes", st.gradients_bytes},
                                {"optimizer_bytes", st.optimizer_bytes},
                                {"activations_bytes", st.activations_bytes},
                                {"buffers_bytes", st.buffers_bytes},
                                {"total_bytes", st.total_bytes()}});
  memory["peak_bytes"] = plan.memory.peak_bytes;
  memory["capacity_bytes"] = plan.memory.capacity_bytes;
  memory["fits"] = plan.memory.fits;
  memory["notes"] = memory_profile_notes(plan.spec, plan.memory.profile);

  out["flops"] = {{"model_per_iteration", plan.flops.model_per_iteration},
                  {"hardware_per_iteration", plan.flops.hardware_per_iteration},
                  {"tokens_per_iteration", plan.flops.tokens_per_iteration},
                  {"causal", plan.flops.causal}};
  out["pipeline"] = {{"schedule", std::string(spec::to_string(plan.spec.parallel.schedule))},
                     {"microbatches", plan.schedule.microbatches},
                     {"virtual_stages", plan.schedule.vpp},
                     {"bubble_fraction", plan.prediction.bubble_fraction}};
  const auto& pr = plan.prediction;
  out["predicted"] = {{"iteration_time_s", pr.iteration_time_s},
                      {"model_tflops_per_gpu", pr.model_tflops_per_gpu},
                      {"hardware_tflops_per_gpu", pr.hardware_tflops_per_gpu},
                      {"mfu", pr.mfu},
                      {"hfu", pr.hfu},
                      {"tokens_per_s", pr.tokens_per_s},
                      {"pipeline_s", pr.pipeline_s},
                      {"dp_exposed_s", pr.dp_exposed_s},
                      {"embedding_all_reduce_s", pr.embedding_all_reduce_s},
                      {"optimizer_s", pr.optimizer_s}};
  if (plan.grid) out["grid"] = grid_to_json(*plan.grid);
  return out;
}

void write_schedule_json(std::ostream& out, const ScheduleTable& table, const Simulation& simulation) {
  // Written as it goes, each op and event on its own line: the document of 10 million operations (the
  // most a spec may schedule) built whole took more than 15 GB and a minute.
  const auto text = [](auto value) {
    char number[32];
    const auto [end, ec] = std::to_chars(number, number + sizeof number, value);
    return std::string(number, end);
  };
  // As nlohmann writes a double: a whole one with ".0", a non-finite one as null.
  const auto real = [&](double value) {
    if (!std::isfinite(value)) return std::string("null");
    std::string out = text(value);
    if (out.find_first_of(".e") == std::string::npos) out += ".0";
    return out;
  };
  out << "{\n  \"schedule\": \"" << spec::to_string(table.schedule) << "\",\n  \"pp\": " << table.pp
      << ",\n  \"vpp\": " << table.vpp << ",\n  \"microbatches\": " << table.microbatches << ",\n  \"stages\": [";
  for (size_t s = 0; s < table.stages.size(); ++s) {
    out << (s ? "," : "") << "\n    [";
    const auto& ops = table.stages[s];
    for (size_t i = 0; i < ops.size(); ++i) {
      out << (i ? "," : "") << "\n      {\"op\": \"" << op_kind_name(ops[i].kind) << "\", \"microbatch\": " << text(ops[i].microbatch);
      out << ", \"chunk\": " << text(ops[i].chunk) << "}";
    }
    out << (ops.empty() ? "]" : "\n    ]");
  }
  out << (table.stages.empty() ? "]" : "\n  ]") << ",\n  \"events\": [";
  for (size_t i = 0; i < simulation.events.size(); ++i) {
    const auto& ev = simulation.events[i];
    out << (i ? "," : "") << "\n    {\"stage\": " << text(ev.stage) << ", \"op\": \"" << op_kind_name(ev.op.kind)
        << "\", \"microbatch\": " << text(ev.op.microbatch);
    out << ", \"chunk\": " << text(ev.op.chunk) << ", \"start_s\": " << real(ev.start_s);
    out << ", \"end_s\": " << real(ev.end_s) << "}";
  }
  out << (simulation.events.empty() ? "]" : "\n  ]") << ",\n  \"makespan_s\": " << real(simulation.makespan_s);
  out << ",\n  \"bubble_fraction\": " << real(simulation.bubble_fraction) << "\n}\n";
}

}  // namespace tessera::planner
