// The llama.cpp side of scripts/check-gguf-tokenizers.sh: for each GGUF file, llama.cpp's
// tokenization of each text (no BOS) and of each prompt (BOS as the file asks), and its greedy
// continuation of each prompt, against Quantscope's ids (`tokenize --json`, `generate --json`);
// prints a table and exits 1 on any difference.
//
//   node check-gguf-tokenizers.mjs CASES.json
//
// CASES.json: {"max_new_tokens": N, "models": [{"label", "file", "texts": [{"name", "text",
// "ids"}], "prompts": [{"prompt", "prompt_ids", "new_ids"}]}]}. LLAMA_MODULES names the
// node_modules folder holding node-llama-cpp.
import { readFileSync } from "node:fs";
import path from "node:path";

const [casesPath] = process.argv.slice(2);
const modules = process.env.LLAMA_MODULES;
if (!casesPath || !modules) {
  console.error("usage: LLAMA_MODULES=.../node_modules node check-gguf-tokenizers.mjs CASES.json");
  process.exit(2);
}
const { getLlama } = await import(path.join(modules, "node-llama-cpp", "dist", "index.js"));
const { max_new_tokens: maxNew, models } = JSON.parse(readFileSync(casesPath, "utf8"));
// One thread, no GPU, the prebuilt CPU binary (docs/pitfalls).
const llama = await getLlama({ gpu: false, build: "never", maxThreads: 1, logLevel: "error" });

// The first index where two id lists differ, or -1.
const firstDifference = (a, b) => {
  for (let i = 0; i < Math.max(a.length, b.length); ++i) if (a[i] !== b[i]) return i;
  return -1;
};
let failed = false;
const rows = [];
for (const m of models) {
  const model = await llama.loadModel({ modelPath: m.file });
  for (const t of m.texts) {
    const ids = model.tokenize(t.text);
    const k = firstDifference(ids, t.ids);
    failed ||= k >= 0;
    rows.push([m.label, `text ${t.name}`, `${t.ids.length} tokens`,
               k < 0 ? "equal" : `FAIL from token ${k}: llama.cpp ${ids.slice(k, k + 5)}, quantscope ${t.ids.slice(k, k + 5)}`]);
  }
  // An F32 KV cache and no flash attention: attention in fp32, as Quantscope computes it.
  const context = await model.createContext({ threads: 1, contextSize: 256, flashAttention: false,
                                              experimentalKvCacheKeyType: "F32",
                                              experimentalKvCacheValueType: "F32" });
  for (const p of m.prompts) {
    const promptIds = [...(model.tokens.shouldPrependBosToken ? [model.tokens.bos] : []),
                       ...model.tokenize(p.prompt)];
    const sequence = context.getSequence();
    const ids = [];
    for await (const token of sequence.evaluate(promptIds, { temperature: 0, yieldEogToken: true })) {
      ids.push(token);
      if (ids.length >= maxNew || model.isEogToken(token)) break;
    }
    sequence.dispose();
    const kp = firstDifference(promptIds, p.prompt_ids);
    const kg = firstDifference(ids, p.new_ids);
    failed ||= kp >= 0 || kg >= 0;
    rows.push([m.label, `generate ${JSON.stringify(p.prompt)}`, `${p.prompt_ids.length}+${p.new_ids.length} tokens`,
               kp >= 0 ? `FAIL prompt ids: llama.cpp ${promptIds}, quantscope ${p.prompt_ids}`
               : kg >= 0 ? `FAIL step ${kg}: llama.cpp ${ids[kg]}, quantscope ${p.new_ids[kg]}` : "equal"]);
  }
  await context.dispose();
  await model.dispose();
}
const widths = [0, 1, 2].map((c) => Math.max(...rows.map((r) => r[c].length)));
console.log(["file".padEnd(widths[0]), "check".padEnd(widths[1]), "size".padEnd(widths[2]), "result"].join("  "));
for (const r of rows) console.log([r[0].padEnd(widths[0]), r[1].padEnd(widths[1]), r[2].padEnd(widths[2]), r[3]].join("  "));
process.exit(failed ? 1 : 0);
