// What the runtime does not run yet (unrun_dimensions.h).
#include "burst/job/unrun_dimensions.h"

#include <fmt/format.h>

#include "burst/util/error.h"

namespace burst::job {

void refuse_unrun_dimensions(const graph::Graph& graph, const plan::Plan& plan, const program::ProgramOptions& program) {
  if (program.zero_stage > 2) {
    throw UserError(fmt::format("the runtime runs ZeRO stages 0, 1 and 2, not {} (stage 3 is planned and simulated)",
                                program.zero_stage));
  }
  if (plan.pipeline.virtual_stages > 1) {
    throw UserError(fmt::format("burst plans the interleaved schedule ({} chunks a rank) but does not train it yet "
                                "(docs/llm.md)",
                                plan.pipeline.virtual_stages));
  }
  if (plan.pipeline.schedule == plan::Schedule::ZeroBubbleH1) {
    throw UserError("burst plans the ZB-H1 schedule (backward split into input and weight gradients) but does not "
                    "train it yet (docs/llm.md)");
  }
  if (plan.expert_parallel > 1) {
    throw UserError(fmt::format("burst plans expert parallelism (experts over {} sample groups) but does not train it "
                                "yet (docs/llm.md)",
                                plan.expert_parallel));
  }
  if (plan.context_parallel > 1) {
    throw UserError(fmt::format("burst plans context parallelism (each sample's tokens over {} devices) but does not "
                                "train it yet (docs/llm.md)",
                                plan.context_parallel));
  }
  for (graph::LayerId id = 0; id < static_cast<graph::LayerId>(graph.size()); ++id) {
    const plan::LayerPlacement& placement = plan.layers[static_cast<size_t>(id)];
    if (placement.split.splits() && graph.layer(id).op() == graph::OpKind::SoftmaxCrossEntropy) {
      throw UserError(fmt::format("plan layer '{}': burst plans the vocabulary-parallel loss but does not train it yet "
                                  "(docs/llm.md)",
                                  placement.layer));
    }
    if (placement.split.splits() && placement.split.kind == cost::SplitKind::Sequence) {
      throw UserError(fmt::format("plan layer '{}': burst plans sequence parallelism but does not train it yet "
                                  "(docs/llm.md)",
                                  placement.layer));
    }
  }
}

}  // namespace burst::job
