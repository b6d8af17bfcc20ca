#include "export/ExportFormat.h"

#include "util/Error.h"
#include "util/Join.h"

#include <algorithm>
#include <cctype>

namespace qs {

const ExportFormat* findExportFormat(const std::string& n) {
    for (const ExportFormat& f : exportFormats()) {
        if (f.name == n || f.recipeTarget == n)
            return &f;
        for (const std::string& a : f.aliases)
            if (a == n)
                return &f;
    }
    return nullptr;
}

std::string canonicalExportFormat(const std::string& n, const std::string& source,
                                  const std::string& field) {
    if (const ExportFormat* f = findExportFormat(n))
        return f->name;
    std::vector<std::string> known;
    for (const ExportFormat& f : exportFormats())
        known.push_back(f.name);
    throw Error(source, field,
                "unknown export format '" + n + "' (known: " + join(known, ", ") + ")");
}

const ExportOption* findExportOption(const ExportFormat& format, const std::string& name) {
    for (const ExportOption& o : format.options)
        if (o.name == name)
            return &o;
    return nullptr;
}

std::string exportOptionValue(const ExportFormat& format, const ExportOptions& options,
                              const std::string& name) {
    const ExportOption* declared = findExportOption(format, name);
    if (!declared)
        throw Error(format.name, name, "the " + format.name + " format declares no such option");
    const auto it = options.find(name);
    return it == options.end() ? declared->defaultValue : it->second;
}

namespace {

// Option values are names, taken without regard to case (as the CLI always took them).
std::string lowerCase(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(),
                   [](unsigned char c) { return char(std::tolower(c)); });
    return s;
}

bool allows(const ExportOption& option, const std::string& value) {
    const std::string v = lowerCase(value);
    return std::any_of(option.allowed.begin(), option.allowed.end(),
                       [&](const std::string& a) { return lowerCase(a) == v; });
}

} // namespace

void checkExportOptions(const ExportFormat& format, const ExportOptions& options,
                        const std::string& source) {
    for (const ExportOption& o : format.options) {
        const auto it = options.find(o.name);
        if (it != options.end() && !allows(o, it->second))
            throw Error(source, o.name,
                        "unknown value '" + it->second + "' of " + format.name +
                            "'s option (allowed: " + join(o.allowed, ", ") + ")");
    }
}

void checkExportOptions(const ExportOptions& options, const std::string& source) {
    for (const auto& entry : options) {
        const std::string& name = entry.first;
        bool declared = false;
        for (const ExportFormat& f : exportFormats())
            declared = declared || findExportOption(f, name) != nullptr;
        if (!declared) {
            std::vector<std::string> known;
            for (const ExportFormat& f : exportFormats())
                for (const ExportOption& o : f.options)
                    known.push_back(o.name + " (" + f.name + ")");
            throw Error(source, name,
                        "no export format takes this option (options: " + join(known, ", ") + ")");
        }
    }
    for (const ExportFormat& f : exportFormats())
        checkExportOptions(f, options, source);
}

} // namespace qs
