#!/usr/bin/env bash
# llama.cpp, the consumer of `quantize --format gguf`, must tokenize and generate as Quantscope
# does from GGUF files whose tokenizer metadata the exporter took from a tokenizer.json (no
# sentencepiece tokenizer.model; core/export/GgufVocab): a synthetic model's sentencepiece-style
# BPE (llama.cpp's "llama" tokenizer) and byte-level BPEs with each pre-tokenizer llama.cpp names
# (scripts/make-bytelevel-tokenizer.py: gpt-2, llama-bpe, qwen2). Fails (exit 1) on any
# difference.
#
#   scripts/check-gguf-tokenizers.sh [BUILD_DIR]   (default build/release; needs ../shared or
#                                                   QS_SHARED_DIR for the texts)
#
# Per file (F32, so both engines hold the same fp32 weights): llama.cpp's ids of three texts
# (40 TinyStories lines, 300 WikiText-2 lines, a mixed text with digits, contractions, tabs,
# runs of spaces, accents, CJK and an emoji) against `quantscope-cli tokenize --text` on the
# source folder, without BOS; and for three prompts the ids with BOS and 24 greedy tokens
# against `quantscope-cli generate --json` on the source folder. Ids only: the detokenized text
# of a random model can hold byte runs that are not UTF-8, which Hugging Face's ByteFallback
# decoder and llama.cpp render differently (docs/exporters.md).
#
# llama.cpp is npm node-llama-cpp with its prebuilt CPU binary, installed once into
# ${XDG_CACHE_HOME:-~/.cache}/quantscope/node-llama-cpp-$LLAMA_VERSION (as scripts/check-gguf.sh
# on branch h/llamacheck does), run with one thread and no GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
cli=$build/bin/quantscope-cli
shared=${QS_SHARED_DIR:-../shared}
for f in "$cli" "$shared/data/tinystories-eval.txt" "$shared/data/wikitext2-test.txt"; do
  if [ ! -e "$f" ]; then
    echo "check-gguf-tokenizers: $f is missing (set QS_SHARED_DIR or build first)" >&2
    exit 1
  fi
done
source scripts/install-node-llama-cpp.sh

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
qs() { XDG_CACHE_HOME=$tmp/cache "$cli" "$@"; }
max_new=24
prompts=("Once upon a time" "The little dog" "Tom and Sue")
sed -n 1,40p "$shared/data/tinystories-eval.txt" > "$tmp/text.stories"
sed -n 1,300p "$shared/data/wikitext2-test.txt" > "$tmp/text.wiki"
printf '%s\n' "In 2024 there were 1234567 tokens; I'll say it's 3.14 and WE'VE done 42 things." \
  $'Ünïcödé façade naïve café, 你好 🦙!  Two  spaces,\ttab and' "newline   end." > "$tmp/text.mixed"
echo '{"format": "quantscope-recipe", "version": 1}' > "$tmp/fp32.json"

shape=(--preset tiny --hidden 128 --intermediate 256 --layers 2 --heads 4 --kv-heads 2)
labels=(synth-sentencepiece-bpe bytelevel-gpt2 bytelevel-llama3 bytelevel-qwen2)
for label in "${labels[@]}"; do
  qs synth "${shape[@]}" --vocab 768 --out "$tmp/$label" --json > /dev/null
  case $label in
    bytelevel-*) /usr/bin/python3 scripts/make-bytelevel-tokenizer.py "$tmp/$label" "${label#bytelevel-}" > /dev/null ;;
  esac
  qs quantize "$tmp/$label" --recipe "$tmp/fp32.json" --format gguf --gguf-type f32 \
    --out "$tmp/$label-gguf" --quiet > /dev/null
  for name in stories wiki mixed; do
    qs tokenize "$tmp/$label" --text "$(cat "$tmp/text.$name")" --json > "$tmp/$label.text.$name.json"
  done
  for i in "${!prompts[@]}"; do
    qs generate "$tmp/$label" --prompt "${prompts[$i]}" --max-new-tokens $max_new --threads 1 \
      --json 2> /dev/null > "$tmp/$label.prompt.$i.json"
  done
done
node -e '
  const fs = require("fs");
  const [tmp, maxNew, ...labels] = process.argv.slice(1);
  const models = labels.map((label) => ({
    label, file: `${tmp}/${label}-gguf/model.gguf`,
    texts: ["stories", "wiki", "mixed"].map((name) => ({
      name, text: fs.readFileSync(`${tmp}/text.${name}`, "utf8").replace(/\n+$/, "") /* as $(cat) */,
      ids: JSON.parse(fs.readFileSync(`${tmp}/${label}.text.${name}.json`, "utf8")).ids})),
    prompts: [0, 1, 2].map((i) => JSON.parse(fs.readFileSync(`${tmp}/${label}.prompt.${i}.json`, "utf8")))}));
  console.log(JSON.stringify({max_new_tokens: Number(maxNew), models}));
' "$tmp" $max_new "${labels[@]}" > "$tmp/cases.json"
node scripts/check-gguf-tokenizers.mjs "$tmp/cases.json"
