#!/usr/bin/env bash
# The commands the manual shows (README.md and docs/*.md, their ```sh blocks): every build/bin
# program named exists, and every --flag given to one is in its --help (its subcommand's for
# bert_infer); then the quick ones run as written (--version, --help, tokenize, fill-mask-free).
#   docs_commands.sh BIN_DIR SOURCE_DIR
set -uo pipefail
bin=$1 src=$2
failures=0 checked=0
fail() { echo "FAIL $*" >&2; failures=$((failures + 1)); }
declare -A help_of

# The --help of "program [subcommand]", cached; empty when the program has no CLI11 --help.
help_text() {
  local key="$1 ${2:-}"
  if [[ -z ${help_of[$key]+x} ]]; then
    local out
    if out=$("$bin/$1" ${2:+"$2"} --help 2>&1) && [[ $out == *"--help"* ]]; then help_of[$key]=$out; else help_of[$key]=""; fi
  fi
  printf '%s' "${help_of[$key]}"
}

# One shell command of the manual (continuations joined), from FILE:LINE.
check_command() {
  local where=$1 line=$2 segment
  line=$(sed -E 's/(^|[[:space:]])#.*$//' <<< "$line")  # a trailing comment
  while IFS= read -r segment; do
    local -a words
    read -ra words <<< "$segment"
    local i program="" sub=""
    for ((i = 0; i < ${#words[@]}; ++i)); do
      if [[ ${words[i]} == build/bin/* ]]; then
        program=${words[i]#build/bin/}
        [[ $program == bert_infer && $((i + 1)) -lt ${#words[@]} && ${words[i + 1]} != -* ]] && sub=${words[i + 1]}
        break
      fi
    done
    [[ -n $program ]] || continue
    checked=$((checked + 1))
    if [[ ! -x $bin/$program ]]; then fail "$where: build/bin/$program is not a program this build makes"; continue; fi
    local help
    help=$(help_text "$program" "$sub")
    [[ -n $help ]] || continue  # a benchmark with its own argument parsing
    local flag
    for flag in $(printf '%s\n' "${words[@]:i+1}" | grep -o -E -- '--[a-z0-9][a-z0-9-]*' | sort -u); do
      grep -q -E -- "(^|[[:space:],])$flag([[:space:],=]|$)" <<< "$help" || fail "$where: $program${sub:+ $sub} has no $flag (its --help does not list it)"
    done
  done < <(sed -E 's/\|\||&&|[|;]/\n/g' <<< "$line")
}

for file in "$src/README.md" "$src"/docs/*.md; do
  rel=${file#"$src"/}
  in_block=0 joined="" start=0 n=0
  while IFS= read -r text || [[ -n $text ]]; do
    n=$((n + 1))
    if [[ $text =~ ^[[:space:]]*\`\`\`(sh|bash|shell)[[:space:]]*$ ]]; then in_block=1; continue; fi
    if [[ $in_block == 1 && $text =~ ^[[:space:]]*\`\`\` ]]; then in_block=0; continue; fi
    [[ $in_block == 1 ]] || continue
    [[ -z $joined ]] && start=$n
    if [[ $text == *\\ ]]; then joined+="${text%\\} "; continue; fi
    joined+=$text
    check_command "$rel:$start" "$joined"
    joined=""
  done < "$file"
done

# The quick ones, as written
for program in bert_pretrain bert_finetune bert_infer create_pretraining_data custom_model train_spirals; do
  out=$("$bin/$program" --version 2>&1) || fail "$program --version exited non-zero"
  [[ $out =~ ^$program\ \(xgrad\ [0-9]+\.[0-9]+\.[0-9]+\)$ ]] || fail "$program --version printed: $out"
done
out=$(cd "$src" && echo "Hello, world!" | "$bin/bert_infer" tokenize --vocab data/bert-base-uncased-vocab.txt 2>&1) ||
  fail "the tokenize example of docs/tokenizers.md: $out"
[[ $out == *"101"*"7592"*"102"* ]] || fail "the tokenize example printed: $out"

if ((checked < 40)); then fail "only $checked commands found in the manual: is the extraction broken?"; fi
if ((failures > 0)); then echo "FAIL: $failures problem(s) in the manual's commands ($checked checked)"; exit 1; fi
echo "PASS: $checked commands of the manual name programs and flags that exist"
