#include "burst/job/train_config.h"

namespace burst::job {

cost::Optimizer memory_optimizer(const TrainConfig& config) {
  if (config.optimizer != Optimizer::Sgd) return cost::Optimizer::Adam;
  return config.momentum > 0 ? cost::Optimizer::Momentum : cost::Optimizer::Sgd;
}

}  // namespace burst::job
