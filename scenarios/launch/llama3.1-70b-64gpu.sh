#!/bin/bash
# Llama 3.1 70B on 64 H100s (8 nodes of 8) as a Megatron-LM launch, in the layout of NVIDIA's
# Llama 3 70B recipe for 64 H100s (Megatron-Bridge's llama3_70b_pretrain_64gpu_h100_bf16_config:
# TP 4, PP 4, CP 2, VP 5, sequence parallelism, micro-batch 1). Dropout is left at Megatron-LM's
# default (0.1). Read by: trainsim run --model llama3.1-70b --megatron-args @THIS_FILE
torchrun --nproc_per_node 8 --nnodes 8 --node_rank 0 --master_addr node0 --master_port 6000 \
    pretrain_gpt.py \
    --num-layers 80 --hidden-size 8192 --ffn-hidden-size 28672 \
    --num-attention-heads 64 --group-query-attention --num-query-groups 8 \
    --seq-length 8192 --max-position-embeddings 131072 \
    --position-embedding-type rope --rotary-base 500000 --normalization RMSNorm --swiglu \
    --untie-embeddings-and-output-weights --disable-bias-linear \
    --tensor-model-parallel-size 4 --pipeline-model-parallel-size 4 \
    --context-parallel-size 2 --num-layers-per-virtual-pipeline-stage 4 --sequence-parallel \
    --micro-batch-size 1 --global-batch-size 128 \
    --use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather --tp-comm-overlap \
    --bf16 --attention-backend fused \
    --lr 1.5e-4 --min-lr 1.5e-5 --lr-decay-style cosine --lr-warmup-iters 2000 \
    --train-iters 100 --weight-decay 0.1 --clip-grad 1.0 \
    --tokenizer-type HuggingFaceTokenizer --tokenizer-model meta-llama/Llama-3.1-70B \
    --data-path my_corpus_text_document --split 99,1,0 \
    --log-interval 1 --eval-iters 0 --save checkpoints --save-interval 1000
