// Runs a Quantscope ONNX export in onnxruntime (npm onnxruntime-node, CPU) on the evaluation
// protocol of `quantscope-cli eval`: the ids of `quantscope-cli tokenize --data` (BOS once), cut
// into non-overlapping windows of SEQ_LEN tokens (a partial last window dropped), mean NLL of
// tokens 1..L-1 of each window, summed in double. Prints one JSON line.
//
//   node check-onnx.mjs MODEL.onnx IDS.json SEQ_LEN [REFERENCE_LOGITS]
//
// ORT_MODULES names the node_modules folder that holds onnxruntime-node. REFERENCE_LOGITS (one
// float per line, [1, SEQ_LEN, vocab] of the first window, as tests/reference/hf_reference.py
// logits writes them) adds the largest absolute difference of the first window's logits.
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";
import path from "node:path";

const [modelPath, idsPath, seqLenText, referencePath] = process.argv.slice(2);
if (!modelPath || !idsPath || !seqLenText) {
  console.error("usage: node check-onnx.mjs MODEL.onnx IDS.json SEQ_LEN [REFERENCE_LOGITS]");
  process.exit(2);
}
const modules = process.env.ORT_MODULES;
if (!modules) {
  console.error("ORT_MODULES is not set (the node_modules folder holding onnxruntime-node)");
  process.exit(2);
}
const ort = createRequire(path.join(modules, "..", "package.json"))("onnxruntime-node");

const ids = JSON.parse(readFileSync(idsPath, "utf8")).ids;
const L = Number(seqLenText);
// MAX_WINDOWS: only the first N windows, as `eval --max-windows N`.
const maxWindows = Number(process.env.MAX_WINDOWS || 0);
const windows = maxWindows > 0 ? Math.min(maxWindows, Math.floor(ids.length / L))
                               : Math.floor(ids.length / L);
if (windows < 1) {
  console.error(`${idsPath}: ${ids.length} tokens, fewer than one window of ${L}`);
  process.exit(2);
}

// One thread: the machine is shared and results must not depend on the thread count.
// ORT_OPT_LEVEL: onnxruntime's graph optimization level (disabled, basic, extended, all).
const session = await ort.InferenceSession.create(modelPath, {
  intraOpNumThreads: 1,
  interOpNumThreads: 1,
  graphOptimizationLevel: process.env.ORT_OPT_LEVEL || "all",
});

let nll = 0;
let maxDiff = null;
let firstLogits = null;
for (let w = 0; w < windows; ++w) {
  const window = ids.slice(w * L, (w + 1) * L);
  const input = new ort.Tensor("int64", BigInt64Array.from(window.map(BigInt)), [1, L]);
  const out = await session.run({ input_ids: input });
  const logits = out.logits.data;
  const vocab = out.logits.dims[2];
  if (w === 0) firstLogits = logits;
  for (let t = 0; t + 1 < L; ++t) {
    const row = logits.subarray(t * vocab, (t + 1) * vocab);
    let max = -Infinity;
    for (let v = 0; v < vocab; ++v) max = Math.max(max, row[v]);
    let sum = 0;
    for (let v = 0; v < vocab; ++v) sum += Math.exp(row[v] - max);
    nll -= row[window[t + 1]] - max - Math.log(sum);
  }
}
if (referencePath) {
  const reference = readFileSync(referencePath, "utf8").trim().split("\n").map(Number);
  if (reference.length !== firstLogits.length) {
    console.error(`${referencePath}: ${reference.length} logits, expected ${firstLogits.length}`);
    process.exit(2);
  }
  maxDiff = 0;
  for (let i = 0; i < reference.length; ++i)
    maxDiff = Math.max(maxDiff, Math.abs(reference[i] - firstLogits[i]));
}
const meanNll = nll / (windows * (L - 1));
console.log(JSON.stringify({
  windows,
  seq_len: L,
  mean_nll: meanNll,
  perplexity: Math.exp(meanNll),
  max_abs_logit_diff: maxDiff,
}));
