#!/usr/bin/env bash
# The repository speaks of the software only: no file names a development milestone, an issue
# number, a review's history or an absolute path of a development machine (the patterns below).
# Prints FILE:LINE:TEXT for each such line and exits 1 if there is any.
#   repository_words.sh SOURCE_DIR
# Checks the files git tracks or would add (untracked, not ignored; outside a git checkout, the
# source folders' files), except binary files, corpus and vocabulary data (data/*.txt, data/*.json,
# data/*.tsv, tests/data/**.txt, fuzz/corpus/) and this script.
set -u
root=${1:?usage: repository_words.sh SOURCE_DIR}
cd "$root" || { echo "FAIL: cannot enter $root"; exit 1; }
self=tests/cli/repository_words.sh

# Milestones, issue numbers, review history; absolute paths only (fuzz/work/ is a project folder).
pattern='\bstops? [0-9]+\b|\bthis stop\b|\bissue [0-9]+|\bissue #[0-9]|\ba review found\b'
pattern+='|(^|[^A-Za-z0-9_./-])/(work|root|home)/'

list_files() {
  if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files -z --cached --others --exclude-standard
  else
    local dirs=() d
    for d in .ci autograd bench data docs examples fuzz inference metrics models nn optim scripts \
             tests text tools training util; do
      [[ -d $d ]] && dirs+=("$d")
    done
    find . -maxdepth 1 -type f -printf '%P\0'
    if ((${#dirs[@]})); then
      find "${dirs[@]}" \( -name __pycache__ -o -path fuzz/work \) -prune -o -type f -print0
    fi
  fi
}

files=()
while IFS= read -r -d '' f; do
  case $f in
    data/*.txt | data/*.json | data/*.tsv | tests/data/*.txt | fuzz/corpus/* | "$self") continue ;;
  esac
  [[ -f $f ]] && files+=("$f")
done < <(list_files)

if ((${#files[@]} == 0)); then
  echo "FAIL: no files found under $root"
  exit 1
fi

hits=$(printf '%s\0' "${files[@]}" | xargs -0 grep -n -H -I -i -E -- "$pattern" | cut -c1-240)
if [[ -n $hits ]]; then
  echo "$hits"
  echo "FAIL: $(printf '%s\n' "$hits" | wc -l) line(s) name a milestone, an issue, a review or a development path"
  exit 1
fi
echo "PASS: ${#files[@]} files speak of the software only"
