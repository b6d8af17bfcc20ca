#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace qs {

// The output folder of one export: created as a hidden temporary folder beside `outDir`
// (".NAME.partial-PID-XXXXXXXX"), filled, then renamed into place by commit(). Constructing one
// removes stale ".NAME.partial-*" folders that killed runs left behind: those whose PID is no
// longer running, and those without a PID (older versions) once older than `kStaleSeconds`, so
// a concurrent run's folder is never touched. Destroyed without commit(),
// it removes its temporary folder. An existing `outDir` is replaced only when it holds an
// earlier Quantscope output (quantscope_recipe.json); otherwise the constructor refuses.
class ExportFolder {
public:
    static constexpr int kStaleSeconds = 3600;

    explicit ExportFolder(const std::string& outDir);
    ~ExportFolder();
    ExportFolder(const ExportFolder&) = delete;
    ExportFolder& operator=(const ExportFolder&) = delete;

    const std::string& outDir() const { return m_outDir; }
    const std::string& tempDir() const { return m_tempDir; }
    std::string tempPath(const std::string& file) const { return m_tempDir + "/" + file; }

    // Copies the tokenizer, generation config and (unless `withConfig` is false: the exporter
    // writes its own) config.json from the source model, when present; with `headUntied`
    // config.json says tie_word_embeddings false (ExportContext::headUntied).
    void copySideFiles(const std::string& sourceDir, bool withConfig, bool headUntied = false);
    // The source's config.json parsed (errors name the file); with `headUntied`,
    // tie_word_embeddings false (ExportContext::headUntied).
    static nlohmann::json sourceConfig(const std::string& sourceDir, bool headUntied);
    // Writes `text` to `file` inside the temporary folder (errors name the final output).
    void writeText(const std::string& file, const std::string& text);
    // Writes the recipe (quantscope_recipe.json) and renames the folder into place; an earlier
    // output there is moved aside first and removed only once the new one is in place.
    void commit(const std::string& recipeJson);

    // Removes stale partial folders of `outDir` older than `maxAgeSeconds`; returns how many.
    static int removeStalePartials(const std::string& outDir, int maxAgeSeconds = kStaleSeconds);

private:
    std::string m_outDir, m_tempDir;
    bool m_committed = false;
};

} // namespace qs
