"""Hugging Face transformers models built from a config with random weights (no download),
for the import checks of tests/onnx/torchvision.sh, named "hf:NAME" (export_torchvision.py).
Each takes token ids [T] and gives logits: [T, vocab] for the language models, [classes]
for BERT's sequence classifier. Dropout is 0 (burst draws its own masks) and attention is
transformers' "eager" implementation, which torch's TorchScript exporter writes as ops.
"""
import types

import torch

SEQ, VOCAB = 16, 64


def _no_packed_sequences():
    """transformers 5 looks for packed sequences in position ids with torch.diff, which the
    TorchScript exporter cannot write. Training batches here hold one sequence a row, so the
    check always finds none: it is skipped."""
    from transformers import masking_utils
    masking_utils.find_packed_sequence_indices = lambda position_ids: None


def _logits_of(model):
    """The model called on ids alone, returning its logits tensor (its own forward returns an
    output object, and a wrapper module would prefix every parameter name)."""
    call = type(model).forward

    causal = hasattr(model, "lm_head")  # a language model: no cache of keys and values while training

    def forward(self, input_ids):
        options = {"use_cache": False} if causal else {}
        return call(self, input_ids=input_ids, **options).logits
    model.forward = types.MethodType(forward, model)
    model.INPUT = ("tokens", [SEQ], VOCAB)
    return model


def gpt2():
    from transformers import GPT2Config, GPT2LMHeadModel
    config = GPT2Config(vocab_size=VOCAB, n_positions=SEQ, n_embd=32, n_layer=2, n_head=2, resid_pdrop=0.0,
                        embd_pdrop=0.0, attn_pdrop=0.0)
    config._attn_implementation = "eager"
    return GPT2LMHeadModel(config)


def bert():
    from transformers import BertConfig, BertForSequenceClassification
    config = BertConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=SEQ, hidden_dropout_prob=0.0,
                        attention_probs_dropout_prob=0.0, classifier_dropout=0.0, num_labels=10)
    config._attn_implementation = "eager"
    return BertForSequenceClassification(config)


def llama():
    from transformers import LlamaConfig, LlamaForCausalLM
    # Grouped-query attention: 4 query heads share 2 key and value heads (repeat_kv).
    config = LlamaConfig(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=SEQ)
    config._attn_implementation = "eager"
    return LlamaForCausalLM(config)


MODELS = {"gpt2": gpt2, "bert": bert, "llama": llama}


def build(name):
    """Model NAME (after torch.manual_seed by the caller), in training mode."""
    if name not in MODELS:
        raise SystemExit(f"no Hugging Face model '{name}'; there are {', '.join(sorted(MODELS))}")
    _no_packed_sequences()
    return _logits_of(MODELS[name]()).train()
