#include "recipe/QuarkDatasets.h"

#include "util/Error.h"

#include <filesystem>

namespace qs {

const std::vector<QuarkDataset>& quarkDatasets() {
    static const std::vector<QuarkDataset> names = {
        {"pileval", "mit-han-lab/pile-val-backup (validation split)"},
        {"pileval_for_awq_benchmark",
         "mit-han-lab/pile-val-backup (validation split, AWQ's benchmark sampling)"},
        {"wikitext", "Salesforce/wikitext wikitext-2-raw-v1"},
        {"Salesforce/wikitext", "Salesforce/wikitext wikitext-2-raw-v1"},
        {"wikitext_for_gptq_benchmark",
         "Salesforce/wikitext wikitext-2-raw-v1 (GPTQ's benchmark sampling)"},
        {"wikitext_gpt_oss_20b", "Salesforce/wikitext wikitext-2-raw-v1 (gpt-oss evaluation)"},
        {"wikitext_gpt_oss_120b", "Salesforce/wikitext wikitext-2-raw-v1 (gpt-oss evaluation)"},
        {"cnn_dailymail", "abisee/cnn_dailymail 3.0.0 (train split)"},
        {"abisee/cnn_dailymail", "abisee/cnn_dailymail 3.0.0 (train split)"},
        {"HuggingFaceH4/ultrachat_200k", "HuggingFaceH4/ultrachat_200k (train_sft split)"},
        {"ScienceQA", "the ScienceQA dataset"},
    };
    return names;
}

void rejectQuarkDatasetName(const std::string& value, const std::string& source,
                            const std::string& field) {
    if (value.empty())
        return;
    std::error_code ec;
    if (std::filesystem::exists(value, ec))
        return; // a local file that happens to carry the name
    for (const QuarkDataset& d : quarkDatasets()) {
        if (d.name != value)
            continue;
        throw Error(source, field,
                    "'" + value + "' is a Quark dataset name: Quark downloads " + d.downloads +
                        " from the Hugging Face Hub; Quantscope downloads nothing and reads a "
                        "local UTF-8 text file instead: save the text to a file (e.g. with "
                        "Python's datasets package) and pass its path, " +
                        field + " FILE.txt");
    }
}

} // namespace qs
