#!/usr/bin/env bash
# Measures the kernel-timing database on this machine's GPU, one op group after another, each
# within its own time budget, and keeps every group's database and log in OUTDIR, so that a run
# cut short by a time limit keeps what it measured (rerun the groups that did not finish).
#
#   kernels/tools/measure_gpu.sh OUTDIR [GROUP...]
#
# Groups, in the default order: smoke (a few shapes of every kernel family, checked and timed,
# to stop early when something is wrong), gemm, memory, attention (PyTorch's cuDNN SDPA, forward
# and backward: kernels/torch/attention.py), grouped_gemm, attention-graph (the C++ suite's cuDNN
# graph forward, a cross-check), fa2 (PyTorch's FlashAttention-2 on FlashAttention's benchmark
# shapes, to compare the method with its published figures); and, on request, offgrid (shapes
# between the grid points, to check the interpolation on measurements), repeat (the default
# scenario's kernels again, for the run-to-run spread), routing (only the MoE routing and FP8
# cast-transpose kernels, part of memory: to add them to a database measured before the suite
# had them), remeasure (the full-block attention backward of 16 heads of 128 at every
# sequence, whose 4,096 entry in the H100 database was disturbed: a later input of a merge
# replaces an entry), mix (kernels/torch/sustained_mix.py: how much of its burst speed the GPU
# keeps through a step, by the step's mix of kernels) and loss (kernels/torch/
# cross_entropy_paths.py: Megatron-Core's cross-entropy, fused and unfused); the last two are not
# databases. Then merge them:
#
#   build/trainsim_kernels --merge platforms/h100-sxm/kernels.json \
#       OUTDIR/gemm.json OUTDIR/memory.json OUTDIR/grouped_gemm.json OUTDIR/attention.json
#
# Every group resumes: shapes its database in OUTDIR already holds are not timed again
# (RESUME_FROM=DIR first copies the databases of an earlier run from DIR into OUTDIR).
# Environment: TRAINSIM_KERNELS (the suite binary, default build/trainsim_kernels), PYTHON
# (default python3, with PyTorch), BUDGET_<group> (seconds, e.g. BUDGET_gemm=300), SUITE_FLAGS
# and TORCH_FLAGS (extra flags for every C++ suite group and for the PyTorch attention groups: a
# shorter measurement trades repetitions and grid points for time, e.g. SUITE_FLAGS="--seqs 8192
# --gemm-grid-per-octave 1 --time-per-shape 0.05" TORCH_FLAGS="--time-per-shape 0.05"), and
# LD_LIBRARY_PATH where cuBLASLt, cuDNN or Google Benchmark are not on the loader's path (the
# script adds the directories of PyTorch's cuDNN and cuBLAS wheels when it finds them).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit
out=${1:?usage: kernels/tools/measure_gpu.sh OUTDIR [GROUP...]}
shift
groups=("$@")
[ ${#groups[@]} -eq 0 ] && groups=(smoke gemm memory attention grouped_gemm attention-graph fa2)
mkdir -p "$out"
if [ -n "${RESUME_FROM:-}" ]; then
  for f in "$RESUME_FROM"/*.json; do [ -e "$f" ] && [ ! -e "$out/${f##*/}" ] && cp "$f" "$out"/; done
fi
bin=${TRAINSIM_KERNELS:-build/trainsim_kernels}
py=${PYTHON:-python3}
log="$out/run.log"
export TRAINSIM_DATA_DIR=$PWD
say() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$log" >&2; }

# Libraries the suite links that PyTorch's wheels carry where the system has none.
for lib in libcudnn.so.9 libcublasLt.so.13; do
  if ! ldconfig -p | grep -q "$lib"; then
    dir=$("$py" - "$lib" <<'EOF' 2>/dev/null
import glob, os, site, sys
for base in site.getsitepackages():
    for hit in glob.glob(os.path.join(base, "nvidia", "*", "lib", sys.argv[1])):
        print(os.path.dirname(hit)); sys.exit(0)
EOF
)
    [ -z "$dir" ] && dir=$(find /usr/local /opt -name "$lib" -printf '%h\n' 2>/dev/null | head -1)
    [ -n "$dir" ] && export LD_LIBRARY_PATH="$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  fi
done

{
  date -u +%Y-%m-%dT%H:%M:%SZ
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,clocks.max.mem,power.limit,temperature.gpu,persistence_mode --format=csv
  nvidia-smi -q -d CLOCK,PERFORMANCE | sed -n '1,80p'
  "$py" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version())'
} >"$out/machine.txt" 2>&1
{
  echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"
  ldd "$bin"
} >>"$log" 2>&1
if ldd "$bin" | grep -q "not found"; then
  say "the suite cannot start: $(ldd "$bin" | grep 'not found' | tr -s ' \t' ' ')"
  exit 3
fi

budget() { local v="BUDGET_${1//-/_}"; echo "${!v:-$2}"; }
suite() {  # group, default budget, suite flags...
  local g=$1 b
  b=$(budget "$1" "$2")
  shift 2
  say "$g: up to $b s"
  # shellcheck disable=SC2086 # the extra flags are words
  timeout -k 10 $((b + 60)) "$bin" --time-budget "$b" --resume "$@" ${SUITE_FLAGS:-} >>"$log" 2>&1
  local rc=$?
  say "$g: exit $rc"
  return $rc
}
torch_script() {  # group, default budget, script under kernels/torch, its --out file in OUTDIR
  local g=$1 b
  b=$(budget "$1" "$2")
  say "$g: up to $b s"
  PYTHONUNBUFFERED=1 timeout -k 10 "$b" "$py" "kernels/torch/$3" --out "$out/$4" >>"$log" 2>&1
  local rc=$?
  say "$g: exit $rc"
  return $rc
}
torch_attention() {  # group, default budget, list flags, shapes filter (python on s), flags...
  local g=$1 b list=$3 filter=$4
  b=$(budget "$1" "$2")
  shift 4
  # shellcheck disable=SC2086 # the list flags are words
  "$bin" --list --json --ops attention $list >"$out/.shapes.json" || return 3
  "$py" - "$out/.shapes.json" "$filter" <<'EOF'
import json, sys
shapes = [s for s in json.load(open(sys.argv[1])) if eval(sys.argv[2], {"s": s})]
json.dump(shapes, open(sys.argv[1], "w"))
EOF
  say "$g: up to $b s"
  # shellcheck disable=SC2086 # the extra flags are words
  PYTHONUNBUFFERED=1 timeout -k 10 $((b + 60)) "$py" kernels/torch/attention.py \
    --shapes "$out/.shapes.json" --time-budget "$b" --resume "$@" ${TORCH_FLAGS:-} >>"$log" 2>&1
  local rc=$?
  rm -f "$out/.shapes.json"
  say "$g: exit $rc"
  return $rc
}

version=$("$bin" --version 2>/dev/null || echo "")
routing_ops=(moe_router moe_router.grad moe_permute moe_permute.grad moe_unpermute
  moe_unpermute.grad fp8_cast fp8_transpose fp8_cast_transpose)
for g in "${groups[@]}"; do
  case $g in
    smoke)
      suite smoke 90 --max-shapes-per-family 1 --repetitions 10 --out "$out/.smoke.json"
      rc=$?
      rm -f "$out/.smoke.json"
      if [ $rc -gt 1 ]; then
        say "smoke: the suite itself failed (exit $rc); stopping"
        exit $rc
      fi
      ;;
    gemm) suite gemm 300 --ops gemm --out "$out/gemm.json" ;;
    memory) suite memory 60 --ops memory --out "$out/memory.json" ;;
    routing)
      suite routing 150 --ops "$(tr ' ' , <<<"${routing_ops[*]}")" --out "$out/routing.json" ;;
    remeasure)
      torch_attention remeasure 60 "" \
        's["pass"] == "bwd" and not s["causal"] and s["batch"] == 1 and s["heads"] == 16 and s["kv_heads"] == 16 and s["head_dim"] == 128' \
        --out "$out/remeasure.json" --suite-version "$version" ;;
    grouped_gemm) suite grouped_gemm 200 --ops grouped_gemm --out "$out/grouped_gemm.json" ;;
    attention-graph)
      suite attention-graph 60 --ops attention --out "$out/attention-graph.json" ;;
    attention)
      torch_attention attention 150 "" 'True' --out "$out/attention.json" \
        --suite-version "$version" ;;
    fa2)
      torch_attention fa2 60 "" \
        's["batch"] * s["seq"] == 16384 and s["heads"] * s["head_dim"] == 2048' \
        --backends flash --out "$out/fa2.json" --suite-version "$version" ;;
    offgrid)  # measurements between the grid points, to check the interpolation
      suite offgrid-gemm 90 --offgrid 100 --ops gemm --out "$out/offgrid.json"
      suite offgrid-memory 40 --offgrid 4 --ops memory --out "$out/offgrid.json"
      torch_attention offgrid-attention 60 "--offgrid 6" 'True' \
        --out "$out/offgrid-attention.json" --suite-version "$version" ;;
    repeat)  # the default scenario's kernels again, for the run-to-run spread
      suite repeat 60 --models llama3.1-70b --tps 4 --seqs 8192 --ops gemm,memory \
        --out "$out/repeat.json"
      torch_attention repeat-attention 30 "--models llama3.1-70b --tps 4 --attention-seqs 8192" \
        's["batch"] == 1' --out "$out/repeat-attention.json" \
        --suite-version "$version" ;;
    mix)  # how much burst speed the GPU keeps through a step, by its mix (not a database)
      torch_script mix 360 sustained_mix.py sustained_mix.json ;;
    loss)  # Megatron-Core's cross-entropy, fused and unfused (not a database)
      torch_script loss 240 cross_entropy_paths.py cross_entropy_paths.json ;;
    *)
      say "unknown group $g"
      exit 2
      ;;
  esac
done
say "done"
