// Performance model: per-op times of every pipeline stage (GEMMs at a size-dependent efficiency,
// attention, memory-bound kernels, TP/CP/EP collectives), the schedule simulated with them, DP
// communication (per ZeRO stage) and the optimizer step -> iteration time, TFLOP/s, MFU, tokens/s.
// Constants and sources: docs/formulas.md §4.
#pragma once

#include <string_view>
#include <vector>

#include "planner/flops.hpp"
#include "planner/params.hpp"
#include "planner/schedule.hpp"
#include "spec/run_spec.hpp"

namespace tessera::planner {

/// Calibration constants of the model (fitted once to Narayanan et al. 2021 Table 1; GPU and
/// network figures come from the GPU preset, not from here).
struct PerformanceConstants {
  double gemm_half_size = 256;        ///< a GEMM dimension d runs at d / (d + this) of the large-GEMM rate
  double attention_efficiency = 0.8;  ///< attention score/value products relative to a large GEMM
  double elementwise_passes = 1.0;    ///< bytes moved by memory-bound kernels / bytes of stored activations
  double network_efficiency = 0.6;    ///< achieved / nominal bandwidth of collectives and p2p
  double collective_latency_s = 15e-6;
  double optimizer_bytes_per_param = 30;  ///< fused AdamW traffic: read master, m, v, grad; write master, m, v, weight
};

/// Time of one transformer layer for one microbatch on one rank.
struct LayerTime {
  double forward_s = 0;
  double backward_s = 0;         ///< including recomputation
  double backward_weight_s = 0;  ///< the weight-gradient share of backward_s (ZB's W)
  double tp_comm_s = 0;          ///< forward + backward TP collectives inside the two above
};

/// A data-parallel collective of one stage, on the communication stream beside its ops.
struct DpEvent {
  enum class Kind {
    all_reduce,             ///< the step's gradients (ZeRO-0)
    reduce_scatter,         ///< the step's gradients (ZeRO-1) or a microbatch's (ZeRO-2)
    all_gather,             ///< updated parameters (ZeRO-1/2, the previous step's), or a forward's (ZeRO-3)
    gather_reduce_scatter,  ///< ZeRO-3's backward: the parameters gathered again, the gradients reduced
    embedding_all_reduce,   ///< the tied word embedding's gradients, first and last stage (pp > 1)
  };
  int32_t stage = 0;
  int32_t chunk = 0;
  int32_t microbatch = -1;  ///< -1: once a step
  Kind kind = Kind::all_reduce;
  double start_s = 0;
  double end_s = 0;
};
std::string_view dp_event_name(DpEvent::Kind kind);

struct Prediction {
  double iteration_time_s = 0;
  double model_tflops_per_gpu = 0;
  double hardware_tflops_per_gpu = 0;
  double mfu = 0;
  double hfu = 0;
  double tokens_per_s = 0;
  double pipeline_s = 0;       ///< simulated forward/backward of all microbatches
  double dp_comm_s = 0;        ///< data-parallel reductions and parameter gathers of one step, the busiest stage's
  double dp_exposed_s = 0;     ///< what the DP communication adds to the pipeline (§4): a stage's wait for its
                               ///< gathered parameters, plus any stage's collectives past the pipeline's last op
  double dp_gather_wait_s = 0; ///< the part of dp_exposed_s spent waiting for the step's parameter gather (ZeRO-1/2)
  double embedding_all_reduce_s = 0;  ///< what the tied embedding's all-reduce (pp > 1) adds past every other
                                      ///< stream: its part of dp_exposed_s
  std::vector<DpEvent> dp_events;  ///< recorded with the simulation's events
  double optimizer_s = 0;
  double bubble_fraction = 0;
  OpCosts costs;
  Simulation simulation;
};

LayerTime layer_time(const spec::RunSpec& spec, const spec::GpuPreset& gpu, int64_t layer,
                     const PerformanceConstants& constants = {});

/// `stages`: stage_parameters(spec, params, spec.parallel.tp), as in Plan::stage_params.
Prediction predict(const spec::RunSpec& spec, const std::vector<StageParams>& stages, const ScheduleTable& schedule,
                   const IterationFlops& flops, const PerformanceConstants& constants = {},
                   bool record_events = false);

}  // namespace tessera::planner
