#include "CliCommon.h"

#include "synth/SyntheticModel.h"

#include <QElapsedTimer>

#include <algorithm>
#include <cstdio>

namespace qs::cli {

namespace {

// Named shapes; explicit size flags override a preset's values.
SyntheticModelOptions preset(const QString& name) {
    SyntheticModelOptions o;
    if (name == "tiny") {
        // the defaults: hidden 256, 4 layers
    } else if (name == "100m") {
        o.hiddenSize = 768, o.intermediateSize = 2048, o.numLayers = 12, o.numHeads = 12,
        o.numKvHeads = 12, o.vocabSize = 16000, o.maxPositions = 2048;
    } else if (name == "7b") {
        o.hiddenSize = 4096, o.intermediateSize = 11008, o.numLayers = 32, o.numHeads = 32,
        o.numKvHeads = 32, o.vocabSize = 32000, o.maxPositions = 4096, o.dtype = "BF16",
        o.shardBytes = int64_t(5) << 30;
    } else if (name == "70b") {
        o.hiddenSize = 8192, o.intermediateSize = 28672, o.numLayers = 80, o.numHeads = 64,
        o.numKvHeads = 8, o.vocabSize = 32000, o.maxPositions = 4096, o.dtype = "BF16",
        o.shardBytes = int64_t(5) << 30;
    } else if (name == "mixtral-8x7b") {
        // Mixtral-8x7B's shape: 46.7B parameters, 8 experts of which 2 run per token.
        o.arch = "mixtral";
        o.hiddenSize = 4096, o.intermediateSize = 14336, o.numLayers = 32, o.numHeads = 32,
        o.numKvHeads = 8, o.vocabSize = 32000, o.maxPositions = 32768, o.dtype = "BF16",
        o.numExperts = 8, o.expertsPerToken = 2, o.shardBytes = int64_t(5) << 30;
    } else if (name == "qwen3-30b-a3b") {
        // Qwen3-30B-A3B's shape: 30.5B parameters, 128 experts of which 8 run per token.
        o.arch = "qwen3_moe";
        o.hiddenSize = 2048, o.intermediateSize = 6144, o.numLayers = 48, o.numHeads = 32,
        o.numKvHeads = 4, o.headDim = 128, o.vocabSize = 151936, o.maxPositions = 40960,
        o.dtype = "BF16", o.numExperts = 128, o.expertsPerToken = 8, o.expertIntermediateSize = 768,
        o.shardBytes = int64_t(5) << 30;
    } else if (name == "qwen1.5-moe-a2.7b") {
        // Qwen1.5-MoE-A2.7B's shape: 14.3B parameters, 60 experts of which 4 run per token,
        // and a shared expert of 5632.
        o.arch = "qwen2_moe";
        o.hiddenSize = 2048, o.intermediateSize = 5632, o.numLayers = 24, o.numHeads = 16,
        o.numKvHeads = 16, o.vocabSize = 151936, o.maxPositions = 8192, o.dtype = "BF16",
        o.numExperts = 60, o.expertsPerToken = 4, o.expertIntermediateSize = 1408,
        o.sharedExpertIntermediateSize = 5632, o.shardBytes = int64_t(5) << 30;
    } else if (name == "phi-2") {
        // Phi-2's shape: 2.78B parameters, head 80 of which 32 rotate.
        o.arch = "phi";
        o.hiddenSize = 2560, o.intermediateSize = 10240, o.numLayers = 32, o.numHeads = 32,
        o.numKvHeads = 32, o.vocabSize = 51200, o.maxPositions = 2048, o.dtype = "BF16",
        o.shardBytes = int64_t(5) << 30;
    } else if (name == "gpt-j-6b") {
        // GPT-J-6B's shape: 6.05B parameters, rotary_dim 64 of head 256.
        o.arch = "gptj";
        o.hiddenSize = 4096, o.intermediateSize = 16384, o.numLayers = 28, o.numHeads = 16,
        o.numKvHeads = 16, o.vocabSize = 50400, o.maxPositions = 2048, o.dtype = "BF16",
        o.shardBytes = int64_t(5) << 30;
    } else if (name == "command-r") {
        // c4ai-command-r-v01's shape: 35B parameters, tied 256000-token embedding.
        o.arch = "cohere";
        o.hiddenSize = 8192, o.intermediateSize = 22528, o.numLayers = 40, o.numHeads = 64,
        o.numKvHeads = 64, o.vocabSize = 256000, o.maxPositions = 8192, o.dtype = "BF16",
        o.tieWordEmbeddings = true, o.shardBytes = int64_t(5) << 30;
    } else {
        throw UsageError{"--preset: unknown preset '" + name.toStdString() +
                         "' (tiny, 100m, 7b, 70b, mixtral-8x7b, qwen3-30b-a3b, "
                         "qwen1.5-moe-a2.7b, phi-2, "
                         "gpt-j-6b, command-r)"};
    }
    return o;
}

QString architectureList() {
    QStringList names;
    for (const std::string& a : syntheticArchitectures())
        names << QString::fromStdString(a);
    return names.join(QStringLiteral(", "));
}

} // namespace

int runSynth(const QStringList& args) {
    QCommandLineParser parser;
    parser.addOption({"arch", "Family: " + architectureList() + " (default llama).", "ARCH"});
    parser.addOption({"out", "Output folder.", "DIR"});
    parser.addOption({"preset",
                      "Shape preset: tiny, 100m, 7b, 70b (any dense family), mixtral-8x7b, "
                      "qwen3-30b-a3b, qwen1.5-moe-a2.7b (mixture of experts), phi-2, gpt-j-6b or "
                      "command-r "
                      "(parallel attention); the named models' presets set --arch.",
                      "NAME", "tiny"});
    parser.addOption({"hidden", "hidden_size.", "N"});
    parser.addOption({"intermediate", "intermediate_size (ffn_dim for OPT).", "N"});
    parser.addOption({"layers", "num_hidden_layers.", "N"});
    parser.addOption({"heads", "num_attention_heads.", "N"});
    parser.addOption({"kv-heads", "num_key_value_heads (not opt).", "N"});
    parser.addOption({"head-dim", "head_dim when it is not hidden / heads (not opt).", "N"});
    parser.addOption({"experts", "Experts per MoE layer (mixtral, qwen3_moe, qwen2_moe).", "N"});
    parser.addOption({"experts-per-token", "Experts each token is routed to.", "N"});
    parser.addOption({"expert-intermediate",
                      "Each expert's intermediate size (qwen3_moe, qwen2_moe; mixtral uses "
                      "--intermediate).",
                      "N"});
    parser.addOption({"shared-expert-intermediate",
                      "The shared expert's intermediate size (qwen2_moe; default "
                      "--intermediate).",
                      "N"});
    parser.addOption({"vocab", "vocab_size.", "N"});
    parser.addOption({"max-positions", "max_position_embeddings.", "N"});
    parser.addOption({"dtype", "Stored dtype: F32, BF16 or F16.", "DTYPE"});
    parser.addOption({"seed", "Random seed (same seed, same bytes).", "N", "0"});
    parser.addOption({"tie-embeddings", "Tie lm_head to the embedding (llama)."});
    parser.addOption({"sparse", "Headers only: weights left as zero holes (benchmarks)."});
    parser.addOption({"shard-size", "Split into shards of about N bytes (0: one file).", "BYTES"});
    parser.addOption({"outlier-channels",
                      "Comma-separated hidden channels with planted "
                      "activation outliers.",
                      "LIST", "3,17"});
    parser.addOption({"outlier-gain", "Gain of the planted outlier channels.", "X", "40"});
    parser.addOption({"json", "Print a machine-readable summary."});
    addThreadsOption(parser);
    if (!parseOrHelp(parser, args,
                     "Writes a valid Hugging Face checkpoint with deterministic random weights of "
                     "realistic statistics, planted activation-outlier channels and a tokenizer."))
        return 0;
    if (!parser.isSet("out"))
        throw UsageError{"--out DIR is required"};
    applyThreadsOption(parser);
    SyntheticModelOptions o = preset(parser.value("preset"));
    if (parser.isSet("arch")) {
        const std::string arch = parser.value("arch").toStdString();
        const auto& known = syntheticArchitectures();
        if (std::find(known.begin(), known.end(), arch) == known.end())
            throw UsageError{"--arch: expected one of " + architectureList().toStdString() +
                             ", got '" + arch + "'"};
        const bool namedPreset = o.arch != "llama"; // a named model's shape sets its family
        if (namedPreset && arch != o.arch)
            throw UsageError{"--arch " + arch + " contradicts --preset " +
                             parser.value("preset").toStdString() + " (a " + o.arch + " shape)"};
        o.arch = arch;
    }
    o.outDir = parser.value("out").toStdString();
    auto setInt = [&](const char* opt, int64_t& field, int64_t max) {
        if (parser.isSet(opt))
            field = intOption(parser, opt, 1, max);
    };
    setInt("hidden", o.hiddenSize, 1 << 16);
    setInt("intermediate", o.intermediateSize, 1 << 18);
    setInt("layers", o.numLayers, 1024);
    setInt("heads", o.numHeads, 1024);
    setInt("kv-heads", o.numKvHeads, 1024);
    setInt("vocab", o.vocabSize, 1 << 20);
    setInt("max-positions", o.maxPositions, 1 << 20);
    setInt("head-dim", o.headDim, 1 << 12);
    setInt("experts", o.numExperts, 1 << 12);
    setInt("experts-per-token", o.expertsPerToken, 1 << 12);
    setInt("expert-intermediate", o.expertIntermediateSize, 1 << 18);
    setInt("shared-expert-intermediate", o.sharedExpertIntermediateSize, 1 << 18);
    setInt("shard-size", o.shardBytes, int64_t(1) << 50);
    if (o.arch == "opt" || !parser.isSet("kv-heads"))
        o.numKvHeads = std::min(o.numKvHeads, o.numHeads);
    if (o.arch == "opt")
        o.numKvHeads = o.numHeads;
    if (parser.isSet("dtype"))
        o.dtype = parser.value("dtype").toUpper().toStdString();
    o.seed = uint64_t(intOption(parser, "seed", 0, INT64_MAX));
    o.tieWordEmbeddings = o.tieWordEmbeddings || parser.isSet("tie-embeddings");
    o.sparse = parser.isSet("sparse");
    o.outlierChannels.clear();
    for (const QString& c : parser.value("outlier-channels").split(',', Qt::SkipEmptyParts)) {
        bool ok = false;
        const int v = c.trimmed().toInt(&ok);
        if (!ok || v < 0 || v >= o.hiddenSize)
            throw UsageError{"--outlier-channels: '" + c.toStdString() +
                             "' is not a channel index below hidden_size"};
        o.outlierChannels.push_back(v);
    }
    bool ok = false;
    o.outlierGain = parser.value("outlier-gain").toDouble(&ok);
    if (!ok || !(o.outlierGain > 0))
        throw UsageError{"--outlier-gain: expected a positive number"};

    QElapsedTimer timer;
    timer.start();
    writeSyntheticModel(o);
    const double seconds = timer.elapsed() / 1000.0;
    if (parser.isSet("json")) {
        printJson(
            {{"out", o.outDir}, {"arch", o.arch}, {"seconds", seconds}, {"sparse", o.sparse}});
    } else {
        std::printf("wrote %s checkpoint to %s in %.2f s\n", o.arch.c_str(), o.outDir.c_str(),
                    seconds);
    }
    return 0;
}

} // namespace qs::cli
