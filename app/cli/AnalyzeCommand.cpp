#include "CliCommon.h"
#include "QuantOptions.h"
#include "RankLauncher.h"
#include "analysis/ExpertRouting.h"

#include "run/Run.h"

#include <QFileInfo>

#include <algorithm>

#include <cmath>
#include <cstdio>

namespace qs::cli {

namespace {

std::string db(const ErrorMetrics& m) {
    if (!m.valid)
        return "-";
    if (!std::isfinite(m.sqnrDb))
        return "exact";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f", m.sqnrDb);
    return buf;
}

} // namespace

int runAnalyze(const QStringList& args) {
    QCommandLineParser parser;
    addModelDirOption(parser);
    addQuantOptions(parser);
    parser.addOption({"top", "Outlier layers listed in the text summary.", "N", "10"});
    parser.addOption({"no-channels", "Leave per-channel arrays out of the JSON report."});
    parser.addOption({"json", "The full per-layer report as JSON, keyed by layer name."});
    parser.addOption({"sensitivity", "Also measure each layer quantized alone and the recipe with "
                                     "all but that layer, as perplexity on --data (one "
                                     "calibration, then 2 evaluations per layer: keep the "
                                     "evaluation set small with --max-windows)."});
    parser.addOption({"data", "Evaluation text for --sensitivity.", "TEXT"});
    addEvalWindowOptions(parser);
    addRunOptions(parser);
    addDistributedOptions(parser);
    if (!parseOrHelp(parser, expandMultiValueFlags(args),
                     "Per-layer quantization analysis on calibration data: weight error, output "
                     "error (local and accumulated), activation statistics per input channel, "
                     "histograms and an outlier ranking.",
                     schemeHelp()))
        return 0;
    const QString dir = modelDirFromOptions(parser);
    applyThreadsOption(parser);
    RunRequest q = requestFromOptions(parser, dir);
    q.analyze = true;
    // The evaluation text: --data, or the one a --recipe names (a flag given wins, field by
    // field, as for eval).
    const bool recipeNamesText = !q.recipe.evaluation.dataPath.empty();
    EvaluationSpec evaluation = evaluationFromOptions(parser, "data", q.recipe.evaluation);
    if (parser.isSet("sensitivity") && evaluation.dataPath.empty())
        throw UsageError{"--sensitivity needs --data TEXT (the evaluation set) or a --recipe "
                         "that names one"};
    // Checked before the analysis runs: the study reads it only after it.
    if (parser.isSet("sensitivity") &&
        !QFileInfo(QString::fromStdString(evaluation.dataPath)).isFile())
        throw Error(evaluation.dataPath, parser.isSet("data") ? "--data" : "evaluation.data",
                    "file not found");
    if (!parser.isSet("max-windows") && !recipeNamesText)
        evaluation.maxWindows = 4; // sensitivity evaluates twice per layer: keep it small
    // Launched as one rank of several (--nproc, torchrun, srun): the ranks share the
    // calibration batches and the sensitivity rows; rank 0 alone prints.
    const bool speaks = joinRanksIfLaunched(parser, q) == 0;
    if (speaks)
        saveRecipeIfAsked(parser, q.recipe);
    // The analysis first: it checks the recipe, the model and the calibration data before the
    // (longer) sensitivity study starts.
    if (parser.isSet("sensitivity")) {
        q.sensitivity = true;
        q.recipe.evaluation = evaluation;
    }
    const RunOutcome out = runJob(q, speaks ? progressFor(parser, "analyze") : nullptr);
    if (!speaks)
        return 0;
    printWarnings("analyze", out.warnings);
    const std::optional<SensitivityResult>& sens = out.sensitivity;
    if (parser.isSet("json")) {
        nlohmann::json j = out.report.toJson(!parser.isSet("no-channels"));
        j["provenance"] = provenanceJson(parser, q, out);
        if (sens) {
            nlohmann::json rows = nlohmann::json::array();
            for (const SensitivityRow& r : sens->rows)
                rows.push_back({{"layer", r.layer},
                                {"alone_perplexity", r.alonePerplexity},
                                {"all_but_perplexity", r.allButPerplexity},
                                {"alone_kl", r.aloneKl},
                                {"alone_same_top", r.aloneSameTop},
                                {"all_but_kl", r.allButKl},
                                {"all_but_same_top", r.allButSameTop}});
            j["sensitivity"] = {{"fp_perplexity", sens->fpPerplexity},
                                {"full_perplexity", sens->fullPerplexity},
                                {"full_kl", sens->fullKl},
                                {"full_same_top", sens->fullSameTop},
                                {"layers", rows}};
        }
        printJson(j);
        return 0;
    }
    std::printf("%-42s %-14s %9s %9s %9s %10s %8s\n", "layer", "scheme", "w SQNR", "local", "accum",
                "in absmax", "outlier");
    for (const LayerReport& l : out.report.layers) {
        std::printf("%-42s %-14s %9s %9s %9s %10.3g %8.1f\n", l.name.c_str(),
                    (l.quantized ? l.scheme : l.note).substr(0, 14).c_str(), db(l.weight).c_str(),
                    db(l.outputLocal).c_str(), db(l.outputAccumulated).c_str(), l.inputAbsmax,
                    l.outlierScore);
        // a fused projection's logical parts (Phi-3 qkv_proj, gate_up_proj)
        for (const PartReport& p : l.parts)
            std::printf("  %-40s %-14s %9s %9s\n", ("part " + p.name).c_str(), "",
                        db(p.weight).c_str(), db(p.outputLocal).c_str());
        // codes a transform chose (GPTQ): rounding to nearest on the same weight and inputs
        if (l.outputLocalRoundToNearest.valid)
            std::printf("  %-40s %-14s %9s %9s\n", "round to nearest instead", "",
                        db(l.weightRoundToNearest).c_str(),
                        db(l.outputLocalRoundToNearest).c_str());
    }
    std::printf("\ntop outlier layers (input absmax / median channel absmax):\n");
    const auto ranking = out.report.outlierRanking();
    const int64_t top = intOption(parser, "top", 0, 1 << 20);
    for (size_t i = 0; i < ranking.size() && int64_t(i) < top; ++i)
        std::printf("  %2zu. %-42s %8.1f\n", i + 1, ranking[i].first.c_str(), ranking[i].second);
    for (const std::string& s : out.skipped)
        std::printf("not quantized (unfit): %s\n", s.c_str());
    const std::vector<ExpertTokens> experts = expertRouting(out.report.layers);
    if (!experts.empty()) {
        std::printf("\nexperts: calibration tokens routed (share of an even split; RARE below "
                    "0.25: statistics rest on few tokens)\n");
        for (const ExpertTokens& e : experts)
            std::printf("  %-42s %8lld %6.2f%s\n", e.expert.c_str(),
                        static_cast<long long>(e.tokens), e.shareOfEven, e.rare ? "  RARE" : "");
    }
    if (sens) {
        std::printf("\nsensitivity (perplexity: fp %.4f, whole recipe %.4f; whole recipe against "
                    "fp: KL %.6f, same top %.2f %%), most harmful first (KL alone):\n",
                    sens->fpPerplexity, sens->fullPerplexity, sens->fullKl,
                    100.0 * sens->fullSameTop);
        std::vector<SensitivityRow> rows = sens->rows;
        std::sort(rows.begin(), rows.end(),
                  [](const auto& a, const auto& b) { return a.aloneKl > b.aloneKl; });
        std::printf("  %-42s %12s %12s %12s %9s %12s\n", "layer", "ppl alone", "ppl all but",
                    "KL alone", "same top", "KL all but");
        for (const SensitivityRow& r : rows)
            std::printf("  %-42s %12.4f %12.4f %12.6f %8.2f%% %12.6f\n", r.layer.c_str(),
                        r.alonePerplexity, r.allButPerplexity, r.aloneKl, 100.0 * r.aloneSameTop,
                        r.allButKl);
    }
    return 0;
}

} // namespace qs::cli
