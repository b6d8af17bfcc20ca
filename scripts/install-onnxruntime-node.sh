# Sourced by the onnxruntime checks (check-onnx.sh, check-fidelity.sh): installs npm
# onnxruntime-node (CPU) once into a cache folder outside the repository, with
# ONNXRUNTIME_NODE_INSTALL=skip (its postinstall otherwise fetches optional GPU files), and exports
# ORT_MODULES for the .mjs side.
ORT_VERSION=${ORT_VERSION:-1.30.0}
cache=${QS_ORT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/quantscope/onnxruntime-node-$ORT_VERSION}
if [ ! -f "$cache/node_modules/onnxruntime-node/package.json" ]; then
  echo "installing onnxruntime-node $ORT_VERSION into $cache"
  mkdir -p "$cache"
  echo '{"private": true}' > "$cache/package.json"
  (cd "$cache" && ONNXRUNTIME_NODE_INSTALL=skip npm install --no-audit --no-fund --silent \
    "onnxruntime-node@$ORT_VERSION")
fi
export ORT_MODULES=$cache/node_modules
