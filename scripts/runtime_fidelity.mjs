// The runtimes' side of scripts/check-fidelity.sh: the logits of onnxruntime (npm
// onnxruntime-node) or llama.cpp (npm node-llama-cpp) on the evaluation windows, written as
// scripts/runtime_fidelity.py reads them (raw float32 [WINDOWS, SEQ_LEN - 1, vocab]: row t of a
// window is the prediction of its token t + 1). Prints one JSON line about the run.
//
//   node runtime_fidelity.mjs onnxruntime MODEL.onnx IDS.json SEQ_LEN WINDOWS OUT
//   node runtime_fidelity.mjs llama.cpp MODEL.gguf IDS.json SEQ_LEN WINDOWS OUT
//
// onnxruntime: ORT_MODULES names its node_modules folder; ORT_OPT_LEVEL its graph optimization
// level (basic: the graph as written; all: its default, with QDQ fused into integer kernels).
// llama.cpp: LLAMA_MODULES names node-llama-cpp's node_modules folder. Its JSON line also lists
// `q8_rounded`, the Hugging Face names of the weights whose matmul ggml computes on Q8_0-rounded
// activations (Q8_0 and Q4_0 tensors), for the reference forward that emulates that rounding.
import { createRequire } from "node:module";
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";

const [runtime, modelPath, idsPath, seqLenText, windowsText, outPath] = process.argv.slice(2);
if (!["onnxruntime", "llama.cpp"].includes(runtime) || !outPath) {
  console.error("usage: node runtime_fidelity.mjs onnxruntime|llama.cpp MODEL IDS.json SEQ_LEN WINDOWS OUT");
  process.exit(2);
}
const L = Number(seqLenText);
const W = Number(windowsText);
const ids = JSON.parse(readFileSync(idsPath, "utf8")).ids;
if (ids.length < W * L) {
  console.error(`${idsPath}: ${ids.length} ids, fewer than ${W} windows of ${L}`);
  process.exit(2);
}
const windowIds = (w) => ids.slice(w * L, (w + 1) * L);

// rows[w] = Float32Array((L - 1) * vocab), filled by the runtime.
let vocab = 0;
const rows = [];
const info = { runtime, file: modelPath, windows: W, seq_len: L };

if (runtime === "onnxruntime") {
  const modules = process.env.ORT_MODULES;
  if (!modules) {
    console.error("ORT_MODULES is not set (the node_modules folder holding onnxruntime-node)");
    process.exit(2);
  }
  const ort = createRequire(path.join(modules, "..", "package.json"))("onnxruntime-node");
  info.opt_level = process.env.ORT_OPT_LEVEL || "all";
  // One thread: the machine is shared, and results must not depend on the thread count.
  const session = await ort.InferenceSession.create(modelPath, {
    intraOpNumThreads: 1, interOpNumThreads: 1, graphOptimizationLevel: info.opt_level });
  for (let w = 0; w < W; ++w) {
    const input = new ort.Tensor("int64", BigInt64Array.from(windowIds(w).map(BigInt)), [1, L]);
    const out = await session.run({ input_ids: input });
    vocab = out.logits.dims[2];
    // The whole window in one call (no KV cache in the graph); the last row predicts nothing scored.
    rows.push(Float32Array.from(out.logits.data.subarray(0, (L - 1) * vocab)));
  }
} else {
  const modules = process.env.LLAMA_MODULES;
  if (!modules) {
    console.error("LLAMA_MODULES is not set (the node_modules folder holding node-llama-cpp)");
    process.exit(2);
  }
  const { getLlama, readGgufFileInfo } =
    await import(path.join(modules, "node-llama-cpp", "dist", "index.js"));
  info.q8_rounded = await q8RoundedInputs(readGgufFileInfo, modelPath);
  // As scripts/check-gguf.mjs: CPU, one thread (llama.cpp's default of 4 threads on 2 cores is a
  // thousand times slower), the prebuilt binary (never a compiler run); F32 KV cache and no flash
  // attention, so attention runs in fp32 as in the other runtimes (the default F16 cache rounds K
  // and V to f16, which would be counted against the file).
  const llama = await getLlama({ gpu: false, build: "never", maxThreads: 1, logLevel: "error" });
  const model = await llama.loadModel({ modelPath });
  const context = await model.createContext({
    threads: 1, contextSize: L, batchSize: L, flashAttention: false,
    experimentalKvCacheKeyType: "F32", experimentalKvCacheValueType: "F32" });
  const sequence = context.getSequence();
  for (let w = 0; w < W; ++w) {
    // An empty history per window: each window starts at position 0 with no context, as in eval.
    await sequence.clearHistory();
    // controlledEvaluate returns, for each token asked for, llama.cpp's raw logits of the next
    // token (node-llama-cpp 3.22.1 `generateNext.logits`: the candidates after the sampler
    // chain; at temperature 0 that chain is the greedy sampler alone, which selects and changes
    // no logit). Every vocabulary entry comes back, as (token, logit) pairs.
    const window = windowIds(w);
    const input = window.map((t, i) => (i + 1 < L
      ? [t, { generateNext: { logits: true, options: { temperature: 0 } } }] : t));
    const out = await sequence.controlledEvaluate(input);
    vocab ||= out[0]?.next?.logits?.size ?? 0;
    const row = new Float32Array((L - 1) * vocab).fill(NaN);
    for (let t = 0; t + 1 < L; ++t) {
      const logits = out[t]?.next?.logits;
      if (!logits || logits.size !== vocab) {
        console.error(`${modelPath}: window ${w} position ${t}: ${logits?.size ?? 0} logits, ` +
                      `vocab ${vocab}`);
        process.exit(1);
      }
      for (const [token, logit] of logits) row[t * vocab + token] = logit;
    }
    rows.push(row);
  }
  sequence.dispose();
  await context.dispose();
  await model.dispose();
}

const all = new Float32Array(W * (L - 1) * vocab);
rows.forEach((row, w) => all.set(row, w * (L - 1) * vocab));
writeFileSync(outPath, Buffer.from(all.buffer));
info.vocab = vocab;
console.log(JSON.stringify(info));

// Hugging Face names of the weights ggml's CPU backend multiplies with Q8_0-rounded inputs: Q4_0
// and Q8_0 tensors (their vec_dot_type is Q8_0; F32 weights take fp32 inputs). Other quantized
// types round their inputs otherwise (Q4_1 to Q8_1): refused, since the emulation would be wrong.
async function q8RoundedInputs(readGgufFileInfo, file) {
  const hfNames = { attn_q: "self_attn.q_proj", attn_k: "self_attn.k_proj", attn_v: "self_attn.v_proj",
                    attn_output: "self_attn.o_proj", ffn_gate: "mlp.gate_proj", ffn_up: "mlp.up_proj",
                    ffn_down: "mlp.down_proj" };
  const names = [];
  for (const t of (await readGgufFileInfo(file)).tensorInfo) {
    if (t.ggmlType === 0 || t.ggmlType === 1) continue; // F32, F16
    if (t.ggmlType !== 2 && t.ggmlType !== 8)
      throw new Error(`${file}: ${t.name} has ggml type ${t.ggmlType}, not Q4_0/Q8_0 (not emulated)`);
    const block = /^blk\.(\d+)\.(\w+)\.weight$/.exec(t.name);
    if (block && hfNames[block[2]])
      names.push(`model.layers.${block[1]}.${hfNames[block[2]]}.weight`);
    else if (t.name === "token_embd.weight") names.push("model.embed_tokens.weight");
    else if (t.name === "output.weight") names.push("lm_head.weight");
    else throw new Error(`${file}: quantized tensor ${t.name} has no Hugging Face name here`);
  }
  return names;
}
