// What tessera-train can run: the specs it refuses beyond the spec's own rules (architectures,
// parallelisms and schedules it does not implement). In the planner, not the runtime, so that the
// layout search and the workbench know it without LibTorch; tessera-train checks it before any
// rank starts.
#pragma once

#include <vector>

#include "spec/errors.hpp"
#include "spec/run_spec.hpp"

namespace tessera::planner {

/// Every reason tessera-train cannot train `spec` (a valid spec), by field; empty when it can.
std::vector<spec::FieldError> tessera_train_problems(const spec::RunSpec& spec);

}  // namespace tessera::planner
