#!/usr/bin/env bash
# The source tree's layout rules, checked (CTest entry layout_test, label
# `layout`):
#  - a source file of the library and the CLI (*.cpp *.hpp *.cu *.cuh under
#    core devices checkpoint net ops comm graph actors master client tools python) has
#    at most 600 lines; under master/, at most 450;
#  - such a file includes the project's headers as "actorflow/<folder>/..."
#    with <folder> one of the layers, and nothing else in quotes: a header
#    reached by a relative path or by its folder alone would compile here and
#    not where the headers are installed (include/actorflow/<folder>). The
#    CLI's own headers, which are not installed, are "tools/..." (as tests
#    include "tests/..."), from tools/ only. The Python module's C++
#    (python/, above client/) also includes its own headers by name
#    ("bindings.hpp"), which are not installed either.
# Usage: layout_test.sh SOURCE_DIR. Prints every offending file with the rule
# it breaks; exits 1 when there is one, 0 when there is none.
set -u

src=${1:?usage: layout_test.sh SOURCE_DIR}
cd "$src" || exit 2

layers=(core devices checkpoint net ops comm graph actors master client)
folders=("${layers[@]}" tools python)
max_lines=600
max_master_lines=450

for f in "${folders[@]}"; do
  [ -d "$f" ] || { echo "layout: no folder $f under $src"; exit 2; }
done

layer_pattern=$(IFS='|'; echo "${layers[*]}")
failures=0
report() {
  echo "$1"
  failures=$((failures + 1))
}

# Regular files only: links (an actorflow/<folder> link, if any) are not followed.
while IFS= read -r -d '' file; do
  file=${file#./}
  # Lines, counting a last one without its newline.
  lines=$(awk 'END { print NR }' "$file")
  if [ "$lines" -gt "$max_lines" ]; then
    report "$file: $lines lines, over $max_lines"
  elif [[ $file == master/* ]] && [ "$lines" -gt "$max_master_lines" ]; then
    report "$file: $lines lines, over $max_master_lines (master/)"
  fi
  allowed="actorflow/($layer_pattern)/"
  [[ $file == tools/* ]] && allowed="(actorflow/($layer_pattern)|tools)/"
  [[ $file == python/* ]] && allowed="(actorflow/($layer_pattern)/|[a-z_]+\\.hpp\")"
  while IFS= read -r hit; do
    report "$file:$hit (a project header is included as \"actorflow/<folder>/...\")"
  done < <(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$file" |
           grep -vE "#[[:space:]]*include[[:space:]]*\"$allowed")
done < <(find "${folders[@]}" -type f \( -name '*.cpp' -o -name '*.hpp' -o -name '*.cu' -o -name '*.cuh' \) -print0 |
         sort -z)

if [ "$failures" -gt 0 ]; then
  echo "layout: $failures problem(s)"
  exit 1
fi
echo "layout: every file keeps the rules"
