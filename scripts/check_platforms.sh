#!/usr/bin/env bash
# Does `pip install 'kpipe[data,serve]'` resolve on each platform TensorFlow supports, with every package
# that contains compiled code available as a wheel (pure-Python packages may come as sources)?
# One line per platform and Python version: "ok", or the reason resolution fails. Needs the package
# index (not a unit test).
#
# pip cannot answer this: its --platform picks wheels but evaluates environment markers such as
# `platform_system != 'Windows'` for the machine it runs on (pypa/pip#6117), so it reports a
# Windows-only marker as unresolvable. uv's resolver takes the target platform for both.
#
#   bash scripts/check_platforms.sh            # from anywhere; installs uv if missing
#   PYTHONS="3.11 3.12" bash scripts/check_platforms.sh
set -u
cd "$(dirname "$0")/.."
PLATFORMS=${PLATFORMS:-"x86_64-pc-windows-msvc aarch64-apple-darwin x86_64-manylinux_2_28 aarch64-manylinux_2_28"}
PYTHONS=${PYTHONS:-"3.11 3.12 3.13"}
command -v uv >/dev/null || python -m pip install --quiet uv

# Packages of this environment's install that contain compiled code must be wheels everywhere.
native=$(python - <<'PY'
import importlib.metadata as md
names = set()
for dist in md.distributions():
    files = dist.files or []
    if any(str(f).endswith((".so", ".pyd", ".dylib")) for f in files):
        names.add(dist.metadata["Name"].lower())
print(" ".join(f"--only-binary {n}" for n in sorted(names)))
PY
)
status=0
for python in $PYTHONS; do
  for platform in $PLATFORMS; do
    log=$(uv pip compile pyproject.toml --extra data --extra serve --quiet --python-platform "$platform" \
            --python-version "$python" $native -o /dev/null 2>&1)
    if [ $? -eq 0 ]; then
      printf '%-26s python %-5s ok\n' "$platform" "$python"
    else
      status=1
      printf '%-26s python %-5s FAILS: %s\n' "$platform" "$python" "$(echo "$log" | grep -m1 'cause:' || echo "$log" | grep -m1 'error')"
    fi
  done
done
exit $status
