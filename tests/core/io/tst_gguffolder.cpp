// Opening a GGUF file as a model. The key check: llama.cpp's converter output for stories260K
// (F32) evaluates to the perplexity of the Hugging Face checkpoint it was converted from, and
// our own Q8_0 export reopens to the perplexity of the same Q8_0-rounded weights. Both sides run
// the same pipeline on the same windows with fp32 weights that are bit-identical (F32 is copied;
// Q8_0 is decoded by the same d * q on both sides; the RoPE row permutation only moves rows), so
// the perplexities are equal, not merely close: any difference would be a wrong tensor.
#include "TestMain.h"
#include "TestSupport.h"

#include "GgufTestBuilder.h"
#include "export/GgufExporter.h"
#include "io/Checkpoint.h"
#include "io/GgmlDequantize.h"
#include "io/GgufFolder.h"
#include "model/ModelInfo.h"
#include "recipe/RecipeFlags.h"
#include "run/QuantizationRun.h"
#include "tokenize/TokenizerLoader.h"
#include "util/Error.h"

#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QStandardPaths>
#include <QtTest>

#include <cstring>

using namespace ggufbuild;

class TestGgufFolder : public QObject {
    Q_OBJECT

private:
    QString m_hf;
    QString m_gguf;

    static double perplexity(const QString& dir) {
        qs::EvalRequest e;
        e.evaluation.dataPath = qs::test::sharedPath("data/tinystories-eval.txt").toStdString();
        e.evaluation.seqLen = 256;
        return qs::evaluateModelOnText(dir.toStdString(), e).perplexity;
    }

    static void writeFile(const QString& path, const std::string& bytes) {
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly));
        QCOMPARE(f.write(bytes.data(), qint64(bytes.size())), qint64(bytes.size()));
    }

    static std::string refusal(const std::string& path) {
        try {
            qs::resolveModelFolder(path);
        } catch (const qs::Error& e) {
            return e.field() + " | " + e.reason();
        }
        return "accepted";
    }

private Q_SLOTS:
    void initTestCase() {
        m_hf = qs::test::sharedPath("models/stories260K");
        m_gguf = qs::test::sharedPath("models/stories260K-gguf/stories260K.gguf");
        qputenv("XDG_CACHE_HOME", qs::test::tempDir("cache").toUtf8());
        QStandardPaths::setTestModeEnabled(false);
    }

    // Every tensor of the converted folder equals the Hugging Face checkpoint's bit for bit:
    // names mapped back, q/k rows un-permuted; the config's numbers are the HF config's.
    void convertedEqualsHfCheckpoint() {
        const std::string dir = qs::resolveModelFolder(m_gguf.toStdString());
        QVERIFY(QFileInfo(QString::fromStdString(dir)).isDir());
        QCOMPARE(qs::resolveModelFolder(dir), dir); // a folder is itself
        const auto hf = qs::Checkpoint::open(m_hf.toStdString());
        const auto ours = qs::Checkpoint::open(dir);
        // The GGUF stores the tied LM head as its own output.weight.
        std::vector<std::string> expected = hf->tensorNames();
        expected.push_back("lm_head.weight");
        std::sort(expected.begin(), expected.end());
        QCOMPARE(ours->tensorNames(), expected);
        for (const std::string& n : hf->tensorNames()) {
            const qs::TensorInfo& a = hf->info(n);
            const qs::TensorInfo& b = ours->info(n);
            QVERIFY2(a.dtype == b.dtype && a.shape == b.shape, n.c_str());
            QVERIFY2(std::memcmp(hf->fileOf(n).data(a), ours->fileOf(n).data(b), a.byteSize()) == 0,
                     n.c_str());
        }
        const qs::TensorInfo& head = ours->info("lm_head.weight");
        QVERIFY(
            std::memcmp(
                ours->fileOf("lm_head.weight").data(head),
                hf->fileOf("model.embed_tokens.weight").data(hf->info("model.embed_tokens.weight")),
                head.byteSize()) == 0);
        QFile cfg(QString::fromStdString(dir) + "/config.json");
        QVERIFY(cfg.open(QIODevice::ReadOnly));
        const QByteArray text = cfg.readAll();
        for (const char* kv :
             {"\"rms_norm_eps\": 1e-05", "\"num_key_value_heads\": 4", "\"intermediate_size\": 172",
              "\"bos_token_id\": 1", "\"eos_token_id\": 2", "\"rope_theta\": 10000.0"})
            QVERIFY2(text.contains(kv), kv);
    }

    // The end-to-end check (fp32 both; equal, see the header comment). Measured: 5.747063740...
    void perplexityEqualsHf() {
        const double hf = perplexity(m_hf);
        const double gguf =
            perplexity(QString::fromStdString(qs::resolveModelFolder(m_gguf.toStdString())));
        QCOMPARE(gguf, hf);
        QVERIFY(hf > 5.0 && hf < 6.5);
    }

    // The GGUF-derived tokenizers (tokenizer.json natively, tokenizer.model through the
    // sentencepiece plugin where it is built) give the HF tokenizer's ids, on a sample with
    // punctuation, digits, accents and characters outside the vocabulary (byte fallback).
    void tokenizationEqualsHf() {
        const std::string dir = qs::resolveModelFolder(m_gguf.toStdString());
        const std::string text = "Once upon a time, Lily saw 3 big dogs.\nThe caf\xc3\xa9 was "
                                 "closed \xe2\x98\x83 \xf0\x9f\x99\x82 \"Why?\" she asked.";
        const qs::LoadedTokenizer ref =
            qs::TokenizerLoader::load(m_hf.toStdString(), qs::TokenizerBackend::HuggingFace);
        const std::vector<int32_t> expected = ref.tokenizer->encode(text);
        QCOMPARE(expected.front(), 403); // "▁Once", as pitfalls.md records
        const qs::LoadedTokenizer hf =
            qs::TokenizerLoader::load(dir, qs::TokenizerBackend::HuggingFace);
        QCOMPARE(hf.tokenizer->encode(text), expected);
        QVERIFY(hf.addBos);
        QCOMPARE(hf.tokenizer->bosId(), 1);
        QCOMPARE(hf.tokenizer->eosId(), 2);
#if QS_HAVE_SENTENCEPIECE_PLUGIN
        const qs::LoadedTokenizer sp =
            qs::TokenizerLoader::load(dir, qs::TokenizerBackend::SentencePiece);
        QCOMPARE(sp.tokenizer->encode(text), expected);
        QCOMPARE(sp.tokenizer->bosId(), 1);
        QCOMPARE(sp.tokenizer->decode(expected), ref.tokenizer->decode(expected));
#else
        qWarning("sentencepiece plugin not built: tokenizer.model not checked");
#endif
    }

    // Our exporter's Q8_0 GGUF of stories260K reopens to the weights its Q8_0 blocks hold: the
    // reference folder is the HF checkpoint with each weight the exporter quantizes (2-D, rows a
    // multiple of 32) replaced by ggml's Q8_0 rounding of it (ggmlQuantizeRow, then d * q).
    void q8RoundTrip() {
        qs::QuantFlags flags;
        flags.quantScheme = "uint4_wo_32";
        flags.excludeLayers = {"*"}; // nothing fake-quantized: the float weights, Q8_0 rounded
        qs::RunRequest req;
        req.modelDir = m_hf.toStdString();
        req.recipe = qs::recipeFromFlags(flags);
        const QString out = qs::test::tempDir("q8") + "/gguf";
        req.outDir = out.toStdString();
        req.exportFormats = {"gguf"};
        req.exportOptions["gguf_type"] = "q8_0";
        qs::runQuantization(req);
        const std::string opened = qs::resolveModelFolder((out + "/model.gguf").toStdString());
        // What the workbench shows as stored: each linear's ggml type (172-long down_proj rows
        // do not fit 32-blocks and stay F32), the tied head's is the embedding's.
        const qs::ModelInfo info = qs::inspectModel(opened, (out + "/model.gguf").toStdString());
        QCOMPARE(info.stored.format, std::string("GGUF v3"));
        QCOMPARE(int(info.stored.layers.size()), 36);
        QCOMPARE(info.stored.layers.at("model.layers.0.self_attn.q_proj"), std::string("Q8_0"));
        QCOMPARE(info.stored.layers.at("model.layers.4.mlp.down_proj"), std::string("F32"));
        QCOMPARE(info.stored.layers.at("lm_head"), std::string("Q8_0"));

        const QString ref = qs::test::tempDir("q8-ref") + "/ref";
        QVERIFY(QDir().mkpath(ref));
        for (const char* f : {"config.json", "tokenizer.json", "tokenizer.model",
                              "tokenizer_config.json", "special_tokens_map.json"})
            QVERIFY(QFile::copy(m_hf + "/" + f, ref + "/" + f));
        const auto hf = qs::Checkpoint::open(m_hf.toStdString());
        std::vector<qs::TensorBlob> blobs;
        for (const std::string& n : hf->tensorNames()) {
            const qs::TensorInfo& info = hf->info(n);
            QCOMPARE(info.dtype, qs::DType::F32);
            qs::TensorBlob blob{n, info.dtype, info.shape, {}};
            blob.bytes.assign(reinterpret_cast<const char*>(hf->fileOf(n).data(info)),
                              info.byteSize());
            if (info.shape.size() == 2 && info.shape[1] % 32 == 0) {
                float* w = reinterpret_cast<float*>(blob.bytes.data());
                for (int64_t r = 0; r < info.shape[0]; ++r) {
                    float* row = w + r * info.shape[1];
                    const std::string q =
                        qs::ggmlQuantizeRow(row, info.shape[1], qs::GgmlType::Q8_0);
                    qs::ggmlDequantizeRow(reinterpret_cast<const uint8_t*>(q.data()), row,
                                          info.shape[1], qs::GgmlType::Q8_0);
                }
            }
            blobs.push_back(std::move(blob));
        }
        qs::writeSafetensors((ref + "/model.safetensors").toStdString(), blobs);
        const auto a = qs::Checkpoint::open(ref.toStdString());
        const auto b = qs::Checkpoint::open(opened);
        QCOMPARE(b->tensorNames(), a->tensorNames()); // tied: no output.weight written
        for (const std::string& n : a->tensorNames())
            QVERIFY2(std::memcmp(a->fileOf(n).data(a->info(n)), b->fileOf(n).data(b->info(n)),
                                 a->info(n).byteSize()) == 0,
                     n.c_str());
        const double p = perplexity(QString::fromStdString(opened));
        QCOMPARE(p, perplexity(ref));
        QVERIFY(p != perplexity(m_hf)); // the rounding did change the model
    }

    // Unreadable models are refused by name, and nothing is left in the cache.
    void refusals() {
        const QString dir = qs::test::tempDir("bad");
        const std::vector<std::string> llama = {
            kvString("general.architecture", "llama"),
            kvU32("llama.embedding_length", 32),
            kvU32("llama.attention.head_count", 2),
            kvU32("llama.feed_forward_length", 64),
            kvU32("llama.block_count", 1),
            kvF32("llama.attention.layer_norm_rms_epsilon", 1e-5f)};
        writeFile(dir + "/qwen.gguf",
                  gguf({kvString("general.architecture", "qwen2")}, {}, std::string()));
        QCOMPARE(refusal((dir + "/qwen.gguf").toStdString()),
                 std::string("general.architecture | architecture 'qwen2' is not opened from "
                             "GGUF (\"llama\" and \"qwen2moe\" are)"));
        writeFile(dir + "/k.gguf", gguf(llama,
                                        {{"token_embd.weight", {32, 8}, 0, 0},
                                         {"blk.0.attn_q.weight", {256, 1}, 13, 1024}},
                                        std::string(1024 + 176, '\0')));
        QCOMPARE(refusal((dir + "/k.gguf").toStdString()),
                 std::string("blk.0.attn_q.weight | ggml type 13 (Q5_K) not supported"));
        writeFile(dir + "/extra.gguf",
                  gguf(llama,
                       {{"token_embd.weight", {32, 8}, 0, 0}, {"rope_freqs.weight", {8}, 0, 1024}},
                       std::string(1024 + 32, '\0')));
        QVERIFY(refusal((dir + "/extra.gguf").toStdString())
                    .rfind("rope_freqs.weight | has no Hugging Face name", 0) == 0);
        writeFile(dir + "/notok.gguf",
                  gguf(llama, {{"token_embd.weight", {32, 8}, 0, 0}}, std::string(1024, '\0')));
        QCOMPARE(refusal((dir + "/notok.gguf").toStdString()),
                 std::string("tokenizer.ggml.model | missing: the GGUF carries no tokenizer"));
        // A piece that is not UTF-8 cannot go into JSON (fuzz_gguf's first finding: nlohmann's
        // type_error escaped).
        writeFile(dir + "/utf8.gguf",
                  gguf(
                      [&] {
                          std::vector<std::string> kvs = llama;
                          kvs.push_back(kvString("tokenizer.ggml.model", "gpt2"));
                          kvs.push_back(kvStrings("tokenizer.ggml.tokens", {"a", "\xffu"}));
                          kvs.push_back(kvStrings("tokenizer.ggml.merges", {}));
                          return kvs;
                      }(),
                      {{"token_embd.weight", {32, 8}, 0, 0}}, std::string(1024, '\0')));
        QVERIFY(refusal((dir + "/utf8.gguf").toStdString())
                    .rfind("tokenizer.ggml.tokens | not valid UTF-8 text", 0) == 0);
        // Nothing half-written: the cache holds only the folders of files that converted.
        const QString cache = qEnvironmentVariable("XDG_CACHE_HOME");
        QDirIterator it(cache, {"*.tmp-*"}, QDir::Dirs, QDirIterator::Subdirectories);
        QVERIFY2(!it.hasNext(), qPrintable(it.hasNext() ? it.next() : QString()));
    }

    // The CLI takes the .gguf path where it takes MODEL_DIR.
    void cliEvaluatesGguf() {
        const qs::test::CliRun run = qs::test::runCli(
            {"eval", m_gguf, "--data", qs::test::sharedPath("data/tinystories-eval.txt"),
             "--eval-seq-len", "256", "--max-windows", "4", "--json", "--quiet"});
        QVERIFY2(run.exitCode == 0, run.err.constData());
        QVERIFY2(run.out.contains("\"perplexity\""), run.out.constData());
        QVERIFY(run.err.contains("dequantized to fp32"));
        const qs::test::CliRun inspect = qs::test::runCli({"inspect", m_gguf});
        QVERIFY2(inspect.exitCode == 0, inspect.err.constData());
        QVERIFY(inspect.out.contains("tokenizer.model + tokenizer.json"));
    }
};

QS_TEST_GUILESS_MAIN(TestGgufFolder)
#include "tst_gguffolder.moc"
