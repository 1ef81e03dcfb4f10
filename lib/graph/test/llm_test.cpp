// Today's decoders: parameter counts of the shipped Hugging Face configs against the model
// cards, hand-derived block sizes, the zoo's llama: spec and the reader's refusals.
#include <cmath>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "burst/graph/decoder.h"
#include "burst/graph/hf_config.h"
#include "burst/graph/model_json.h"
#include "burst/graph/zoo.h"
#include "burst/util/error.h"

namespace burst::graph {
namespace {

std::string config_path(const std::string& name) { return std::string(BURST_HF_CONFIG_DIR) + "/" + name + ".json"; }
Graph hf(const std::string& name) { return load_model("hf:" + config_path(name)); }

// |a - b| / b.
double relative(int64_t a, double b) { return std::abs(static_cast<double>(a) - b) / b; }

// Exact counts derived by hand from each config (embedding + blocks + final norm + head);
// the cards' rounded figures beside them.
TEST(HfConfig, DenseParameterCountsMatchTheModelCards) {
  // Llama 3.1 8B: 2 x 128256 x 4096 + 32 x (attention 41,943,040 + MLP 176,160,768 +
  // norms 8,192) + 4,096 = 8,030,261,248 (the safetensors' count).
  EXPECT_EQ(hf("llama-3.1-8b").total_params(), 8'030'261'248);
  EXPECT_EQ(hf("llama-3.1-70b").total_params(), 70'553'706'496);
  EXPECT_EQ(hf("llama-3.1-405b").total_params(), 405'853'388'800);
  EXPECT_EQ(hf("mistral-7b-v0.1").total_params(), 7'241'732'096);
  // Qwen3-8B's card: 8.2B; Qwen2-7B's: 7.6B; GPT-NeoX-20B: 20,554,567,680 (its paper's 20.55B).
  EXPECT_LT(relative(hf("qwen3-8b").total_params(), 8.19e9), 1e-3);
  EXPECT_LT(relative(hf("qwen2-7b").total_params(), 7.6156e9), 1e-3);
  EXPECT_EQ(hf("gpt-neox-20b").total_params(), 20'554'567'680);
  EXPECT_EQ(hf("gpt2").total_params(), 124'439'808);
}

TEST(HfConfig, MixtureOfExpertsCountsTotalAndActive) {
  // Mixtral 8x7B: 46.7B total, 12.9B active (two of eight experts).
  const Graph mixtral = hf("mixtral-8x7b");
  EXPECT_EQ(mixtral.total_params(), 46'702'792'704);
  EXPECT_EQ(mixtral.total_active_params(), 12'879'925'248);
  // Qwen3-30B-A3B: 30.5B total, 3.3B activated (8 of 128 experts of 768).
  const Graph qwen3 = hf("qwen3-30b-a3b");
  EXPECT_EQ(qwen3.total_params(), 30'532'122'624);
  EXPECT_LT(relative(qwen3.total_params(), 30.5e9), 1.1e-3);
  EXPECT_EQ(qwen3.total_active_params(), 3'353'032'704);
  // Qwen2-57B-A14B: a gated shared expert of 20480 beside 8 of 64 routed ones.
  const Graph qwen2 = hf("qwen2-57b-a14b");
  EXPECT_EQ(qwen2.total_params(), 57'408'658'944);
  EXPECT_EQ(qwen2.total_active_params(), 14'249'270'784);
}

TEST(HfConfig, DeepSeekV3HasLatentAttentionAndDenseFirstBlocks) {
  // 61 blocks: 3 dense (MLP 18432), 58 MoE (256 routed of 2048, 1 shared, top 8); MLA with
  // q_lora 1536, kv_lora 512, heads 128 of 128 + 64 rotary features, values 128. Card:
  // 671B total (the 14B multi-token-prediction module left out), 37B activated; the count
  // here is 37.55B with the 0.93B input embedding, 36.63B without (a lookup reads one row).
  const Graph v3 = hf("deepseek-v3");
  EXPECT_EQ(v3.total_params(), 671'026'404'352);
  EXPECT_LT(relative(v3.total_params(), 671e9), 1e-3);
  EXPECT_EQ(v3.total_active_params(), 37'552'282'624);
  const auto attention = v3.find("model.layers.0.self_attn");
  ASSERT_TRUE(attention);
  EXPECT_EQ(v3.info(*attention).params, 187'107'328);
  EXPECT_EQ(v3.layer(*v3.find("model.layers.2.mlp.down_proj")).op(), OpKind::Linear);
  EXPECT_EQ(v3.layer(*v3.find("model.layers.3.mlp")).op(), OpKind::Moe);
}

TEST(LlamaZoo, DefaultsAreLlama31At8kTokens) {
  const Graph zoo = build_zoo_model("llama");
  EXPECT_EQ(zoo.total_params(), 8'030'261'248);
  EXPECT_EQ(zoo.info(*zoo.find("input_ids")).output_shape, (Shape{8192}));
  // Mixtral through the spec: the same count as its config.
  const Graph moe = build_zoo_model("llama:vocab=32000,experts=8,top_k=2,theta=1000000");
  EXPECT_EQ(moe.total_params(), 46'702'792'704);
  EXPECT_EQ(moe.total_active_params(), 12'879'925'248);
}

// One GQA block's forward FLOPs at T tokens, by hand: projections 2 T (D^2 + 2 D KV hd + D^2),
// the flash causal core half of 4 T^2 H hd plus the softmax's 5 H T^2.
TEST(LlamaZoo, GqaFlopsByHand) {
  const Graph g = build_zoo_model("llama:layers=1,width=256,heads=8,kv_heads=2,ffn=512,vocab=100,seq=64");
  const auto& info = g.info(*g.find("model.layers.0.self_attn"));
  const int64_t t = 64, d = 256, h = 8, kv = 2, hd = 32;
  const int64_t projections = 2 * t * (d * d + 2 * d * kv * hd + d * d);
  const int64_t core = (2 * t * t * h * (hd + hd) + 5 * h * t * t) / 2;
  EXPECT_EQ(info.forward_flops, projections + core);
  EXPECT_EQ(info.params, d * d + 2 * d * kv * hd + d * d);
}

TEST(HfConfig, SeqFromTheSpecOrTheDefault) {
  EXPECT_EQ(hf("llama-3.1-8b").info(0).output_shape, (Shape{8192}));
  const Graph longer = load_model(with_sequence_length("hf:" + config_path("llama-3.1-8b"), 131072));
  EXPECT_EQ(longer.info(0).output_shape, (Shape{131072}));
  EXPECT_EQ(with_sequence_length("llama:layers=2,seq=64", 128), "llama:layers=2,seq=128");
  EXPECT_EQ(with_sequence_length("gpt2", 512), "gpt2:seq=512");
  EXPECT_THROW(with_sequence_length("resnet50", 512), UserError);
}

std::string refusal(const std::string& json) {
  const std::string path = ::testing::TempDir() + "/bad_config.json";
  std::ofstream(path) << json;
  try {
    load_model("hf:" + path);
  } catch (const UserError& error) {
    return error.what();
  }
  return "";
}

TEST(HfConfig, RefusesUnknownTypesAndMissingFields) {
  EXPECT_NE(refusal(R"({"model_type": "mamba"})").find("unknown model_type 'mamba' (burst reads model_type llama, mistral"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"hidden_size": 8})").find("no model_type field"), std::string::npos);
  const std::string missing = refusal(R"({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2,
      "num_attention_heads": 4, "vocab_size": 10})");
  EXPECT_NE(missing.find("(llama): missing field 'intermediate_size'"), std::string::npos) << missing;
  EXPECT_NE(refusal(R"({"model_type": "llama", "num_hidden_layers": 2, "hidden_size": "big"})").find("field 'hidden_size' must be a whole number"),
            std::string::npos);
  const std::string kv = refusal(R"({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2,
      "num_attention_heads": 4, "num_key_value_heads": 3, "intermediate_size": 8, "vocab_size": 10})");
  EXPECT_NE(kv.find("4 heads are not divisible by 3 kv_heads"), std::string::npos) << kv;
  EXPECT_NE(refusal("[1, 2]").find("one JSON object"), std::string::npos);
  EXPECT_NE(refusal("{").find("invalid JSON"), std::string::npos);
}

TEST(HfConfig, ModelFilesRoundTripTheNewFields) {
  // Latent attention, RMSNorm and moe with a shared expert through the model file format.
  const Graph v3 = hf("deepseek-v3");
  const Graph v3_back = model_from_text(model_to_json(v3).dump());
  EXPECT_EQ(v3_back.total_params(), v3.total_params());
  EXPECT_EQ(v3_back.total_active_params(), v3.total_active_params());
  EXPECT_EQ(v3_back.total_forward_flops(), v3.total_forward_flops());
  // GQA attention and moe from the zoo's spec.
  const Graph small = build_zoo_model("llama:layers=2,width=64,heads=4,kv_heads=2,ffn=128,vocab=50,seq=16,experts=4,top_k=2,expert_ffn=32,shared_experts=1");
  const Graph back = model_from_text(model_to_json(small).dump());
  EXPECT_EQ(back.total_params(), small.total_params());
  EXPECT_EQ(back.total_active_params(), small.total_active_params());
  EXPECT_EQ(back.total_forward_flops(), small.total_forward_flops());
}

}  // namespace
}  // namespace burst::graph
