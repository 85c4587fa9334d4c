#!/bin/bash
# Llama 3.1 8B at sequence 8192 on one node of 8 H100s, written as Megatron-LM's example launch
# scripts are: variables, arrays of arguments, and the precision's arguments chosen by a test.
# The layout is NVIDIA's DGX Cloud benchmark's for this model (scenarios/llama3.1-8b-cp2-8gpu.json:
# context parallel 2, four data-parallel replicas with the distributed optimizer). Set
# DTYPE=fp8 below for its FP8 twin. Read by:
#   trainsim run --model llama3.1-8b --megatron-args @THIS_FILE
# trainsim reads the assignments, the arrays and the if, and prices the torchrun command; the
# rest (mkdir, the check for the script) it skips.

CHECKPOINT_PATH=${1:-"checkpoints/llama3.1_8b"}
DATA_PATH=${2:-"my_corpus_text_document"}
mkdir -p "$(dirname "$CHECKPOINT_PATH")"

GPUS_PER_NODE=8
NUM_NODES=1
TP=1
CP=2
SEQ_LENGTH=8192
DTYPE=bf16

DISTRIBUTED_ARGS=(
    --nproc_per_node $GPUS_PER_NODE
    --nnodes $NUM_NODES
    --master_addr ${MASTER_ADDR:-localhost}
    --master_port 6000
)

MODEL_ARGS=(
    --num-layers 32 --hidden-size 4096 --ffn-hidden-size 14336
    --num-attention-heads 32 --group-query-attention --num-query-groups 8
    --seq-length $SEQ_LENGTH --max-position-embeddings 131072
    --position-embedding-type rope --rotary-base 500000 --swiglu
    --normalization RMSNorm --untie-embeddings-and-output-weights --disable-bias-linear
    --attention-dropout 0.0 --hidden-dropout 0.0   # the recipe trains without dropout
)

TRAINING_ARGS=(
    --micro-batch-size 1 --global-batch-size 128
    --lr 3e-4 --min-lr 3e-5 --lr-decay-style cosine --train-iters 100
    --bf16
    --use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather
)

if [[ "$DTYPE" == "fp8" ]]; then
    TRAINING_ARGS+=(--fp8-format hybrid --fp8-amax-history-len 1024 --fp8-amax-compute-algo max)
fi

PARALLEL_ARGS=(
    --tensor-model-parallel-size $TP
    --context-parallel-size $CP
    --cp-comm-type p2p
)

DATA_ARGS=(
    --data-path "$DATA_PATH" --split 99,1,0
    --tokenizer-type HuggingFaceTokenizer --tokenizer-model meta-llama/Llama-3.1-8B
)

if [ ! -f pretrain_gpt.py ]; then
    echo "run this from the root of Megatron-LM"
    exit 1
fi

torchrun ${DISTRIBUTED_ARGS[@]} pretrain_gpt.py \
    ${MODEL_ARGS[@]} \
    ${TRAINING_ARGS[@]} \
    ${PARALLEL_ARGS[@]} \
    ${DATA_ARGS[@]} \
    --save "$CHECKPOINT_PATH" --log-interval 1
