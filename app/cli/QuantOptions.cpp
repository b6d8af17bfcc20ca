#include "QuantOptions.h"

#include "CliCommon.h"
#include "quant/SchemeRegistry.h"
#include "recipe/RecipeFlags.h"

namespace qs::cli {

namespace {

const QChar kPairSeparator(0x1f);

QString schemeList() {
    QStringList names;
    for (const auto& s : quant::schemeNames())
        if (!s.legacy)
            names << QString::fromStdString(s.name);
    return names.join(", ");
}

} // namespace

void addQuantOptions(QCommandLineParser& parser, const QString& calibSeqFlag) {
    parser.addOption({{"quant-scheme", "quant_scheme"},
                      "Quark scheme for every linear, one of: " + schemeList() + ".",
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
    parser.addOption({{"calib-data", "calib_data", "dataset"}, "Calibration text file.", "FILE"});
    parser.addOption(
        {{"num-calib-data", "num_calib_data"}, "Calibration samples (windows; default 128).", "N"});
    parser.addOption({calibSeqFlag,
                      "Calibration window length in tokens (default 512, at most "
                      "the model's positions).",
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
}

QStringList expandMultiValueFlags(const QStringList& args) {
    QStringList out;
    for (int i = 0; i < args.size(); ++i) {
        const QString& a = args[i];
        if (a == "--exclude-layers" || a == "--exclude_layers") {
            int j = i + 1;
            for (; j < args.size() && !args[j].startsWith("--"); ++j)
                out << "--exclude-layers=" + args[j];
            if (j == i + 1)
                out << a; // no value: let the parser report it
            i = j - 1;
        } else if (a == "--layer-quant-scheme" || a == "--layer_quant_scheme") {
            if (i + 2 < args.size() && !args[i + 1].startsWith("--") &&
                !args[i + 2].startsWith("--")) {
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
    for (const char* o : {"quant-scheme", "exclude-layers", "layer-quant-scheme", "kv-cache-dtype",
                          "recipe", "unfit-policy"})
        if (parser.isSet(o))
            return true;
    return false;
}

Recipe recipeFromOptions(const QCommandLineParser& parser, const QString& calibSeqFlag) {
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
        flags.numCalibData = intOption(parser, "num-calib-data", 1, 1 << 24);
    if (parser.isSet(calibSeqFlag))
        flags.seqLen = intOption(parser, calibSeqFlag, 2, 1 << 24);
    flags.calibMode = parser.value("calib-mode").toStdString();
    Recipe recipe;
    if (parser.isSet("recipe")) {
        recipe = Recipe::load(parser.value("recipe").toStdString());
        applyFlags(recipe, flags);
    } else {
        recipe = recipeFromFlags(flags);
    }
    if (parser.isSet("unfit-policy")) {
        recipe.unfitPolicy = parser.value("unfit-policy").toStdString();
        recipe.validate("--unfit-policy");
    }
    return recipe;
}

void saveRecipeIfAsked(const QCommandLineParser& parser, const Recipe& recipe) {
    if (parser.isSet("save-recipe"))
        recipe.save(parser.value("save-recipe").toStdString());
}

QuantizationRequest requestFromOptions(const QCommandLineParser& parser, const QString& modelDir) {
    if (!hasQuantOptions(parser))
        throw UsageError{"give a scheme (--quant-scheme S) or a --recipe FILE"};
    QuantizationRequest q;
    q.modelDir = modelDir.toStdString();
    q.recipe = recipeFromOptions(parser, "seq-len");
    saveRecipeIfAsked(parser, q.recipe);
    q.compute = parseComputeOptions(parser.value("device").toStdString(),
                                    parser.value("dtype").toStdString());
    q.tokenizer = TokenizerLoader::parseBackend(parser.value("tokenizer").toStdString());
    return q;
}

} // namespace qs::cli
