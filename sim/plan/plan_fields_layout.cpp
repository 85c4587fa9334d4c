// The plan schema's rows for how the GPUs divide the model, and for the batch, the schedule,
// the layers' assignment to stages and the ranks' placement.
#include "sim/core/error.hpp"
#include "sim/core/format.hpp"
#include "sim/plan/plan_field_table.hpp"

namespace trainsim {

namespace {

// A rank order, or the reason it is not one.
void check_rank_order(const std::string& where, const std::string& value) {
  if (!parse_rank_order(value)) {
    fail_input(where,
               "must name tp, cp, ep, dp and pp once each, innermost first, joined by '-' "
               "(Megatron-LM's default: tp-cp-ep-dp-pp), got '" +
                   value + "'");
  }
}

Framework framework_of(const std::string& s) {
  if (s == "nanotron") return Framework::kNanotron;
  if (s == "deepspeed") return Framework::kDeepSpeed;
  if (s == "colossalai") return Framework::kColossalAI;
  return Framework::kMegatron;
}

using J = nlohmann::ordered_json;

// Context and expert parallelism, and the multi-token-prediction modules.
void context_and_expert_fields(FieldTable& t) {
  t.integer("cp", {}, &Plan::cp, "N",
            "context-parallel size: splits each sequence over N GPUs (in 2N chunks, rank i holding "
            "chunks i and 2N-1-i so that causal attention balances); activations shrink N-fold, "
            "weights are replicated and their gradients reduced over dp x cp (default 1)")
      .label = FieldTable::shows("cp", &Plan::cp, 1);
  t.named("cp_comm_type", {CpComm::kP2P, CpComm::kA2A, CpComm::kAllGather, CpComm::kA2AP2P},
          &Plan::cp_comm, "NAME",
          "how attention crosses the CP group (Megatron-LM's --cp-comm-type): p2p (default; K/V "
          "blocks around a ring, each transfer beside the previous block's attention), a2a "
          "(all-to-alls swap the sequence split for a head split; heads divisible by tp x cp), "
          "allgather (K/V all-gathered before the attention, not overlapped), a2a+p2p (both: "
          "all-to-alls over --cp-a2a-size consecutive CP ranks, the ring over the rest)")
      .label = [](const Plan& p) {
    return p.cp > 1 && p.cp_comm != CpComm::kP2P ? std::string(to_string(p.cp_comm)) : "";
  };
  t.fields.back().unused = [](const Plan& p) {
    return p.cp == 1 ? std::string(
                           "without context parallelism (cp 1) each GPU runs the attention "
                           "over its whole sequence")
                     : std::string();
  };
  t.fields.back().unused_fix = "give --cp 2 or more to split the sequence";
  t.integer("cp_a2a_size", {0}, &Plan::cp_a2a_size, "N",
            "with --cp-comm-type a2a+p2p, the all-to-all level's size: N consecutive CP ranks "
            "split the heads (tp x N divides the heads and KV heads), and rings of cp/N ranks, one "
            "a2a group apart, pass K/V (Megatron-LM's --hierarchical-context-parallel-sizes N "
            "cp/N)")
      .report = FieldTable::unless_default(FieldTable::of(&Plan::cp_a2a_size));
  t.fields.back().label = [](const Plan& p) {
    return p.cp_a2a_size > 0 ? "(a2a " + std::to_string(p.cp_a2a_size) + ")" : "";
  };
  t.integer("ep", {}, &Plan::ep, "N",
            "expert-parallel size: each mixture-of-experts layer's experts split over N GPUs, "
            "which re-divide the dense layers' dp x cp (x tp / etp) GPUs; tokens reach their "
            "experts by all-to-all over the EP group (default 1)")
      .label = FieldTable::shows("ep", &Plan::ep, 1);
  t.integer("etp", {}, &Plan::etp, "N",
            "expert tensor-parallel size: each expert's matrices split over N GPUs, their tokens "
            "gathered over them (Megatron-LM's --expert-tensor-parallel-size; default tp)")
      .report = [](const Plan& p) { return J(p.expert_tp()); };
  t.fields.back().label = [](const Plan& p) {
    return p.ep > 1 && p.expert_tp() != p.tp ? "etp " + std::to_string(p.expert_tp()) : "";
  };
  t.named("moe_token_dispatcher_type", {MoeDispatcher::kAllToAll, MoeDispatcher::kAllGather},
          &Plan::moe_dispatcher, "NAME",
          "how tokens reach their experts: alltoall (default) or allgather (hidden states "
          "gathered over the EP group, outputs reduce-scattered)")
      .describe = [](const Plan& p) {
    return p.moe_dispatcher == MoeDispatcher::kAllGather ? "all-gather token dispatch" : "";
  };
  // The defaults are in range: 1 (balanced) and 0 (dropless), as a report's plan writes them.
  t.real("moe_imbalance", &Plan::moe_imbalance, {1.0, true}, "X",
         "load of the busiest expert over the mean (default 1: balanced); the step waits for the "
         "GPU holding it, at most experts / top-k")
      .describe = [](const Plan& p) {
    return p.moe_imbalance == 1.0
               ? ""
               : "busiest expert " + format_fixed(p.moe_imbalance, 2) + "x the mean load";
  };
  t.real("moe_capacity_factor", &Plan::moe_capacity_factor, {0.0, true}, "X",
         "tokens an expert takes at most, over the mean; the rest are dropped (default 0: "
         "dropless)")
      .describe = [](const Plan& p) {
    return p.moe_capacity_factor > 0
               ? "expert capacity " + format_fixed(p.moe_capacity_factor, 2) + "x the mean"
               : "";
  };
  auto& grouped = t.flag(
      "moe_grouped_gemm", &Plan::moe_grouped_gemm,
      "Megatron-Core's sequential experts (Megatron-LM without --moe-grouped-gemm): each local "
      "expert its own MLP, its GEMMs, activation and FP8 quantisation launched once per expert "
      "over that expert's tokens; by default the local experts run as one grouped GEMM per "
      "projection");
  grouped.negated = true;
  grouped.describe = FieldTable::says(&Plan::moe_grouped_gemm, "sequential experts", false);
  t.add({"mtp_num_layers",
         FieldType::kInt,
         {0, Model::kMaxMtpLayers},
         {},
         [](Plan& p, std::int64_t v, const std::string&) { p.mtp_num_layers = v; }},
        "N",
        "multi-token-prediction modules trained after the last decoder layer, each a decoder "
        "layer like the last with its own projection, norms and loss through the shared LM head "
        "(Megatron-Core; a layout places them with m; default: the model's own, DeepSeek-V3's 1; "
        "0 trains none)",
        // As given; unset, the model's own, which the report's top-level mtp_num_layers gives.
        [](const Plan& p) { return p.mtp_num_layers ? J(*p.mtp_num_layers) : J(); });
}

}  // namespace

void parallel_fields(FieldTable& t) {
  t.integer("tp", {}, &Plan::tp, "N",
            "tensor-parallel size: splits every layer's matrices over N GPUs of a node")
      .label = FieldTable::shows("tp", &Plan::tp);
  t.integer("pp", {}, &Plan::pp, "N", "pipeline-parallel size: splits the layers into N stages")
      .label = FieldTable::shows("pp", &Plan::pp);
  t.integer("dp", {}, &Plan::dp, "N",
            "data-parallel size: N replicas, gradients all-reduced each step")
      .label = FieldTable::shows("dp", &Plan::dp);
  context_and_expert_fields(t);
  t.integer("vp", {}, &Plan::vp, "N",
            "model chunks (virtual stages) per GPU for --schedule interleaved: the layers are "
            "split into pp x vp virtual stages, chunk c of stage s being virtual stage c x pp + s "
            "(default 1)")
      .label = FieldTable::shows("vp", &Plan::vp, 1);
  t.flag("sp", &Plan::sp,
         "sequence parallelism: elementwise work split over the TP group; each TP all-reduce "
         "becomes an all-gather before a GEMM and a reduce-scatter after one, the same total "
         "traffic (at --tp 1 Megatron-LM turns it off, and so does trainsim)")
      // Said only where it applies: at tp 1 Megatron-LM turns it off.
      .label = [](const Plan& p) {
    return p.sequence_parallel() ? std::string("sp") : std::string();
  };
  t.fields.back().unused = [](const Plan& p) {
    return p.tp == 1 ? std::string("Megatron-LM turns sequence parallelism off at tp 1")
                     : std::string();
  };
  t.fields.back().unused_fix = "give --tp 2 or more to split the sequence over a TP group";
}

namespace {

// Megatron-LM's options for an uneven split of the layers over the stages.
void uneven_stage_fields(FieldTable& t) {
  for (auto [name, member, which] : {std::tuple{"decoder_first_pipeline_num_layers",
                                                &Plan::decoder_first_pipeline_num_layers, "first"},
                                     std::tuple{"decoder_last_pipeline_num_layers",
                                                &Plan::decoder_last_pipeline_num_layers, "last"}}) {
    auto& f = t.integer(name, {0}, member, "N",
                        std::string("Megatron-LM: decoder layers on the ") + which +
                            " stage (uniform partition; with --vp, split evenly over its chunks)");
    f.report = FieldTable::unless_default(FieldTable::of(member));
    f.describe = [m = member, which = std::string(which)](const Plan& p) {
      const std::int64_t n = p.*m;
      return n >= 0 ? which + " stage " + std::to_string(n) + " layers" : std::string();
    };
  }
  auto& embedding = t.flag(
      "account_for_embedding_in_pipeline_split", &Plan::account_for_embedding_in_pipeline_split,
      "Megatron-LM: count the embedding as one layer of the first stage (uniform partition)");
  embedding.report =
      FieldTable::unless_default(FieldTable::of(&Plan::account_for_embedding_in_pipeline_split));
  embedding.describe = FieldTable::says(&Plan::account_for_embedding_in_pipeline_split,
                                        "embedding counted as a layer");
  auto& loss =
      t.flag("account_for_loss_in_pipeline_split", &Plan::account_for_loss_in_pipeline_split,
             "Megatron-LM: count the loss as one layer of the last stage (uniform partition)");
  loss.report =
      FieldTable::unless_default(FieldTable::of(&Plan::account_for_loss_in_pipeline_split));
  loss.describe =
      FieldTable::says(&Plan::account_for_loss_in_pipeline_split, "loss counted as a layer");
}

// Which framework's rules apply and the vocabulary padding they imply.
void framework_fields(FieldTable& t) {
  t.choice(
      "framework", {"megatron", "nanotron", "deepspeed", "colossalai"},
      [](Plan& p, const std::string& s) { p.framework = framework_of(s); },
      [](const Plan& p) { return J(to_string(p.effective_framework())); }, "NAME",
      "whose rules apply where frameworks differ (vocabulary padding, the errors they raise): "
      "megatron (default), nanotron, deepspeed, colossalai; inferred from --partition nanotron or "
      "deepspeed-*");
  // Bounded as reshard's layouts bound it: 2^62 overflowed the padding multiple (x tp) to a
  // division by zero.
  t.integer("vocab_divisible_by", {1, std::int64_t{1} << 20}, &Plan::vocab_divisible_by, "N",
            "pad the vocabulary to a multiple of N x tp (default: the framework's, Megatron 128, "
            "ColossalAI 64, nanotron 1)")
      .report = [](const Plan& p) { return J(p.vocab_multiple()); };
}

}  // namespace

void batch_and_schedule_fields(FieldTable& t) {
  t.integer("mbs", {}, &Plan::mbs, "N", "micro-batch size in sequences (default 1)").label =
      FieldTable::shows("mbs", &Plan::mbs);
  t.integer("gbs", {}, &Plan::gbs, "N",
            "global batch size in sequences; micro-batches per step = gbs / (mbs x dp), which "
            "must divide evenly (else a gbs-not-divisible error)")
      .report = [](const Plan& p) { return J(p.global_batch()); };
  t.integer("seq_len", {}, &Plan::seq_len, "N", "sequence length in tokens (required)");
  t.integer("packed_document_tokens", {0}, &Plan::packed_document_tokens, "N",
            "fine-tuning on packed sequences (NeMo's packed_sequence, Transformer Engine's THD "
            "format): each sequence holds documents of N tokens and every token attends only "
            "within its own, so the attention costs seq-len / N causal blocks of N; for mixed "
            "lengths give E[l^2] / E[l]; with --cp the p2p ring, each document in 2 x cp chunks "
            "(default 0: one document per sequence)")
      .report = FieldTable::only_if([](const Plan& p) { return p.packs_documents(); },
                                    FieldTable::of(&Plan::packed_document_tokens));
  t.named(
       "schedule",
       {ScheduleKind::kGPipe, ScheduleKind::k1F1B, ScheduleKind::kInterleaved, ScheduleKind::kZBH1},
       &Plan::schedule, "NAME",
       "pipeline schedule: gpipe; 1f1b (default; Megatron-LM's non-interleaved); interleaved "
       "(Megatron-LM's interleaved 1F1B, needs --vp >= 2); zb-h1 (zero bubble H1, Qi et al. "
       "2024: backward split into input-gradient B and weight-gradient W, W filling the "
       "bubbles)")
      .label = [](const Plan& p) { return std::string(to_string(p.schedule)); };
  t.integer("microbatch_group_size_per_vp_stage", {1}, &Plan::microbatch_group_size_per_vp_stage,
            "N",
            "interleaved: micro-batches run per model chunk before moving to the next "
            "(Megatron-LM's --microbatch-group-size-per-virtual-pipeline-stage; default pp)")
      .report = [](const Plan& p) {
    if (p.schedule != ScheduleKind::kInterleaved) return J();
    const auto n = p.microbatch_group_size_per_vp_stage;
    return J(n > 0 ? n : p.pp);
  };
  t.text(
      "rank_order", FieldType::kParsed,
      [](Plan& p, const std::string& s) { p.rank_order = *parse_rank_order(s); }, check_rank_order,
      [](const Plan& p) { return J(to_string(p.rank_order)); }, "ORDER",
      "how GPU numbers enumerate the parallel dimensions, innermost first: tp-cp-ep-dp-pp "
      "(Megatron-LM's default: a TP group on one node, pipeline stages outermost) or any order "
      "of the five, e.g. tp-cp-ep-pp-dp (Megatron-LM's --use-tp-pp-dp-mapping)");
  t.text(
      "partition", FieldType::kString, [](Plan& p, const std::string& s) { p.partition = s; },
      nullptr, FieldTable::of(&Plan::partition), "RULE",
      "layer-to-stage rule: uniform (Megatron-LM, the default), nanotron, deepspeed-uniform, "
      "deepspeed-parameters, deepspeed-type:REGEX, balanced (trainsim: the contiguous split whose "
      "slowest stage is the least, found exactly; of tied splits the one with its layers "
      "latest), or a Megatron layout such as \"Et*3|t*4|t*4|t*3L\" (E embedding, t decoder "
      "layer, L loss, | stage boundary)");
  uneven_stage_fields(t);
  framework_fields(t);
}

}  // namespace trainsim
