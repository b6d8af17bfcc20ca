# Sourced by the llama.cpp checks (check-gguf.sh, check-gguf-tokenizers.sh): installs npm
# node-llama-cpp with its prebuilt CPU binary once into a cache folder outside the repository,
# lean (--omit=optional: none of its GPU builds), and exports LLAMA_MODULES for the .mjs side.
LLAMA_VERSION=${LLAMA_VERSION:-3.22.1}
cache=${QS_LLAMA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/quantscope/node-llama-cpp-$LLAMA_VERSION}
if [ ! -f "$cache/node_modules/node-llama-cpp/package.json" ] ||
  [ ! -f "$cache/node_modules/@node-llama-cpp/linux-x64/package.json" ]; then
  echo "installing node-llama-cpp $LLAMA_VERSION into $cache"
  mkdir -p "$cache"
  echo '{"private": true}' >"$cache/package.json"
  (cd "$cache" && npm install --no-audit --no-fund --silent --omit=optional \
    "node-llama-cpp@$LLAMA_VERSION" "@node-llama-cpp/linux-x64@$LLAMA_VERSION")
fi
export LLAMA_MODULES=$cache/node_modules
