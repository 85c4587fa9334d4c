// Google's Gemma family as Hugging Face configs hold it: GeGLU MLPs, a head size of its own, tied
// embeddings; Gemma 2 and 3 with four norms a layer (before and after attention and the MLP) and
// sliding-window layers between global ones; Gemma 3 with per-head q/k norms. Keys a released
// config leaves out take its class's defaults (Gemma 3's text_config holds only what differs
// from Gemma3TextConfig).
#include "sim/model/hf_readers.hpp"

namespace trainsim::hf {

namespace {

void read_gemma_like(HfReader& r, Model& m, std::int64_t default_vocab) {
  m.hidden_size = r.integer("hidden_size");
  m.num_layers = r.integer("num_hidden_layers");
  m.num_attention_heads = r.integer("num_attention_heads");
  m.num_kv_heads = r.integer("num_key_value_heads");
  m.head_dim = r.integer("head_dim");
  m.ffn_hidden_size = r.integer("intermediate_size");
  m.vocab_size = r.integer_or("vocab_size", default_vocab);
  m.tied_embeddings = r.boolean_or("tie_word_embeddings", true);
  m.max_position_embeddings = r.integer_or("max_position_embeddings", 0);
  m.position_embedding = PositionEmbedding::kRope;
  m.norm = NormKind::kRMSNorm;
  const char* act = r.present("hidden_activation") ? "hidden_activation" : "hidden_act";
  m.ffn_kind = activation_kind(r, act, "gelu_pytorch_tanh", true);
  m.qkv_bias = m.attention_output_bias = r.boolean_or("attention_bias", false);
}

// Gemma 2 and 3: the four norms, and global attention every `every`-th layer with a sliding
// window between (the released configs name no layer_types: their classes' pattern).
void read_gemma_layers(HfReader& r, Model& m, std::int64_t every) {
  m.sandwich_norms = true;
  read_sliding_window(r, m);
  if (m.local_attention.kind != LocalAttention::Kind::kNone && !r.present("layer_types")) {
    m.local_attention.global_every = every;
  }
  if (r.present("attn_logit_softcapping")) {
    m.unmodelled.push_back(
        {r.note("attn_logit_softcapping",
                "soft-capping of the attention scores is not modelled: attention is costed as a "
                "fused kernel without it"),
         "read the attention time as a lower bound (run unfused, soft-capped attention also holds "
         "its scores in memory)"});
  }
  if (r.present("final_logit_softcapping")) {
    m.unmodelled.push_back({r.note("final_logit_softcapping",
                                   "the logits' soft-capping (a tanh over tokens x vocabulary, "
                                   "forward and backward) is not costed"),
                            "read the LM head's time as a lower bound"});
  }
}

}  // namespace

void read_gemma(HfReader& r, Model& m) {
  read_gemma_like(r, m, 256000);
}

void read_gemma2(HfReader& r, Model& m) {
  read_gemma_like(r, m, 256000);
  read_gemma_layers(r, m, 2);
}

void read_gemma3_text(HfReader& r, Model& m) {
  read_gemma_like(r, m, 262208);
  m.qk_norm = true;
  read_gemma_layers(r, m, r.integer_or("sliding_window_pattern", 6));
}

// The multimodal Gemma 3 checkpoints hold the language model's keys in text_config; their vision
// tower is left out.
void read_gemma3_multimodal(HfReader& r, Model& m) {
  const auto& text = r.raw("text_config");
  if (!text.is_object()) r.fail("text_config", "must be an object, got " + got(text));
  HfReader tr(text, r.file(), "$.text_config");
  read_gemma3_text(tr, m);
  if (r.present("vision_config")) {
    m.unmodelled.push_back({r.note("vision_config",
                                   "the vision tower and its projector are not modelled: the "
                                   "language model alone is costed"),
                            "add the vision encoder's time and memory"});
  }
}

}  // namespace trainsim::hf
