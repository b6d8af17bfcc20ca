// The export formats as every reader names them, without Torch: the CLI, a run and the GUI's
// export dialog read these records. Each format's record is written in its own file, beside its
// exporter, and listed once in the format table (export/FormatWriters.cpp), which also holds
// the engine side of each format (what it cannot hold, its exporter, its reader; FormatWriter.h).
#pragma once

#include <map>
#include <string>
#include <vector>

namespace qs {

// A format's own options, as data: option name -> value, carried through the run layer without
// it knowing what they mean. A run carries one map for all its formats; each format reads the
// options it declares and takes the declared default for an option the map lacks.
using ExportOptions = std::map<std::string, std::string>;

// One option a format declares: the values it takes (a closed list) and the default.
struct ExportOption {
    std::string name; // as the map's key
    std::vector<std::string> allowed;
    std::string defaultValue;
    std::string help;
};

// `name` is what the CLI (--format), the GUI and a run use; `recipeTarget` what a recipe's
// export_targets records.
struct ExportFormat {
    std::string name;         // "fake", "quark", "awq", "gguf", "onnx"
    std::string recipeTarget; // "hf_fake", "quark", "awq", "gguf", "onnx"
    std::vector<std::string> aliases;
    std::string description;
    std::vector<ExportOption> options;
    bool available = false; // written by this build
};

// Every format, in the table's order.
const std::vector<ExportFormat>& exportFormats();
// By name, recipe target or alias (Quark's --model_export hf_format/gguf/onnx); nullptr when
// unknown.
const ExportFormat* findExportFormat(const std::string& nameOrAlias);
// Canonical name; throws qs::Error(source, field) naming the formats known.
std::string canonicalExportFormat(const std::string& nameOrAlias, const std::string& source,
                                  const std::string& field);
// The option `name` the format declares; nullptr when it declares none of that name.
const ExportOption* findExportOption(const ExportFormat& format, const std::string& name);
// The value `format` uses for its option `name`: the map's, else the declared default.
std::string exportOptionValue(const ExportFormat& format, const ExportOptions& options,
                              const std::string& name);
// Checks the values of the options `format` declares (case-insensitive): qs::Error(source,
// option name, reason) naming the value and the values allowed.
void checkExportOptions(const ExportFormat& format, const ExportOptions& options,
                        const std::string& source);
// Checks a whole map, before any work: every option must be declared by a format (qs::Error
// naming it and the options there are) and take one of its allowed values (as above).
void checkExportOptions(const ExportOptions& options, const std::string& source);

} // namespace qs
