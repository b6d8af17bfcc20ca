#pragma once

#include "tokenize/TokenizerPlugin.h"

#include <QObject>

namespace qs {

// The Qt plugin object: loads sentencepiece tokenizer.model files. Load it with
// QLibrary::DeepBindHint (TokenizerLoader does) so its protobuf copy binds to itself.
class SentencePiecePlugin : public QObject, public TokenizerPlugin {
    Q_OBJECT
    Q_PLUGIN_METADATA(IID QS_TOKENIZER_PLUGIN_IID FILE "sentencepiece.json")
    Q_INTERFACES(qs::TokenizerPlugin)

public:
    std::string name() const override { return "sentencepiece"; }
    std::unique_ptr<Tokenizer> loadModelFile(const std::string& path,
                                             std::string* error) const override;
};

} // namespace qs
