#pragma once
// Internal: each zoo source file contributes its entries (see zoo.h for the contract).
#include <vector>

#include "burst/graph/zoo.h"

namespace burst::graph::zoo {

std::vector<ZooEntry> vgg_entries();         // vgg11/13/16/19
std::vector<ZooEntry> resnet_entries();      // resnet50, wide_resnet50_2, wide_resnet101_2, resnet
std::vector<ZooEntry> inception_entries();   // inception_v3
std::vector<ZooEntry> vit_entries();         // vit_b_16 (and vit with options)
std::vector<ZooEntry> gpt2_entries();        // gpt2 decoder
std::vector<ZooEntry> llama_entries();       // llama-style decoder, dense or MoE
std::vector<ZooEntry> fmnist_cnn_entries();  // fmnist_cnn

}  // namespace burst::graph::zoo
