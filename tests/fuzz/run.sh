#!/usr/bin/env bash
# Builds the libFuzzer targets (CMake preset "fuzz": clang, ASan + UBSan), seeds each target's
# corpus from the repository's files and runs every target for SECONDS (default 6, about two
# minutes in all: the bounded run of .ci/run). Prints "TARGET: N inputs, C crashes" per target and
# exits 1 when any target found a crash, a sanitizer report, a hang (over 5 s, 30 s for the
# pipeline target's plan searches) or an escaped
# exception; the input is kept in build-fuzz/crashes/TARGET/, the log in build-fuzz/logs/.
#
#   tests/fuzz/run.sh [SECONDS_PER_TARGET] [--results FILE] [TARGET ...]
#   tests/fuzz/run.sh 120 --results results/fuzz.md      (the longer run that results/ records)
#   JOBS=N sets the build's parallelism (default: every core).
#
# Each run starts afresh from the seeds (the repository's files of the target's kind and
# tests/fuzz/seeds/TARGET/) and tests/fuzz/regressions/TARGET/ (inputs that once crashed a
# target), so that its figures do not depend on earlier runs and libFuzzer's replay of a grown
# corpus does not outlast the time given; what it finds is left in build-fuzz/corpus/TARGET/.
set -euo pipefail
cd "$(dirname "$0")/../.."

seconds=6
results=""
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --results) results="$2"; shift 2 ;;
    [0-9]*) seconds="$1"; shift ;;
    *) targets+=("$1"); shift ;;
  esac
done
all=(json_text model_json hf_config platform_json kernel_db_json partition_spec layout_spec
     safetensors_header sweep_spec scenario sweep_csv args pipeline megatron_args training_log
     nanotron_config torchtitan_config)
[ ${#targets[@]} -gt 0 ] || targets=("${all[@]}")

# clang and its libFuzzer runtime, installed as .ci/setup installs packages.
missing=()
for p in clang libclang-rt-14-dev; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}" >&2
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

out=build-fuzz
cmake --preset fuzz >/dev/null
if ! cmake --build --preset fuzz -j "${JOBS:-$(nproc)}" >"$out/build.log" 2>&1; then
  tail -40 "$out/build.log" >&2
  exit 1
fi
for name in "${targets[@]}"; do
  if [ ! -x "$out/fuzz/fuzz_$name" ]; then
    echo "no fuzz target '$name' (targets: ${all[*]})" >&2
    exit 2
  fi
done

# Seed files: the repository's inputs of each kind, no larger than the target's -max_len.
seed_files() {
  local max="$1"
  shift
  find "$@" -type f -size -"$((max + 1))"c 2>/dev/null | sort
}
seeds_of() {
  case "$1" in
    json_text) seed_files 16384 models platforms scenarios tests/data -name '*.json' ;;
    model_json) seed_files 16384 models scenarios/seeds/models tests/data/models -name '*.json' ;;
    hf_config) seed_files 16384 tests/data/hf -name config.json ;;
    platform_json) seed_files 16384 platforms -maxdepth 1 -name '*.json' ;;
    kernel_db_json) seed_files 32768 platforms -name 'kernels*.json' ;;
    sweep_spec) seed_files 16384 scenarios/sweeps -name '*.json' ;;
    scenario | pipeline) seed_files 16384 scenarios -name '*.json' ;;
    megatron_args) seed_files 4096 scenarios/launch -name '*.sh' ;;
    training_log) seed_files 16384 tests/data/training_logs tests/data/bad -name '*.log' ;;
    nanotron_config) seed_files 16384 scenarios/launch tests/data -name '*.yaml' ;;
    torchtitan_config) seed_files 16384 scenarios/launch tests/data -name '*.toml' ;;
  esac
}
max_len_of() {
  case "$1" in
    partition_spec | layout_spec | args | pipeline | scenario | megatron_args) echo 4096 ;;
    kernel_db_json) echo 32768 ;;
    *) echo 16384 ;;
  esac
}

seed_corpus() {
  local name="$1" corpus="$out/corpus/$1"
  rm -rf "$corpus"
  mkdir -p "$corpus"
  local f
  while IFS= read -r f; do
    [ -n "$f" ] && cp "$f" "$corpus/seed-$(printf '%s' "$f" | tr '/' '_')"
  done < <(seeds_of "$name")
  # A platform without its kernel database (the target cannot reach the file it names).
  if [ "$name" = platform_json ]; then
    for f in platforms/*.json; do
      grep -v '"kernel_database"' "$f" > "$corpus/seed-nodb-$(basename "$f")"
    done
  fi
}

# A libFuzzer dictionary of the JSON strings (keys, names, choices) in a target's seed files, so
# that mutations write the keys its reader knows.
json_dict() {
  { seeds_of "$1"; find "tests/fuzz/seeds/$1" -type f 2>/dev/null; } |
    xargs -r grep -aohE '"[A-Za-z0-9_.:+-]{1,40}"' | sort -u || true
}

# 1234567 as 1,234,567.
grouped() { echo "$1" | sed -e ':a' -e 's/\([0-9]\)\([0-9]\{3\}\)\($\|,\)/\1,\2\3/' -e 'ta'; }

# Executions of a finished run (libFuzzer prints its final stats on a crash too).
executions_of() { awk '/stat::number_of_executed_units:/ { n = $2 } END { print n + 0 }' "$1"; }

# The scenario and safetensors targets write each input to a file: on tmpfs where there is one.
if [ -z "${TMPDIR:-}" ] && [ -d /dev/shm ] && [ -w /dev/shm ]; then
  export TMPDIR=/dev/shm
fi
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
mkdir -p "$out/logs"
failed=0
rows=()
total=0
for name in "${targets[@]}"; do
  seed_corpus "$name"
  mkdir -p "$out/crashes/$name"
  dirs=("$out/corpus/$name")
  for d in "tests/fuzz/seeds/$name" "tests/fuzz/regressions/$name"; do
    [ -d "$d" ] && dirs+=("$d")
  done
  dict=()
  case "$name" in
    partition_spec | layout_spec | safetensors_header | sweep_csv | args | megatron_args | \
      training_log | nanotron_config | torchtitan_config) ;;
    *)
      mkdir -p "$out/dict"
      json_dict "$name" >"$out/dict/$name.dict"
      dict=(-dict="$out/dict/$name.dict")
      ;;
  esac
  log="$out/logs/$name.log"
  rc=0
  # A hang is an input still running after 5 s. The pipeline target runs whole plans with their
  # fix searches under the sanitizers: its nanotron-108 seed takes about 2.4 s on a busy two-core
  # machine, so a 2 s limit failed it for slowness, not for a hang; and a plan that does not fit
  # searches every TP, CP, PP, DP and EP layout up to 16 times its GPUs (DeepSeek-V3 on 32 GPUs,
  # seed-5: about 8 s here, 1.5 s in a release build), so that target's limit is 30 s.
  timeout=5
  [ "$name" = pipeline ] && timeout=30
  "$out/fuzz/fuzz_$name" "${dirs[@]}" "${dict[@]}" -max_total_time="$seconds" -timeout="$timeout" \
    -rss_limit_mb=2048 -max_len="$(max_len_of "$name")" -print_final_stats=1 \
    -artifact_prefix="$out/crashes/$name/" >"$log" 2>&1 || rc=$?
  runs=$(executions_of "$log")
  # libFuzzer stops at the first crash, hang, leak or sanitizer report, with a nonzero status.
  crashes=$((rc != 0 ? 1 : 0))
  echo "$name: $runs inputs, $crashes crashes"
  if [ "$crashes" -ne 0 ]; then
    failed=1
    echo "  see $log and $out/crashes/$name/" >&2
  fi
  total=$((total + runs))
  regressions=$( (find "tests/fuzz/regressions/$name" -type f 2>/dev/null || true) | wc -l)
  rows+=("| $name | $seconds | $(grouped "$runs") | $crashes | $regressions |")
done
echo "all targets: $total inputs"

# The Markdown page of a run (results/fuzz.md).
write_results() {
  local crashed="0 crashes"
  [ "$failed" -eq 0 ] || crashed="crashes: see the table"
  cat <<EOF
# Fuzzing

libFuzzer with AddressSanitizer and UndefinedBehaviorSanitizer on every input reader and on the
plan pipeline ([tests/fuzz/](../tests/fuzz/)), each target in turn for $seconds s on a machine of
$(nproc) cores, starting afresh from the repository's seeds and its regression inputs.
Written by \`tests/fuzz/run.sh $seconds --results $results\`. A crash is anything but the
InputError bad input must raise: another exception, a sanitizer report, an abort, a hang over 5 s
(30 s for the pipeline target), a leak. Regressions: inputs that crashed the target before their fix, replayed first;
[tests/fuzz/regressions/README.md](../tests/fuzz/regressions/README.md) lists every finding and its
fix.

| target | seconds | executions | crashes | regressions |
|---|---|---|---|---|
$(printf '%s\n' "${rows[@]}")

$(awk -v n="$total" 'BEGIN { printf "%.1f million", n / 1e6 }') executions in all, $crashed.
EOF
}

if [ -n "$results" ]; then
  write_results >"$results"
  echo "wrote $results"
fi
exit "$failed"
