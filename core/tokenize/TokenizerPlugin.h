#pragma once

// Interface of tokenizer plugins. Header-only and free of Torch and of core's compiled code: the
// sentencepiece plugin includes it without linking quantscope_core (docs/pitfalls.md: the
// plugin's bundled protobuf must stay apart from LibTorch's).

#include "tokenize/Tokenizer.h"

#include <QtPlugin>

#include <memory>
#include <string>

namespace qs {

class TokenizerPlugin {
public:
    virtual ~TokenizerPlugin() = default;

    // Short name of the implementation, e.g. "sentencepiece".
    virtual std::string name() const = 0;
    // Loads a tokenizer model file (for sentencepiece: tokenizer.model). Exceptions cannot cross
    // the plugin boundary (the plugin does not link core's qs::Error), so failure is nullptr and
    // a reason in *error. The returned object's code lives in the plugin: it must not outlive it,
    // which is why plugins are loaded once and never unloaded.
    virtual std::unique_ptr<Tokenizer> loadModelFile(const std::string& path,
                                                     std::string* error) const = 0;
};

} // namespace qs

#define QS_TOKENIZER_PLUGIN_IID "org.quantscope.Tokenizer/1"
Q_DECLARE_INTERFACE(qs::TokenizerPlugin, QS_TOKENIZER_PLUGIN_IID)
