#!/usr/bin/env bash
# Regenerates everything under results/ from the current build (run .ci/setup first).
#   results/regenerate.sh [path/to/trainsim]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
bin=${1:-$root/build/trainsim}
cd "$root"

for scenario in llama3.1-70b-64gpu nemotron4-340b; do
  "$bin" run "scenarios/$scenario.json" --out "$here/$scenario" >/dev/null
  echo "wrote $here/$scenario/report.{json,txt}"
done

# What the default scenario's recipe takes for a trillion tokens, at 2.50 a GPU-hour, and with
# failures at Llama 3's rate (419 unexpected interruptions in 54 days on 16,384 GPUs: a GPU MTBF
# of 50,676 hours), 30 s a save and 10 minutes a restart.
"$bin" run scenarios/nemotron4-340b.json --tokens 1e12 --price-per-gpu-hour 2.5 \
  --gpu-mtbf-hours 50676 --checkpoint-s 30 --restart-s 600 |
  grep -E '^(time to train|with failures)' >"$here/nemotron4-340b/time_to_train.txt"
echo "wrote $here/nemotron4-340b/time_to_train.txt"
# The same failures on the recipe's 256 GPUs and on eight and 64 times as many.
{
  echo "build/trainsim compare scenarios/nemotron4-340b.json --set dp=32,gbs=512 --set dp=256,gbs=4096 --tokens 1e12 --gpu-mtbf-hours 50676 --checkpoint-s 30 --restart-s 600"
  "$bin" compare scenarios/nemotron4-340b.json --set dp=32,gbs=512 --set dp=256,gbs=4096 \
    --tokens 1e12 --gpu-mtbf-hours 50676 --checkpoint-s 30 --restart-s 600
} >"$here/nemotron4-340b/failures.txt"
echo "wrote $here/nemotron4-340b/failures.txt"

# A value from a text report: the first field after the label.
headline() { awk -v label="$1" 'index($0, label) == 1 { sub(label " *", ""); print; exit }' "$2"; }

# Schedules, recomputation and overlap on the default scenario: one line per variant.
mkdir -p "$here/schedules"
# The pipeline diagrams README shows: 1F1B and interleaved 1F1B on the Llama 3.1 70B scenario.
"$bin" run scenarios/llama3.1-70b-64gpu.json --svg "$here/schedules/llama3.1-70b-64gpu-1f1b.svg" >/dev/null
"$bin" run scenarios/llama3.1-70b-64gpu.json --schedule interleaved --vp 5 \
  --svg "$here/schedules/llama3.1-70b-64gpu-interleaved.svg" >/dev/null
echo "wrote $here/schedules/llama3.1-70b-64gpu-{1f1b,interleaved}.svg"
"$bin" compare scenarios/llama3.1-70b-64gpu.json --set schedule=interleaved,vp=5 \
  --set recompute=full --tokens 1e12 >"$here/schedules/compare-llama3.1-70b-64gpu.txt"
echo "wrote $here/schedules/compare-llama3.1-70b-64gpu.txt"
# The same recipe on an H200: a --set column on another platform.
"$bin" compare scenarios/llama3.1-8b-cp2-8gpu.json --set platform=h200-sxm-ndr \
  --set platform=h200-sxm-ndr,cp=1,dp=8 >"$here/schedules/compare-llama3.1-8b-h100-h200.txt"
echo "wrote $here/schedules/compare-llama3.1-8b-h100-h200.txt"
python3 "$here/teaching.py" "$bin"
# The pipeline-exchanges diagnostic README quotes: NVIDIA's LoRA recipe for Llama 3 70B (its
# interleaved pipeline waiting for its exchanges) at four copies of its 8-GPU layout.
out="$here/schedules/llama3-70b-lora-32gpu-check.txt"
{
  echo "build/trainsim check scenarios/llama3-70b-lora-8gpu.json --dp 4 --gbs 128"
  "$bin" check scenarios/llama3-70b-lora-8gpu.json --dp 4 --gbs 128 || true
} > "$out.tmp"
mv "$out.tmp" "$out"
echo "wrote $out"
# The partition fixes README quotes: Llama 3.1 8B over six stages, which pp does not divide.
mkdir -p "$here/partitions"
out="$here/partitions/llama3.1-8b-pp6-check.txt"
{
  echo "build/trainsim check --model llama3.1-8b --platform h100-sxm-ndr --tp 1 --pp 6 --dp 1 --seq-len 8192 --gbs 8"
  "$bin" check --model llama3.1-8b --platform h100-sxm-ndr --tp 1 --pp 6 --dp 1 --seq-len 8192 \
    --gbs 8 || true
} > "$out.tmp"
mv "$out.tmp" "$out"
echo "wrote $out"
out="$here/schedules/llama3.1-70b-64gpu.txt"
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
{
  echo "llama3.1-70b-64gpu (tp 4, pp 4, dp 4, 32 micro-batches) under each schedule and option"
  echo
  printf '%-108s %9s %7s %8s  %s\n' "flags" "step (s)" "MFU" "bubble" "exposed comm (mean per GPU)"
  while IFS= read -r flags; do
    # shellcheck disable=SC2086
    "$bin" run scenarios/llama3.1-70b-64gpu.json $flags > "$tmp"
    printf '%-108s %9s %7s %8s  %s\n' "${flags:-(scenario as is: 1f1b)}" \
      "$(awk '/^step time/ { print $3; exit }' "$tmp")" \
      "$(awk '/^MFU/ { print $2 "%"; exit }' "$tmp")" \
      "$(awk '/^pipeline bubble/ { print $3 "%"; exit }' "$tmp")" \
      "$(headline "exposed comm" "$tmp" | sed 's/ (mean per GPU)//')"
  done <<'VARIANTS'

--schedule gpipe
--schedule interleaved --vp 2
--schedule interleaved --vp 5
--schedule interleaved --vp 5 --no-overlap-p2p-comm
--schedule zb-h1
--recompute selective
--recompute full
--sp
--sp --tp-comm-overlap
--zero 1
--zero 1 --overlap-grad-reduce
--zero 1 --overlap-grad-reduce --overlap-param-gather
--zero 1 --overlap-grad-reduce --overlap-param-gather --num-distributed-optimizer-instances 2
--defer-embedding-wgrad-compute --wgrad-deferral-limit 8
--defer-embedding-wgrad-compute
--schedule interleaved --vp 5 --sp --tp-comm-overlap --zero 1 --overlap-grad-reduce --overlap-param-gather
VARIANTS
} > "$out"
echo "wrote $out"

# Context parallelism: the DGX Cloud recipe rows that use it (Llama 3.1 8B, cp 2, sequence 8192:
# the longest they list), then each CP variant on that row's 8 GPUs, then longer sequences.
mkdir -p "$here/context_parallel"
out="$here/context_parallel/llama3.1-8b.txt"
{
  echo "DGX Cloud recipe rows with context parallelism (trainsim validate, analytic engine):"
  echo
  "$bin" validate tests/validation/refdata/nvidia_dgxc_benchmarking_h100.json |
    awk -F'|' '/^\| Llama3.1 8B/ { printf "%-40s %-4s measured %7s s  predicted %7s s  %s\n", $2, $4, $5, $6, $7 }'
  echo
  echo "llama3.1-8b on 8 GPUs (one node), gbs 128, mbs 1, zero 1 with overlapped gradient reduce"
  echo "and parameter gather (NeMo's defaults), SimGrid engine"
  echo
  printf '%-7s %-5s %-4s %-10s %9s %11s %10s  %s\n' "seq" "cp" "dp" "cp comm" "step (s)" \
    "tokens/s" "peak mem" "exposed comm (mean per GPU)"
  while read -r seq cp comm; do
    dp=$((8 / cp))
    "$bin" run --model llama3.1-8b --platform h100-sxm-ndr --seq-len "$seq" --cp "$cp" --dp "$dp" \
      --cp-comm-type "$comm" --gbs 128 --zero 1 --overlap-grad-reduce --overlap-param-gather \
      > "$tmp" || true
    printf '%-7s %-5s %-4s %-10s %9s %11s %10s  %s\n' "$seq" "$cp" "$dp" "$comm" \
      "$(awk '/^step time/ { print $3; exit }' "$tmp")" \
      "$(awk '/^tokens\/s/ { print $2; exit }' "$tmp")" \
      "$(awk '$1 == "0" && $NF ~ /GiB$/ { print $(NF-1) " " $NF; exit }' "$tmp")" \
      "$(headline "exposed comm" "$tmp" | sed 's/ (mean per GPU)//')"
  done <<'VARIANTS'
8192 1 p2p
8192 2 p2p
8192 2 a2a
8192 2 allgather
32768 4 p2p
32768 4 a2a
131072 8 p2p
131072 8 a2a
VARIANTS
  echo
  echo "llama3.1-8b on 16 GPUs (two nodes), cp 16, otherwise as above: a2a alone cannot split its"
  echo "8 KV heads 16 ways; a2a+p2p splits them over an a2a level of A GPUs and rings of 16/A"
  echo
  printf '%-7s %-5s %-4s %-16s %9s %11s %10s  %s\n' "seq" "cp" "dp" "cp comm" "step (s)" \
    "tokens/s" "peak mem" "exposed comm (mean per GPU)"
  while read -r seq comm a2a; do
    levels=()
    label=$comm
    if [ -n "$a2a" ]; then
      levels=(--cp-a2a-size "$a2a")
      label="$comm ($a2a x $((16 / a2a)))"
    fi
    "$bin" run --model llama3.1-8b --platform h100-sxm-ndr --seq-len "$seq" --cp 16 --dp 1 \
      --cp-comm-type "$comm" "${levels[@]}" --gbs 128 --zero 1 --overlap-grad-reduce \
      --overlap-param-gather > "$tmp" || true
    printf '%-7s %-5s %-4s %-16s %9s %11s %10s  %s\n' "$seq" 16 1 "$label" \
      "$(awk '/^step time/ { print $3; exit }' "$tmp")" \
      "$(awk '/^tokens\/s/ { print $2; exit }' "$tmp")" \
      "$(awk '$1 == "0" && $NF ~ /GiB$/ { print $(NF-1) " " $NF; exit }' "$tmp")" \
      "$(headline "exposed comm" "$tmp" | sed 's/ (mean per GPU)//')"
  done <<'VARIANTS'
32768 p2p
32768 a2a+p2p 8
32768 a2a+p2p 2
32768 allgather
131072 p2p
131072 a2a+p2p 8
131072 a2a+p2p 2
131072 allgather
VARIANTS
} > "$out"
echo "wrote $out"

# Mixture of experts: Megatron-LM's MoE layer benchmark (a component check of the EP cost), then
# mixtral-8x7b on 64 GPUs with and without expert parallelism, skew, capacity and expert TP.
mkdir -p "$here/moe"
"$bin" validate tests/validation/refdata/megatron_lm_moe_layer_perf_h100.json \
  > "$here/moe/moe_layer_validation.md"
echo "wrote $here/moe/moe_layer_validation.md"
# What an MoE layer's expert MLP costs beyond its kernels, as measured on lent GPUs.
python3 "$here/moe/expert_mlp.py"
# GEMMs beside a communication kernel's blocks, as measured on lent GPUs.
m=platforms/h100-sxm/measurements
python3 kernels/torch/comm_interference.py --render "$m/comm_interference.json" \
  "$m/comm_interference_repeat.json" "$m/comm_interference_margin.json" \
  > "$here/comm_interference.md"
echo "wrote $here/comm_interference.md"
out="$here/moe/mixtral-8x7b.txt"
{
  echo "mixtral-8x7b on 64 GPUs (8 nodes), pp 4 x vp 8, gbs 256, seq 4096, zero 1 with overlapped"
  echo "gradient reduce and parameter gather, full recomputation, SimGrid engine"
  echo
  printf '%-3s %-3s %-3s %-4s %9s %9s %10s  %-42s %s\n' "tp" "ep" "dp" "etp" "step (s)" \
    "tokens/s" "peak mem" "exposed comm (mean per GPU)" "options"
  while read -r tp ep etp options; do
    dp=$((16 / tp))
    extra=()
    [ "$tp" -gt 1 ] && extra+=(--sp)
    [ "$options" != "-" ] && read -r -a more <<<"${options//,/ }" && extra+=("${more[@]}")
    "$bin" run --model mixtral-8x7b --platform h100-sxm-ndr --seq-len 4096 --tp "$tp" --pp 4 \
      --vp 8 --schedule interleaved --dp "$dp" --ep "$ep" --etp "$etp" --gbs 256 --zero 1 \
      --overlap-grad-reduce --overlap-param-gather --recompute full "${extra[@]}" \
      > "$tmp" || true
    printf '%-3s %-3s %-3s %-4s %9s %9s %10s  %-42s %s\n' "$tp" "$ep" "$dp" "$etp" \
      "$(awk '/^step time/ { print $3; exit }' "$tmp")" \
      "$(awk '/^tokens\/s/ { print $2; exit }' "$tmp")" \
      "$(awk '$1 == "0" && $NF ~ /GiB$/ { print $(NF-1) " " $NF; exit }' "$tmp")" \
      "$(headline "exposed comm" "$tmp" | sed 's/ (mean per GPU)//')" "${options//,/ }"
  done <<'VARIANTS'
1 1 1 -
1 8 1 -
1 8 1 --moe-imbalance,1.5
1 8 1 --moe-imbalance,1.5,--moe-capacity-factor,1.2
1 8 1 --moe-token-dispatcher-type,allgather
1 8 1 --rank-order,tp-dp-ep-cp-pp
2 4 2 -
2 8 1 -
VARIANTS
} > "$out"
echo "wrote $out"

# The expert diagnostics README quotes: the Mixtral 8x7B plan above (tp 1, ep 8) with a skewed
# expert load, and with a rank order that spreads its EP groups over two nodes.
out="$here/moe/mixtral-8x7b-diagnostics.txt"
mixtral=(--model mixtral-8x7b --platform h100-sxm-ndr --seq-len 4096 --tp 1 --pp 4 --vp 8
  --schedule interleaved --dp 16 --ep 8 --etp 1 --gbs 256 --zero 1 --overlap-grad-reduce
  --overlap-param-gather --recompute full)
{
  for extra in "--moe-imbalance 1.5" "--rank-order tp-dp-ep-cp-pp"; do
    echo "build/trainsim check ${mixtral[*]} $extra"
    # shellcheck disable=SC2086 # the extra flags are words
    "$bin" check "${mixtral[@]}" $extra || true
    echo
  done
} > "$out"
echo "wrote $out"

# The expert-TP diagnostic README quotes: Qwen3-30B-A3B's fine-grained experts split by expert
# TP 2 (as TP) on 16 GPUs at EP 4, where EP 8 holds the same share of them whole.
out="$here/moe/qwen3-30b-a3b-expert-tp.txt"
qwen=(--model qwen3-30b-a3b --platform h100-sxm-ndr --seq-len 4096 --tp 2 --sp --dp 8 --ep 4
  --gbs 256 --zero 1 --overlap-grad-reduce)
{
  echo "build/trainsim check ${qwen[*]}"
  "$bin" check "${qwen[@]}" || true
} > "$out"
echo "wrote $out"

# DeepSeek-V3's 25.09 recipe on 1,024 GPUs with and without its recomputation of the MLA
# up-projections and dense MLPs: the memory per GPU of each pipeline stage.
out="$here/moe/deepseek-v3-recompute-modules.txt"
{
  echo "deepseek-v3 on 1,024 GPUs: tp 2 (sp, tp comm overlap), pp 8 x vp 4 (Et|(tt|)*30mL), ep 64"
  echo "(etp 1, expert all-to-all overlap), dp 64, mbs 1, gbs 8192, seq 4096, zero 1 with"
  echo "overlapped gradient reduce and parameter gather, analytic engine"
  for recompute in "none" "selective --recompute-modules mla_up_proj,mlp"; do
    read -r -a flags <<<"--recompute $recompute"
    "$bin" run --model deepseek-v3 --platform h100-sxm-ndr --tp 2 --sp --tp-comm-overlap --pp 8 \
      --vp 4 --schedule interleaved --partition 'Et|(tt|)*30mL' --ep 64 --etp 1 \
      --overlap-moe-expert-parallel-comm --dp 64 --mbs 1 --gbs 8192 --seq-len 4096 --zero 1 \
      --overlap-grad-reduce --overlap-param-gather --engine analytic "${flags[@]}" > "$tmp" || true
    echo
    echo "--recompute $recompute: $(awk '/^step time/ { print $3 " s"; exit }' "$tmp") step"
    sed -n '/^memory/,/^$/p' "$tmp" | sed '/^$/d'
  done
} > "$out"
echo "wrote $out"

# Capacity planning for an MoE model: DeepSeek-V3 on 512 to 2,048 GPUs, the layouts and expert
# parallelism that fit, the fastest ones and the SimGrid replays of the best three.
out="$here/moe/deepseek-v3-sweep.txt"
{
  echo "build/trainsim sweep scenarios/sweeps/deepseek-v3-512-2048gpu.json --out plans.csv --jobs 2"
  echo
  "$bin" sweep scenarios/sweeps/deepseek-v3-512-2048gpu.json --out "$tmp.csv" --jobs 2 2>/dev/null
  echo
  echo "On 1,024 GPUs (plans.csv), the plans that fit by tokens/s; * the recipe's layout:"
  python3 - "$tmp.csv" <<'EOF'
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["gpus"] == "1024" and r["status"] == "ok"]
rows.sort(key=lambda r: -float(r["tokens_per_s"]))
print(" rank    tp  pp  vp  ep   step (s)  diagnostics")
for i, r in enumerate(rows, 1):
    recipe = (r["tp"], r["pp"], r["vp"], r["ep"]) == ("2", "8", "4", "64")
    if i <= 5 or recipe:
        print("%s%4d %5s %3s %3s %3s %10.3f  %s" % ("*" if recipe else " ", i, r["tp"], r["pp"],
              r["vp"], r["ep"], float(r["step_s"]), r["diagnostics"] or "-"))
print("%d plans fit on 1,024 GPUs" % len(rows))
EOF
} > "$out"
rm -f "$tmp.csv"
echo "wrote $out"

# Meeting a deadline once failures are counted: Llama 3.1 70B, 15T tokens, on 1,024 to 8,192
# GPUs at Llama 3's failure rate; the cheapest plans that finish in 60 days.
out="$here/deadline/llama3.1-70b.txt"
mkdir -p "$here/deadline"
{
  echo "build/trainsim sweep scenarios/sweeps/llama3.1-70b-deadline.json --out plans.csv --jobs 2 \\"
  echo "  --svg results/deadline/llama3.1-70b.svg"
  echo
  "$bin" sweep scenarios/sweeps/llama3.1-70b-deadline.json --out "$tmp.csv" --jobs 2 \
    --svg "$here/deadline/llama3.1-70b.svg" 2>/dev/null
} > "$out"
rm -f "$tmp.csv"
echo "wrote $out"

# The same plans on H100 or H200 nodes, each at its own price: the GPU, layout and GPU count that
# meet the deadline for the least money.
out="$here/deadline/llama3.1-70b-h100-h200.txt"
{
  echo "build/trainsim sweep scenarios/sweeps/llama3.1-70b-h100-h200.json --out plans.csv --jobs 2 \\"
  echo "  --svg results/deadline/llama3.1-70b-h100-h200.svg"
  echo
  "$bin" sweep scenarios/sweeps/llama3.1-70b-h100-h200.json --out "$tmp.csv" --jobs 2 \
    --svg "$here/deadline/llama3.1-70b-h100-h200.svg" 2>/dev/null
} > "$out"
rm -f "$tmp.csv"
echo "wrote $out"

# `trainsim run ARGS` as the published-throughput tables price a recipe: h100-sxm-ndr, ZeRO 1 with
# overlapped gradient reduction and parameter gather, analytic engine; its JSON report into $tmp.
predict() {
  "$bin" run "$@" --platform h100-sxm-ndr --zero 1 --overlap-grad-reduce \
    --overlap-param-gather --engine analytic --format json > "$tmp" || true
}

# Rows of a table of Megatron-Bridge runs with published H100 throughput (NVIDIA's performance
# summary, tests/validation/refdata/megatron_bridge_perf_summary_h100.json): each stdin line
# "name;release;model;ARGS" is predicted (tokens/s per GPU, analytic engine) against the row of
# that model and release. With "ep" as $1, a column with the exposed expert-parallel time; with
# "compute", the busiest stage's compute beside the published step.
published_rows() {
  while IFS=';' read -r name release model args; do
    read -r -a argv <<<"$args"
    predict "${argv[@]}"
    python3 - "$tmp" "$name" "$release" "$model" "$args" "${1:-}" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
ref = json.load(open("tests/validation/refdata/megatron_bridge_perf_summary_h100.json"))
published = next(row["tokens_per_s_per_gpu"] for row in ref["rows"]
                 if row["model"] == sys.argv[4] and row["release"] == sys.argv[3].split()[0])
per_gpu = r["tokens_per_s"] / r["gpus"]
share = r["provenance"]["kernel_time_share"]
cells = [sys.argv[2], sys.argv[3], "`%s`" % sys.argv[5].replace("|", "\\|"),
         format(int(published), ","), format(round(per_gpu), ","),
         "%+.1f %%" % (100 * (per_gpu / published - 1))]
if sys.argv[6] == "ep":
    ep = r["exposed_comm_s"]["ep"]
    cells.append("%.1f s, %.0f %%" % (ep, 100 * ep / r["step_time_s"]))
if sys.argv[6] == "compute":
    tokens = r["plan"]["gbs"] * r["plan"]["seq_len"]
    cells.append("%.2f s, %.2f s" % (max(s["compute_s"] for s in r["stages"]),
                                    tokens / (r["gpus"] * published)))
cells.append("%.0f %%" % (100 * (share["measured"] + share["interpolated"])))
print("| " + " | ".join(cells) + " |")
PY
  done
}

# Dense recipes with published H100 throughput: Llama 3 70B on 64 GPUs and Llama 3.1 405B on
# 1,024, every release the summary lists, FP8 as their recipes run it (each row's settings in the
# reference file's notes). Not fitted on: the calibration's fitting rows are DGX Cloud's.
out="$here/published_dense_runs.md"
{
  echo "# Dense recipes against published H100 throughput"
  echo
  echo "Published: NVIDIA Megatron-Bridge performance summary, DGX-H100 pre-training rows"
  echo "(tests/validation/refdata/megatron_bridge_perf_summary_h100.json: the rows, and in its notes"
  echo "what each release's recipe ran); predicted: \`trainsim run ARGS --engine analytic\` on"
  echo "h100-sxm-ndr with ZeRO 1 and overlapped gradient reduction and parameter gather; error:"
  echo "predicted over published throughput, minus 1 (negative: trainsim predicts a slower step)."
  echo "None of these rows is in the calibration's fitting half (README, Accuracy). Written by"
  echo "results/regenerate.sh."
  echo
  echo "| run | release | ARGS | published tokens/s/GPU | predicted | error | busiest stage's compute, published step | kernel time measured or interpolated |"
  echo "|---|---|---|---|---|---|---|---|"
  published_rows compute <<'RUNS'
Llama 3 70B, 64 GPUs, FP8, GBS 128;25.09 (precision not printed);LLAMA3_70B;--model llama3.1-70b --tp 4 --pp 8 --vp 5 --schedule interleaved --dp 2 --sp --tp-comm-overlap --mbs 1 --gbs 128 --seq-len 8192 --precision fp8 --fp8-param-gather --grad-reduce-in-bf16
Llama 3 70B, 64 GPUs, FP8, GBS 128;25.11;LLAMA3_70B;--model llama3.1-70b --tp 4 --pp 8 --vp 5 --schedule interleaved --dp 2 --sp --tp-comm-overlap --mbs 1 --gbs 128 --seq-len 8192 --precision fp8 --fp8-param-gather --grad-reduce-in-bf16
Llama 3 70B, 64 GPUs, FP8, GBS 256;26.02;LLAMA3_70B;--model llama3.1-70b --tp 4 --pp 8 --vp 5 --schedule interleaved --dp 2 --sp --tp-comm-overlap --mbs 1 --gbs 256 --seq-len 8192 --precision fp8 --fp8-param-gather --grad-reduce-in-bf16
Llama 3 70B, 64 GPUs, FP8, GBS 256;26.02.01;LLAMA3_70B;--model llama3.1-70b --tp 4 --pp 8 --vp 5 --schedule interleaved --dp 2 --sp --tp-comm-overlap --mbs 1 --gbs 256 --seq-len 8192 --precision fp8 --fp8-param-gather --grad-reduce-in-bf16
Llama 3 70B, 64 GPUs, FP8, GBS 256;26.04;LLAMA3_70B;--model llama3.1-70b --tp 4 --pp 8 --vp 5 --schedule interleaved --dp 2 --sp --tp-comm-overlap --mbs 1 --gbs 256 --seq-len 8192 --precision fp8 --fp8-param-gather --grad-reduce-in-bf16
Llama 3 70B, 64 GPUs, FP8, GBS 256;26.04.01;LLAMA3_70B;--model llama3.1-70b --tp 4 --pp 8 --vp 5 --schedule interleaved --dp 2 --sp --tp-comm-overlap --mbs 1 --gbs 256 --seq-len 8192 --precision fp8 --fp8-param-gather --grad-reduce-in-bf16
Llama 3.1 405B, 1,024 GPUs, FP8, GBS 512;25.09 (precision not printed);LLAMA3.1_405B;--model llama3.1-405b --tp 8 --pp 8 --vp 8 --cp 2 --schedule interleaved --dp 8 --sp --tp-comm-overlap --mbs 1 --gbs 512 --seq-len 8192 --partition Et|(tt|)*62tL --precision fp8 --fp8-param-gather --grad-reduce-in-bf16
Llama 3.1 405B, 1,024 GPUs, FP8, GBS 512;25.11;LLAMA3.1_405B;--model llama3.1-405b --tp 8 --pp 8 --vp 8 --cp 2 --schedule interleaved --dp 8 --sp --tp-comm-overlap --mbs 1 --gbs 512 --seq-len 8192 --partition Et|(tt|)*62tL --precision fp8 --fp8-param-gather --grad-reduce-in-bf16
Llama 3.1 405B, 1,024 GPUs, FP8, GBS 1536;26.02;LLAMA3.1_405B;--model llama3.1-405b --tp 8 --pp 8 --vp 8 --cp 2 --schedule interleaved --dp 8 --sp --tp-comm-overlap --mbs 1 --gbs 1536 --seq-len 8192 --partition Et|(tt|)*62tL --precision fp8 --fp8-param-gather --grad-reduce-in-bf16
Llama 3.1 405B, 1,024 GPUs, FP8, GBS 1536;26.04.01;LLAMA3.1_405B;--model llama3.1-405b --tp 8 --pp 8 --vp 8 --cp 2 --schedule interleaved --dp 8 --sp --tp-comm-overlap --mbs 1 --gbs 1536 --seq-len 8192 --partition Et|(tt|)*62tL --precision fp8 --fp8-param-gather --grad-reduce-in-bf16
Llama 3.1 405B, 1,024 GPUs, FP8, GBS 1536;26.06;LLAMA3.1_405B;--model llama3.1-405b --tp 8 --pp 8 --vp 8 --cp 2 --schedule interleaved --dp 8 --sp --tp-comm-overlap --mbs 1 --gbs 1536 --seq-len 8192 --partition Et|(tt|)*62tL --precision fp8 --fp8-param-gather --grad-reduce-in-bf16
RUNS
  cat <<'TEXT'

Where a row misses by more than 8 %:

- Llama 3 70B (every release): priced too slow. Its busiest stage is the last (two decoder
  layers per virtual stage, as Megatron's uniform split gives them, and in its last chunk the LM
  head over 128,256 words and the loss), and that stage's compute as priced already exceeds the
  whole published step (the column before last): no schedule or communication can close that,
  so the kernels ran faster in these runs than trainsim prices them. Its rates are the
  platform's calibration, fitted on NVIDIA's DGX Cloud recipes of NeMo 24.11 to 25.05, whose
  checking half it predicts within a few per cent on FP8 (README, Accuracy); these
  Megatron-Bridge releases (25.09 to 26.04.01) ran FP8 faster than that, and the FP8 GEMMs' own
  fitted rate (sustained_fp8_gemm) adds to the gap. Their FP8 current scaling is priced as
  delayed scaling, which costs less (one amax pass fewer per cast), so the gap in kernel rate is,
  if anything, larger than the error shows. Llama 3.1 405B, the same recipe family at TP 8 with
  CP 2, misses by less (the rows above), its two latest releases the fastest.
TEXT
} > "$out"
echo "wrote $out"

# torchtitan's published Llama 3.1 runs (end of 2024), each read from a torchtitan config.
python3 "$here/torchtitan/published_runs.py" "$bin"

# MoE recipes with published H100 throughput (NVIDIA Megatron-Bridge's performance summary,
# releases 25.09 to 26.04.01): DeepSeek-V3 on 1,024 GPUs, Qwen3-30B-A3B on 16, Qwen3-235B-A22B on
# 256 and GPT-OSS 120B on 64, predicted tokens/s per GPU (analytic engine) against the published
# ones.
out="$here/moe/published_runs.md"
{
  echo "# MoE recipes against published H100 throughput"
  echo
  echo "Published: NVIDIA Megatron-Bridge performance summary, DGX-H100 pre-training rows"
  echo "(tests/validation/refdata/megatron_bridge_perf_summary_h100.json, with each row's source and"
  echo "what its recipe ran); predicted: \`trainsim run ARGS"
  echo "--engine analytic\` on h100-sxm-ndr with ZeRO 1 and overlapped gradient reduction and"
  echo "parameter gather (FP8 runs with FP8 primary weights, as the recipes' FP8 precision configs"
  echo "set fp8_param_gather); error: predicted over published throughput, minus 1 (negative: trainsim"
  echo "predicts a slower step). Written by results/regenerate.sh."
  echo
  echo "| run | release | ARGS | published tokens/s/GPU | predicted | error | EP exposed, share of step | kernel time measured or interpolated |"
  echo "|---|---|---|---|---|---|---|---|"
  published_rows ep <<'RUNS'
DeepSeek-V3, 1,024 GPUs, BF16;25.09 (precision not printed);DeepSeekV3 (dropless);--model deepseek-v3 --tp 2 --pp 8 --vp 4 --schedule interleaved --ep 64 --etp 1 --dp 64 --sp --tp-comm-overlap --mbs 1 --gbs 8192 --seq-len 4096 --partition Et|(tt|)*30mL --recompute selective --recompute-modules mla_up_proj,mlp
DeepSeek-V3, 1,024 GPUs, FP8;25.09 (precision not printed);DeepSeekV3 (dropless);--model deepseek-v3 --tp 2 --pp 8 --vp 4 --schedule interleaved --ep 64 --etp 1 --dp 64 --sp --tp-comm-overlap --mbs 1 --gbs 8192 --seq-len 4096 --partition Et|(tt|)*30mL --recompute selective --recompute-modules mla_up_proj,mlp --precision fp8 --fp8-param-gather
DeepSeek-V3, 1,024 GPUs, BF16, EP overlap;25.09 (precision not printed);DeepSeekV3 (dropless);--model deepseek-v3 --tp 2 --pp 8 --vp 4 --schedule interleaved --ep 64 --etp 1 --dp 64 --sp --tp-comm-overlap --mbs 1 --gbs 8192 --seq-len 4096 --partition Et|(tt|)*30mL --recompute selective --recompute-modules mla_up_proj,mlp --overlap-moe-expert-parallel-comm
DeepSeek-V3, 1,024 GPUs, FP8, EP overlap;25.09 (precision not printed);DeepSeekV3 (dropless);--model deepseek-v3 --tp 2 --pp 8 --vp 4 --schedule interleaved --ep 64 --etp 1 --dp 64 --sp --tp-comm-overlap --mbs 1 --gbs 8192 --seq-len 4096 --partition Et|(tt|)*30mL --recompute selective --recompute-modules mla_up_proj,mlp --precision fp8 --fp8-param-gather --overlap-moe-expert-parallel-comm
Qwen3-30B-A3B, 16 GPUs, FP8;26.04.01;Qwen3_30B_a3B;--model qwen3-30b-a3b --tp 1 --pp 1 --ep 16 --dp 16 --mbs 1 --gbs 1024 --seq-len 4096 --precision fp8 --fp8-param-gather
Qwen3-30B-A3B, 16 GPUs, FP8, EP overlap;26.04.01;Qwen3_30B_a3B;--model qwen3-30b-a3b --tp 1 --pp 1 --ep 16 --dp 16 --mbs 1 --gbs 1024 --seq-len 4096 --precision fp8 --fp8-param-gather --overlap-moe-expert-parallel-comm
Qwen3-30B-A3B, 16 GPUs, FP8;26.02.01;Qwen3_30B_a3B;--model qwen3-30b-a3b --tp 1 --pp 2 --vp 12 --schedule interleaved --ep 8 --dp 8 --mbs 1 --gbs 1024 --seq-len 4096 --precision fp8 --fp8-param-gather
Qwen3-30B-A3B, 16 GPUs, token drop;25.09 (precision not printed);Qwen3_30B_a3B (tokendrop);--model qwen3-30b-a3b --tp 1 --pp 2 --vp 24 --schedule interleaved --ep 8 --dp 8 --mbs 2 --gbs 512 --seq-len 4096 --moe-capacity-factor 1.0
Qwen3-235B-A22B, 256 GPUs, FP8, EP overlap;26.04.01;Qwen3_235B_a22B;--model qwen3-235b-a22b --tp 2 --pp 8 --vp 4 --schedule interleaved --ep 32 --etp 1 --dp 16 --sp --mbs 1 --gbs 8192 --seq-len 4096 --partition Ett|(ttt|)*30ttL --precision fp8 --fp8-param-gather --grad-reduce-in-bf16 --overlap-moe-expert-parallel-comm
GPT-OSS 120B, 64 GPUs, BF16;26.04.01;GPT OSS 120B;--model gpt-oss-120b --tp 1 --pp 4 --ep 8 --dp 16 --mbs 1 --gbs 1280 --seq-len 4096 --recompute selective --recompute-modules layernorm,moe_act --grad-reduce-in-bf16
GPT-OSS 120B, 64 GPUs, BF16, unfused attention;26.04.01;GPT OSS 120B;--model gpt-oss-120b --tp 1 --pp 4 --ep 8 --dp 16 --mbs 1 --gbs 1280 --seq-len 4096 --recompute selective --recompute-modules layernorm,moe_act --grad-reduce-in-bf16 --attention-backend unfused
RUNS
  cat <<'TEXT'

Where a row misses by more than 8 %:

- DeepSeek-V3: the 25.09 recipe overlapped each micro-batch's expert all-to-alls with another's
  compute (weight gradients delayed) and dispatched through DeepEP. Without the overlap trainsim
  exposes every all-to-all and predicts the step far slower; with
  `--overlap-moe-expert-parallel-comm` the all-to-alls hide behind the layers' compute. The
  recipe's multi-token-prediction module (the `m` of its layout: one more MoE layer, its
  projection and a second pass through the LM head and loss, on the last stage) and its
  recomputation of the MLA up-projections and the dense MLPs are modelled and priced in these
  rows. DeepEP's kernels and the delayed weight gradients are not modelled. Which precision the
  row ran is not printed; both are shown.
- Qwen3-30B-A3B: priced too fast, cause not established. At EP 16 across two nodes the exposed
  all-to-alls make up for it (the current recipe overlaps them, and with that overlap the row is
  fast too; whether 26.04.01 ran with it is not printed); at PP 2 and EP 8 on one node nothing
  does, and the published rows barely differ between the two layouts. Not the cause: its
  experts' grouped GEMMs, now measured (the last column: most of its kernel time measured or
  interpolated), moved the predictions by under 3 %; nor are the router, permutation and FP8
  cast-transpose kernels, measured since (they moved these rows by 0.5 to 2.2 %), or FP8's amax
  reduction, priced since. Candidates left: the launch and host overhead of a model made of many
  small kernels (the recipe captures the router and the preprocessing in CUDA graphs); its
  routing without forced load balancing, whose busiest expert trainsim's balanced default does
  not see; HybridEP's dispatch.
- Qwen3-235B-A22B: priced too fast as well, with its recipe's forced load balancing and expert
  all-to-all overlap expressed; with Qwen3-30B-A3B it shares the fine-grained experts (128 of
  them, top 8, each FFN 1,536 and 768 wide), so the candidates above stand for it too, the
  routing imbalance excepted. Cause not established.
- GPT-OSS 120B: priced far too fast. Its attention has learnable sinks on every layer (and a
  128-token window on alternate ones); trainsim prices cuDNN's fused attention, timed by the suite
  without sinks, the window shortening it. Priced as unfused attention instead (the row below
  it), the step comes close to the published one, but that attention's scores would not fit in
  memory (its report's oom diagnostic), so the run cannot have used it: which attention kernel
  ran, and what it costs on an H100, is not established. The summary flags a GPT-OSS pre-training
  regression as a cuDNN frontend issue (NVIDIA/cudnn-frontend#256) on its Blackwell rows.
TEXT
} > "$out"
echo "wrote $out"

# MoE runs of the Megatron-MoE-ModelZoo recipes with published H100 throughput
# (tests/validation/refdata/megatron_moe_modelzoo_h100.json): each stdin line "run;ARGS" is
# predicted (tokens/s per GPU, analytic engine) against the row of that run.
modelzoo_rows() {
  while IFS=';' read -r name args; do
    read -r -a argv <<<"$args"
    predict "${argv[@]}"
    python3 - "$tmp" "$name" "$args" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
ref = json.load(open("tests/validation/refdata/megatron_moe_modelzoo_h100.json"))
row = next(x for x in ref["rows"] if x["model"] + ", " + x["run"] == sys.argv[2])
published = row["derived_tokens_per_s_per_gpu"]
per_gpu = r["tokens_per_s"] / r["gpus"]
ep = r["exposed_comm_s"]["ep"]
stated = "%d (%s s)" % (row["model_tflops_per_gpu"], row["step_time_s"]) if row["step_time_s"] \
    else "around %d" % row["model_tflops_per_gpu"]
print("| " + " | ".join([
    sys.argv[2], row["routing"], "`%s`" % sys.argv[3].replace("|", "\\|"), stated,
    format(round(published), ","), format(round(per_gpu), ","),
    "%+.1f %%" % (100 * (per_gpu / published - 1)),
    "%.2f s, %.0f %%" % (ep, 100 * ep / r["step_time_s"])]) + " |")
PY
  done
}

out="$here/moe/modelzoo_runs.md"
{
  echo "# MoE runs of NVIDIA's Megatron-MoE-ModelZoo against their published H100 throughput"
  echo
  echo "Published: the throughput per GPU that the Megatron-MoE-ModelZoo's Mixtral 8x22B script"
  echo "states for H100 (\"around\" N TFLOP/s), and the one alltoall-dispatcher row of its Qwen3 page's"
  echo "H100 table (tests/validation/refdata/megatron_moe_modelzoo_h100.json, with each row's source,"
  echo "layout and launch arguments). Their TFLOP/s are Megatron-LM's count of late 2025 (the causal"
  echo "half of the attention scores), turned into tokens/s per GPU with that count"
  echo "(\`trainsim\`'s causal model FLOPs, equal to it: \`ctest -R ModelZooRowsCount\`). Predicted:"
  echo "\`trainsim run ARGS --engine analytic\` on h100-sxm-ndr with ZeRO 1 and overlapped gradient"
  echo "reduction and parameter gather, each expert's load balanced (trainsim's default); error:"
  echo "predicted over published throughput, minus 1. None of these rows is fitted on. Written by"
  echo "results/regenerate.sh."
  echo
  echo "| run | routing | ARGS | published TFLOP/s/GPU | published tokens/s/GPU | predicted | error | EP exposed, share of step |"
  echo "|---|---|---|---|---|---|---|---|"
  modelzoo_rows <<'RUNS'
Mixtral-8x22B, BF16, forced balance;--model mixtral-8x22b --tp 2 --pp 8 --vp 7 --schedule interleaved --ep 8 --etp 1 --dp 8 --sp --tp-comm-overlap --mbs 1 --gbs 256 --seq-len 4096
Mixtral-8x22B, BF16, token drop;--model mixtral-8x22b --tp 2 --pp 8 --vp 7 --schedule interleaved --ep 8 --etp 1 --dp 8 --sp --tp-comm-overlap --mbs 1 --gbs 256 --seq-len 4096 --moe-capacity-factor 1.0
Mixtral-8x22B, BF16, dropless;--model mixtral-8x22b --tp 2 --pp 8 --vp 7 --schedule interleaved --ep 8 --etp 1 --dp 8 --sp --tp-comm-overlap --mbs 1 --gbs 256 --seq-len 4096
Mixtral-8x22B, FP8 blockwise, forced balance;--model mixtral-8x22b --tp 2 --pp 8 --vp 7 --schedule interleaved --ep 8 --etp 1 --dp 8 --sp --mbs 1 --gbs 256 --seq-len 4096 --precision fp8 --fp8-recipe blockwise --fp8-param-gather
Qwen3-235B-A22B, BF16, A2A dispatcher;--model qwen3-235b-a22b --tp 2 --pp 32 --vp 3 --schedule interleaved --ep 8 --etp 1 --dp 4 --sp --mbs 1 --gbs 2048 --seq-len 4096 --account-for-embedding-in-pipeline-split --account-for-loss-in-pipeline-split --recompute selective --recompute-modules layernorm,moe_act
RUNS
  cat <<'TEXT'

Where a row misses by more than 8 %:

- Mixtral 8x22B, dropless: the same run as the forced-balance row but for its routing, which the
  aux loss balances only on average; the published figures differ by 4.5 % between the two, which
  is the busiest expert's extra time, and trainsim prices the balanced load unless told
  (`--moe-imbalance X`, the busiest expert's load over the mean, which the source does not give).
- Mixtral 8x22B, FP8: blockwise scaling (128 x 128 weight blocks, 1 x 128 activation tiles;
  `--fp8-recipe blockwise`: no amax reduction over the stage), its GEMMs and casts priced as the
  per-tensor FP8 ones the suite times: Hopper's block-scaled FP8 GEMMs and their quantisation
  kernels, which the suite does not time, are the suspect. Its BF16 twin is 5.7 %
  fast, so most of the miss lies in what FP8 changes.
- Qwen3-235B-A22B: priced far too fast, like the fine-grained Qwen3 recipes of Megatron-Bridge
  (128 experts, top 8, each FFN 1,536 wide; results/moe/published_runs.md). This run is
  fine-tuned from the released checkpoint on real data without forced balancing, so its busiest
  GPU of an EP group waits on a trained router's load, which trainsim's balanced default does not
  see. The same page's long-context table puts dropless runs of this model 8 to 20 % below
  forced-balance ones (TFLOP/s 237 against 295 at its shortest sequence); even the largest of
  those gaps leaves this row about 22 % fast, a miss of the size of Qwen3-30B-A3B's: the rest of
  the cause not established.
TEXT
} > "$out"
echo "wrote $out"

# What `trainsim check` says about each seed scenario (framework bugs it reproduces).
mkdir -p "$here/seeds"
for scenario in scenarios/seeds/*.json; do
  name=$(basename "$scenario" .json)
  status=0
  "$bin" check "scenarios/seeds/$name.json" > "$here/seeds/$name.txt.tmp" || status=$?
  if [ "$status" -gt 1 ]; then
    echo "trainsim check failed on $scenario (exit $status)" >&2
    exit "$status"
  fi
  mv "$here/seeds/$name.txt.tmp" "$here/seeds/$name.txt"
  echo "wrote $here/seeds/$name.txt (exit $status)"
done

# A plan that does not fit: Llama 3.1 70B unsharded on one node (the oom diagnostic; exit 1).
mkdir -p "$here/oom"
status=0
"$bin" check --model llama3.1-70b --platform h100-sxm-ndr --tp 1 --pp 1 --dp 8 --seq-len 8192 \
  --gbs 8 > "$here/oom/llama3.1-70b-8gpu.txt.tmp" || status=$?
if [ "$status" -gt 1 ]; then
  echo "trainsim check failed on the oom example (exit $status)" >&2
  exit "$status"
fi
mv "$here/oom/llama3.1-70b-8gpu.txt.tmp" "$here/oom/llama3.1-70b-8gpu.txt"
echo "wrote $here/oom/llama3.1-70b-8gpu.txt (exit $status)"
# An expert model unsharded on 8 nodes: ZeRO-3 fits alone, and a layout with EP and CP much faster.
status=0
"$bin" check --model mixtral-8x7b --platform h100-sxm-ndr --gpus 64 --seq-len 4096 --gbs 256 \
  > "$here/oom/mixtral-8x7b-64gpu.txt.tmp" || status=$?
if [ "$status" -gt 1 ]; then
  echo "trainsim check failed on the expert oom example (exit $status)" >&2
  exit "$status"
fi
mv "$here/oom/mixtral-8x7b-64gpu.txt.tmp" "$here/oom/mixtral-8x7b-64gpu.txt"
echo "wrote $here/oom/mixtral-8x7b-64gpu.txt (exit $status)"

# A Megatron-LM launch script read as a plan (--megatron-args): how it was read, then the run.
mkdir -p "$here/megatron_args"
out="$here/megatron_args/llama3.1-70b-64gpu.txt"
(cd "$root" && "$bin" run --model llama3.1-70b \
  --megatron-args @scenarios/launch/llama3.1-70b-64gpu.sh) > "$out.tmp" 2>&1
mv "$out.tmp" "$out"
echo "wrote $out"

# A plan whose shape wastes its GPUs: a 2B model with a 256,000-word vocabulary at pp 8 on one
# node (the faster-plan-nearby diagnostic).
mkdir -p "$here/neighbourhood"
"$bin" check --model tests/data/models/small-256k-vocab.json --platform h100-sxm-ndr --pp 8 \
  --gbs 64 --seq-len 4096 --partition balanced > "$here/neighbourhood/small-256k-vocab-pp8.txt"
echo "wrote $here/neighbourhood/small-256k-vocab-pp8.txt"

# trainsim validate: predicted vs measured peak memory and iteration time of the Megatron-LM CI
# runs (DGX H100).
(cd "$root" && "$bin" validate --out "$here/validation/megatron_ci.md") >/dev/null
# trainsim validate: predicted vs measured step time of NVIDIA's DGX Cloud recipes (DGX H100).
(cd "$root" && "$bin" validate tests/validation/refdata/nvidia_dgxc_benchmarking_h100.json \
  --out "$here/validation/dgxc_step_time.md") >/dev/null
# trainsim validate on scenario files: the catalog scenarios' "published" step times, as one's
# own measured runs would be checked.
(cd "$root" && "$bin" validate scenarios/ --out "$here/validation/scenarios.md") >/dev/null
echo "wrote $here/validation/megatron_ci.md"
echo "wrote $here/validation/dgxc_step_time.md"
echo "wrote $here/validation/scenarios.md"
python3 "$here/validation_plot.py" "$(dirname "$bin")" >/dev/null
echo "wrote $here/validation.md, $here/validation.csv and $here/validation/dgxc_step_time.svg"

# The measured H100 kernel database: what it holds and how predictions moved (results/kernels.md
# and its plots under results/kernels/).
python3 "$here/kernels_report.py" "$(dirname "$bin")"
# The measured H200 kernel database against the H100's, and the h200-sxm-ndr platform's
# predictions beside h100-sxm-ndr's (results/kernels-h200.md).
python3 "$here/kernels_h200.py" "$(dirname "$bin")"

# trainsim sweep: its rate on a 530B space and the best plans for Llama 3.1 70B and 405B
# (results/sweep.md; about two minutes).
python3 "$here/sweep.py" "$(dirname "$bin")"

# Wall time and peak memory of `trainsim run` from 64 to 131,072 GPUs (results/scale.md and
# results/scale/scale.svg; about two minutes).
python3 "$here/scale.py" "$(dirname "$bin")"
