#include "QuantOptions.h"

#include "export/ExportFormat.h"

#include "CliCommon.h"
#include "model/Compute.h"
#include "quant/SchemeRegistry.h"
#include "recipe/AlgorithmCatalog.h"
#include "recipe/Provenance.h"
#include "recipe/QuarkDatasets.h"
#include "recipe/RecipeFlags.h"
#include "util/Error.h"

#include <QFileInfo>

#include <map>

namespace qs::cli {

namespace {

const QChar kPairSeparator(0x1f);

std::string joined(const std::vector<std::string>& v) {
    std::string s;
    for (const std::string& x : v)
        s += (s.empty() ? "" : ", ") + x;
    return s;
}

} // namespace

QString schemeHelp() {
    // Resolve each name once; an older name whose scheme equals a current one is its alias.
    std::vector<std::pair<std::string, quant::QuantScheme>> current;
    std::map<std::string, std::vector<std::string>> aliases;
    std::vector<std::string> others;
    for (const auto& s : quant::schemeNames())
        if (!s.legacy)
            current.emplace_back(s.name, quant::resolveScheme(s.name));
    for (const auto& s : quant::schemeNames()) {
        if (!s.legacy)
            continue;
        const quant::QuantScheme q = quant::resolveScheme(s.name);
        bool found = false;
        for (const auto& [name, c] : current)
            if (c == q) {
                aliases[name].push_back(s.name);
                found = true;
                break;
            }
        if (!found)
            others.push_back(s.name);
    }
    QString text = "Schemes (older Quark names in parentheses resolve to the same scheme):\n";
    for (const auto& [name, c] : current) {
        text += "  " + QString::fromStdString(name);
        if (!aliases[name].empty())
            text += " (" + QString::fromStdString(joined(aliases[name])) + ")";
        text += "\n";
    }
    if (!others.empty())
        text += "Older Quark names without a current equivalent (the per-group names take "
                "--group_size N, default 128):\n  " +
                QString::fromStdString(joined(others)) + "\n";
    return text;
}

void addQuantOptions(QCommandLineParser& parser) {
    parser.addOption({{"quant-scheme", "quant_scheme"},
                      "Quark scheme for every linear (the list follows the options).",
                      "S"});
    parser.addOption({{"exclude-layers", "exclude_layers"},
                      "Layers left unquantized (fnmatch like *down_proj, or re:REGEX); several "
                      "may follow one flag.",
                      "P..."});
    parser.addOption({{"layer-quant-scheme", "layer_quant_scheme"},
                      "Scheme S for layers matching P (repeatable; the last match wins).",
                      "P S"});
    parser.addOption({{"kv-cache-dtype", "kv_cache_dtype"},
                      "KV-cache quantization: fp8 (E4M3 per-tensor on k/v_proj outputs) or none.",
                      "DTYPE"});
    parser.addOption({{"group-size", "group_size"},
                      "Group size of Quark's per-group scheme names (w_uint4_per_group_asym, "
                      "...; default 128), for every such scheme of the recipe; names like "
                      "int4_wo_32 fix theirs.",
                      "N"});
    parser.addOption({{"quant-algo", "quant_algo"},
                      "Algorithms before quantization, comma-separated (Quark's names: " +
                          QString::fromStdString(joined(knownAlgorithmNames())) + ", quarot).",
                      "ALGO"});
    parser.addOption(
        {{"pre-quantization-optimization", "pre_quantization_optimization"},
         "Quark's pre-quantization step, repeatable: rotation (R1), quarot (R1 + R2 + online R4; "
         "only eval and analyze run it, no format holds R4) or smoothquant; they run before the "
         "--quant_algo ones (docs/algorithms.md).",
         "OPT"});
    parser.addOption({{"calib-data", "calib_data", "dataset"},
                      "Calibration text file (Quark's --dataset names a download such as "
                      "pileval_for_awq_benchmark, refused here; give a local UTF-8 text file).",
                      "FILE"});
    parser.addOption({{"batch-size", "batch_size"},
                      "Quark's calibration batch size: accepted and changes nothing here "
                      "(calibration batches windows by tokens, 2048 per forward on a CPU and "
                      "8192 on a GPU; the statistics do not depend on the batch).",
                      "N"});
    parser.addOption({{"template-file", "template_file"},
                      "Quark's custom LLM template: refused (layer names come from the model "
                      "family; a recipe says exclusions and algorithm parameters).",
                      "FILE"});
    parser.addOption(
        {{"num-calib-data", "num_calib_data"}, "Calibration samples (windows; default 128).", "N"});
    parser.addOption({{"calib-seq-len", "seq-len", "seq_len"},
                      "Calibration window length in tokens (Quark's --seq_len; default 512, at "
                      "most the model's positions).",
                      "N"});
    parser.addOption({{"calib-mode", "calib_mode"},
                      "What static activation observers see: float (the full-precision model, "
                      "as Quark; default) or sequential (the quantized model upstream).",
                      "MODE"});
    parser.addOption(
        {"unfit-policy", "Layers whose shape does not fit the scheme: error or skip.", "POLICY"});
    parser.addOption(
        {"recipe", "Recipe JSON to replay (flags given too override its fields).", "FILE"});
    parser.addOption({"save-recipe", "Write the recipe of this run to FILE.", "FILE"});
    parser.addOption({"device", "cpu or cuda.", "DEVICE", "cpu"});
    parser.addOption({"dtype", "Compute dtype: float32, bfloat16 or float16.", "DTYPE", "float32"});
    parser.addOption({"tokenizer", "auto, sentencepiece or hf.", "KIND", "auto"});
}

void addEvalWindowOptions(QCommandLineParser& parser) {
    parser.addOption({{"eval-seq-len", "eval_seq_len"},
                      "Evaluation window length in tokens (default 512 or max positions).",
                      "N",
                      "0"});
    parser.addOption({{"max-windows", "num-eval-data", "num_eval_data"},
                      "Evaluate only the first N windows (0: all).",
                      "N",
                      "0"});
}

void addQuarkEvaluationOptions(QCommandLineParser& parser) {
    parser.addOption({{"evaluation-dataset", "evaluation_dataset"},
                      "After quantizing, the perplexity of the quantized model on this local "
                      "UTF-8 text file, as Quark evaluates after quantizing (its names, such as "
                      "wikitext, are downloads and are refused).",
                      "FILE"});
    parser.addOption({{"skip-evaluation", "skip_evaluation"},
                      "Quark's flag: no evaluation after quantizing (also with "
                      "--evaluation_dataset)."});
}

bool evaluatesAfterQuantizing(const QCommandLineParser& parser) {
    return parser.isSet("evaluation-dataset") && !parser.isSet("skip-evaluation");
}

EvaluationSpec evaluationFromOptions(const QCommandLineParser& parser, const QString& dataFlag,
                                     const EvaluationSpec& recipe) {
    // Field by field, a flag given wins over the recipe (a recipe saved from the workbench names
    // its evaluation text and windows).
    EvaluationSpec e = recipe;
    if (parser.isSet(dataFlag))
        e.dataPath = parser.value(dataFlag).toStdString();
    asUsageError(
        [&] { rejectQuarkDatasetName(e.dataPath, "command line", "--" + dataFlag.toStdString()); });
    if (parser.isSet("eval-seq-len"))
        e.seqLen = intOption(parser, "eval-seq-len", limits::evaluationSeqLen);
    if (parser.isSet("max-windows"))
        e.maxWindows = intOption(parser, "max-windows", limits::evaluationMaxWindows);
    return e;
}

void addOutputOptions(QCommandLineParser& parser) {
    parser.addOption({{"out", "output-dir", "output_dir"},
                      "Output folder (with several formats, one subfolder per format).",
                      "DIR"});
    QStringList names;
    for (const ExportFormat& f : exportFormats())
        names << QString::fromStdString(f.name) + (f.available ? "" : " (not in this build)");
    parser.addOption({"format",
                      "Export format, repeatable or comma-separated: " + names.join(", ") +
                          "; default fake (the fake-quantized Hugging Face checkpoint).",
                      "FORMAT"});
    parser.addOption({{"model-export", "model_export"},
                      "Quark's name for --format: hf_format (= quark), gguf, onnx.",
                      "FORMAT"});
    parser.addOption(
        {"gguf-type",
         "GGUF weight type: auto (default: each quantized layer's own codes, int4 sym -> q4_0, "
         "4-bit asym -> q4_1, int8 sym -> q8_0, never re-rounded; other tensors in the source's "
         "precision), q4_0, q4_1, q8_0 (quantized layers must fit the type exactly, else the "
         "run is refused naming them; unquantized tensors rounded by ggml's quantizer), q4_k, "
         "q6_k (ggml's K-quants of unquantized tensors; rows not a multiple of 256 fall back "
         "to q5_0 / q8_0 as llama.cpp does), f16, bf16, f32 (the dequantized weights).",
         "TYPE", "auto"});
    parser.addOption({"allow-unloadable",
                      "Write layouts the format holds but its consumers refuse (as Quark does for "
                      "int4 layers whose packed axis is not a multiple of 8), warning per layer."});
}

std::string outputDirFromOptions(const QCommandLineParser& parser) {
    if (!parser.isSet("out"))
        throw UsageError{"--out DIR (or --output_dir DIR) is required"};
    return parser.value("out").toStdString();
}

std::vector<std::string> exportFormatsFromOptions(const QCommandLineParser& parser) {
    std::vector<std::string> formats;
    for (const QString& value : parser.values("format") + parser.values("model-export"))
        for (const QString& f : value.split(',', Qt::SkipEmptyParts)) {
            // Unknown names are a command-line mistake (exit 2); a known format this build
            // cannot write, or one that cannot hold the recipe, is refused by prepareRun.
            const std::string name = asUsageError(
                [&] { return canonicalExportFormat(f.trimmed().toStdString(), "--format", ""); });
            if (std::find(formats.begin(), formats.end(), name) == formats.end())
                formats.push_back(name);
        }
    return formats;
}

QStringList expandMultiValueFlags(const QStringList& args) {
    QStringList out;
    for (int i = 0; i < args.size(); ++i) {
        const QString& a = args[i];
        if (a == "--exclude-layers" || a == "--exclude_layers") {
            int j = i + 1;
            // The patterns end at the next option, long or short (-q).
            for (; j < args.size() && !args[j].startsWith("-"); ++j)
                out << "--exclude-layers=" + args[j];
            if (j == i + 1)
                out << a; // no value: let the parser report it
            i = j - 1;
        } else if (a == "--layer-quant-scheme" || a == "--layer_quant_scheme") {
            if (i + 2 < args.size() && !args[i + 1].startsWith("-") &&
                !args[i + 2].startsWith("-")) {
                out << "--layer-quant-scheme=" + args[i + 1] + kPairSeparator + args[i + 2];
                i += 2;
            } else {
                throw UsageError{"--layer-quant-scheme takes two values: PATTERN SCHEME"};
            }
        } else {
            out << a;
        }
    }
    return out;
}

bool hasQuantOptions(const QCommandLineParser& parser) {
    for (const char* o :
         {"quant-scheme", "exclude-layers", "layer-quant-scheme", "kv-cache-dtype", "recipe",
          "unfit-policy", "quant-algo", "pre-quantization-optimization", "group-size"})
        if (parser.isSet(o))
            return true;
    return false;
}

namespace {

// Quark flags that shape nothing here: --batch_size is checked and has no effect,
// --template_file is refused with the reason. Checked whether or not a scheme is given.
void checkQuarkOnlyFlags(const QCommandLineParser& parser) {
    if (parser.isSet("batch-size"))
        intOption(parser, "batch-size", 1, 1 << 20); // accepted, checked, without effect
    if (parser.isSet("template-file"))
        throw UsageError{
            "--template_file: Quark's custom LLM templates are not read; Quantscope takes a "
            "model's layer names from its family (docs/model-families.md), and a recipe "
            "(--recipe FILE) says the exclusions and the algorithms' parameters "
            "(scaling_layers, ...) a template would"};
}

} // namespace

Recipe recipeFromOptions(const QCommandLineParser& parser) {
    QuantFlags flags;
    flags.quantScheme = parser.value("quant-scheme").toStdString();
    for (const QString& p : parser.values("exclude-layers"))
        flags.excludeLayers.push_back(p.toStdString());
    for (const QString& pair : parser.values("layer-quant-scheme")) {
        const QStringList parts = pair.split(kPairSeparator);
        if (parts.size() != 2)
            throw UsageError{"--layer-quant-scheme takes two values: PATTERN SCHEME"};
        flags.layerQuantSchemes.emplace_back(parts[0].toStdString(), parts[1].toStdString());
    }
    flags.kvCacheDtype = parser.value("kv-cache-dtype").toStdString();
    flags.calibData = parser.value("calib-data").toStdString();
    if (parser.isSet("num-calib-data"))
        flags.numCalibData = intOption(parser, "num-calib-data", limits::calibrationSamples);
    if (parser.isSet("calib-seq-len"))
        flags.seqLen = intOption(parser, "calib-seq-len", limits::calibrationSeqLen);
    flags.calibMode = parser.value("calib-mode").toStdString();
    if (parser.isSet("group-size"))
        flags.groupSize = intOption(parser, "group-size", limits::groupSize);
    const auto commaList = [&](const char* option) {
        std::vector<std::string> out;
        for (const QString& value : parser.values(option))
            for (const QString& a : value.split(',', Qt::SkipEmptyParts))
                out.push_back(a.trimmed().toStdString());
        return out;
    };
    flags.quantAlgos = commaList("quant-algo");
    flags.preQuantOptimizations = commaList("pre-quantization-optimization");
    checkQuarkOnlyFlags(parser);
    Recipe recipe;
    if (parser.isSet("recipe"))
        recipe = Recipe::load(parser.value("recipe").toStdString());
    asUsageError([&] {
        if (parser.isSet("recipe"))
            applyFlags(recipe, flags);
        else
            recipe = recipeFromFlags(flags);
        if (parser.isSet("unfit-policy")) {
            recipe.unfitPolicy = parser.value("unfit-policy").toStdString();
            recipe.validate("--unfit-policy");
        }
    });
    // A calibration file named on the command line is checked even where the recipe reads none
    // (weight-only RTN), so that a mistyped path does not pass unnoticed.
    if (!flags.calibData.empty() && !QFileInfo(QString::fromStdString(flags.calibData)).isFile())
        throw Error(flags.calibData, "--calib-data (--dataset)", "file not found");
    return recipe;
}

void saveRecipeIfAsked(const QCommandLineParser& parser, const Recipe& recipe) {
    if (parser.isSet("save-recipe"))
        recipe.save(parser.value("save-recipe").toStdString());
}

RunRequest requestFromOptions(const QCommandLineParser& parser, const QString& modelDir,
                              bool requireScheme) {
    checkQuarkOnlyFlags(parser);
    const bool quantized = hasQuantOptions(parser);
    if (requireScheme && !quantized)
        throw UsageError{"give a scheme (--quant-scheme S) or a --recipe FILE"};
    if (!quantized && parser.isSet("save-recipe"))
        throw UsageError{"--save-recipe: nothing to record without a scheme or --recipe"};
    // Calibration flags without a scheme would be silently without effect.
    for (const char* flag : {"calib-seq-len", "calib-data", "num-calib-data", "calib-mode"})
        if (!quantized && parser.isSet(flag))
            throw UsageError{std::string("--") + flag +
                             " shapes the calibration and has no effect without a scheme "
                             "(--quant-scheme S or --recipe FILE); --seq-len is the calibration "
                             "window as in Quark, the evaluation window is --eval-seq-len"};
    RunRequest q;
    q.modelDir = modelDir.toStdString();
    if (quantized)
        q.recipe = recipeFromOptions(parser);
    // Checked here so that an unknown device or dtype is a usage error (exit 2).
    asUsageError([&] {
        return parseComputeOptions(parser.value("device").toStdString(),
                                   parser.value("dtype").toStdString());
    });
    q.device = parser.value("device").toStdString();
    q.dtype = parser.value("dtype").toStdString();
    q.tokenizer = asUsageError(
        [&] { return TokenizerLoader::parseBackend(parser.value("tokenizer").toStdString()); });
    q.strict = parser.isSet("strict");
    return q;
}

nlohmann::json provenanceJson(const QCommandLineParser& parser, const RunRequest& request,
                              const RunOutcome& outcome) {
    ResultProvenance p;
    p.modelPath = request.modelDir;
    p.modelHash = modelHeadersHash(request.modelDir);
    if (hasQuantOptions(parser))
        p.recipeHash = recipeHash(outcome.recipe);
    if (outcome.report.calibrationSamples > 0) {
        p.calibrationData = outcome.recipe.calibration.dataPath;
        p.calibrationWindows = outcome.report.calibrationSamples;
        p.calibrationSeqLen = outcome.report.seqLen;
    }
    // As the run names them (an alias such as "bf16" resolved), not as the flags spelled them.
    p.device = outcome.device;
    p.dtype = outcome.dtype;
    if (outcome.perplexity) {
        p.evaluationData = outcome.recipe.evaluation.dataPath;
        p.evaluationWindows = outcome.perplexity->windows;
        p.evaluationSeqLen = outcome.perplexity->seqLen;
    }
    return p.toJson();
}

} // namespace qs::cli
