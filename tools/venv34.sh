#!/usr/bin/env bash
# The 3.4 lane's virtualenv: this checkout installed editable with its test extras beside the newest
# Airflow 3.4 the registry serves (a pre-release until the final one appears; then that one, with no
# change here). Usage: tools/venv34.sh VENV. Airflow's three distributions are pinned together.
set -euo pipefail
venv="${1:?usage: tools/venv34.sh VENV}"
python="${PYTHON:-python3}"
test -x "$venv/bin/python" || "$python" -m venv "$venv"
"$venv/bin/pip" install --quiet --upgrade pip
# The newest 3.4.* (finals sort above their pre-releases), asked of the registry pip is set up for.
version=$("$venv/bin/pip" index versions apache-airflow --pre 2>/dev/null \
    | sed -n 's/^Available versions: //p' | tr ',' '\n' | tr -d ' ' \
    | "$venv/bin/python" -c '
import sys
from pip._vendor.packaging.version import Version  # the copy inside pip: a new venv has no other
found = [Version(v) for v in sys.stdin.read().split() if v.startswith("3.4.")]
print(max(found) if found else "")
')
if [ -z "$version" ]; then
    echo "tools/venv34.sh: the registry serves no apache-airflow 3.4.*" >&2
    exit 1
fi
# apache-airflow 3.M.P ships with apache-airflow-core 3.M.P and apache-airflow-task-sdk 1.M.P.
sdk="1.${version#3.}"
constraints="$venv/airflow-constraints.txt"
printf 'apache-airflow==%s\napache-airflow-core==%s\napache-airflow-task-sdk==%s\n' \
    "$version" "$version" "$sdk" > "$constraints"
echo "tools/venv34.sh: apache-airflow $version (core $version, task-sdk $sdk) into $venv"
"$venv/bin/pip" install --quiet -c "$constraints" "apache-airflow==$version" -e '.[test]'
